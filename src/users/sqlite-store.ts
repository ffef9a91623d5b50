/**
 * Users in SQLite (migrations/sqlite/), one file owned by one Roster process: durable users without a
 * database server. Every answer equals the memory store's (query.ts defines them): strings are stored
 * as sqlite-text.ts encodes them, so that SQLite sorts them by code point, and searched in lower-cased
 * columns computed by JavaScript (postgres-text.ts escapes), so that search folds case as the memory
 * store does.
 *
 * better-sqlite3 is synchronous: each operation runs to its end before any other request is looked at,
 * so every operation is atomic within the process, and the file is locked against other Roster
 * processes (`SqliteLock`), so nothing else writes it. That is also why the store can keep the count of
 * users per role in memory (read once at open) and stamp timestamps from its own clock, which starts
 * past every stamp in the file.
 *
 * Durability: WAL mode. A write is acknowledged only after its transaction committed, i.e. its frames
 * were written to the WAL file: a crash of the process (kill -9) cannot lose it, as the operating
 * system holds the data. `synchronous=FULL` also syncs the WAL at every commit, so that a power cut or
 * a crash of the operating system cannot lose it either; NORMAL syncs only at checkpoints.
 *
 * A disk that is full, read-only or failing refuses writes with 503 SERVICE_UNAVAILABLE; reads go on,
 * and health reports the `database` as down until a write (or the probe) succeeds again.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { createPrivateFile } from './private-file.js';
import { dirname, resolve } from 'node:path';
import { getHeapStatistics } from 'node:v8';
import type { Logger } from 'pino';
import { formatMicros } from '../clock.js';
import type { SqliteConfig } from '../config/index.js';
import { RosterError } from '../errors.js';
import { ProbedDependency } from '../health.js';
import { readMigrations, type Migration } from './postgres-migrations.js';
import { containsAligned, likePattern, toStored } from './postgres-text.js';
import { sortedField, type ListParams, type ListResult } from './query.js';
import type { User } from './schema.js';
import { userBytes } from './heap-size.js';
import { fromBlob, toBlob } from './sqlite-text.js';
import { emailKey, type Changes, type NewUser, type UserStore } from './store.js';

/** `migrations/sqlite/` at the package root, beside `dist/` once built (dist/src/users/ → ../../../). */
const MIGRATIONS = new URL('../../../migrations/sqlite/', import.meta.url);

/** How often the probe tries a write while writes fail. */
export const SQLITE_PROBE_INTERVAL_MS = 1_000;

/**
 * SQLite's result codes for a database that cannot be written (or read) just now, rather than a fault of
 * Roster's: read-only file or file system, full disk, I/O errors, locks held elsewhere.
 */
const UNAVAILABLE = /^SQLITE_(READONLY|FULL|IOERR|BUSY|LOCKED|CANTOPEN|NOLFS|PROTOCOL)/;

export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && UNAVAILABLE.test(code);
}

const unavailable = (): RosterError =>
  new RosterError(
    'SERVICE_UNAVAILABLE',
    'The database cannot be written just now (disk full, read-only or failing); reads go on',
    {
      headers: { 'retry-after': '1' },
    },
  );

/** A row as stored: strings as BLOBs (sqlite-text.ts), timestamps as microseconds. */
interface Row {
  id: Buffer;
  name: Buffer;
  email: Buffer;
  role: Buffer;
  created_at: number;
  updated_at: number;
}

const COLUMNS = 'id, name, email, role, created_at, updated_at';
/** Users kept decoded in memory at most (a few MB for typical users; see SqliteUserStore's cache). */
export const SQLITE_CACHED_USERS = 20_000;
/**
 * And the most heap they may take, counted as heap-size.ts does: a 32nd of the heap limit (128 MiB on a
 * 4 GiB heap, 8 MiB on 256 MiB), so that however large the users' fields, the cache never crowds the heap.
 */
export const SQLITE_CACHED_BYTES = Math.floor(getHeapStatistics().heap_size_limit / 32);

/** Refused to open: another process holds the file. */
export class DatabaseInUse extends Error {
  constructor(path: string) {
    super(`the database ${path} is in use by another Roster process (only one may open it; see ${path}.lock)`);
    this.name = 'DatabaseInUse';
  }
}

/**
 * One Roster per file. The lock is an EXCLUSIVE lock (fcntl, taken through SQLite itself) on the side
 * file `<database>.lock`, held for the life of the store: the operating system releases it when the
 * process ends, however it ends (kill -9 included), so a stale lock never blocks a restart. It is a
 * file of its own so that `roster backup` may still read the database while the service runs. The
 * file is left in place: deleting it would let a process that opened it just before take a lock nobody
 * else can see.
 */
class SqliteLock {
  readonly #db: Database.Database;

  constructor(databasePath: string) {
    const path = `${databasePath}.lock`;
    mkdirSync(dirname(resolve(databasePath)), { recursive: true });
    createPrivateFile(path);
    this.#db = new Database(path, { timeout: 0 });
    try {
      this.#db.pragma('locking_mode = EXCLUSIVE');
      this.#db.exec('BEGIN EXCLUSIVE');
      this.#db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL); DELETE FROM holder;');
      this.#db.prepare('INSERT INTO holder (pid) VALUES (?)').run(process.pid);
      // In exclusive locking mode the lock outlives the transaction, until the connection closes.
      this.#db.exec('COMMIT');
    } catch (error) {
      this.#db.close();
      if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) throw new DatabaseInUse(databasePath);
      throw error;
    }
  }

  release(): void {
    this.#db.close();
  }
}

/**
 * Opens the database file with Roster's settings (WAL, `synchronous`), creating it and its folder if
 * need be; registers the search function.
 */
function connect(config: SqliteConfig): Database.Database {
  const memory = config.path === ':memory:';
  if (!memory) {
    mkdirSync(dirname(resolve(config.path)), { recursive: true });
    createPrivateFile(config.path); // and so its -wal and -shm (private-file.ts)
  }
  // A short busy timeout: the only other connection is a backup reading, which never holds the write
  // lock; waiting would block the event loop.
  const db = new Database(config.path, { timeout: 100 });
  try {
    if (!memory) db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${config.synchronous}`);
    db.function('roster_contains_aligned', { deterministic: true }, (haystack, needle) =>
      containsAligned(String(haystack), String(needle)) ? 1 : 0,
    );
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** Applies the SQLite migrations not yet recorded, in one transaction; returns the versions applied now. */
export function migrateSqlite(db: Database.Database, migrations: readonly Migration[]): string[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
  const apply = db.transaction(() => {
    const done = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as string[]);
    const applied: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(
        migration.version,
        new Date().toISOString(),
      );
      applied.push(migration.version);
    }
    return applied;
  });
  return apply.immediate();
}

export const readSqliteMigrations = (): Promise<Migration[]> => readMigrations(MIGRATIONS);

/**
 * Opens (and locks) the database of `config` and applies the pending migrations; for `roster migrate`.
 * Resolves with the versions applied and the last one known.
 */
export async function migrateSqliteFile(
  config: SqliteConfig,
): Promise<{ applied: string[]; latest: string | undefined }> {
  const migrations = await readSqliteMigrations();
  const lock = config.path === ':memory:' ? undefined : new SqliteLock(config.path);
  try {
    const db = connect(config);
    try {
      return { applied: migrateSqlite(db, migrations), latest: migrations.at(-1)?.version };
    } finally {
      db.close();
    }
  } finally {
    lock?.release();
  }
}

/**
 * The `database` entry of the health check: down while writes fail, with the SQLite code as the
 * reason, and a probe write every SQLITE_PROBE_INTERVAL_MS until one succeeds. Not critical: with the
 * disk full or read-only, reads still work, and there is no other instance to send clients to (one
 * file, one process). Health answers 200 `degraded` naming the database.
 */
export class SqliteHealth extends ProbedDependency {
  constructor(logger: Logger, check: () => void) {
    super('database', false, {
      logger,
      probe: check,
      intervalMs: SQLITE_PROBE_INTERVAL_MS,
      reasonOf: (error) => `writes fail (${String((error as { code?: unknown } | undefined)?.code ?? error)})`,
      messages: { down: 'the database cannot be written', up: 'the database can be written again' },
      probeAtOnce: false,
    });
  }
}

/** Microseconds since the epoch, as clock.ts counts them. */
const nowMicros = (): number => Math.floor((performance.timeOrigin + performance.now()) * 1000);

export class SqliteUserStore implements UserStore {
  readonly health: SqliteHealth;
  readonly #db: Database.Database;
  readonly #lock: SqliteLock | undefined;
  /** Users per role (the role as the client sent it): the total of a list without search, and count(). */
  readonly #roles = new Map<string, number>();
  /** The last stamp handed out (microseconds): every next one is later, also across restarts. */
  #last: number;
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

  private constructor(db: Database.Database, lock: SqliteLock | undefined, logger: Logger, maxCachedBytes: number) {
    this.#db = db;
    this.#lock = lock;
    this.#maxCachedBytes = maxCachedBytes;
    this.health = new SqliteHealth(logger, () => this.#probe());
    for (const { role, users } of db.prepare('SELECT role, count(*) AS users FROM users GROUP BY role').all() as {
      role: Buffer;
      users: number;
    }[]) {
      this.#roles.set(fromBlob(role), users);
    }
    const last = db
      .prepare(
        'SELECT max(coalesce((SELECT max(created_at) FROM users), 0), coalesce((SELECT max(updated_at) FROM users), 0)) AS last',
      )
      .get() as {
      last: number;
    };
    this.#last = last.last;
  }

  /**
   * Locks the file against other Roster processes (DatabaseInUse if one holds it), opens it, applies
   * pending migrations, and returns the store. `cachedBytes` bounds the cache of decoded users
   * (SQLITE_CACHED_BYTES unless given).
   */
  static async open(
    config: SqliteConfig,
    logger: Logger,
    options: { cachedBytes?: number } = {},
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
      return new SqliteUserStore(db, lock, logger, options.cachedBytes ?? SQLITE_CACHED_BYTES);
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
      const filters: string[] = [];
      const values: unknown[] = [];
      if (params.role !== undefined) {
        filters.push('role = ?');
        values.push(toBlob(params.role));
      }
      if (params.search !== undefined) {
        const needle = toStored(params.search.toLowerCase());
        // instr() finds the needle at whole characters; only a needle whose first character may be the
        // inside of an escape (postgres-text.ts) needs the alignment confirmed.
        const test =
          likePattern(needle) === undefined
            ? (column: string) => `roster_contains_aligned(${column}, ?)`
            : (column: string) => `instr(${column}, ?) > 0`;
        filters.push(`(${test('name_lower')} OR ${test('email_lower')})`);
        values.push(needle, needle);
      }
      const where = filters.length === 0 ? '' : `WHERE ${filters.join(' AND ')}`;
      const select = `SELECT created_at FROM users ${where} ORDER BY ${orderBy(params)}`;
      if (params.search !== undefined) {
        // A search reads every row anyway: one pass gives the matches in order, hence the total and the page.
        const matches = this.#statement(select)
          .pluck()
          .all(...values) as number[];
        return {
          users: matches.slice(params.offset, params.offset + params.limit).map((rowid) => this.#userAt(rowid)),
          total: matches.length,
        };
      }
      // Without search, the total is the count kept per role: no count of the table.
      const total = params.role === undefined ? this.#count() : (this.#roles.get(params.role) ?? 0);
      if (params.offset >= total || params.limit <= 0) return { users: [], total };
      const rowids = this.#statement(`${select} LIMIT ? OFFSET ?`)
        .pluck()
        .all(...values, params.limit, params.offset) as number[];
      return { users: rowids.map((rowid) => this.#userAt(rowid)), total };
    });
  }

  async insert(user: NewUser): Promise<User | 'email_taken'> {
    const key = toStored(emailKey(user.email));
    return this.#write(() => {
      if (this.#statement('SELECT 1 FROM users WHERE email_key = ? LIMIT 1').get(key)) return 'email_taken';
      const id = toBlob(user.id);
      if (this.#statement('SELECT 1 FROM users WHERE id = ?').get(id)) throw new Error(`duplicate user id ${user.id}`);
      const now = this.#next();
      this.#statement(
        `INSERT INTO users (created_at, id, name, email, role, updated_at, name_lower, email_lower, email_key)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        now,
        id,
        toBlob(user.name),
        toBlob(user.email),
        toBlob(user.role),
        now,
        toStored(user.name.toLowerCase()),
        toStored(user.email.toLowerCase()),
        key,
      );
      this.#counted(user.role, 1);
      const stamp = formatMicros(now);
      return this.#cached(now, {
        id: user.id,
        name: user.name,
        email: user.email,
        role: user.role,
        created_at: stamp,
        updated_at: stamp,
      });
    });
  }

  async update(
    id: string,
    changes: Changes,
    options: { uniqueEmail: boolean },
  ): Promise<User | 'not_found' | 'email_taken'> {
    return this.#write(() => {
      const found = this.#statement('SELECT created_at, email_key FROM users WHERE id = ?').get(toBlob(id)) as
        { created_at: number; email_key: string } | undefined;
      if (!found) return 'not_found';
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
      const name = changes.name;
      const email = changes.email;
      this.#statement(
        `UPDATE users SET name = coalesce(?, name), name_lower = coalesce(?, name_lower), email = coalesce(?, email),
           email_lower = coalesce(?, email_lower), email_key = coalesce(?, email_key), role = coalesce(?, role), updated_at = ?
         WHERE created_at = ?`,
      ).run(
        name === undefined ? null : toBlob(name),
        name === undefined ? null : toStored(name.toLowerCase()),
        email === undefined ? null : toBlob(email),
        email === undefined ? null : toStored(email.toLowerCase()),
        key ?? null,
        changes.role === undefined ? null : toBlob(changes.role),
        now,
        rowid,
      );
      const next: User = { ...before, ...changes, updated_at: formatMicros(now) };
      if (next.role !== before.role) {
        this.#counted(before.role, -1);
        this.#counted(next.role, 1);
      }
      // Exactly the user's own fields, in the contract's order, whatever else `changes` carries.
      return this.#cached(rowid, {
        id: next.id,
        name: next.name,
        email: next.email,
        role: next.role,
        created_at: next.created_at,
        updated_at: next.updated_at,
      });
    });
  }

  async remove(id: string): Promise<boolean> {
    return this.#write(() => {
      const gone = this.#statement('DELETE FROM users WHERE id = ? RETURNING role, created_at').get(toBlob(id)) as
        { role: Buffer; created_at: number } | undefined;
      if (gone === undefined) return false;
      this.#uncache(gone.created_at);
      this.#counted(fromBlob(gone.role), -1);
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
      for (const user of users) {
        const now = this.#next();
        this.#statement(
          `INSERT INTO users (created_at, id, name, email, role, updated_at, name_lower, email_lower, email_key)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        ).run(
          now,
          toBlob(user.id),
          toBlob(user.name),
          toBlob(user.email),
          toBlob(user.role),
          now,
          toStored(user.name.toLowerCase()),
          toStored(user.email.toLowerCase()),
          toStored(emailKey(user.email)),
        );
      }
    });
    this.#write(() => all.immediate());
    for (const user of users) this.#counted(user.role, 1);
    return true;
  }

  async close(): Promise<void> {
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
    const row = this.#statement(`SELECT ${COLUMNS} FROM users WHERE created_at = ?`).get(rowid) as Row;
    return this.#cached(rowid, userOf(row));
  }

  /** Keeps `user` as the one of `rowid`, unless it alone would pass the bound; returns it. */
  #cached(rowid: number, user: User): User {
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
    this.#last = Math.max(nowMicros(), this.#last + 1);
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

  /** A write: its outcome feeds health; a disk that cannot take it gives 503. */
  #write<T>(work: () => T): T {
    try {
      const result = work();
      this.health.succeeded();
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

/** A stored row as a user; `id` when the caller knows it (the same string, no decoding needed). */
function userOf(row: Row, id?: string): User {
  return {
    id: id ?? fromBlob(row.id),
    name: fromBlob(row.name),
    email: fromBlob(row.email),
    role: fromBlob(row.role),
    created_at: formatMicros(row.created_at),
    updated_at: formatMicros(row.updated_at),
  };
}

/**
 * ORDER BY of a list (query.ts): by the field, ties in creation order (created_at, the rowid) in both
 * directions; id, created_at and updated_at are unique. Any other `sort` ties every user: creation order.
 */
function orderBy(params: ListParams): string {
  const direction = params.descending ? 'DESC' : 'ASC';
  const field = sortedField(params.sort);
  if (field === undefined) return 'created_at';
  if (field === 'created_at' || field === 'id' || field === 'updated_at') return `${field} ${direction}`;
  return `${field} ${direction}, created_at`;
}
