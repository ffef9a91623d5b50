/** SQL fragments of the PostgreSQL store's writes (postgres-store.ts): stamps, preconditions, advisory locks. */
import { emailKey } from '../../store.js';
import { toStored } from '../sql/stored-text.js';
import { FORMAT } from './postgres-rows.js';

/**
 * The timestamp of a write: the database's clock, UTC, microseconds, read through roster_stamp
 * (migrations/postgres/006) so that within one instance it strictly increases. `$n` is the instance's key.
 */
export const stamp = (n: number) => `roster_stamp($${n})`;
/**
 * The `updated_at` of an update: the stamp, and in any case later than the row's own (two instances'
 * stamps may share a microsecond), so that a user's `updated_at` strictly increases with each write
 * and names its version (its ETag, docs/decisions.md).
 */
export const restamp = (n: number) => `greatest(${stamp(n)}, users.updated_at + interval '1 microsecond')`;
/** If-Match (store.ts: Expected) as SQL: the row's `updated_at`, formatted as users are served, is one of `$n`. */
export const isExpected = (n: number) => `to_char(users.updated_at, ${FORMAT}) = ANY($${n}::text[])`;
/** Advisory lock on an email key (64-bit hash; a collision only makes two keys wait for each other). */
export const KEY_LOCK = `pg_advisory_xact_lock(hashtextextended('roster.email:' || $1, 0))`;
/** Advisory lock on a user, taken first: while held, no one else changes the user's email key. */
export const USER_LOCK = `pg_advisory_xact_lock(hashtextextended('roster.user:' || $1, 0))`;
/** Key of the session lock held while seeding, per schema. */
export const SEED_LOCK = `hashtextextended('roster.seed:' || current_schema(), 0)`;
/** The columns derived from a user's email: its search copy and its key. */
export const emailColumns = (email: string) => ({
  email_lower: toStored(email.toLowerCase()),
  email_key: toStored(emailKey(email)),
});
