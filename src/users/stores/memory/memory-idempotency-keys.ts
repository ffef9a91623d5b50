/**
 * Idempotency keys in this process's memory, beside the users (contract: memory only). Synchronous, so
 * each claim is atomic. Bounded (idempotency-keys.ts: KeyBounds): a key is forgotten once expired
 * (looked at lazily, and the oldest ones swept whenever a new key is added); past a principal's count
 * its own oldest key goes; past the overall count or bytes, the oldest of all. The bytes are counted
 * as heap-size.ts counts strings, and IDEMPOTENCY_MAX_BYTES is taken off the heap MAX_USERS is
 * derived from (config/index.ts), so keys cannot crowd the users out of it.
 */
import { stringBytes } from '../../heap-size.js';
import {
  DEFAULT_KEY_BOUNDS,
  type Claimed,
  type IdempotencyKeys,
  type KeyBounds,
  type KeyClaim,
  type SavedReply,
} from '../../idempotency-keys.js';

interface Entry {
  principal: string;
  fingerprint: string;
  token: string;
  expiresAt: number;
  leaseUntil: number;
  reply: SavedReply | undefined;
  /** What the entry takes of the heap, as heap-size.ts counts: its strings and ENTRY_BYTES. */
  bytes: number;
}

/** An entry's object, its reply's, and its places in the two maps and the principal's set, rounded up. */
const ENTRY_BYTES = 320;

export class MemoryIdempotencyKeys implements IdempotencyKeys {
  /** In insertion order, i.e. by expiry: every key lives as long as the others. */
  readonly #entries = new Map<string, Entry>();
  /** Each principal's keys, oldest first. */
  readonly #byPrincipal = new Map<string, Set<string>>();
  #bytes = 0;

  constructor(readonly bounds: KeyBounds = DEFAULT_KEY_BOUNDS) {}

  get size(): number {
    return this.#entries.size;
  }

  /** The heap the keys take, as counted against `bounds.maxBytes`. */
  get bytes(): number {
    return this.#bytes;
  }

  async count(principal?: string): Promise<number> {
    return principal === undefined ? this.#entries.size : (this.#byPrincipal.get(principal)?.size ?? 0);
  }

  async claim(claim: KeyClaim): Promise<Claimed> {
    const id = idOf(claim);
    const held = this.#entries.get(id);
    if (held && held.expiresAt > claim.now && (held.reply !== undefined || held.leaseUntil > claim.now)) {
      return held.reply === undefined
        ? { state: 'in_flight', fingerprint: held.fingerprint }
        : { state: 'done', fingerprint: held.fingerprint, reply: held.reply };
    }
    this.#delete(id);
    const { principal, fingerprint, token, expiresAt, leaseUntil } = claim;
    const bytes = ENTRY_BYTES + stringBytes(id) + stringBytes(fingerprint) + stringBytes(token);
    this.#sweep(claim.now, principal, bytes);
    this.#entries.set(id, { principal, fingerprint, token, expiresAt, leaseUntil, reply: undefined, bytes });
    this.#bytes += bytes;
    let own = this.#byPrincipal.get(principal);
    if (!own) this.#byPrincipal.set(principal, (own = new Set()));
    own.add(id);
    return { state: 'claimed' };
  }

  async complete(claim: KeyClaim, reply: SavedReply): Promise<void> {
    this.keep(claim, reply);
  }

  async release(claim: KeyClaim): Promise<void> {
    const id = idOf(claim);
    const entry = this.#entries.get(id);
    if (entry?.token === claim.token && entry.reply === undefined) this.#delete(id);
  }

  /** Whether this request still holds its claim (the store's keyed insert asks, in the same turn as it writes). */
  holds(claim: KeyClaim): boolean {
    return this.#entries.get(idOf(claim))?.token === claim.token;
  }

  /** Keeps the reply of this request's claim, synchronously; older keys go if its bytes pass the bound. */
  keep(claim: KeyClaim, reply: SavedReply): void {
    const entry = this.#entries.get(idOf(claim));
    if (entry?.token !== claim.token) return;
    let added = stringBytes(reply.body);
    for (const [name, value] of Object.entries(reply.headers)) added += stringBytes(name) + stringBytes(value);
    entry.reply = reply;
    entry.bytes += added;
    this.#bytes += added;
    for (const [id] of this.#entries) {
      if (this.#bytes <= this.bounds.maxBytes || id === idOf(claim)) break;
      this.#delete(id);
    }
  }

  /**
   * Makes room for a key of `principal` taking `bytes`: expired keys from the oldest on, the
   * principal's own oldest past its count, then the oldest of all past the overall count or bytes.
   */
  #sweep(now: number, principal: string, bytes: number): void {
    const own = this.#byPrincipal.get(principal);
    while (own && own.size >= this.bounds.perPrincipal) this.#delete(own.values().next().value!);
    for (const [id, entry] of this.#entries) {
      const full = this.#entries.size >= this.bounds.maxKeys || this.#bytes + bytes > this.bounds.maxBytes;
      if (entry.expiresAt > now && !full) break;
      this.#delete(id);
    }
  }

  #delete(id: string): void {
    const entry = this.#entries.get(id);
    if (!entry) return;
    this.#entries.delete(id);
    this.#bytes -= entry.bytes;
    const own = this.#byPrincipal.get(entry.principal);
    own?.delete(id);
    if (own?.size === 0) this.#byPrincipal.delete(entry.principal);
  }
}

const idOf = (claim: KeyClaim) => `${claim.principal}\n${claim.key}`;
