/**
 * Search totals of short needles on PostgreSQL (migration 010): a needle of one to four characters is
 * a gram, and the database keeps the number of users holding each gram, per role, through every write
 * (a row of changes per write, folded into the counts from time to time). A search of such a needle
 * reads its total from there, in the statement of its page; it counts nothing and writes nothing.
 */
import type { Query } from './postgres-connection.js';
import { RAW_COLUMNS } from './postgres-rows.js';

/** The longest needle, in characters (code points of the stored needle), whose total the grams hold. */
export const GRAM_CHARS = 4;
/**
 * Changes a fold moves at most, in one statement; a fold that moved as many goes on. 2 000 users'
 * grams take about 0.6 s of the database at 1 000 000 users (10 000 took 2.2–2.5 s): well within
 * the pool's statement timeout, and a closing store waits for no more than one such statement.
 */
const FOLD_MOST = 2_000;
/** Writes of this instance after which it folds (each write adds one or two rows of changes). */
const FOLD_EVERY = 1_000;
/** Rows of changes a search may find before it asks for a fold: it reads every one of them. */
const FOLD_AT = 2_000;

/** Whether the stored needle's total is read from the grams: one to GRAM_CHARS characters. */
export function isGram(storedNeedle: string): boolean {
  const chars = [...storedNeedle].length;
  return chars >= 1 && chars <= GRAM_CHARS;
}

/**
 * The one-row query of a gram's total (and the rows of changes it read, `changes`), beside a page: the
 * counts plus the changes not folded yet whose text holds the needle, tested as the page tests a user
 * (`matching`), with the role filter when there is one. `$gram` is the stored needle, `$role` the role.
 */
export function gramTotal(gram: number, role: number | undefined, matching: string): string {
  const ofRole = role === undefined ? '' : ` AND role = $${role}`;
  return `SELECT (coalesce((SELECT sum(users) FROM search_gram_counts WHERE gram = $${gram}${ofRole}), 0)
            + coalesce(d.delta, 0))::bigint AS total, d.changes
          FROM (SELECT sum(delta) FILTER (WHERE ${matching}${ofRole}) AS delta, count(*) AS changes
                FROM search_gram_changes) d`;
}

/**
 * A gram search's page beside its total, in one statement (one snapshot). The total is known before
 * the page (gramTotal, materialised), so the statement picks how to find the page, which the planner
 * could not: it took a term matching 1.25 % of 1 000 000 users for a rare one, and read all 12 500
 * matches through the trigram index to sort them (130 ms), where a walk of the list's order finds a
 * page of 20 after about 1 700 users. Each way is cut off by its LIMIT, 0 for the way not taken (a
 * LIMIT of 0 never starts its scan):
 *
 * - the walk: the list's index in its order, testing each user, stopping at the page. Its condition,
 *   `walkWhere`, tests the columns as values (`name_lower || ''`) so that no trigram index can serve
 *   it and the planner keeps to the order's index. Taken when the matches are many:
 *   total² ≥ (offset + limit) × users, i.e. when the walk reads fewer users than there are matches;
 *   and always for a needle of one or two characters, which holds no trigram.
 * - the matches: every match, found from the trigram index (or a scan, as the planner sees fit), then
 *   sorted. `OFFSET 0` keeps the planner from walking the order's index instead.
 */
export function gramPage(parts: {
  total: string;
  users: string;
  where: string;
  walkWhere: string;
  columns: string;
  order: string;
  outerOrder: string;
  limit: string;
  offset: string;
  alwaysWalk: boolean;
}): string {
  const { total, users, where, walkWhere, columns, order, outerOrder, limit, offset } = parts;
  const walk = parts.alwaysWalk
    ? 'true'
    : `(SELECT total FROM t)::numeric * (SELECT total FROM t) >= (${offset} + ${limit})::numeric * (SELECT total FROM n)`;
  // No page past the last match; and the walk stops at the last match, not at the last user.
  const more = `(SELECT total FROM t) > ${offset}`;
  const cut = `least(${limit}, (SELECT total FROM t) - ${offset})`;
  return `WITH t AS MATERIALIZED (${total}), n AS MATERIALIZED (${users})
    SELECT t.*, ${columns}, p.seq
    FROM t LEFT JOIN LATERAL (
      (SELECT ${RAW_COLUMNS}, seq FROM users WHERE ${walkWhere}
       ORDER BY ${order} LIMIT CASE WHEN ${more} AND ${walk} THEN ${cut} ELSE 0 END OFFSET ${offset})
      UNION ALL
      (SELECT ${RAW_COLUMNS}, seq FROM (SELECT * FROM users WHERE ${where} OFFSET 0) m
       ORDER BY ${order} LIMIT CASE WHEN ${more} AND NOT ${walk} THEN ${limit} ELSE 0 END OFFSET ${offset})
    ) p ON true
    ORDER BY ${outerOrder}`;
}

/**
 * Keeps the rows of changes few: as the store starts (migration 010 leaves the users there were among
 * the changes), every FOLD_EVERY writes of this instance, and whenever a search read more than FOLD_AT
 * of them, a fold runs (one at a time per instance; the database lets one run at a time over all
 * instances, and the others return at once). Folds run beside the requests, which do not wait for
 * them: a total is exact whether or not the changes were folded.
 */
export class GramFolder {
  #writes = 0;
  #folding: Promise<void> | undefined;
  #stopped = false;

  constructor(private readonly query: Query) {}

  /** A write of this instance committed (or may have). */
  wrote(): void {
    if (++this.#writes >= FOLD_EVERY) this.fold();
  }

  /** A search read `changes` rows of changes. */
  read(changes: number): void {
    if (changes > FOLD_AT) this.fold();
  }

  /** Starts a fold unless one is under way; resolves when it is over (it never rejects). */
  fold(): Promise<void> {
    this.#writes = 0;
    if (this.#stopped) return Promise.resolve();
    this.#folding ??= this.#fold().finally(() => (this.#folding = undefined));
    return this.#folding;
  }

  /** Starts no more folds, and waits for the statement of one under way (the store is closing). */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#folding;
  }

  async #fold(): Promise<void> {
    try {
      while (!this.#stopped) {
        const { rows } = await this.query<{ folded: number }>('SELECT roster_fold_grams($1) AS folded', [FOLD_MOST]);
        if (rows[0]!.folded < FOLD_MOST) return;
      }
    } catch {
      // Nothing is lost: the changes stay, and totals count them; the next write or search folds again.
    }
  }
}
