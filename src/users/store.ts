/**
 * Where users are kept. Stores store, query and stamp each write's `created_at` and `updated_at`
 * (strictly increasing, so creation order is time order); every other rule of the contract (check
 * order, defaults, ids, uniqueness modes) lives in `UserService`. The backends are in stores/, opened
 * through stores/registry.ts.
 */
import type { ListParams, ListResult } from './query.js';
import type { ClearableField } from './fields.js';
import type { User, UserFields } from './schema.js';
import type { IdempotencyKeys, KeyClaim, SavedReply } from './idempotency-keys.js';
import type { ChangeLog } from './changes.js';

/**
 * The key under which email uniqueness is decided (docs/decisions.md): surrounding white space trimmed,
 * compared case-insensitively. Stores index by it; the stored email keeps what the client sent.
 * Lower-casing alone is not case-insensitive for every script: `STRASSE` and `straße`, `ſam` and
 * `sam`, `ΟΔΟΣ` and `οδοσ` differ after it. Upper- then lower-casing again folds those together
 * (Unicode's full case folding, as far as JavaScript offers it). ASCII needs only the first step.
 * An email that is its own key (trimmed and lower-case already, as most are) is returned itself:
 * `toLowerCase` copies the string even when nothing changes, and the memory store keeps every key,
 * so the copy would be a second email string per user (about 48 B each at a million users).
 */
export function emailKey(email: string): string {
  const trimmed = email.trim();
  const lower = trimmed.toLowerCase();
  const key = lower === trimmed ? trimmed : lower;
  return ASCII.test(key) ? key : key.toUpperCase().toLowerCase();
}

// eslint-disable-next-line no-control-regex -- the whole ASCII range, control characters included
const ASCII = /^[\x00-\x7f]*$/;

/**
 * The changes of an update: any of the user's writable fields; one that is absent is kept, one that is
 * `null` (an optional field a PUT left out: fields.ts CLEARABLE_FIELDS) is cleared. The store stamps
 * `updated_at`.
 */
export type Changes = { [F in keyof UserFields]?: F extends ClearableField ? UserFields[F] | null : UserFields[F] };

/** A user before it is stored: the store stamps `created_at` and `updated_at` (strictly increasing). */
export type NewUser = Omit<User, 'created_at' | 'updated_at'>;

/**
 * The versions of a user a write may apply to (If-Match), as `updated_at` values (see `update`): a version,
 * because every store stamps each write of a user later than the one before (docs/decisions.md, "ETags").
 */
export type Expected = readonly string[];

/** A keyed create's claim (http/idempotency.ts) and how its reply is made from the user as stored (`insert`). */
export interface Keep {
  claim: KeyClaim;
  replyOf: (user: User) => SavedReply;
}

/** What the store answers a write whose `expected` versions the user no longer has. */
export const CHANGED = 'changed';
export type Changed = typeof CHANGED;

export interface UserStore {
  /** Idempotency keys of creates, kept where the users are (idempotency-keys.ts). */
  readonly keys: IdempotencyKeys;
  /**
   * The log of every write (changes.ts), appended in the write's own atomic step: a change is in the
   * log exactly when the write is in the store.
   */
  readonly changes: ChangeLog;
  get(id: string): Promise<User | undefined>;
  list(params: ListParams): Promise<ListResult>;
  /**
   * Stores a new user unless another user holds the same email key. Atomic. Resolves with the user as
   * stored, time-stamped by the store: the memory and SQLite stores by the injected clock (clock.ts),
   * PostgreSQL by the database's, so that timestamps are ordered across instances (docs/decisions.md).
   * With `keep`, the user and `keep.replyOf(user)`, stored as its claim's reply, are one atomic step:
   * both or neither. A claim no longer held by its token (released, or taken over past its lease) is a
   * 503 and stores nothing; `email_taken` stores nothing either, and leaves the claim as it was.
   */
  insert(user: NewUser, keep?: Keep): Promise<User | 'email_taken'>;
  /**
   * Applies the changes to one user atomically, so concurrent updates never mix. With `uniqueEmail`,
   * refuses an email key held by another user. Resolves with the user as stored, `updated_at` stamped
   * by the store as for `insert`. With `expected`, resolves `changed` (and writes nothing) unless the
   * user's `updated_at` is one of them, decided in the same atomic step as the write.
   */
  update(
    id: string,
    changes: Changes,
    options: { uniqueEmail: boolean; expected?: Expected },
  ): Promise<User | 'not_found' | 'email_taken' | Changed>;
  /** Returns false when there was no such user; `changed` as `update` does for `expected`. */
  remove(id: string, options?: { expected?: Expected }): Promise<boolean | Changed>;
  /** How many users are stored. */
  count(): Promise<number>;
  /**
   * Stores `users` in order if the store holds no user yet; resolves with whether it did. Instances
   * starting together on one database seed it once.
   */
  seed(users: readonly NewUser[]): Promise<boolean>;
  close(): Promise<void>;
}
