/**
 * Idempotency keys in this process's memory, beside the users (contract: memory only). Synchronous, so
 * each claim is atomic. Bounded twice: a key is forgotten once expired (looked at lazily, and the
 * oldest ones swept whenever a new key is added), and at most `maxKeys` (IDEMPOTENCY_MAX_KEYS) are
 * kept: a new key past it drops the oldest one, whose repeat would then be processed afresh.
 */
import type { Claimed, IdempotencyKeys, KeyClaim, SavedReply } from '../../idempotency-keys.js';

interface Entry {
  fingerprint: string;
  token: string;
  expiresAt: number;
  leaseUntil: number;
  reply: SavedReply | undefined;
}

export class MemoryIdempotencyKeys implements IdempotencyKeys {
  /** In insertion order, i.e. by expiry: every key lives as long as the others. */
  readonly #entries = new Map<string, Entry>();

  constructor(readonly maxKeys: number) {}

  get size(): number {
    return this.#entries.size;
  }

  async claim(claim: KeyClaim): Promise<Claimed> {
    const id = idOf(claim);
    const held = this.#entries.get(id);
    if (held && held.expiresAt > claim.now && (held.reply !== undefined || held.leaseUntil > claim.now)) {
      return held.reply === undefined
        ? { state: 'in_flight', fingerprint: held.fingerprint }
        : { state: 'done', fingerprint: held.fingerprint, reply: held.reply };
    }
    this.#entries.delete(id);
    this.#sweep(claim.now);
    const { fingerprint, token, expiresAt, leaseUntil } = claim;
    this.#entries.set(id, { fingerprint, token, expiresAt, leaseUntil, reply: undefined });
    return { state: 'claimed' };
  }

  async complete(claim: KeyClaim, reply: SavedReply): Promise<void> {
    this.keep(claim, reply);
  }

  async release(claim: KeyClaim): Promise<void> {
    const id = idOf(claim);
    const entry = this.#entries.get(id);
    if (entry?.token === claim.token && entry.reply === undefined) this.#entries.delete(id);
  }

  /** Whether this request still holds its claim (the store's keyed insert asks, in the same turn as it writes). */
  holds(claim: KeyClaim): boolean {
    return this.#entries.get(idOf(claim))?.token === claim.token;
  }

  /** Keeps the reply of this request's claim, synchronously. */
  keep(claim: KeyClaim, reply: SavedReply): void {
    const entry = this.#entries.get(idOf(claim));
    if (entry?.token === claim.token) entry.reply = reply;
  }

  /** Drops expired keys from the oldest on, then the oldest while the cap would be passed. */
  #sweep(now: number): void {
    for (const [id, entry] of this.#entries) {
      if (entry.expiresAt > now && this.#entries.size < this.maxKeys) break;
      this.#entries.delete(id);
    }
  }
}

const idOf = (claim: KeyClaim) => `${claim.principal}\n${claim.key}`;
