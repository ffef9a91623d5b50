/**
 * The machinery of `npm run bench -- --only lists` at a tiny size, on real sockets: the stores filled
 * (the SQL ones by the bench fill of the build measured first, then copied), two builds started on the
 * same users (this build stands in for BENCH_BEFORE's), every query measured on both, and the tables
 * and target lines printed. Only that it runs and that both builds serve the same users; the figures
 * themselves are the bench's business. PostgreSQL is measured when DATABASE_URL is set, and the
 * section says it skipped it otherwise.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { searchMatches, SEARCH_TERM } from '../bench/users.js';
import { DATABASE_URL, runBench, REPOSITORY_ROOT } from './support/index.js';

const USERS = 1_500;

const run = () =>
  runBench(['--only', 'lists', '--quick'], {
    BENCH_BEFORE: REPOSITORY_ROOT,
    BENCH_LISTS_USERS: String(USERS),
    BENCH_LISTS_SECONDS: '0.01',
    BENCH_LISTS_STORES: 'memory,sqlite,postgres',
  });

/** The cells of the table row whose first cell is `label`, in the section of `store`. */
function rowOf(stdout: string, store: string, label: string): string[] {
  const section = stdout.slice(stdout.indexOf(`#### ${store},`));
  const line = section.split('\n').find((candidate) => candidate.startsWith(`| ${label} |`));
  assert.ok(line, `no row "${label}" for ${store} in:\n${section}`);
  return line
    .slice(2, -2)
    .split(' | ')
    .map((cell) => cell.trim());
}

describe('npm run bench -- --only lists --quick', () => {
  test('measures every query on two builds of the same users, on every store', { timeout: 120_000 }, async () => {
    const { status, stdout, stderr } = await run();
    assert.equal(status, 0, `the bench failed:\n${stdout}\n${stderr.slice(-3000)}`);
    const stores = DATABASE_URL ? ['memory', 'SQLite', 'PostgreSQL'] : ['memory', 'SQLite'];
    for (const store of stores) {
      // Both builds answered, and found the users the generator made.
      const search = rowOf(stdout, store, `?search=${SEARCH_TERM}`);
      assert.match(search[1]!, /^\**[\d.]+ \/ [\d.]+ ms \(\d+\)\**$/, search.join(' | '));
      assert.match(search[2]!, /^\**[\d.]+ \/ [\d.]+ ms \(\d+\)\**$/, search.join(' | '));
      assert.equal(search[4], String(searchMatches(USERS)), search.join(' | '));
      const last = rowOf(stdout, store, 'sort=email&order=desc, last page (15)');
      assert.equal(last[4], '1 500', last.join(' | '));
      const rare = rowOf(stdout, store, 'role=auditor&sort=email, page 1 (last)');
      assert.equal(rare[4], '1', rare.join(' | '));
      assert.match(rowOf(stdout, store, 'creates (1 client)')[3]!, /^[\d.]+×$/);
    }
    // The SQL stores were filled once and copied, and the second build opened its copy.
    for (const store of ['SQLite', ...(DATABASE_URL ? ['PostgreSQL'] : [])]) {
      const section = stdout.slice(stdout.indexOf(`#### ${store},`));
      assert.match(section, /fill by the before build's bench fill/);
      assert.match(section, /copy for the after build/);
      assert.match(section, /after: start-up on its copy \(of which opening and migrating/);
    }
    if (!DATABASE_URL) assert.match(stdout, /#### PostgreSQL, 1 500 users\n\nSkipped: DATABASE_URL is not set/);
    assert.match(stdout, /- (PASS|FAIL) memory: \?search=sen p50: /);
    assert.match(stdout, /- (PASS|FAIL) memory: server RSS at the end, after against before: /);
    assert.match(stdout, /Other processes used \d+% of a CPU on average during these measurements/);
  });
});
