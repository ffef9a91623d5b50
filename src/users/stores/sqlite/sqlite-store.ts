/**
 * Users in SQLite (migrations/sqlite/), one file owned by one Roster process: durable users without a
 * database server. Every answer equals the memory store's (query.ts defines them); the files beside
 * this one hold its rows, lists and searches (docs/architecture.md).
 *
 * better-sqlite3 is synchronous: each operation runs to its end before any other request is looked at,
 * so every operation is atomic within the process, and the file is locked against other Roster
 * processes (`SqliteLock`), so nothing else writes it. That is also why the store can keep the count of
 * users per role in memory (read once at open), its decoded users (user-cache.ts) and its searches'
 * totals, and stamp timestamps itself: from the injected clock (clock.ts), as the memory store does,
 * never earlier than a stamp already in the file.
 *
 * A write is acknowledged only after its transaction committed to the WAL (docs/storage.md, "Durability";
 * connection.ts sets `synchronous`). A disk that is full, read-only or failing refuses writes with 503
 * SERVICE_UNAVAILABLE; reads go on, and health reports the `database` as down until a write (or the
 * probe) succeeds again.
 */
import type { ChangeBounds } from '../../changes.js';
import { SqliteChangeLog } from './sqlite-changes.js';
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { createClock, formatMicros, type Clock } from '../../../clock.js';
import { ownFields } from '../../fields.js';
import { positionOf, type ListParams, type ListResult } from '../../query.js';
import type { User } from '../../schema.js';
import {
  CHANGED,
  emailKey,
  type Changed,
  type Changes,
  type Expected,
  type Keep,
  type NewUser,
  type UserStore,
} from '../../store.js';
import { claimLost, type KeyBounds } from '../../idempotency-keys.js';
import { toStored } from '../sql/stored-text.js';
import { fromBlob, toBlob } from './blob-text.js';
import { isUnavailable, SqliteHealth, SqliteLock, unavailable, type SqliteFile } from './sqlite-connection.js';
import { SqliteIdempotencyKeys } from './sqlite-idempotency-keys.js';
import { KEPT_MATCHES } from './kept-searches.js';
import { numberedPage, pageAfter, walkIsShort } from './sqlite-list.js';
import { runRead, SqliteReaders, type Read } from './sqlite-readers.js';
import { openSqlite } from './sqlite-migrations.js';
import { fromRow, INSERT_USER, microsOf, toRow, toUpdate, USER_COLUMNS, type Row } from './sqlite-rows.js';
import { matching, SEARCHED_COLUMNS, Searches } from './search.js';
import { SearchIndex } from './search-index.js';
import { SQLITE_CACHED_BYTES, UserCache } from './user-cache.js';

/** SqliteUserStore.open's options. */
type Options = {
  cachedBytes?: number;
  clock?: Clock;
  keptMatches?: number;
  keyBounds?: KeyBounds;
  changeBounds?: ChangeBounds;
};

export class SqliteUserStore implements UserStore {
  readonly health: SqliteHealth;
  readonly keys: SqliteIdempotencyKeys;
  /** Every write's change, in the write's transaction (sqlite-changes.ts). */
  readonly changes: SqliteChangeLog;
  readonly #db: Database.Database;
  readonly #lock: SqliteLock | undefined;
  /** Users per role (the role as the client sent it): the total of a list without search, and count(). */
  readonly #roles = new Map<string, number>();
  /** The last stamp handed out (microseconds): every next one is later, even past a clock stepped back. */
  #last: number;
  readonly #clock: Clock;
  readonly #statements = new Map<string, Database.Statement>();
  readonly #cache: UserCache;
  readonly #index: SearchIndex;
  readonly #searches: Searches;
  /** The reads that may take long, off the REST thread (sqlite-readers.ts). */
  readonly #readers: SqliteReaders;

  private constructor(
    db: Database.Database,
    path: string,
    lock: SqliteLock | undefined,
    logger: Logger,
    options: Options,
  ) {
    this.#db = db;
    this.#clock = options.clock ?? createClock();
    this.#lock = lock;
    this.#cache = new UserCache(options.cachedBytes ?? SQLITE_CACHED_BYTES);
    this.health = new SqliteHealth(logger, () => this.#probe());
    this.changes = new SqliteChangeLog(this.#statement, options.changeBounds);
    this.keys = new SqliteIdempotencyKeys(this.#statement, (work) => this.#write(work), options.keyBounds);
    const roles = db.prepare('SELECT role, count(*) AS users FROM users GROUP BY role').all();
    for (const { role, users } of roles as { role: Buffer; users: number }[]) this.#roles.set(fromBlob(role), users);
    const stamps = 'coalesce((SELECT max(created_at) FROM users), 0), coalesce((SELECT max(updated_at) FROM users), 0)';
    this.#last = (db.prepare(`SELECT max(${stamps}) AS last`).get() as { last: number }).last;
    this.#index = new SearchIndex(db, this.#statement, this.health, logger);
    const keptMatches = options.keptMatches ?? KEPT_MATCHES;
    this.#readers = new SqliteReaders(path, this.#statement);
    this.#searches = new Searches(
      this.#statement,
      this.#readers.read,
      this.#index,
      (role) => this.#usersOf(role),
      keptMatches,
    );
  }

  /**
   * Opens the file (sqlite-migrations.ts: openSqlite) and returns the store. `cachedBytes` bounds the cache of
   * decoded users (SQLITE_CACHED_BYTES unless given); `clock` stamps the writes, as the memory store's
   * does; `keptMatches` bounds the matches kept per needle searched (KEPT_MATCHES unless given).
   */
  static async open(config: SqliteFile, logger: Logger, options: Options = {}): Promise<SqliteUserStore> {
    const { db, lock, applied } = await openSqlite(config);
    try {
      if (applied.length > 0) logger.info({ applied }, 'database migrations applied');
      db.exec(
        'CREATE TABLE IF NOT EXISTS roster_probe (only_row INTEGER PRIMARY KEY CHECK (only_row = 1), at INTEGER NOT NULL)',
      );
      return new SqliteUserStore(db, config.path, lock, logger, options);
    } catch (error) {
      db.close();
      lock?.release();
      throw error;
    }
  }

  async get(id: string): Promise<User | undefined> {
    return this.#read(() => {
      const rowid = this.#statement('SELECT created_at FROM users WHERE id = ?').pluck().get(toBlob(id)) as
        number | undefined;
      return rowid === undefined ? undefined : this.#userAt(rowid);
    });
  }

  /**
   * A page: its rowids read here when that is quick (the first pages, a cursor's seek), else off the
   * REST thread (searches, deep pages: sqlite-readers.ts); then the users of those rowids read here,
   * by their keys. A user deleted between the two reads is left out of the page.
   */
  async list(params: ListParams): Promise<ListResult> {
    return this.#read(async () => {
      // Every user holds the empty needle: a search for it is the list without search.
      const needle = params.search === undefined ? '' : toStored(params.search.toLowerCase());
      if (needle !== '') this.#index.beforeSearch();
      const total = needle === '' ? this.#usersOf(params.role) : await this.#searches.total(params, needle);
      if (params.after === undefined) {
        const rowids =
          needle !== ''
            ? await this.#searches.page(params, needle, total)
            : await numberedPage(walkIsShort(params, total) ? this.#here : this.#readers.read, params, total);
        return { users: this.#usersAt(rowids), total };
      }
      const search = needle === '' ? undefined : matching(needle, false);
      const rowids = await pageAfter(search ? this.#readers.read : this.#here, params, params.after, search);
      const users = this.#usersAt(rowids.slice(0, params.limit));
      const more = rowids.length > params.limit && users.length > 0;
      return { users, total, ...(more && { next: positionOf(users.at(-1)!, params.sort) }) };
    });
  }

  async insert(user: NewUser, keep?: Keep): Promise<User | 'email_taken'> {
    const key = toStored(emailKey(user.email));
    const stored = this.#write(() =>
      keep ? this.#insertKept(user, key, keep) : this.#db.transaction(() => this.#insertRow(user, key)).immediate(),
    );
    if (stored === 'email_taken') return stored;
    this.changes.told();
    // Only once committed: the counts, the searches and the cache follow what the file holds.
    this.#counted(user.role, 1);
    this.#searches.changed(stored.now, undefined, user);
    return this.#cache.set(stored.now, stored.user);
  }

  /** A keyed create: the claim checked, the user and its key's reply stored, in one transaction (store.ts: Keep). */
  #insertKept(user: NewUser, key: string, keep: Keep): { now: number; user: User } | 'email_taken' {
    const kept = this.#db.transaction(() => {
      if (!this.keys.holds(keep.claim)) throw claimLost();
      const stored = this.#insertRow(user, key);
      if (stored !== 'email_taken') this.keys.keep(keep.claim, keep.replyOf(stored.user));
      return stored;
    });
    return kept.immediate();
  }

  /** Inserts the user unless its email key is held; the caller counts and caches it. */
  #insertRow(user: NewUser, key: string): { now: number; user: User } | 'email_taken' {
    if (this.#statement('SELECT 1 FROM users WHERE email_key = ? LIMIT 1').get(key)) return 'email_taken';
    const id = toBlob(user.id);
    if (this.#statement('SELECT 1 FROM users WHERE id = ?').get(id)) throw new Error(`duplicate user id ${user.id}`);
    const now = this.#next();
    this.#statement(INSERT_USER).run(...toRow(user, now));
    const stamp = formatMicros(now);
    const stored = ownFields({ ...user, created_at: stamp, updated_at: stamp });
    this.changes.append('created', stored.id, stored, null, stamp);
    return { now, user: stored };
  }

  async update(
    id: string,
    changes: Changes,
    options: { uniqueEmail: boolean; expected?: Expected },
  ): Promise<User | 'not_found' | 'email_taken' | Changed> {
    const result = this.#write(() => this.#db.transaction(() => this.#updateRow(id, changes, options)).immediate());
    if (typeof result !== 'object') return result;
    this.changes.told();
    // Only once committed (a commit can fail: a full disk): counts, searches and cache follow the file.
    const { rowid, before, next } = result;
    if (next.role !== before.role) {
      this.#counted(before.role, -1);
      this.#counted(next.role, 1);
    }
    this.#searches.changed(rowid, before, next);
    return this.#cache.set(rowid, next);
  }

  /** The update, inside its transaction with its change; the caller makes memory follow once committed. */
  #updateRow(
    id: string,
    changes: Changes,
    options: { uniqueEmail: boolean; expected?: Expected },
  ): { rowid: number; before: User; next: User } | 'not_found' | 'email_taken' | Changed {
    const found = this.#statement('SELECT created_at, email_key, updated_at FROM users WHERE id = ?').get(
      toBlob(id),
    ) as { created_at: number; email_key: string; updated_at: number } | undefined;
    if (!found) return 'not_found';
    if (changedSince(found.updated_at, options.expected)) return CHANGED;
    const rowid = found.created_at;
    const key = changes.email === undefined ? undefined : toStored(emailKey(changes.email));
    if (
      options.uniqueEmail &&
      this.#statement('SELECT 1 FROM users WHERE email_key = ? AND created_at <> ? LIMIT 1').get(
        key ?? found.email_key,
        rowid,
      )
    ) {
      return 'email_taken';
    }
    const before = this.#userAt(rowid);
    const now = this.#next();
    const update = toUpdate(changes, key, now, rowid);
    this.#statement(update.sql).run(...update.values);
    // Exactly the user's own fields, in the contract's order, whatever else `changes` carries.
    const next = ownFields({ ...before, ...changes, updated_at: formatMicros(now) });
    this.changes.append('updated', id, next, before.role, next.updated_at);
    return { rowid, before, next };
  }

  async remove(id: string, options: { expected?: Expected } = {}): Promise<boolean | Changed> {
    const removed = this.#write(() => this.#db.transaction(() => this.#removeRow(id, options)).immediate());
    if (typeof removed !== 'object') return removed;
    this.changes.told();
    // Only once committed, as in update.
    const { rowid, role, texts } = removed;
    this.#cache.delete(rowid);
    this.#counted(role, -1);
    this.#searches.removed(rowid, role, texts);
    return true;
  }

  /** The delete, inside its transaction with its change; the caller makes memory follow once committed. */
  #removeRow(
    id: string,
    options: { expected?: Expected },
  ): { rowid: number; role: string; texts: (string | null)[] } | false | Changed {
    // Synchronous: nothing writes between this read and the delete.
    if (options.expected !== undefined) {
      const updatedAt = this.#statement('SELECT updated_at FROM users WHERE id = ?').pluck().get(toBlob(id)) as
        number | undefined;
      if (updatedAt === undefined) return false;
      if (changedSince(updatedAt, options.expected)) return CHANGED;
    }
    const gone = this.#statement(`DELETE FROM users WHERE id = ? RETURNING role, created_at, ${SEARCHED_COLUMNS}`)
      .raw()
      .get(toBlob(id)) as [Buffer, number, ...(string | null)[]] | undefined;
    if (gone === undefined) return false;
    const [role, rowid, ...texts] = gone;
    const roleName = fromBlob(role);
    this.changes.append('deleted', id, null, roleName, formatMicros(this.#next()));
    return { rowid, role: roleName, texts };
  }

  async count(): Promise<number> {
    return this.#usersOf(undefined);
  }

  async seed(users: readonly NewUser[]): Promise<boolean> {
    if (this.#usersOf(undefined) > 0) return false;
    // One transaction: after a crash, the seed users are all there or none is (and then seeded again).
    const all = this.#db.transaction(() => {
      for (const user of users) {
        const now = this.#next();
        this.#statement(INSERT_USER).run(...toRow(user, now));
        const stamp = formatMicros(now);
        const stored = ownFields({ ...user, created_at: stamp, updated_at: stamp });
        this.changes.append('created', stored.id, stored, null, stamp);
      }
    });
    this.#write(() => all.immediate());
    this.changes.told();
    for (const user of users) this.#counted(user.role, 1);
    this.#searches.clear();
    return true;
  }

  async close(): Promise<void> {
    await this.#readers.close();
    this.#index.close();
    this.changes.close();
    this.health.close();
    this.#cache.clear();
    // Closing the last connection checkpoints the WAL into the database file and removes it.
    if (this.#db.open) this.#db.close();
    this.#lock?.release();
  }

  /** The heap the cache of decoded users takes, as heap-size.ts counts it; never more than its bound. */
  get cachedBytes(): number {
    return this.#cache.bytes;
  }

  /** The database file's connection, for the bench (bulk fill) and the tests. */
  get database(): Database.Database {
    return this.#db;
  }

  /** The user stored at `rowid` (which the caller has just read from the file). */
  #userAt(rowid: number): User {
    return this.#userIfAny(rowid)!;
  }

  /** The user stored at `rowid`, if it still is (a reader found it an instant ago: it may be gone since). */
  #userIfAny(rowid: number): User | undefined {
    const known = this.#cache.get(rowid);
    if (known) return known;
    const row = this.#statement(`SELECT ${USER_COLUMNS} FROM users WHERE created_at = ?`).get(rowid) as Row | undefined;
    return row && this.#cache.set(rowid, fromRow(row));
  }

  /** The users at `rowids` still stored, in that order. */
  #usersAt(rowids: readonly number[]): User[] {
    const users: User[] = [];
    for (const rowid of rowids) {
      const user = this.#userIfAny(rowid);
      if (user) users.push(user);
    }
    return users;
  }

  /** A read on this thread, on the store's own connection: for the reads that are quick. */
  readonly #here: Read = async <T>(sql: string, values: readonly unknown[], shape: 'value' | 'column' | 'rows') =>
    runRead(this.#statement(sql), values, shape) as T;

  /** Users of `role` (every user without one): the count kept per role, no count of the table. */
  #usersOf(role: string | undefined): number {
    if (role !== undefined) return this.#roles.get(role) ?? 0;
    let total = 0;
    for (const users of this.#roles.values()) total += users;
    return total;
  }

  #counted(role: string, change: number): void {
    const users = (this.#roles.get(role) ?? 0) + change;
    if (users === 0) this.#roles.delete(role);
    else this.#roles.set(role, users);
  }

  #next(): number {
    this.#last = Math.max(microsOf(this.#clock.next()), this.#last + 1);
    return this.#last;
  }

  /** A real write, for the probe while writes fail: succeeds only once the file can be written again. */
  #probe(): void {
    this.#statement('INSERT OR REPLACE INTO roster_probe (only_row, at) VALUES (1, ?)').run(Date.now());
  }

  /** The prepared statement of `sql`, prepared once (connection.ts: Statements). */
  readonly #statement = (sql: string): Database.Statement => {
    let statement = this.#statements.get(sql);
    if (!statement) this.#statements.set(sql, (statement = this.#db.prepare(sql)));
    return statement;
  };

  /** A write: its outcome feeds health; a disk that cannot take it gives 503. */
  #write<T>(work: () => T): T {
    try {
      const result = work();
      this.health.succeeded();
      this.#index.written();
      return result;
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      this.health.failed(error);
      throw unavailable();
    }
  }

  /** A read: a file that cannot be read just now (I/O error) gives 503 too, without marking writes down. */
  async #read<T>(work: () => T | Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (isUnavailable(error)) throw unavailable();
      throw error;
    }
  }
}

/** Whether a write's If-Match versions (store.ts: Expected) miss the row's `updated_at` (microseconds). */
const changedSince = (updatedAt: number, expected: Expected | undefined) =>
  expected !== undefined && !expected.includes(formatMicros(updatedAt));
