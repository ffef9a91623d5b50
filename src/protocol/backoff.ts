/** Reconnection delays: exponential from `initialMs`, doubling up to `maxMs`, with random jitter. */

export interface BackoffOptions {
  /** Delay before the first retry, before jitter. */
  initialMs: number;
  /** Largest delay, before jitter. */
  maxMs: number;
  /** Share of the delay that is random, 0..1: with 0.5 the delay is between half and all of it. */
  jitter: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 500, maxMs: 10_000, jitter: 0.5 };

/**
 * The delay before retry number `attempt` (0 for the first retry after a drop). The jitter spreads
 * the reconnections of many pages after a server restart, so they do not all arrive at once.
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions = DEFAULT_BACKOFF,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(options.maxMs, options.initialMs * 2 ** Math.min(Math.max(attempt, 0), 30));
  return Math.round(ceiling * (1 - options.jitter * random()));
}
