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
import {
  Cli,
  flakyApi,
  freePort,
  redirectingApi,
  request,
  TEST_MS,
  type FlakyStep,
  type Json,
  rosterFor,
} from '../support/index.js';

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

const PEOPLE = [1, 2, 3, 4, 5].map((n) => ({ name: `Person ${n}`, email: `person${n}@example.com` }));

/** The emails of the users on `api` but the seeds, sorted. */
async function emailsOn(api: string): Promise<string[]> {
  const list = await request(`${api}/users?search=person&limit=100`);
  return (list.body.data.users as Json[]).map((user) => user.email as string).sort();
}

/** `count` users named `${name} n` (emails `${name lower-cased}n@example.com`), `parallel` at a time. */
async function createNamed(api: string, count: number, name: string, parallel: number): Promise<void> {
  for (let batch = 0; batch < count; batch += parallel) {
    const made = Array.from({ length: Math.min(parallel, count - batch) }, (_, i) =>
      request(`${api}/users`, {
        method: 'POST',
        body: { name: `${name} ${batch + i}`, email: `${name.toLowerCase()}${batch + i}@example.com` },
      }),
    );
    for (const reply of await Promise.all(made)) assert.equal(reply.status, 201);
  }
}

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

  test(
    'export stops, saying why, when a page\'s Link: rel="next" names a page it has read already',
    { timeout: TEST_MS },
    async (t) => {
      const source = await rosterFor(t);
      await createNamed(source.api, 120, 'Loop', 40);
      // Every list reply names the second page as next: the second page then names itself.
      const first = await fetch(`${source.api}/users?sort=created_at&order=asc&limit=100`);
      const link = first.headers.get('link')!;
      assert.match(link, /rel="next"/);
      const front = await flakyApi(t, source.origin, (): FlakyStep => ({ forward: true, link }));
      const exported = await run(t, ['users', 'export', '--url', front.api]);
      assert.equal(exported.exit?.code, 1, exported.describe());
      assert.match(exported.stderr.text, /Link: rel="next" names a page this walk has read already \(.*after=/);
      assert.equal(
        front.seen.filter(({ method }) => method === 'GET').length,
        2,
        'the first page, the second, no more',
      );
    },
  );

  test(
    'export walks the list by cursor (Link: rel="next"), page after page, every user once, oldest first',
    { timeout: TEST_MS },
    async (t) => {
      const source = await rosterFor(t);
      // Past two pages of the export's 100: 3 seeds and 217 more.
      await createNamed(source.api, 217, 'Walker', 31);
      const front = await flakyApi(t, source.origin, (): FlakyStep => ({ forward: true }));
      const exported = await run(t, ['users', 'export', '--url', front.api]);
      assert.equal(exported.exit?.code, 0, exported.describe());
      const users = JSON.parse(exported.stdout.text) as Json[];
      const everyone = [
        ...(await request(`${source.api}/users?sort=created_at&order=asc&limit=100&page=1`)).body.data.users,
        ...(await request(`${source.api}/users?sort=created_at&order=asc&limit=100&page=2`)).body.data.users,
        ...(await request(`${source.api}/users?sort=created_at&order=asc&limit=100&page=3`)).body.data.users,
      ] as Json[];
      assert.equal(users.length, 220);
      assert.deepEqual(users, everyone);
      const lists = front.seen.filter(({ method }) => method === 'GET').map(({ path }) => new URL(path, 'http://x'));
      assert.equal(lists.length, 3, 'one request a page');
      assert.equal(lists[0]!.searchParams.get('after'), null);
      for (const url of lists.slice(1)) {
        assert.notEqual(url.searchParams.get('after'), null, url.href);
        assert.equal(url.searchParams.get('page'), null, url.href);
        assert.equal(url.searchParams.get('sort'), 'created_at');
        assert.equal(url.searchParams.get('order'), 'asc');
      }
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

  test(
    'import run twice on the same file creates each user once; the second run finds them all there',
    { timeout: TEST_MS },
    async (t) => {
      const target = await rosterFor(t);
      const file = join(tempDir(t), 'people.jsonl');
      writeFileSync(file, PEOPLE.map((person) => JSON.stringify(person)).join('\n'));
      const runs = [];
      for (let n = 0; n < 2; n++) runs.push(await run(t, ['users', 'import', file, '--url', target.api]));
      assert.deepEqual(
        runs.map((cli) => [cli.exit?.code, cli.stderr.lines.at(-1)]),
        [
          [0, 'roster users import: 5 imported, 0 already there, 0 refused (of 5 records)'],
          [0, 'roster users import: 0 imported, 5 already there, 0 refused (of 5 records)'],
        ],
        runs.map((cli) => cli.describe()).join('\n'),
      );
      assert.deepEqual(await emailsOn(target.api), PEOPLE.map((person) => person.email).sort());
    },
  );

  test(
    'import after a failure midway (503s, one of them after Roster had created the user) creates each user once when run again',
    { timeout: TEST_MS },
    async (t) => {
      const target = await rosterFor(t);
      let creates = 0;
      let healed = false;
      // Creates 1 and 2 go through; create 3 reaches Roster but its 201 is lost to a 503; 4 and 5 get
      // 503 without reaching it. Retry-After is past the client's longest wait: it gives up at once.
      const front = await flakyApi(t, target.origin, ({ method }): FlakyStep => {
        if (method !== 'POST' || healed) return { forward: true };
        creates++;
        if (creates <= 2) return { forward: true };
        return { answer: 503, retryAfter: '3600', forwardFirst: creates === 3 };
      });
      const file = join(tempDir(t), 'people.json');
      writeFileSync(file, JSON.stringify(PEOPLE));
      const failed = await run(t, ['users', 'import', file, '--url', front.api]);
      assert.equal(failed.exit?.code, 1, failed.describe());
      assert.equal(
        failed.stderr.lines.at(-1),
        'roster users import: 2 imported, 0 already there, 3 refused (of 5 records)',
        failed.describe(),
      );
      assert.equal((await emailsOn(target.api)).length, 3, 'records 1 to 3 were created');

      // Run again, Roster reachable: 1 to 3 are there (replayed), 4 and 5 are created; nobody twice.
      healed = true;
      const again = await run(t, ['users', 'import', file, '--url', front.api]);
      assert.equal(again.exit?.code, 0, again.describe());
      assert.equal(
        again.stderr.lines.at(-1),
        'roster users import: 2 imported, 3 already there, 0 refused (of 5 records)',
      );
      assert.deepEqual(await emailsOn(target.api), PEOPLE.map((person) => person.email).sort());
      const keys = front.seen.filter((seen) => seen.method === 'POST').map((seen) => seen.headers['idempotency-key']);
      assert.equal(keys.length, 10);
      assert.deepEqual(keys.slice(5), keys.slice(0, 5), 'each record sent with the same key on both runs');
      assert.equal(new Set(keys).size, 5, 'a key per record');
    },
  );

  test(
    'a create whose reply was lost and that the client retried counts as imported, not as already there',
    { timeout: TEST_MS },
    async (t) => {
      const target = await rosterFor(t);
      let creates = 0;
      const front = await flakyApi(t, target.origin, ({ method }): FlakyStep =>
        method === 'POST' && ++creates === 1 ? { answer: 503, retryAfter: '0', forwardFirst: true } : { forward: true },
      );
      const cli = new Cli(t, ['users', 'import', '-', '--url', front.api]);
      cli.child.stdin.end(JSON.stringify(PEOPLE[0]));
      await cli.exited(20_000);
      assert.equal(cli.exit?.code, 0, cli.describe());
      assert.equal(
        cli.stderr.lines.at(-1),
        'roster users import: 1 imported, 0 already there, 0 refused (of 1 records)',
      );
      assert.deepEqual(
        front.seen.map((seen) => seen.status),
        [503, 201],
      );
      assert.deepEqual(await emailsOn(target.api), [PEOPLE[0]!.email]);
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
