import type { RateLimit } from '../config/index.js';

/**
 * RATE_LIMIT for chat messages, per client (shared by its connections): a token bucket of `max` messages
 * refilled at `max` per window, so a steady sender at the limit is never cut and a burst is allowed up to
 * `max`. Written by hand because rate-limit libraries (rate-limiter-flexible, edge/rate-limiter.ts) count
 * requests in windows, not a bucket of messages on open sockets that must also decide when to close one.
 * Past the budget a message is dropped (the sender hears so once per window); a sender that keeps going
 * (twice the limit dropped within one window, i.e. three times the limit sent) is closed with 1008.
 */
export class MessageBudget {
  readonly max: number;
  readonly windowMs: number;
  #tokens: number;
  #refilledAt = 0;
  #windowStart = 0;
  #dropped = 0;

  constructor(limit: RateLimit) {
    this.max = limit.max;
    this.windowMs = limit.windowMs;
    this.#tokens = limit.max;
  }

  take(now: number): 'ok' | 'notify' | 'drop' | 'close' {
    this.#tokens = Math.min(this.max, this.#tokensAt(now));
    this.#refilledAt = now;
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 'ok';
    }
    if (now - this.#windowStart >= this.windowMs) {
      this.#windowStart = now;
      this.#dropped = 0;
    }
    this.#dropped += 1;
    if (this.#dropped >= 2 * this.max) return 'close';
    return this.#dropped === 1 ? 'notify' : 'drop';
  }

  /** Whether the budget is as new (full, nothing dropped in the current window): forgetting it changes nothing. */
  rested(now: number): boolean {
    return this.#tokensAt(now) >= this.max && now - this.#windowStart >= this.windowMs;
  }

  /** The tokens at `now`: refilled since the last take, not yet capped at `max`. */
  #tokensAt(now: number): number {
    return this.#refilledAt === 0 ? this.#tokens : this.#tokens + ((now - this.#refilledAt) * this.max) / this.windowMs;
  }
}
