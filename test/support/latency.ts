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
