/**
 * `roster users watch` as a real process against a real Roster: one line per change (time, type, id,
 * email and name), `--json` one object per line, a reset said in a line of its own, and Ctrl-C (SIGINT)
 * ending it with exit status 0 and the cursor to resume from.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Cli, request, rosterFor, TEST_MS, type Json } from '../support/index.js';

async function head(api: string): Promise<string> {
  return (await request(`${api}/users/changes`)).body.next as string;
}

describe('roster users watch', () => {
  test('prints a line per change, and stops on SIGINT with exit status 0', { timeout: TEST_MS }, async (t) => {
    const roster = await rosterFor(t);
    const cli = new Cli(t, ['users', 'watch', '--url', roster.api, '--since', await head(roster.api)]);
    const created = await request(`${roster.api}/users`, {
      method: 'POST',
      body: { name: 'Two\nLines', email: 'watched@example.com' },
    });
    const id = created.body.data.id as string;
    await request(`${roster.api}/users/${id}`, { method: 'PATCH', body: { name: 'Katherine Johnson' } });
    await request(`${roster.api}/users/${id}`, { method: 'DELETE' });
    await cli.waitForLine(/ deleted /, 'the delete line');
    const [one, two, three] = cli.stdout.lines;
    assert.match(one!, new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\S+ created ${id} watched@example.com Two\\\\x0aLines$`));
    assert.match(two!, new RegExp(` updated ${id} watched@example.com Katherine Johnson$`));
    assert.match(three!, new RegExp(` deleted ${id}$`));
    assert.equal(cli.stdout.lines.length, 3, cli.describe());
    cli.child.kill('SIGINT');
    const exit = await cli.exited();
    assert.equal(exit.code, 0, cli.describe());
    assert.match(cli.stderr.text, /stopped; resume with --since \S+\.\d+/);
  });

  test('--json: one change object per line; --role keeps one role', { timeout: TEST_MS }, async (t) => {
    const roster = await rosterFor(t);
    const since = await head(roster.api);
    const cli = new Cli(t, ['users', 'watch', '--json', '--role', 'admin', '--url', roster.api, '--since', since]);
    await request(`${roster.api}/users`, { method: 'POST', body: { name: 'Plain', email: 'plain@example.com' } });
    const admin = await request(`${roster.api}/users`, {
      method: 'POST',
      body: { name: 'Boss', email: 'boss@example.com', role: 'admin' },
    });
    const change = await cli.waitForJson((line: Json) => line.type === 'created', 'the admin created');
    assert.equal(change.id, admin.body.data.id);
    assert.equal(change.user.email, 'boss@example.com');
    assert.match(change.cursor, /\.\d+$/);
    assert.equal(cli.json.length, 1, `only the admin: ${cli.describe()}`);
    cli.child.kill('SIGINT');
    assert.equal((await cli.exited()).code, 0, cli.describe());
  });

  test(
    'a cursor the feed no longer serves: a reset line, then the changes after it',
    { timeout: TEST_MS },
    async (t) => {
      const roster = await rosterFor(t);
      const foreign = `x${(await head(roster.api)).split('.')[0]}.1`;
      const human = new Cli(t, ['users', 'watch', '--url', roster.api, '--since', foreign]);
      const json = new Cli(t, ['users', 'watch', '--json', '--url', roster.api, '--since', foreign]);
      await human.waitForLine(/^reset: /, 'the reset line');
      const reset = await json.waitForJson((line: Json) => line.type === 'reset', 'the reset object');
      assert.match(reset.next, /\.\d+$/);
      await request(`${roster.api}/users`, { method: 'POST', body: { name: 'After', email: 'after@example.com' } });
      await human.waitForLine(/ created .* after@example.com After$/, 'the change after the reset');
      await json.waitForJson((line: Json) => line.type === 'created', 'the change after the reset');
      for (const cli of [human, json]) cli.child.kill('SIGINT');
    },
  );

  test('usage errors and a refused credential', { timeout: TEST_MS }, async (t) => {
    const bad = new Cli(t, ['users', 'watch', '--bogus']);
    assert.equal((await bad.exited()).code, 2, bad.describe());
    assert.match(bad.stderr.text, /roster users watch: .*--bogus/);
    const roster = await rosterFor(t, { AUTH: 'apikey', API_KEYS: 'watch-test-key-0123456789' });
    const refused = new Cli(t, ['users', 'watch', '--url', roster.api, '--api-key', 'wrong-key-0123456789']);
    assert.equal((await refused.exited()).code, 1, refused.describe());
    assert.match(refused.stderr.text, /401 UNAUTHORIZED: .*\(see --api-key, --token, --basic\)/);
  });
});
