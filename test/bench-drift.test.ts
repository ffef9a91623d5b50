/**
 * The machinery of `npm run bench -- --only drift` at its quick size, on real sockets: the fixed older
 * build is found through BENCH_BASELINE (this build stands in for 41a4c31, so no `npm ci` runs), both
 * builds run every figure alternating, and the table gives each figure's rates, their ratio and the
 * servers' CPU per unit. Only that it runs; the figures are the bench's business. And a
 * BENCH_BASELINE folder without a build is refused with its name, not run.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runBench, REPOSITORY_ROOT } from './support/index.js';
import { baselineReady, buildBaseline } from '../bench/baseline.js';

const run = () => runBench(['--only', 'drift', '--quick'], { BENCH_BASELINE: REPOSITORY_ROOT });

describe('npm run bench -- --only drift --quick', () => {
  // 1 000 chat clients connect four times (two builds, history on and off): minutes on a busy machine.
  test('measures every figure on both builds, with ratios and CPU per unit', { timeout: 400_000 }, async () => {
    const { status, stdout, stderr } = await run();
    assert.equal(status, 0, `the bench failed:\n${stdout}\n${stderr.slice(-3000)}`);
    for (const figure of [
      'GET by id',
      'default list, page 1 of 20',
      'create',
      'chat broadcast, history on',
      'chat broadcast, CHAT_HISTORY=0',
    ]) {
      const line = stdout.split('\n').find((candidate) => candidate.startsWith(`| ${figure} |`));
      assert.ok(line, `no row "${figure}" in:\n${stdout}`);
      const cells = line.slice(2, -2).split(' | ');
      assert.match(cells[1]!, /^\**[\d ]+\**$/, line);
      assert.match(cells[2]!, /^\**[\d ]+\**$/, line);
      assert.match(cells[3]!, /^[\d.]+×$/, line);
      assert.match(cells[4]!, /^[\d ]+ (µs|ns) \/ [\d ]+ (µs|ns)$/, line);
      assert.match(stdout, new RegExp(`- (PASS|FAIL) ${figure} against 41a4c31: [\\d.]+× \\(target ≥ 0.95×\\)`));
    }
    assert.match(stdout, /Load average at the end \(`uptime`\): [\d.]+, [\d.]+, [\d.]+\./);
  });

  test('a BENCH_BASELINE folder without a build is refused, by name', () => {
    const empty = mkdtempSync(join(tmpdir(), 'roster-baseline-'));
    const before = process.env.BENCH_BASELINE;
    process.env.BENCH_BASELINE = empty;
    try {
      assert.equal(baselineReady(), false);
      assert.throws(
        () => buildBaseline(() => {}),
        new RegExp(`BENCH_BASELINE=${empty} holds no dist/bench/servers/roster.js`),
      );
      process.env.BENCH_BASELINE = REPOSITORY_ROOT;
      assert.equal(baselineReady(), true);
    } finally {
      if (before === undefined) delete process.env.BENCH_BASELINE;
      else process.env.BENCH_BASELINE = before;
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
