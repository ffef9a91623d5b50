import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';

/**
 * The bound of the two latency assertions among the tests (issue 43: one client's search must not be
 * another client's latency), on the memory store and on SQLite: the point reads beside the searcher
 * stay under `limitMs` at p99; on a machine so loaded that the reads alone miss it (the scheduler's
 * doing, not the searches'), under half as much again as alone, plus 5 ms. A search that held the
 * REST thread (tens of ms at 100 000 users) fails either.
 */
export function readsP99Bound(aloneP99: number, limitMs: number): number {
  return aloneP99 < limitMs ? limitMs : 1.5 * aloneP99 + 5;
}

/** One measurement of the reads by id (their times, ms): alone, and beside the searcher. */
export interface ReadTimes {
  alone: number[];
  beside: number[];
}

/** The value at `share` of sorted `times` (0.99: the 1 485th of 1 500). */
const percentile = (sorted: readonly number[], share: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]!;

/**
 * Measures up to `attempts` times, until the reads beside the searcher stay under readsP99Bound at p99;
 * each attempt's figures go to the test's diagnostics, and when every attempt misses, the test fails
 * naming each. A machine's passing noise (a CI run saw 7.5 ms at p99 with no searcher at all) misses
 * one now and then; reads held behind searches on the REST thread miss every one.
 */
export async function readsStayUnder(
  t: TestContext,
  limitMs: number,
  attempts: number,
  measure: () => Promise<ReadTimes>,
): Promise<void> {
  const misses: string[] = [];
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const times = await measure();
    const [alone, beside] = [times.alone, times.beside].map((list) => [...list].sort((a, b) => a - b)) as [
      number[],
      number[],
    ];
    const bound = readsP99Bound(percentile(alone, 0.99), limitMs);
    const p99 = percentile(beside, 0.99);
    const figures =
      `reads by id p99 ${p99.toFixed(2)} ms (p50 ${percentile(beside, 0.5).toFixed(2)} ms) beside the searcher; ` +
      `alone p99 ${percentile(alone, 0.99).toFixed(2)} ms (p50 ${percentile(alone, 0.5).toFixed(2)} ms); at most ${bound.toFixed(1)} ms`;
    t.diagnostic(`attempt ${attempt}: ${figures}`);
    if (p99 < bound) return;
    misses.push(figures);
  }
  assert.fail(`every attempt missed: ${misses.join('; ')}`);
}
