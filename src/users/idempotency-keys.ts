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

export interface IdempotencyKeys {
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
