/**
 * The SQLite file as Roster opens it: locked against other Roster processes, with Roster's settings
 * (WAL, `synchronous`), the line between "the disk cannot take it just now" (503) and a fault of
 * Roster's own, and the `database` entry of the health check.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Logger } from 'pino';
import { tryAgainShortly, type RosterError } from '../../../errors.js';
import { ProbedDependency } from '../../../ops/health.js';
import { createPrivateFile } from './private-file.js';
import { registerSqlFunctions } from './sql-functions.js';

/** The database file and its durability: what `DATABASE_URL=sqlite:<path>` and SQLITE_SYNCHRONOUS say. */
export interface SqliteFile {
  /** The database file, relative to the working directory, or `:memory:`. */
  path: string;
  /** SQLite's `synchronous` in WAL mode: NORMAL survives a crash of the process, FULL also a power cut. */
  synchronous: 'NORMAL' | 'FULL';
}

/** The store's prepared statement of `sql`, prepared once. */
export type Statements = (sql: string) => Database.Statement;

/** How often the probe tries a write while writes fail. */
const SQLITE_PROBE_INTERVAL_MS = 1_000;

/**
 * SQLite's result codes for a database that cannot be written (or read) just now, rather than a fault of
 * Roster's: read-only file or file system, full disk, I/O errors, locks held elsewhere.
 */
const UNAVAILABLE = /^SQLITE_(READONLY|FULL|IOERR|BUSY|LOCKED|CANTOPEN|NOLFS|PROTOCOL)/;

export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && UNAVAILABLE.test(code);
}

export const unavailable = (): RosterError =>
  tryAgainShortly('The database cannot be written just now (disk full, read-only or failing); reads go on');

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
export class SqliteLock {
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

/** Pages (4 KiB) the WAL holds before a checkpoint copies them into the database file: about 40 MiB. */
export const SQLITE_WAL_PAGES = 10_000;

/** The most SQLite's page cache takes, in KiB: 128 MiB. */
export const SQLITE_CACHE_KIB = 128 * 1024;

/**
 * Opens the database file with Roster's settings (WAL, `synchronous`), creating it and its folder if
 * need be; registers the search functions.
 */
export function connect(config: SqliteFile): Database.Database {
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
    // Pages kept in memory: a deep page walks index entries (list-sql.ts: numberedPage), and with SQLite's
    // default of 2 MiB every walk read its pages from the file again. At 1 000 000 users the middle page
    // by email took about 75 ms so, 10 ms with half the index kept (the ids' index, the widest, needs
    // about 50 MiB for half). An upper bound: the cache grows only as pages are read.
    db.pragma(`cache_size = -${SQLITE_CACHE_KIB}`);
    // Pages the WAL gathers before they are copied back into the file (SQLite's default: 1 000). Every
    // create writes the same few last pages again (of the table, of the creation-order index, of each
    // role's): copied back once per checkpoint, however often they were written since, so a longer WAL
    // copies far fewer pages, and syncs the file less often. Measured at 1 000 000 users, one create at a
    // time: 1 420 creates/s at 1 000 pages, 1 700 at 10 000. Durability is the same: a commit is
    // durable once in the WAL (at `synchronous`'s level), whenever it is copied back.
    if (!memory) db.pragma(`wal_autocheckpoint = ${SQLITE_WAL_PAGES}`);
    registerSqlFunctions(db);
    return db;
  } catch (error) {
    db.close();
    throw error;
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
