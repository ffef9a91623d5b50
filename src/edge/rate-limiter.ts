/**
 * RATE_LIMIT, one limiter for both doors: REST requests (http/protection.ts) and chat handshakes
 * (chat/handshake.ts) count against it by a client key (client-identity.ts), with nothing of either
 * door's request objects. Fixed windows per key, kept in memory by rate-limiter-flexible. Both doors
 * use the same keys, so a client's REST requests and chat handshakes spend one budget.
 */
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimit } from '../config/index.js';
import { RosterError } from '../errors.js';
import { RETRY_AFTER } from '../protocol/http-headers.js';

/** Where a key stands after a request was counted. */
export interface Verdict {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Whole seconds until the window ends. */
  resetSeconds: number;
}

export class RateLimiter {
  readonly #limiter: RateLimiterMemory;
  readonly limit: number;

  constructor(limit: RateLimit) {
    this.limit = limit.max;
    this.#limiter = new RateLimiterMemory({ points: limit.max, duration: limit.windowMs / 1000 });
  }

  /** The 429 when `key` has nothing left in this window; counts nothing (a peek). */
  async spent(key: string): Promise<RosterError | undefined> {
    const state = await this.#limiter.get(key);
    return state && state.consumedPoints >= this.limit ? rateLimited(this.limit, state.msBeforeNext) : undefined;
  }

  /** Counts one request of `key`. */
  async count(key: string): Promise<Verdict> {
    try {
      return this.#verdict(true, await this.#limiter.consume(key));
    } catch (outcome) {
      // The library rejects with its result when the key is over its points; anything else is a fault.
      if (outcome instanceof RateLimiterRes) return this.#verdict(false, outcome);
      throw outcome;
    }
  }

  /** Counts one request of `key`: the 429 when it is past the limit. */
  async refusal(key: string): Promise<RosterError | undefined> {
    const verdict = await this.count(key);
    return verdict.allowed ? undefined : rateLimited(verdict.limit, verdict.resetSeconds * 1000);
  }

  #verdict(allowed: boolean, state: RateLimiterRes): Verdict {
    return {
      allowed,
      limit: this.limit,
      remaining: Math.max(0, state.remainingPoints),
      resetSeconds: Math.max(1, Math.ceil(state.msBeforeNext / 1000)),
    };
  }
}

/** The 429 of docs/decisions.md, headers included, for REST requests and chat handshakes alike. */
export function rateLimited(max: number, ttlMs: number): RosterError {
  const seconds = String(Math.max(1, Math.ceil(ttlMs / 1000)));
  return new RosterError('RATE_LIMITED', `Too many requests; try again in ${seconds} s`, {
    headers: {
      [RETRY_AFTER]: seconds,
      'RateLimit-Limit': String(max),
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': seconds,
    },
  });
}
