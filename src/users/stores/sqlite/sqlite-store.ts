/**
 * Users in SQLite (migrations/sqlite/), one file owned by one Roster process: durable users without a
 * database server. Every answer equals the memory store's (query.ts defines them): rows are written
 * and read by rows.ts, strings as blob-text.ts encodes them, so that SQLite sorts them by code point,
 * and searched in lower-cased columns computed by JavaScript (escaped as sql/stored-text.ts does, for
 * both SQL stores), so that search folds case as the memory store does.
 *
 * better-sqlite3 is synchronous: each operation runs to its end before any other request is looked at,
 * so every operation is atomic within the process, and the file is locked against other Roster
 * processes (`SqliteLock`), so nothing else writes it. That is also why the store can keep the count of
 * users per role in memory (read once at open) and stamp timestamps itself: from the injected clock
 * (clock.ts), as the memory store does, never earlier than a stamp already in the file.
 *
 * Search reads an FTS5 trigram index (migration 004) that writes do not update themselves: the store
 * brings it up to date in one transaction for all the users written since, shortly after writes and
 * before any search reads it (#indexSearches, migration 005), so that a create or a patch does not
 * write an index segment of its own.
 *
 * Durability: WAL mode. A write is acknowledged only after its transaction committed, i.e. its frames
 * were written to the WAL file: a crash of the process (kill -9) cannot lose it, as the operating
 * system holds the data. `synchronous=FULL` also syncs the WAL at every commit, so that a power cut or
 * a crash of the operating system cannot lose it either; NORMAL syncs only at checkpoints.
 *
 * A disk that is full, read-only or failing refuses writes with 503 SERVICE_UNAVAILABLE; reads go on,
 * and health reports the `database` as down until a write (or the probe) succeeds again.
 */
import type Database from 'better-sqlite3';
import { getHeapStatistics } from 'node:v8';
import type { Logger } from 'pino';
import { createClock, formatMicros, type Clock } from '../../../clock.js';
import { ownFields, SEARCHABLE_FIELDS } from '../../fields.js';
import { likePattern, toStored } from '../sql/stored-text.js';
import { positionOf, sortedField, type ListParams, type ListResult, type Position } from '../../query.js';
import type { User } from '../../schema.js';
import { userBytes } from '../../heap-size.js';
import { fromBlob, toBlob } from './blob-text.js';
import { fromRow, INSERT_USER, microsOf, toRow, toUpdate, USER_COLUMNS, type Row } from './rows.js';
import { searchColumn } from '../sql/columns.js';
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
import { SqliteIdempotencyKeys } from './idempotency-keys.js';
import { claimLost } from '../../idempotency-keys.js';
import { connect, isUnavailable, SqliteHealth, SqliteLock, unavailable, type SqliteFile } from './connection.js';
import { migrateSqlite, readSqliteMigrations } from './migrations.js';
import { KEPT_MATCHES, KeptNeedle, KeptSearches, type Searched } from './kept-searches.js';

/** Characters in a trigram: the shortest needle the search index (migration 004) can find. */
const TRIGRAM = 3;

/**
 * How long after a write the users it noted are indexed for search (migration 005), unless a search
 * comes first: the writes of this long share one FTS5 segment instead of writing one each.
 */
export const SEARCH_INDEX_DELAY_MS = 50;
/** Writes noted at most before they are indexed at once, by the write that reaches the bound. */
export const SEARCH_INDEX_BATCH = 1_000;

/** Users kept decoded in memory at most (a few MB for typical users; see SqliteUserStore's cache). */
export const SQLITE_CACHED_USERS = 20_000;
/**
 * And the most heap they may take, counted as heap-size.ts does: a 32nd of the heap limit (128 MiB on a
 * 4 GiB heap, 8 MiB on 256 MiB), so that however large the users' fields, the cache never crowds the heap.
 */
export const SQLITE_CACHED_BYTES = Math.floor(getHeapStatistics().heap_size_limit / 32);

export class SqliteUserStore implements UserStore {
  readonly health: SqliteHealth;
  readonly keys: SqliteIdempotencyKeys;
  readonly #db: Database.Database;
  readonly #lock: SqliteLock | undefined;
  /** Users per role (the role as the client sent it): the total of a list without search, and count(). */
  readonly #roles = new Map<string, number>();
  /** The last stamp handed out (microseconds): every next one is later, also across restarts. */
  #last: number;
  readonly #clock: Clock;
  readonly #statements = new Map<string, Database.Statement>();
  /**
   * Users as last read or written, by rowid (created_at). This process is the file's only writer, so an
   * entry is replaced or dropped by every write of its user and is never stale. Reads then fetch only
   * rowids from the indexes (no row, no decoding), and hand out the same object until the user changes,
   * as the memory store does, so the reply cache keeps each user's JSON (http/routes/user-json.ts).
   * Bounded by count and by bytes (heap-size.ts): when either would be passed it starts again empty.
   */
  readonly #cache = new Map<number, { user: User; bytes: number }>();
  #cachedBytes = 0;
  readonly #maxCachedBytes: number;
  /** Totals of recent searches, and their matches while few, kept exact by every write (kept-searches.ts). */
  readonly #kept = new KeptSearches();
  /** Matches kept per needle at most (KEPT_MATCHES unless the tests ask for fewer). */
  readonly #keptMatches: number;
  readonly #logger: Logger;
  /** Writes since the noted users were last indexed for search (#indexSearches), and the timer that will. */
  #unindexedWrites = 0;
  #indexTimer: NodeJS.Timeout | undefined;
  #reindexing: Database.Transaction<() => void> | undefined;
  /**
   * Whether the search index holds every user as the file does, for the search being answered: false
   * only while the noted users cannot be indexed (the disk refuses writes), and then searches test
   * every user's text instead of reading the index.
   */
  #indexCurrent = true;

  private constructor(
    db: Database.Database,
    lock: SqliteLock | undefined,
    logger: Logger,
    options: { cachedBytes: number; clock: Clock; keptMatches: number },
  ) {
    this.#keptMatches = options.keptMatches;
    this.#logger = logger;
    this.#db = db;
    this.#clock = options.clock;
    this.#lock = lock;
    this.#maxCachedBytes = options.cachedBytes;
    this.health = new SqliteHealth(logger, () => this.#probe());
    this.keys = new SqliteIdempotencyKeys(
      (sql) => this.#statement(sql),
      (work) => this.#write(work),
    );
    const roles = db.prepare('SELECT role, count(*) AS users FROM users GROUP BY role').all();
    for (const { role, users } of roles as { role: Buffer; users: number }[]) this.#roles.set(fromBlob(role), users);
    const stamps = 'coalesce((SELECT max(created_at) FROM users), 0), coalesce((SELECT max(updated_at) FROM users), 0)';
    this.#last = (db.prepare(`SELECT max(${stamps}) AS last`).get() as { last: number }).last;
    // Users noted but not indexed when the file was last closed (a crash): indexed shortly, or by the first search.
    this.#scheduleIndexing();
  }

  /**
   * Locks the file against other Roster processes (DatabaseInUse if one holds it), opens it, applies
   * pending migrations, and returns the store. `cachedBytes` bounds the cache of decoded users
   * (SQLITE_CACHED_BYTES unless given); `clock` stamps the writes, as the memory store's does;
   * `keptMatches` bounds the matches kept per needle searched (KEPT_MATCHES unless given; kept-searches.ts).
   */
  static async open(
    config: SqliteFile,
    logger: Logger,
    options: { cachedBytes?: number; clock?: Clock; keptMatches?: number } = {},
  ): Promise<SqliteUserStore> {
    const migrations = await readSqliteMigrations();
    const lock = config.path === ':memory:' ? undefined : new SqliteLock(config.path);
    let db: Database.Database | undefined;
    try {
      db = connect(config);
      const applied = migrateSqlite(db, migrations);
      if (applied.length > 0) logger.info({ applied }, 'database migrations applied');
      db.exec(
        'CREATE TABLE IF NOT EXISTS roster_probe (only_row INTEGER PRIMARY KEY CHECK (only_row = 1), at INTEGER NOT NULL)',
      );
      return new SqliteUserStore(db, lock, logger, {
        cachedBytes: options.cachedBytes ?? SQLITE_CACHED_BYTES,
        clock: options.clock ?? createClock(),
        keptMatches: options.keptMatches ?? KEPT_MATCHES,
      });
    } catch (error) {
      db?.close();
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

  async list(params: ListParams): Promise<ListResult> {
    return this.#read(() => {
      // Every user holds the empty needle: a search for it is the list without search.
      const needle = params.search === undefined ? '' : toStored(params.search.toLowerCase());
      // A search reads the trigram index: the users noted by writes since it was last brought up to date go in first.
      if (needle !== '') this.#indexCurrent = this.#indexSearches();
      const filters: string[] = [];
      const values: unknown[] = [];
      if (params.role !== undefined) {
        filters.push('role = ?');
        values.push(toBlob(params.role));
      }
      if (params.after !== undefined) {
        // A search's cursor page tests each user it walks (the matches spread through the order); its
        // total is the search's kept one.
        if (needle === '') return this.#listAfter(params, params.after, filters, values, this.#roleTotal(params.role));
        const { where, values: needles } = this.#matching(needle, false);
        return this.#listAfter(
          params,
          params.after,
          [...filters, where],
          [...values, ...needles],
          this.#searchTotal(params, needle),
        );
      }
      if (needle !== '') return this.#search(params, needle);
      // Without search, the total is the count kept per role: no count of the table.
      const total = this.#roleTotal(params.role);
      if (params.offset >= total || params.limit <= 0) return { users: [], total };
      const where = filters.length === 0 ? '' : `WHERE ${filters.join(' AND ')}`;
      // A page costs a walk over the index entries before it (each index holds the order and ends with
      // the rowid, so only the index is read). As the total is known, a page in the far half is read in
      // the reversed order from the other end (the same index walked backwards), then turned round: no
      // walk passes half the users.
      const far = params.offset > total - params.offset;
      const [limit, offset] = far
        ? [Math.min(params.limit, total - params.offset), Math.max(total - params.offset - params.limit, 0)]
        : [params.limit, params.offset];
      const rowids = this.#statement(
        `SELECT created_at FROM users INDEXED BY ${pageIndex(params)} ${where} ORDER BY ${orderBy(params, far)} LIMIT ? OFFSET ?`,
      )
        .pluck()
        .all(...values, limit, offset) as number[];
      if (far) rowids.reverse();
      return { users: rowids.map((rowid) => this.#userAt(rowid)), total };
    });
  }

  // ---- The cursor's page (`after`): a keyset WHERE on the list's order, read from its index. ----

  /**
   * The page after `after` (query.ts: Position): the users whose (sort value, rowid) come after the
   * cursor's in the list's order, read from the sort's index (each ends with the rowid, so the cursor's
   * place is one seek) up to one user more than the page, which tells whether more follow.
   */
  #listAfter(params: ListParams, after: Position, filters: string[], values: unknown[], total: number): ListResult {
    const where = [...filters, keysetAfter(params)].join(' AND ');
    const keyset = keysetValues(params, after);
    // Without search, the page's own index is named, as for a page by number (pageIndex).
    const index = filters.length <= (params.role === undefined ? 0 : 1) ? ` INDEXED BY ${pageIndex(params)}` : '';
    const rowids = this.#statement(
      `SELECT created_at FROM users${index} WHERE ${where} ORDER BY ${orderBy(params)} LIMIT ?`,
    )
      .pluck()
      .all(...values, ...keyset, params.limit + 1) as number[];
    const users = rowids.slice(0, params.limit).map((rowid) => this.#userAt(rowid));
    const more = rowids.length > params.limit;
    return { users, total, ...(more && { next: positionOf(users.at(-1)!, params.sort) }) };
  }

  // ---- End of the cursor's page. ----

  /** Users of `role` (every user without one): the count kept per role, no count of the table. */
  #roleTotal(role: string | undefined): number {
    return role === undefined ? this.#count() : (this.#roles.get(role) ?? 0);
  }

  /** The kept counts (and, while few, matches) of `needle`, counted at its first search. */
  #keptNeedle(needle: string): KeptNeedle {
    return this.#kept.get(needle) ?? this.#kept.keep(needle, this.#countMatches(needle));
  }

  /** A search's total (of its role, if any): kept, or counted once and then kept. */
  #searchTotal(params: ListParams, needle: string, kept = this.#keptNeedle(needle)): number {
    if (params.role === undefined) return kept.total(undefined)!;
    return (
      kept.total(params.role) ?? kept.counted(params.role, this.#countRole(needle, params.role, kept.total(undefined)!))
    );
  }

  /**
   * A search. Its total is kept (kept-searches.ts): counted at the first search of the needle, then kept
   * exact by every write. Its page comes from the matches kept while they are few. Otherwise, for a
   * needle of three characters or more, from the trigram index: in creation order (the default)
   * straight from the index's rowid order; in another order, the matches alone sorted, unless walking
   * that order reads fewer rows. A shorter needle, which more than KEPT_MATCHES users then hold, walks.
   */
  #search(params: ListParams, needle: string): ListResult {
    const kept = this.#keptNeedle(needle);
    const total = this.#searchTotal(params, needle, kept);
    if (params.offset >= total || params.limit <= 0) return { users: [], total };
    let rowids: number[];
    if (kept.matches) rowids = this.#pageOfMatches(params, kept.matches);
    else if (
      [...needle].length < TRIGRAM ||
      !this.#indexCurrent ||
      (!inCreationOrder(params) && this.#walkIsShorter(params, total))
    ) {
      rowids = this.#pageWalked(params, needle);
    } else rowids = this.#pageIndexed(params, needle);
    return { users: rowids.map((rowid) => this.#userAt(rowid)), total };
  }

  /**
   * Whether walking the list's order, testing each user until the page is full (about
   * (offset + limit) × users / total rows, the matches being spread through the order), reads fewer
   * rows than sorting the `total` matches.
   */
  #walkIsShorter(params: ListParams, total: number): boolean {
    return (params.offset + params.limit) * this.#count() < total * total;
  }

  /**
   * The users matching `needle`, counted once. A needle of one or two characters has no trigram: one
   * scan of the table (docs/decisions.md) counts every role. A longer one is counted in the trigram
   * index (migrations/sqlite/004), which knows no roles: each role is counted when a search first
   * filters by it (#countRole). While the matches are at most `keptMatches`, they are kept too.
   */
  #countMatches(needle: string): KeptNeedle {
    const { from, where, values } = this.#matching(needle);
    let total: number | undefined;
    if (from !== 'users') {
      const counted = where === 'users_search MATCH ?' ? 'users_search' : from;
      total = this.#statement(`SELECT count(*) FROM ${counted} WHERE ${where}`)
        .pluck()
        .get(...values) as number;
    }
    if (total === undefined || total <= this.#keptMatches) {
      const few = this.#statement(`SELECT users.created_at, users.role FROM ${from} WHERE ${where} LIMIT ?`)
        .raw()
        .all(...values, this.#keptMatches + 1) as [number, Buffer][];
      if (few.length <= this.#keptMatches) {
        const matches = new Map(few.map(([rowid, role]) => [rowid, fromBlob(role)]));
        const counts = new Map<string, number>();
        for (const role of matches.values()) counts.set(role, (counts.get(role) ?? 0) + 1);
        return new KeptNeedle(needle, matches.size, counts, matches, this.#keptMatches);
      }
    }
    if (total !== undefined) return new KeptNeedle(needle, total, undefined, undefined, this.#keptMatches);
    const counts = this.#statement(`SELECT users.role, count(*) FROM ${from} WHERE ${where} GROUP BY users.role`)
      .raw()
      .all(...values) as [Buffer, number][];
    const perRole = counts.map(([role, users]): [string, number] => [fromBlob(role), users]);
    const all = perRole.reduce((sum, [, users]) => sum + users, 0);
    return new KeptNeedle(needle, all, perRole, undefined, this.#keptMatches);
  }

  /**
   * The users of `role` matching `needle`, which has trigrams, counted the cheaper way: each user of
   * the role (found in its index) read and tested, or each of the needle's matches (found in the
   * trigram index) read for its role; both read one row per user, so the fewer users win.
   */
  #countRole(needle: string, role: string, matches: number): number {
    const users = this.#roles.get(role) ?? 0;
    if (users === 0) return 0;
    const indexed = users > matches && this.#indexCurrent;
    const { from, where, values } = this.#matching(needle, indexed);
    return this.#statement(`SELECT count(*) FROM ${from} WHERE ${where} AND users.role = ?`)
      .pluck()
      .get(...values, toBlob(role)) as number;
  }

  /**
   * FROM and WHERE of the users matching `needle`. With a trigram, the needle is one phrase of the
   * index, which only a column holding the whole needle matches (inside an FTS5 string only the double
   * quote is special, written twice). Without, instr() on each column. Either finds the needle anywhere
   * in the stored text; only a needle whose first character may be the inside of an escape
   * (sql/stored-text.ts) needs its hits confirmed at whole characters.
   */
  #matching(
    needle: string,
    indexed = [...needle].length >= TRIGRAM && this.#indexCurrent,
  ): { from: string; where: string; values: unknown[] } {
    const aligned = likePattern(needle) !== undefined;
    const test = (column: string) =>
      aligned ? `instr(users.${column}, ?) > 0` : `roster_contains_aligned(users.${column}, ?)`;
    const anyField = `(${SEARCHABLE_FIELDS.map((field) => test(searchColumn(field))).join(' OR ')})`;
    const needles = SEARCHABLE_FIELDS.map(() => needle);
    if (!indexed) return { from: 'users', where: anyField, values: needles };
    const match = `"${needle.replaceAll('"', '""')}"`;
    const from = 'users_search JOIN users ON users.created_at = users_search.rowid';
    if (aligned) return { from, where: 'users_search MATCH ?', values: [match] };
    return { from, where: `users_search MATCH ? AND ${anyField}`, values: [match, ...needles] };
  }

  /** A page of the matches kept: sorted here in creation order, by SQLite for any other order. */
  #pageOfMatches(params: ListParams, matches: Map<number, string>): number[] {
    const rowids: number[] = [];
    for (const [rowid, role] of matches) if (params.role === undefined || role === params.role) rowids.push(rowid);
    if (inCreationOrder(params)) {
      rowids.sort(sortedField(params.sort) === undefined || !params.descending ? (a, b) => a - b : (a, b) => b - a);
      return rowids.slice(params.offset, params.offset + params.limit);
    }
    // The matches first (CROSS JOIN keeps that order of the loops), each read by its rowid, then sorted.
    return this.#statement(
      `SELECT users.created_at FROM json_each(?) AS matches CROSS JOIN users ON users.created_at = matches.value
       ORDER BY ${orderBy(params, false, 'users.')} LIMIT ? OFFSET ?`,
    )
      .pluck()
      .all(JSON.stringify(rowids), params.limit, params.offset) as number[];
  }

  /**
   * A page through the trigram index: in creation order (the default) straight from the index's own
   * rowid order; in any other order, the matches alone sorted.
   */
  #pageIndexed(params: ListParams, needle: string): number[] {
    const matching = this.#matching(needle);
    const values = [...matching.values];
    let where = matching.where;
    if (params.role !== undefined) {
      where += ' AND users.role = ?';
      values.push(toBlob(params.role));
    }
    const inOrder = inCreationOrder(params);
    // The users table only when a filter or the order reads it: the index alone gives rowids in order.
    const from = where === 'users_search MATCH ?' && inOrder ? 'users_search' : matching.from;
    const order = inOrder
      ? `users_search.rowid ${sortedField(params.sort) === undefined || !params.descending ? 'ASC' : 'DESC'}`
      : orderBy(params, false, 'users.');
    return this.#statement(`SELECT users_search.rowid FROM ${from} WHERE ${where} ORDER BY ${order} LIMIT ? OFFSET ?`)
      .pluck()
      .all(...values, params.limit, params.offset) as number[];
  }

  /**
   * A page found by walking the list's order (its index) and testing each user, until the page is
   * full: for a needle many users hold, few rows. In creation order a role filter walks the role's
   * index (its entries are in rowid order); in any other order `+role` keeps the role from picking the
   * index, so that the order does, and no match list is sorted.
   */
  #pageWalked(params: ListParams, needle: string): number[] {
    const matching = this.#matching(needle, false);
    const values = [...matching.values];
    let where = matching.where;
    if (params.role !== undefined) {
      where += inCreationOrder(params) ? ' AND users.role = ?' : ' AND +users.role = ?';
      values.push(toBlob(params.role));
    }
    return this.#statement(
      `SELECT users.created_at FROM users WHERE ${where} ORDER BY ${orderBy(params, false, 'users.')} LIMIT ? OFFSET ?`,
    )
      .pluck()
      .all(...values, params.limit, params.offset) as number[];
  }

  /** Tells the kept searches (kept-searches.ts) of a committed write: the user as it was (undefined: created) and is. */
  #searchesChanged(rowid: number, before: NewUser | undefined, after: NewUser): void {
    if (this.#kept.empty) return;
    this.#kept.changed(rowid, before && searchedOf(before), searchedOf(after));
  }

  async insert(user: NewUser, keep?: Keep): Promise<User | 'email_taken'> {
    const key = toStored(emailKey(user.email));
    if (keep) return this.#insertKept(user, key, keep);
    return this.#write(() => {
      const stored = this.#insertRow(user, key);
      if (stored === 'email_taken') return stored;
      this.#counted(user.role, 1);
      this.#searchesChanged(stored.now, undefined, user);
      return this.#cached(stored.now, stored.user);
    });
  }

  /** A keyed create: the claim checked, the user and its key's reply stored, in one transaction (store.ts: Keep). */
  #insertKept(user: NewUser, key: string, keep: Keep): User | 'email_taken' {
    const kept = this.#db.transaction(() => {
      if (!this.keys.holds(keep.claim)) throw claimLost();
      const stored = this.#insertRow(user, key);
      if (stored !== 'email_taken') this.keys.keep(keep.claim, keep.replyOf(stored.user));
      return stored;
    });
    const stored = this.#write(() => kept.immediate());
    if (stored === 'email_taken') return stored;
    // Only once committed: the counts and the cache follow what the file holds.
    this.#counted(user.role, 1);
    this.#searchesChanged(stored.now, undefined, user);
    return this.#cached(stored.now, stored.user);
  }

  /** Inserts the user unless its email key is held; the caller counts and caches it. */
  #insertRow(user: NewUser, key: string): { now: number; user: User } | 'email_taken' {
    if (this.#statement('SELECT 1 FROM users WHERE email_key = ? LIMIT 1').get(key)) return 'email_taken';
    const id = toBlob(user.id);
    if (this.#statement('SELECT 1 FROM users WHERE id = ?').get(id)) throw new Error(`duplicate user id ${user.id}`);
    const now = this.#next();
    this.#statement(INSERT_USER).run(...toRow(user, now));
    const stamp = formatMicros(now);
    return { now, user: ownFields({ ...user, created_at: stamp, updated_at: stamp }) };
  }

  async update(
    id: string,
    changes: Changes,
    options: { uniqueEmail: boolean; expected?: Expected },
  ): Promise<User | 'not_found' | 'email_taken' | Changed> {
    return this.#write(() => {
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
      if (next.role !== before.role) {
        this.#counted(before.role, -1);
        this.#counted(next.role, 1);
      }
      this.#searchesChanged(rowid, before, next);
      return this.#cached(rowid, next);
    });
  }

  async remove(id: string, options: { expected?: Expected } = {}): Promise<boolean | Changed> {
    return this.#write(() => {
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
      this.#uncache(rowid);
      this.#counted(fromBlob(role), -1);
      if (!this.#kept.empty) this.#kept.changed(rowid, { role: fromBlob(role), texts }, undefined);
      return true;
    });
  }

  async count(): Promise<number> {
    return this.#count();
  }

  async seed(users: readonly NewUser[]): Promise<boolean> {
    if (this.#count() > 0) return false;
    // One transaction: after a crash, the seed users are all there or none is (and then seeded again).
    const all = this.#db.transaction(() => {
      for (const user of users) this.#statement(INSERT_USER).run(...toRow(user, this.#next()));
    });
    this.#write(() => all.immediate());
    for (const user of users) this.#counted(user.role, 1);
    this.#kept.clear();
    return true;
  }

  async close(): Promise<void> {
    clearTimeout(this.#indexTimer);
    // The noted users indexed now, so that the file's index is current (the next open would do it otherwise).
    if (this.#db.open) this.#indexAside();
    this.health.close();
    this.#cache.clear();
    this.#cachedBytes = 0;
    // Closing the last connection checkpoints the WAL into the database file and removes it.
    if (this.#db.open) this.#db.close();
    this.#lock?.release();
  }

  /** The heap the cache of decoded users takes, as heap-size.ts counts it; never more than its bound. */
  get cachedBytes(): number {
    return this.#cachedBytes;
  }

  /** The database file's connection, for the bench (bulk fill) and the tests. */
  get database(): Database.Database {
    return this.#db;
  }

  /** The user stored at `rowid` (which the caller has just read from the file). */
  #userAt(rowid: number): User {
    const known = this.#cache.get(rowid);
    if (known) return known.user;
    const row = this.#statement(`SELECT ${USER_COLUMNS} FROM users WHERE created_at = ?`).get(rowid) as Row;
    return this.#cached(rowid, fromRow(row));
  }

  /**
   * Keeps `user` as the one of `rowid`, unless it alone would pass the bound; returns it, frozen: the
   * same object goes to every reader until the user changes, so nobody may change it in between (and
   * the reply code keeps the JSON of frozen users, http/routes/user-json.ts).
   */
  #cached(rowid: number, user: User): User {
    Object.freeze(user);
    this.#uncache(rowid);
    const bytes = userBytes(user);
    if (bytes > this.#maxCachedBytes) return user;
    if (this.#cache.size >= SQLITE_CACHED_USERS || this.#cachedBytes + bytes > this.#maxCachedBytes) {
      this.#cache.clear();
      this.#cachedBytes = 0;
    }
    this.#cache.set(rowid, { user, bytes });
    this.#cachedBytes += bytes;
    return user;
  }

  #uncache(rowid: number): void {
    const entry = this.#cache.get(rowid);
    if (entry === undefined) return;
    this.#cache.delete(rowid);
    this.#cachedBytes -= entry.bytes;
  }

  #count(): number {
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
    // The clock's stamps strictly increase; the file's may be later still (a clock stepped back
    // across a restart), and every stamp must pass them.
    this.#last = Math.max(microsOf(this.#clock.next()), this.#last + 1);
    return this.#last;
  }

  /** A real write, for the probe while writes fail: succeeds only once the file can be written again. */
  #probe(): void {
    this.#statement('INSERT OR REPLACE INTO roster_probe (only_row, at) VALUES (1, ?)').run(Date.now());
  }

  #statement(sql: string): Database.Statement {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Indexes for search the users written since the last time (migration 005), in one transaction.
   * Returns whether the index is current; false while the disk refuses the write (health is told;
   * searches then test every user's text). Hand-written because FTS5 has no deferred upkeep of its own:
   * its triggers or a 'rebuild' are the choices it offers, one segment per write or all the users.
   */
  #indexSearches(): boolean {
    // Inside a write's transaction (a keyed create's) the notes are not final yet: the timer comes back to them.
    if (this.#db.inTransaction) return true;
    clearTimeout(this.#indexTimer);
    this.#indexTimer = undefined;
    this.#unindexedWrites = 0;
    if (
      !this.#statement(
        `SELECT EXISTS (SELECT 1 FROM users_search_pending) OR EXISTS (SELECT 1 FROM users WHERE ${CREATED_SINCE_INDEXED})`,
      )
        .pluck()
        .get()
    )
      return true;
    try {
      this.#reindex.immediate();
      this.health.succeeded();
      return true;
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      this.health.failed(error);
      return false;
    }
  }

  /**
   * #indexSearches' transaction: the text of each noted user as the index holds it taken out, the text
   * now of those still there and of the users created since put in, the notes cleared and the mark moved
   * on. The notes are read first (CROSS JOIN), each user then by its rowid.
   */
  get #reindex(): Database.Transaction<() => void> {
    return (this.#reindexing ??= this.#db.transaction(() => {
      for (const sql of [
        `INSERT INTO users_search (users_search, rowid, name_lower, email_lower)
         SELECT 'delete', rowid, name_lower, email_lower FROM users_search_pending`,
        `INSERT INTO users_search (rowid, name_lower, email_lower)
         SELECT users.created_at, users.name_lower, users.email_lower
         FROM users_search_pending CROSS JOIN users ON users.created_at = users_search_pending.rowid`,
        `INSERT INTO users_search (rowid, name_lower, email_lower)
         SELECT created_at, name_lower, email_lower FROM users WHERE ${CREATED_SINCE_INDEXED}`,
        'UPDATE users_search_state SET indexed_up_to = coalesce((SELECT max(created_at) FROM users), indexed_up_to)',
        'DELETE FROM users_search_pending',
      ])
        this.#statement(sql).run();
    }));
  }

  /** After a write: its noted users indexed once SEARCH_INDEX_DELAY_MS passed, or now if SEARCH_INDEX_BATCH writes wait. */
  #scheduleIndexing(): void {
    if (++this.#unindexedWrites >= SEARCH_INDEX_BATCH && !this.#db.inTransaction) {
      this.#indexAside();
      return;
    }
    this.#indexTimer ??= setTimeout(() => {
      this.#indexTimer = undefined;
      if (this.#db.open) this.#indexAside();
    }, SEARCH_INDEX_DELAY_MS).unref();
  }

  /** #indexSearches away from a search: a write already answered, or a timer, must not fail for it. */
  #indexAside(): void {
    try {
      this.#indexSearches();
    } catch (error) {
      // Not a disk refusing writes (#indexSearches tells health of that): logged; the next write or search tries again.
      this.#logger.error({ err: error }, 'indexing users for search failed');
    }
  }

  /** A write: its outcome feeds health; a disk that cannot take it gives 503. */
  #write<T>(work: () => T): T {
    try {
      const result = work();
      this.health.succeeded();
      this.#scheduleIndexing();
      return result;
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      this.health.failed(error);
      throw unavailable();
    }
  }

  /** A read: a file that cannot be read just now (I/O error) gives 503 too, without marking writes down. */
  #read<T>(work: () => T): T {
    try {
      return work();
    } catch (error) {
      if (isUnavailable(error)) throw unavailable();
      throw error;
    }
  }
}

/** The users created since the search index was last brought up to date (migration 005): WHERE of `users`. */
const CREATED_SINCE_INDEXED = 'created_at > (SELECT indexed_up_to FROM users_search_state)';

/** The stored lower-cased texts of the searchable fields, as a delete returns them. */
const SEARCHED_COLUMNS = SEARCHABLE_FIELDS.map(searchColumn).join(', ');

/** A user as the kept searches see it: its role and the stored lower-cased texts rows.ts writes. */
function searchedOf(user: NewUser): Searched {
  const fields = user as unknown as Readonly<Record<string, string | undefined>>;
  return {
    role: user.role,
    texts: SEARCHABLE_FIELDS.map((field) => {
      const value = fields[field];
      return value === undefined ? null : toStored(value.toLowerCase());
    }),
  };
}

/** Whether a write's If-Match versions (store.ts: Expected) miss the row's `updated_at` (microseconds). */
const changedSince = (updatedAt: number, expected: Expected | undefined) =>
  expected !== undefined && !expected.includes(formatMicros(updatedAt));

/** Whether the list is in creation order (rowid order), either way: by created_at, or by no sortable field. */
function inCreationOrder(params: ListParams): boolean {
  const field = sortedField(params.sort);
  return field === undefined || field === 'created_at';
}

/**
 * The index that holds a page's order, entries ending with the rowid and, for a role filter, holding
 * the role (migrations 001 and 003): the page is a walk of it alone, in either direction, testing the
 * role in each entry. Named, not left to the planner: its choice follows the statistics of ANALYZE,
 * which a file may lack or hold only for older indexes, and then it picked an index of the role and
 * sorted all its users (hundreds of milliseconds at 1 000 000 users) instead of walking this one.
 */
function pageIndex(params: ListParams): string {
  const field = sortedField(params.sort);
  const role = params.role !== undefined;
  // Creation order: the rowid's own index (narrower than the table, whose walk reads every row).
  if (field === undefined || field === 'created_at' || (role && field === 'role')) {
    return role ? 'users_role' : 'users_created';
  }
  if (field === 'id') return role ? 'users_role_id' : 'users_id';
  if (field === 'updated_at') return 'users_updated_at';
  if (field === 'role') return params.descending ? 'users_role_desc' : 'users_role';
  return `users_${field}${params.descending ? '_desc' : ''}`;
}

/**
 * The cursor's condition (`?`s: keysetValues) in orderBy's order: after the cursor's (value, rowid). A
 * descending value is `<=` then `<` so that SQLite reads the `DESC` index from the cursor on.
 */
function keysetAfter(params: ListParams): string {
  const field = sortedField(params.sort);
  if (field === undefined) return 'created_at > ?';
  const before = params.descending ? '<' : '>';
  if (field === 'created_at' || field === 'id' || field === 'updated_at') return `${field} ${before} ?`;
  return `${field} ${before}= ? AND (${field} ${before} ? OR created_at > ?)`;
}

/** keysetAfter's values for `after`: blobs for text, microseconds for stamps. */
function keysetValues(params: ListParams, after: Position): unknown[] {
  const field = sortedField(params.sort);
  const created = microsOf(after.created_at);
  if (field === undefined || field === 'created_at') return [created];
  if (field === 'updated_at') return [microsOf(after.key)];
  const key = toBlob(after.key);
  return field === 'id' ? [key] : [key, key, created];
}

/**
 * ORDER BY of a list (query.ts): by the field, ties in creation order (created_at, the rowid) in both
 * directions; id, created_at and updated_at are unique. Any other `sort` ties every user: creation order.
 * `reversed`: the same order backwards, every term's direction turned; an index serves it walked the
 * other way.
 */
function orderBy(params: ListParams, reversed = false, table = ''): string {
  const [asc, desc] = reversed ? ['DESC', 'ASC'] : ['ASC', 'DESC'];
  const direction = params.descending ? desc : asc;
  const field = sortedField(params.sort);
  if (field === undefined) return `${table}created_at ${asc}`;
  if (field === 'created_at' || field === 'id' || field === 'updated_at') return `${table}${field} ${direction}`;
  return `${table}${field} ${direction}, ${table}created_at ${asc}`;
}
