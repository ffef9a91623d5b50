/** `roster migrate` as a real process against the real PostgreSQL, and without one. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Cli, DATABASE_URL, freePort, freshSchema, NO_DATABASE, TEST_MS } from '../support/index.js';

describe('roster migrate', () => {
  test(
    'applies the migrations once, records them, and exits 0; a second run has nothing to do',
    { timeout: TEST_MS, skip: DATABASE_URL ? false : NO_DATABASE },
    async (t) => {
      const schema = await freshSchema();
      try {
        const first = new Cli(t, ['migrate'], { DATABASE_URL: schema.url });
        assert.deepEqual(await first.exited(), { code: 0, signal: null }, first.describe());
        assert.match(first.stdout.text, /^applied 001_users\n/);
        assert.match(first.stdout.text, /the schema is up to date \(\d+_\w+\)\n$/);
        const { rows } = await schema.query(
          "SELECT count(*)::int AS n FROM schema_migrations WHERE version = '001_users'",
        );
        assert.equal(rows[0].n, 1);
        await schema.query('SELECT id FROM users LIMIT 1'); // the table exists

        const second = new Cli(t, ['migrate'], { DATABASE_URL: schema.url });
        assert.deepEqual(await second.exited(), { code: 0, signal: null }, second.describe());
        assert.doesNotMatch(second.stdout.text, /applied/);
      } finally {
        await schema.drop();
      }
    },
  );

  test('without DATABASE_URL: exit 2 naming it', { timeout: TEST_MS }, async (t) => {
    const cli = new Cli(t, ['migrate']);
    assert.deepEqual(await cli.exited(), { code: 2, signal: null }, cli.describe());
    assert.match(cli.stderr.text, /roster migrate: needs DATABASE_URL/);
  });

  test(
    'an unreachable database: exit 1 with one line saying so, within the connect timeout',
    { timeout: TEST_MS },
    async (t) => {
      const port = await freePort();
      const cli = new Cli(t, ['migrate'], { DATABASE_URL: `postgres://nobody@127.0.0.1:${port}/none` });
      assert.deepEqual(await cli.exited(), { code: 1, signal: null }, cli.describe());
      assert.match(cli.stderr.text, /^roster migrate: .*ECONNREFUSED.*\n$/);
    },
  );

  test('--help describes it; roster --help lists it', { timeout: TEST_MS }, async (t) => {
    const help = new Cli(t, ['migrate', '--help']);
    assert.deepEqual(await help.exited(), { code: 0, signal: null }, help.describe());
    assert.match(help.stdout.text, /^Usage: roster migrate/);
    const all = new Cli(t, ['--help']);
    assert.deepEqual(await all.exited(), { code: 0, signal: null }, all.describe());
    assert.match(all.stdout.text, /\n {2}migrate +apply the pending database migrations/);
  });
});
