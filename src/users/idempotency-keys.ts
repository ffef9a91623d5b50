/**
 * Idempotency keys of creates (http/idempotency.ts gives them their HTTP meaning): each key a principal
 * sent, with the fingerprint of the body it came with and, once the create is over, the reply it got.
 * Kept where the users are (a Map, a SQLite table, a PostgreSQL table), so that any instance on the
 * same database answers a repeat; every backend's `UserStore.keys` is one of these.
 */
import { tryAgainShortly, type RosterError } from '../errors.js';

/** A reply as it was sent, kept so that a repeat gets the same bytes. */
export interface SavedReply {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: string;
}

/** Who sent which key with which body, and until when the key is held (milliseconds since the epoch). */
export interface KeyClaim {
  principal: string;
  key: string;
  /** SHA-256 of the body, hex. */
  fingerprint: string;
  /** This request's own mark: only it may complete or release the claim. */
  token: string;
  now: number;
  /** When the key and its reply are forgotten (IDEMPOTENCY_KEY_TTL_SECONDS after `now`). */
  expiresAt: number;
  /** Until when a claim without a reply counts as in flight; past it, a repeat takes the key over. */
  leaseUntil: number;
}

export type Claimed =
  | { state: 'claimed' }
  | { state: 'in_flight'; fingerprint: string }
  | { state: 'done'; fingerprint: string; reply: SavedReply };

/**
 * How many keys a store keeps at most (IDEMPOTENCY_MAX_KEYS, IDEMPOTENCY_MAX_KEYS_PER_PRINCIPAL, and in
 * memory IDEMPOTENCY_MAX_BYTES). Past a bound the oldest key it concerns is forgotten (a repeat of it
 * is then processed afresh): past the principal's, that principal's own oldest, so that one client's
 * flood of keys evicts only its own; past the overall one, the oldest of all. Without them a client
 * repeating creates under fresh keys stored a row each time, about 1.2 KB on PostgreSQL, for a day.
 *
 * The defaults (config/settings.ts): 100 000 keys in all, room for a thousand keyed creates an hour
 * over four days' worth of the 24 h TTL; 10 000 a principal, more retries than one client needs in a
 * day, so that it takes ten principals' floods to fill the whole; and in memory 32 MiB, some 25 000
 * keys of typical 201 replies (1.3 KiB each), small beside the users' share of the heap.
 */
export interface KeyBounds {
  maxKeys: number;
  perPrincipal: number;
  /** The memory store's bound on the heap its keys and replies take (heap-size.ts counts them). */
  maxBytes: number;
}

/** The settings' defaults, for stores made without settings (tests, the bench). */
export const DEFAULT_KEY_BOUNDS: KeyBounds = { maxKeys: 100_000, perPrincipal: 10_000, maxBytes: 32 * 1024 * 1024 };

/** How often a SQL store counts its keys afresh; between counts it counts its own claims and deletes. */
const RECOUNT_EVERY_MS = 1000;

/**
 * A SQL store's count of its keys, against IDEMPOTENCY_MAX_KEYS: counting the table at every claim
 * would read every key, so it is counted at most once a second, and kept up by this instance's own
 * claims and deletes in between. Other instances' claims since the last count are missed until the
 * next: the bound holds to within what the others add in a second.
 */
export class KeyTally {
  #count = 0;
  #countedAt = Number.NEGATIVE_INFINITY;

  /** Whether the count is due again at `now`. */
  due(now: number): boolean {
    return now - this.#countedAt >= RECOUNT_EVERY_MS || now < this.#countedAt;
  }

  counted(count: number, now: number): void {
    this.#count = count;
    this.#countedAt = now;
  }

  changed(by: number): void {
    this.#count = Math.max(0, this.#count + by);
  }

  /** Keys past `max`, the oldest of which are to be deleted. */
  excess(max: number): number {
    return Math.max(0, this.#count - max);
  }
}

export interface IdempotencyKeys {
  /** Keys held, of one principal or of all (expired ones not yet swept included). */
  count(principal?: string): Promise<number>;
  /**
   * Claims the key for this request, atomically (across instances on one database): `claimed` when no
   * one holds it (or its holder expired, or left it in flight past its lease), otherwise what holds it.
   */
  claim(claim: KeyClaim): Promise<Claimed>;
  /**
   * Keeps the reply of this request's claim until the claim expires. A create's 201 is not kept
   * through this but with the user itself (store.ts: `insert`'s `keep`).
   */
  complete(claim: KeyClaim, reply: SavedReply): Promise<void>;
  /**
   * Forgets this request's claim if it holds no reply yet: the reply is not one to keep, and a repeat
   * is processed afresh. A claim whose reply was stored (a create that committed although this request
   * saw it fail) stays, and its repeat gets that reply.
   */
  release(claim: KeyClaim): Promise<void>;
}

/** The row of a key a store reads back, whatever its engine. */
export interface KeyRow {
  fingerprint: string;
  status: number | null;
  headers: string | null;
  body: string | null;
}

/** What a stored key means to a new claim of it (the SQL stores keep the reply's headers as JSON text). */
export function claimedOf(row: KeyRow): Claimed {
  if (row.status === null) return { state: 'in_flight', fingerprint: row.fingerprint };
  return {
    state: 'done',
    fingerprint: row.fingerprint,
    reply: {
      status: row.status,
      headers: JSON.parse(row.headers ?? '{}') as Record<string, string>,
      body: row.body ?? '',
    },
  };
}

/** The answer to a keyed create whose claim is no longer its own: nothing was stored. */
export const claimLost = (): RosterError =>
  tryAgainShortly("This request's Idempotency-Key was released or taken over meanwhile; try again shortly");
