/**
 * The machinery of `npm run bench -- --only scale` (docs/capacity.md's figures) at its quick size, on
 * real sockets: 1 and 2 Roster processes on one PostgreSQL and one Redis, REST and chat load
 * generators, the prediction from the one-instance row, and a join storm over both. Only that it runs
 * and reports every table; the figures themselves are the bench's business.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DATABASE_URL, NO_DATABASE, WITHOUT_REDIS, runBench } from './support/index.js';

const SKIP = !DATABASE_URL ? NO_DATABASE : WITHOUT_REDIS;

const run = () => runBench(['--only', 'scale', '--quick']);

describe('npm run bench -- --only scale --quick', { skip: SKIP }, () => {
  test('measures 1 and 2 instances, predicts 2 from 1, and storms both', { timeout: 180_000 }, async () => {
    const { status, stdout, stderr } = await run();
    assert.equal(status, 0, `the bench failed:\n${stdout}\n${stderr.slice(-2000)}`);
    for (const heading of [
      '#### REST, per count of instances',
      '#### Chat, per count of instances',
      '#### Predicted from the one-instance row (before the others ran) against measured',
      '#### Join storms over 2 instances',
    ])
      assert.ok(stdout.includes(heading), `no "${heading}" in:\n${stdout}`);
    // A row per count in both tables, with figures in its first columns (not the dash of a
    // measurement that failed); the prediction table's rows name a figure instead.
    for (const count of [1, 2]) {
      const rows = stdout
        .split('\n')
        .filter((line) => new RegExp(`^\\| ${count} \\| \\d[\\d ]*(\\.\\d+)? \\|`).test(line));
      assert.equal(rows.length, 2, `rows for ${count} instance(s) in:\n${stdout}`);
    }
    assert.match(stdout, /\| 2 \| PostgreSQL connections, all instances \| [\d.]+ \| [\d.]+ \|/);
    assert.match(stdout, /\| 100 over 2 \| 100 \| [\d.]+ \|/);
    // The prediction was made before the 2-instance row was measured.
    assert.ok(
      stderr.indexOf('predicted for 2 instances before measuring') < stderr.indexOf('scale, 2 instance(s)'),
      stderr,
    );
  });
});
