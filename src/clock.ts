/**
 * Timestamps as docs/decisions.md specifies: UTC, ISO 8601 without offset, microsecond precision
 * (`2026-11-22T10:15:30.123456`), and strictly increasing within one process, so that sorting users by
 * `created_at` is a total order matching creation order.
 */

export interface Clock {
  /** A timestamp strictly greater than every one this clock returned before. */
  next(): string;
}

/** Current time in whole microseconds since the epoch (performance.now() carries the sub-millisecond part). */
function nowMicros(): number {
  return Math.floor((performance.timeOrigin + performance.now()) * 1000);
}

/** The `YYYY-MM-DDTHH:MM:SS.` part of the last second formatted: it changes once a second, not per call. */
let cachedSecond = NaN;
let cachedPrefix = '';

export function formatMicros(micros: number): string {
  const second = Math.floor(micros / 1_000_000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, 20); // 2026-11-22T10:15:30.
  }
  return cachedPrefix + String(micros - second * 1_000_000).padStart(6, '0');
}

/** An ISO timestamp for messages (health, chat) where strict ordering does not matter. */
export function timestamp(): string {
  return formatMicros(nowMicros());
}

export function createClock(now: () => number = nowMicros): Clock {
  let last = 0;
  return {
    next() {
      // Two calls inside one microsecond, or a wall clock stepped backwards, must still move forward.
      last = Math.max(now(), last + 1);
      return formatMicros(last);
    },
  };
}
