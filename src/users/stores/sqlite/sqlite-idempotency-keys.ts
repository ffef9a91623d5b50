/**
 * Idempotency keys in the SQLite file, beside the users (migrations/sqlite/002). better-sqlite3 is
 * synchronous and this process is the file's only writer, so a claim (read, then write) is atomic.
 * Expired keys are deleted by each claim, a bounded batch at a time, through the expiry index.
 */
import {
  claimedOf,
  type Claimed,
  type IdempotencyKeys,
  type KeyClaim,
  type KeyRow,
  type SavedReply,
} from '../../idempotency-keys.js';
import type { Statements } from './sqlite-connection.js';

/** Expired keys deleted per claim at most: a claim never pays for a long backlog at once. */
const SWEEP = 100;

export class SqliteIdempotencyKeys implements IdempotencyKeys {
  constructor(
    private readonly statement: Statements,
    /** The store's write wrapper: a disk that refuses writes gives 503. */
    private readonly write: <T>(work: () => T) => T,
  ) {}

  async claim(claim: KeyClaim): Promise<Claimed> {
    return this.write(() => {
      this.statement(
        'DELETE FROM idempotency_keys WHERE (principal, key) IN (SELECT principal, key FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)',
      ).run(claim.now, SWEEP);
      const held = this.statement(
        `SELECT fingerprint, status, headers, body FROM idempotency_keys
         WHERE principal = ? AND key = ? AND expires_at > ? AND (status IS NOT NULL OR lease_until > ?)`,
      ).get(claim.principal, claim.key, claim.now, claim.now) as KeyRow | undefined;
      if (held) return claimedOf(held);
      this.statement(
        `INSERT OR REPLACE INTO idempotency_keys (principal, key, fingerprint, token, expires_at, lease_until)
         VALUES (?, ?, ?, ?, ?, ?)`,
      ).run(claim.principal, claim.key, claim.fingerprint, claim.token, claim.expiresAt, claim.leaseUntil);
      return { state: 'claimed' } as const;
    });
  }

  async complete(claim: KeyClaim, reply: SavedReply): Promise<void> {
    this.write(() => this.keep(claim, reply));
  }

  async release(claim: KeyClaim): Promise<void> {
    this.write(() =>
      this.statement(
        'DELETE FROM idempotency_keys WHERE principal = ? AND key = ? AND token = ? AND status IS NULL',
      ).run(claim.principal, claim.key, claim.token),
    );
  }

  /** Whether this request still holds its claim; the store's keyed insert asks inside its transaction. */
  holds(claim: KeyClaim): boolean {
    return (
      this.statement('SELECT 1 FROM idempotency_keys WHERE principal = ? AND key = ? AND token = ?').get(
        claim.principal,
        claim.key,
        claim.token,
      ) !== undefined
    );
  }

  /** Keeps the reply of this request's claim: one statement, in whatever transaction the caller runs. */
  keep(claim: KeyClaim, reply: SavedReply): void {
    this.statement(
      'UPDATE idempotency_keys SET status = ?, headers = ?, body = ? WHERE principal = ? AND key = ? AND token = ?',
    ).run(reply.status, JSON.stringify(reply.headers), reply.body, claim.principal, claim.key, claim.token);
  }
}
