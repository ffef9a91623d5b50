/**
 * `roster users export|import` and `roster --version`, as real processes against real Rosters: a round
 * trip through JSON and CSV (names with commas, quotes and line breaks), and the report of refused
 * records with the API's reasons.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { Cli, freePort, redirectingApi, request, TEST_MS, type Json, rosterFor } from '../support/index.js';

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'roster-users-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function run(t: TestContext, args: string[], env: Record<string, string> = {}): Promise<Cli> {
  const cli = new Cli(t, args, env);
  await cli.exited(20_000);
  return cli;
}

const EXTRA = [
  { name: 'Grace "Amazing" Hopper, RADM', email: 'grace@example.com', role: 'admin' },
  { name: 'Two\nLines', email: 'two.lines@example.com', role: 'user' },
];

describe('roster users', () => {
  test('--version prints the package version', { timeout: TEST_MS }, async (t) => {
    const cli = await run(t, ['--version']);
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    assert.equal(cli.stdout.text, `roster ${pkg.version}\n`, cli.describe());
    assert.equal(cli.exit?.code, 0);
  });

  test(
    'CSV: a formula-like cell is written as text (an apostrophe in front), and imported back as it was',
    { timeout: TEST_MS },
    async (t) => {
      const names = [
        '=HYPERLINK("https://evil.example","x")',
        '+1',
        '-2',
        '@SUM(A1)',
        '\tTab',
        "'=already",
        "'plain",
        'plain',
      ];
      const source = await rosterFor(t);
      for (const [index, name] of names.entries())
        assert.equal(
          (await request(`${source.api}/users`, { method: 'POST', body: { name, email: `f${index}@example.com` } }))
            .status,
          201,
        );
      const exported = await run(t, ['users', 'export', '--format', 'csv', '--url', source.api]);
      assert.equal(exported.exit?.code, 0, exported.describe());
      const cells = exported.stdout.text
        .split('\r\n')
        .slice(4, -1) // the header and the three seed users; the last line is empty
        .map((line) => /^[^,]*,("(?:[^"]|"")*"|[^,]*),/.exec(line)![1]!.replace(/^"|"$/g, '').replace(/""/g, '"'));
      assert.deepEqual(cells, [...names.slice(0, 6).map((name) => `'${name}`), "'plain", 'plain']);
      for (const cell of cells) assert.doesNotMatch(cell, /^[=+\-@\t\r]/, 'no cell a spreadsheet would run');

      const file = join(tempDir(t), 'users.csv');
      writeFileSync(file, exported.stdout.text);
      const target = await rosterFor(t);
      const imported = await run(t, ['users', 'import', file], { API_URL: target.api });
      // The three seed users exist there already: counted as such, not as refused.
      assert.equal(imported.exit?.code, 0, imported.describe());
      assert.match(imported.stderr.text, /: 8 imported, 3 already there, 0 refused \(of 11 records\)\n$/);
      const list = await request(`${target.api}/users?sort=created_at&order=asc&limit=100`);
      assert.deepEqual(
        (list.body.data.users as Json[]).slice(3).map((user) => user.name),
        names,
      );
    },
  );

  for (const format of ['json', 'csv'] as const) {
    test(
      `export --format ${format}, then import into another Roster: same users; the seeds already there (EMAIL_EXISTS)`,
      { timeout: TEST_MS },
      async (t) => {
        const source = await rosterFor(t);
        for (const user of EXTRA)
          assert.equal((await request(`${source.api}/users`, { method: 'POST', body: user })).status, 201);
        const exported = await run(t, ['users', 'export', '--format', format, '--url', source.api]);
        assert.equal(exported.exit?.code, 0, exported.describe());
        assert.equal(exported.stderr.text, '', 'no progress off a terminal');
        const file = join(tempDir(t), `users.${format}`);
        writeFileSync(file, exported.stdout.text);
        if (format === 'json') assert.equal((JSON.parse(exported.stdout.text) as Json[]).length, 5);
        else assert.match(exported.stdout.text, /^id,name,email,role,created_at,updated_at\r\n/);

        const target = await rosterFor(t);
        const imported = await run(t, ['users', 'import', file], { API_URL: target.api });
        assert.equal(imported.exit?.code, 0, `none refused: ${imported.describe()}`);
        const report = imported.stderr.lines;
        assert.deepEqual(report, ['roster users import: 2 imported, 3 already there, 0 refused (of 5 records)']);

        const list = await request(`${target.api}/users?sort=created_at&order=asc`);
        const added = (list.body.data.users as Json[]).slice(3).map(({ name, email, role }) => ({ name, email, role }));
        assert.deepEqual(added, EXTRA);
      },
    );
  }

  test(
    'import reports each refused record with the reason, and imports the rest (JSON lines from stdin)',
    { timeout: TEST_MS },
    async (t) => {
      const target = await rosterFor(t);
      const cli = new Cli(t, ['users', 'import', '-', '--url', target.api]);
      cli.child.stdin.end(
        '{"name":"Ok One","email":"ok1@example.com"}\n{"name":"","email":"not-an-email"}\n{"name":"Ok Two","email":"ok2@example.com","role":"nope"}\n' +
          // A name within its bound once trimmed, padded far past it: the field bound counts what is stored.
          `${JSON.stringify({ name: `Padded${' '.repeat(100_000)}`, email: 'padded@example.com' })}\n`,
      );
      await cli.exited(20_000);
      assert.equal(cli.exit?.code, 1, cli.describe());
      assert.match(
        cli.stderr.text,
        /^roster users import: record 2 \(not-an-email\) refused: 422 VALIDATION_ERROR: .*email/m,
      );
      assert.match(
        cli.stderr.text,
        /^roster users import: record 3 \(ok2@example.com\) refused: 422 VALIDATION_ERROR: .*role/m,
      );
      assert.match(
        cli.stderr.text,
        /^roster users import: record 4 \(padded@example.com\) refused: 422 VALIDATION_ERROR: .*name/m,
      );
      assert.match(cli.stderr.text, /1 imported, 0 already there, 3 refused \(of 4 records\)\n$/);
    },
  );

  test('usage errors: exit 2; an unreachable API: exit 1 with one line', { timeout: TEST_MS }, async (t) => {
    for (const args of [['users'], ['users', 'import'], ['users', 'export', '--format', 'xml']]) {
      const cli = await run(t, args);
      assert.equal(cli.exit?.code, 2, cli.describe());
      assert.match(cli.stderr.text, /^roster users: /);
    }
    const port = await freePort();
    const cli = await run(t, ['users', 'export', '--url', `http://127.0.0.1:${port}/api/v1`]);
    assert.equal(cli.exit?.code, 1, cli.describe());
    assert.equal(
      cli.stderr.text,
      `roster users export: cannot reach the API at http://127.0.0.1:${port}/api/v1: ECONNREFUSED\n`,
    );
    assert.equal(cli.stdout.text, '', 'nothing written');
  });

  test('a redirect to another origin is not followed with the credential', { timeout: TEST_MS }, async (t) => {
    const { url, seen } = await redirectingApi(t);
    const cli = await run(t, ['users', 'export', '--url', `${url}/api/v1`], {
      ROSTER_API_KEY: 'secret-key-0123456789',
    });
    assert.equal(cli.exit?.code, 1, cli.describe());
    assert.match(cli.stderr.text, /redirect/, cli.describe());
    assert.deepEqual(seen, [], 'nothing, and no key, reached the other origin');
  });
});
