/**
 * Idempotency keys in PostgreSQL (migrations/postgres/007), shared by every instance on the database. A claim is
 * one INSERT … ON CONFLICT of its own, committed at once: of two instances claiming one key, exactly
 * one inserts (or takes over an expired or abandoned row), and the other reads what holds the key.
 * The user is inserted after the claim, in one transaction with its reply (postgres-store.ts: `insert`
 * with `keep`): that transaction first locks the claim's row (`lock`), so it inserts nothing once the
 * claim was released or taken over, and a repeat or a release meeting the row waits for its COMMIT.
 * A create whose outcome its instance could not see (a timeout, a connection lost at COMMIT) is thus
 * either wholly there, reply included, or wholly absent. A crash after the claim leaves the key in
 * flight until its lease ends, and a repeat then takes it over (docs/decisions.md).
 */
import type { Query } from './postgres-connection.js';
import { toStored } from '../sql/stored-text.js';
import {
  claimLost,
  claimedOf,
  type Claimed,
  type IdempotencyKeys,
  type KeyClaim,
  type KeyRow,
  type SavedReply,
} from '../../idempotency-keys.js';

/** How often an instance deletes expired keys, and how many at most each time. */
const SWEEP_EVERY_MS = 60_000;
const SWEEP = 1000;

/** A claim finds the key released between its INSERT and its read this many times at most before it gives up. */
const ATTEMPTS = 3;

const CLAIM = `INSERT INTO idempotency_keys AS held (principal, key, fingerprint, token, expires_at, lease_until)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (principal, key) DO UPDATE
    SET fingerprint = excluded.fingerprint, token = excluded.token, expires_at = excluded.expires_at,
        lease_until = excluded.lease_until, status = NULL, headers = NULL, body = NULL
    WHERE held.expires_at <= $7 OR (held.status IS NULL AND held.lease_until <= $7)
  RETURNING 1`;

export class PostgresIdempotencyKeys implements IdempotencyKeys {
  #swept = 0;

  constructor(private readonly query: Query) {}

  async claim(claim: KeyClaim): Promise<Claimed> {
    await this.#sweep(claim.now);
    const principal = toStored(claim.principal);
    for (let attempt = 1; ; attempt++) {
      const { rowCount } = await this.query(
        CLAIM,
        [principal, claim.key, claim.fingerprint, claim.token, claim.expiresAt, claim.leaseUntil, claim.now],
        true,
      );
      if (rowCount === 1) return { state: 'claimed' };
      const { rows } = await this.query<KeyRow>(
        'SELECT fingerprint, status, headers, body FROM idempotency_keys WHERE principal = $1 AND key = $2',
        [principal, claim.key],
        true,
      );
      if (rows[0]) return claimedOf(rows[0]);
      if (attempt === ATTEMPTS) return { state: 'in_flight', fingerprint: claim.fingerprint };
    }
  }

  async complete(claim: KeyClaim, reply: SavedReply): Promise<void> {
    await this.keep(this.query, claim, reply);
  }

  /** Deletes nothing once a reply is stored; one racing the create's transaction waits for its COMMIT. */
  async release(claim: KeyClaim): Promise<void> {
    await this.query(
      'DELETE FROM idempotency_keys WHERE principal = $1 AND key = $2 AND token = $3 AND status IS NULL',
      [toStored(claim.principal), claim.key, claim.token],
      true,
    );
  }

  /** Locks this request's claim row in the caller's transaction; 503 (claimLost) when it holds it no more. */
  async lock(query: Query, claim: KeyClaim): Promise<void> {
    const { rowCount } = await query(
      'SELECT 1 FROM idempotency_keys WHERE principal = $1 AND key = $2 AND token = $3 FOR UPDATE',
      [toStored(claim.principal), claim.key, claim.token],
      true,
    );
    if (rowCount !== 1) throw claimLost();
  }

  /** Stores the reply of this request's claim, through `query` (the caller's transaction, or the pool). */
  async keep(query: Query, claim: KeyClaim, reply: SavedReply): Promise<void> {
    await query(
      'UPDATE idempotency_keys SET status = $4, headers = $5, body = $6 WHERE principal = $1 AND key = $2 AND token = $3',
      [toStored(claim.principal), claim.key, claim.token, reply.status, JSON.stringify(reply.headers), reply.body],
      true,
    );
  }

  async #sweep(now: number): Promise<void> {
    if (now - this.#swept < SWEEP_EVERY_MS) return;
    this.#swept = now;
    await this.query(
      `DELETE FROM idempotency_keys WHERE (principal, key) IN
         (SELECT principal, key FROM idempotency_keys WHERE expires_at <= $1 LIMIT ${SWEEP})`,
      [now],
    );
  }
}
