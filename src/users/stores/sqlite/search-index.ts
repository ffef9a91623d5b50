/**
 * The SQLite store's FTS5 trigram index, and the counts of short needles (short-needles.ts), brought
 * up to date in batches (migrations/sqlite/005 and 006; docs/decisions.md, "Search on SQLite"). Hand-written because FTS5 has no deferred upkeep of its own:
 * its triggers or a 'rebuild' are the choices it offers, one segment per write or all the users.
 */
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { GramChanges, UPSERT_GRAM } from './short-needles.js';
import { isUnavailable, type SqliteHealth, type Statements } from './sqlite-connection.js';

/**
 * How long after a write the users it noted are indexed for search, unless a search comes first: the
 * writes of this long share one FTS5 segment instead of writing one each.
 */
const SEARCH_INDEX_DELAY_MS = 50;
/** Writes noted at most before they are indexed at once, by the write that reaches the bound. */
const SEARCH_INDEX_BATCH = 1_000;

/** The users created since the index was last brought up to date: WHERE of `users`. */
const CREATED_SINCE_INDEXED = 'created_at > (SELECT indexed_up_to FROM users_search_state)';

export class SearchIndex {
  /** Whether the index holds every user, for the search being answered: false while the disk refuses writes. */
  #current = true;
  /** Whether users may wait to be indexed: set by every write (and at open), cleared once none does. */
  #written = false;
  /** Writes since the noted users were last indexed, and the timer that will index them. */
  #writes = 0;
  #timer: NodeJS.Timeout | undefined;
  /**
   * The text of each noted user as the index holds it taken out, the text now of those still there and
   * of the users created since put in (the notes read first, CROSS JOIN), the notes cleared, the mark moved.
   */
  readonly #reindex: Database.Transaction<() => void>;
  /** Whether any user is noted or created since the mark. */
  readonly #waiting: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    statement: Statements,
    private readonly health: SqliteHealth,
    private readonly logger: Logger,
  ) {
    const steps = [
      `INSERT INTO users_search (users_search, rowid, name_lower, email_lower)
       SELECT 'delete', rowid, name_lower, email_lower FROM users_search_pending`,
      `INSERT INTO users_search (rowid, name_lower, email_lower)
       SELECT users.created_at, users.name_lower, users.email_lower
       FROM users_search_pending CROSS JOIN users ON users.created_at = users_search_pending.rowid`,
      `INSERT INTO users_search (rowid, name_lower, email_lower)
       SELECT created_at, name_lower, email_lower FROM users WHERE ${CREATED_SINCE_INDEXED}`,
      'UPDATE users_search_state SET indexed_up_to = coalesce((SELECT max(created_at) FROM users), indexed_up_to)',
      'DELETE FROM users_search_pending',
    ];
    // The counts of short needles (short-needles.ts) first, from the same notes and users, before the
    // steps clear the notes and move the mark: each noted user as indexed taken out, as it is put in.
    const noted = statement('SELECT role, name_lower, email_lower FROM users_search_pending').raw();
    const now = statement(
      `SELECT users.role, users.name_lower, users.email_lower
       FROM users_search_pending CROSS JOIN users ON users.created_at = users_search_pending.rowid
       UNION ALL SELECT role, name_lower, email_lower FROM users WHERE ${CREATED_SINCE_INDEXED}`,
    ).raw();
    const upsert = statement(UPSERT_GRAM);
    this.#reindex = db.transaction(() => {
      const changes = new GramChanges();
      for (const [role, ...texts] of noted.iterate() as Iterable<[Buffer, ...(string | null)[]]>)
        changes.add(role, texts, -1);
      for (const [role, ...texts] of now.iterate() as Iterable<[Buffer, ...(string | null)[]]>)
        changes.add(role, texts, 1);
      changes.write(upsert);
      steps.forEach((sql) => statement(sql).run());
    });
    this.#waiting = statement(
      `SELECT EXISTS (SELECT 1 FROM users_search_pending) OR EXISTS (SELECT 1 FROM users WHERE ${CREATED_SINCE_INDEXED})`,
    ).pluck();
    // Users noted but not indexed when the file was last closed (a crash): indexed shortly, or by the first search.
    this.written();
  }

  get current(): boolean {
    return this.#current;
  }

  /** Before a search reads the index: the users waiting indexed now. */
  beforeSearch(): void {
    this.#current = this.#index();
  }

  /** After a write: its noted users indexed once SEARCH_INDEX_DELAY_MS passed, or now if SEARCH_INDEX_BATCH writes wait. */
  written(): void {
    this.#written = true;
    if (++this.#writes >= SEARCH_INDEX_BATCH && !this.db.inTransaction) {
      this.#indexAside();
      return;
    }
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      if (this.db.open) this.#indexAside();
    }, SEARCH_INDEX_DELAY_MS).unref();
  }

  /** At close: the users waiting indexed now, so that the file's index is current (else the next open does it). */
  close(): void {
    clearTimeout(this.#timer);
    this.#written = true;
    if (this.db.open) this.#indexAside();
  }

  /** Indexes the users waiting; whether the index is current: false while the disk refuses it (health is told). */
  #index(): boolean {
    // Inside a write's transaction (a keyed create's) the notes are not final yet: the timer comes back to them.
    if (this.db.inTransaction) return true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#writes = 0;
    if (!this.#written) return true;
    if (this.#waiting.get()) {
      try {
        this.#reindex.immediate();
        this.health.succeeded();
      } catch (error) {
        if (!isUnavailable(error)) throw error;
        this.health.failed(error);
        return false;
      }
    }
    this.#written = false;
    return true;
  }

  /** #index away from a search: a write already answered, or a timer, must not fail for it. */
  #indexAside(): void {
    try {
      this.#index();
    } catch (error) {
      // Not a disk refusing writes (#index tells health of that): logged; the next write or search tries again.
      this.logger.error({ err: error }, 'indexing users for search failed');
    }
  }
}
