/**
 * The machinery of `npm run bench -- --only search` at a tiny size, on real sockets: two builds (this
 * one standing in for BENCH_BEFORE's) on the same users of the memory store and SQLite, one and four
 * typing clients and the /livez probe measured on both, the table and the target lines printed. Only
 * that it runs; the figures themselves are the bench's business.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runBench, REPOSITORY_ROOT } from './support/index.js';

const run = () =>
  runBench(['--only', 'search', '--quick'], {
    BENCH_BEFORE: REPOSITORY_ROOT,
    BENCH_SEARCH_USERS: '1500',
    BENCH_SEARCH_SECONDS: '0.3',
    BENCH_SEARCH_STORES: 'memory,sqlite',
  });

describe('npm run bench -- --only search --quick', () => {
  test(
    'measures fresh searches and the probe on two builds, on the memory store and SQLite',
    { timeout: 120_000 },
    async () => {
      const { status, stdout, stderr } = await run();
      assert.equal(status, 0, `the bench failed:\n${stdout}\n${stderr.slice(-3000)}`);
      for (const store of ['memory', 'SQLite']) {
        const section = stdout.slice(stdout.indexOf(`#### ${store}, 1 500 users`));
        for (const clients of ['1', '4']) {
          const line = section.split('\n').find((candidate) => candidate.startsWith(`| ${clients} |`));
          assert.ok(line, `no row for ${clients} client(s) of ${store} in:\n${section}`);
          const cells = line.slice(2, -2).split(' | ');
          for (const cell of cells.slice(1))
            assert.match(cell, /^\**[\d. ]+\/s, [\d. ]+ \/ [\d. ]+ ms .*probe p99 [\d. ]+ ms\**$/, line);
        }
        assert.match(stdout, new RegExp(`- (PASS|FAIL) ${store}: 4 clients, the REST probe's p99 meanwhile: `));
      }
    },
  );
});
