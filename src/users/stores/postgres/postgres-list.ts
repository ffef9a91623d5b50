/**
 * The list operation in PostgreSQL: one statement for a page and its total. A list without search
 * reads the count kept per role (migration 002). A search of one to four characters reads the count
 * its gram keeps (migration 010, through every write, per role); a longer one counts its matches from
 * the trigram index the first time, and from its second ask reads the count its needle keeps
 * (migration 009: the needles searched again lately, counted when registered and kept exact through
 * every write by a trigger, per role).
 */
import type pg from 'pg';
import { fieldSpec, SEARCHABLE_FIELDS } from '../../fields.js';
import { positionOf, sortedField, type ListParams, type ListResult, type Position } from '../../query.js';
import { searchColumn } from '../sql/columns.js';
import { anywherePattern, likePattern, toStored } from '../sql/stored-text.js';
import { GramFolder, gramPage, gramTotal, isGram } from './postgres-grams.js';
import { columns, fromRow as userOf, RAW_COLUMNS, type Row } from './postgres-rows.js';
import type { Query } from './postgres-connection.js';

/** Offsets beyond this are past any table; PostgreSQL's bigint could not take page × limit at its largest. */
const MAX_OFFSET = 2 ** 62;
/**
 * Needles whose counts the database keeps (migration 009); registering one more evicts the least
 * recently searched. Every write of a searched column tests each kept needle against the old and the
 * new row, so this bounds what a write costs.
 */
const KEPT_NEEDLES = 64;
/** Longer needles are counted each time: their keys would be large, and they match few users. */
const KEPT_NEEDLE_CHARS = 200;
/**
 * How long registering a needle waits for the writes under way to commit; writes that start meanwhile
 * queue behind it. Past that, the search counts its matches and registers another time.
 */
const KEEP_WAIT = '200ms';
/** After registering failed so, how long this instance counts rather than try (and hold writes back) again. */
const KEEP_BACKOFF_MS = 5_000;
/** Needles asked once that this instance remembers, to register them when asked again. */
const ASKED = 4_096;
/** A needle's count rows past which a search folds them into one per role (roster_compact_needle). */
const COMPACT_AT = 100;
/** How often, at most, a search marks its needle used (what eviction goes by), and tidies (roster_tidy_needles). */
const TOUCH_SECONDS = 10;
/** A needle not searched for this long is dropped: it costs every write, and no one reads it. */
const IDLE_NEEDLE = '1 hour';

/** A search: the stored, lower-cased needle, its LIKE pattern, and `$n` of that pattern in the statement. */
interface Search {
  needle: string;
  pattern: string;
  /** Whether a match must be confirmed to start at a whole character (stored-text.ts: likePattern). */
  aligned: boolean;
  at: number;
}

/**
 * Whether a user matches a search whose pattern, needle and `aligned` are the statement's values `$at`
 * on: roster_search_matches (migration 009), the rule the trigger that keeps the counts tests too, on
 * each searchable column. PostgreSQL inlines the function, so the trigram indexes serve it as they
 * serve a LIKE written out.
 */
function matching(at: number, suffix = ''): string {
  const one = (column: string) => `roster_search_matches(${column}${suffix}, $${at}, $${at + 1}, $${at + 2})`;
  return `(${SEARCHABLE_FIELDS.map((field) => one(searchColumn(field))).join(' OR ')})`;
}

/** Runs `work` in one transaction, its statements on one connection. */
export type Transaction = <T>(work: (query: Query) => Promise<T>) => Promise<T>;

export class PostgresList {
  /** Until when (Date.now()) this instance counts searches rather than register their needles. */
  #keepAfter = 0;
  /** Needles of five characters or more asked once here lately, not kept: the next ask registers them. */
  readonly #asked = new Set<string>();
  /** Folds the grams' changes (migration 010) as this instance writes and searches. */
  readonly grams: GramFolder;

  constructor(
    private readonly query: Query,
    private readonly transaction: Transaction,
  ) {
    this.grams = new GramFolder(query);
  }

  async list(params: ListParams): Promise<ListResult> {
    const values: unknown[] = [];
    const filters: string[] = [];
    if (params.role !== undefined) {
      values.push(toStored(params.role));
      filters.push(`role = $${values.length}`);
    }
    let search: Search | undefined;
    if (params.search !== undefined) {
      const needle = toStored(params.search.toLowerCase());
      const [pattern, aligned] = [anywherePattern(needle), likePattern(needle) === undefined];
      search = { needle, pattern, aligned, at: values.push(pattern, needle, aligned) - 2 };
      filters.push(matching(search.at));
    }
    const where = filters.length === 0 ? 'true' : filters.join(' AND ');
    if (params.after === undefined && search === undefined) {
      values.push(params.limit, Math.min(params.offset, MAX_OFFSET));
      return this.#page(params, values, where);
    }
    // A numbered page of a search (LIMIT and OFFSET), or the page after a cursor (query.ts: Position):
    // the rows whose (sort value, created_at, seq) come after the cursor's, read from the sort's index
    // from the cursor on, one row more than the page, which tells whether more follow.
    let [pageWhere, limit, offset] = [where, '', '0'];
    if (params.after === undefined) {
      [limit, offset] = [`$${values.push(params.limit)}`, `$${values.push(Math.min(params.offset, MAX_OFFSET))}`];
    } else {
      pageWhere = `${where} AND ${keysetAfter(params, params.after, values)}`;
      limit = `$${values.push(params.limit + 1)}`;
    }
    if (search !== undefined && isGram(search.needle)) {
      // The walk's condition: the same, on the columns as values no trigram index holds (gramPage).
      const walkWhere = pageWhere.replace(matching(search.at), matching(search.at, ` || ''`));
      const text = gramPage({
        ...{ total: gramTotal(search.at + 1, params.role === undefined ? undefined : 1, matching(search.at)) },
        ...{ users: roleCount(params), where: pageWhere, walkWhere, limit, offset },
        ...{ columns: columns('p.'), order: orderBy(params, ''), outerOrder: orderBy(params, 'p.') },
        alwaysWalk: [...search.needle].length < 3,
      });
      const { rows } = await this.query<PageRow>(text, values, false);
      this.grams.read(Number(rows[0]!.changes));
      return pageOf(params, rows, Number(rows[0]!.total));
    }
    const page = this.#beside(params, pageWhere, values, `LIMIT ${limit} OFFSET ${offset}`);
    // The total as the numbered page reads it: the count kept per role, or the search's (#searched).
    if (search === undefined) {
      const { rows } = await page(roleCount(params), true);
      return pageOf(params, rows, Number(rows[0]!.total));
    }
    const { rows, total } = await this.#searched(params, search, where, page);
    return pageOf(params, rows, total);
  }

  /**
   * Runs the page of `where` (cut by `limits`) beside a one-row query (a total, or what a needle
   * keeps), in one statement, so that both come from one snapshot; the one row is there even when the
   * page lies beyond the last user.
   */
  #beside(params: ListParams, where: string, values: unknown[], limits: string) {
    return (total: string, named: boolean) =>
      this.query<PageRow>(
        `SELECT t.*, ${columns('p.')}, p.seq
         FROM (${total}) t
         LEFT JOIN LATERAL (
           SELECT ${RAW_COLUMNS}, seq FROM users WHERE ${where}
           ORDER BY ${orderBy(params, '')} ${limits}
         ) p ON true
         ORDER BY ${orderBy(params, 'p.')}`,
        values,
        named,
      );
  }

  /**
   * A search's page and its total, read in one statement, so the total is the count of that
   * statement's snapshot. A needle of one to four characters reads its total from the grams
   * (migration 010, postgres-grams.ts). A longer one reads the count its needle keeps (migration 009)
   * when it is kept, and otherwise counts its matches in the same statement (from the trigram index);
   * on its second ask to this instance it is registered (which counts its matches once more) and the
   * page read again. When it cannot be kept (a needle too long, the registration's lock not had in
   * time, the needle evicted meanwhile), it is counted each time. `page` runs the page's statement
   * beside the given one-row query.
   */
  async #searched(
    params: ListParams,
    search: Search,
    where: string,
    page: (total: string, named: boolean) => Promise<pg.QueryResult<PageRow>>,
  ): Promise<{ rows: PageRow[]; total: number }> {
    const counted = `(SELECT count(*) FROM users WHERE ${where})`;
    if (search.needle === '') {
      const { rows } = await page(roleCount(params), false); // every user matches
      return { rows, total: Number(rows[0]!.total) };
    }
    // The role is the statement's first value (list).
    const ofRole = params.role === undefined ? '' : ' FILTER (WHERE role = $1)';
    // Not kept: counted in the same statement (CASE reads the count only then), unless it is to be
    // registered now, which counts it.
    const again = this.#asked.delete(search.pattern);
    const kept = (
      count: boolean,
    ) => `SELECT n.ready AS kept, n.used_at < now() - interval '${TOUCH_SECONDS} seconds' AS stale,
        CASE WHEN n.ready THEN c.total ELSE ${count ? counted : 'NULL'} END AS total, c.parts
      FROM (SELECT) one
      LEFT JOIN search_needles n ON n.pattern = $${search.at}
      LEFT JOIN LATERAL (
        SELECT coalesce(sum(users)${ofRole}, 0) AS total, count(*) AS parts
        FROM search_needle_counts WHERE pattern = n.pattern
      ) c ON true`;
    for (let attempt = 1; attempt <= 2; attempt++) {
      const { rows } = await page(kept(attempt === 2 || !again), false);
      const found = rows[0]!;
      if (found.kept === true) {
        if (Number(found.parts) > COMPACT_AT) await this.query('SELECT roster_compact_needle($1)', [search.pattern]);
        if (found.stale === true) {
          const { rowCount } = await this.query(
            `UPDATE search_needles SET used_at = now() WHERE pattern = $1 AND used_at < now() - interval '${TOUCH_SECONDS} seconds'`,
            [search.pattern],
          );
          if (rowCount === 1) await this.query('SELECT roster_tidy_needles($1, $2)', [COMPACT_AT, IDLE_NEEDLE]);
        }
        return { rows, total: Number(found.total) };
      }
      if (!again) {
        this.#asked.add(search.pattern); // the oldest forgotten past ASKED
        if (this.#asked.size > ASKED) this.#asked.delete(this.#asked.values().next().value!);
        return { rows, total: Number(found.total) };
      }
      if (attempt === 1 && !(await this.#keep(search))) break;
      if (attempt === 2) return { rows, total: Number(found.total) };
    }
    const { rows } = await page(`SELECT ${counted} AS total`, false);
    return { rows, total: Number(rows[0]!.total) };
  }

  /**
   * Registers a needle (migration 009): step 1 makes every write from then on count it, step 2 counts
   * its matches by role in one statement that also drops the delta rows that count already holds.
   * False when step 1 did not get its lock in time.
   */
  async #keep(search: Search): Promise<boolean> {
    if (search.needle.length > KEPT_NEEDLE_CHARS || Date.now() < this.#keepAfter) return false;
    try {
      await this.query('SELECT roster_keep_needle($1, $2, $3, $4, $5)', [
        search.pattern,
        search.needle,
        search.aligned,
        KEPT_NEEDLES,
        KEEP_WAIT,
      ]);
    } catch (error) {
      if ((error as { code?: string }).code !== '55P03') throw error; // lock_not_available: a long write is open
      this.#keepAfter = Date.now() + KEEP_BACKOFF_MS;
      return false;
    }
    await this.transaction(async (query) => {
      // The needle's row lock, then a statement of its own: its snapshot sees whatever a compaction,
      // eviction or TRUNCATE that held the lock did. The table's lock first, as TRUNCATE takes them.
      await query('LOCK TABLE users IN ACCESS SHARE MODE', []);
      const { rows } = await query<{ ready: boolean }>(
        'SELECT ready FROM search_needles WHERE pattern = $1 FOR UPDATE',
        [search.pattern],
      );
      if (rows[0] === undefined || rows[0].ready) return; // evicted meanwhile, or registered by another
      await query(
        `WITH gone AS (DELETE FROM search_needle_counts WHERE pattern = $1),
         counted AS (
           INSERT INTO search_needle_counts (pattern, role, users)
           SELECT $1, role, count(*) FROM users WHERE ${matching(1)} GROUP BY role
         )
         UPDATE search_needles SET ready = true, used_at = now() WHERE pattern = $1`,
        [search.pattern, search.needle, search.aligned],
      );
    });
    return true;
  }

  /**
   * A page without search, and its total: the count kept per role (migration 002), not a count of the
   * table. One statement, so both come from one snapshot, and the total is there even for a page past
   * the last user.
   *
   * A page at offset n costs a walk over the n entries before it, so the statement reads the page's
   * keys only, from an index that holds the list's order (migration 008) and the keys, without visiting
   * the table (an index-only scan), and then fetches the page's rows by key (a deferred join). Reading
   * whole rows for the skipped entries cost 4.5 s for the last page at 1 000 000 users. And as the
   * total is known first, a page in the far half is read in the reversed order (the same index scanned
   * backwards) from the other end: total − offset − limit entries at most, so no walk passes half the
   * users. Which end is decided in the statement, by the total of its own snapshot.
   */
  async #page(params: ListParams, values: unknown[], where: string): Promise<ListResult> {
    const counted = roleCount(params);
    const [limit, offset] = [`$${values.length - 1}`, `$${values.length}`];
    const t = '(SELECT total FROM t)';
    // id sorts walk an index of ids (the primary key, users_role_id); the others end with (created_at, seq).
    const keys = sortedField(params.sort) === 'id' ? ['id'] : ['created_at', 'seq'];
    // Each walk is cut off by its LIMIT: 0 where the other end is nearer (or the page is past the
    // last user), and a LIMIT of 0 never starts its scan. (A condition in WHERE would do the same, but
    // put a node between the scan and the LIMIT that every skipped entry passes through.)
    const walk = (reversed: boolean, when: string, count: string, skip: string) =>
      `(SELECT ${keys.join(', ')} FROM users WHERE ${where}
        ORDER BY ${orderBy(params, '', reversed)}
        LIMIT CASE WHEN ${offset} < ${t} AND ${when} THEN ${count} ELSE 0 END OFFSET ${skip})`;
    const { rows } = await this.query<PageRow>(
      `WITH t AS MATERIALIZED (${counted})
       SELECT ${t} AS total, ${columns('u.')}, u.seq
       FROM (SELECT) one
       LEFT JOIN (
         (${walk(false, `${offset} <= ${t} - ${offset}`, limit, offset)}
          UNION ALL
          ${walk(true, `${offset} > ${t} - ${offset}`, `least(${limit}, ${t} - ${offset})`, `greatest(${t} - ${offset} - ${limit}, 0)`)}) k
         -- Each key fetches its row through the unique index on the key, whatever the planner guessed
         -- about how many keys there are (it may not know LIMIT's value): never a read of the table.
         -- (LIMIT 1, which the unique key holds anyway, keeps the planner from making this a plain join.)
         JOIN LATERAL (
           SELECT * FROM users WHERE ${keys.map((key) => `users.${key} = k.${key}`).join(' AND ')} LIMIT 1
         ) u ON true
       ) ON true
       ORDER BY ${orderBy(params, 'u.')}`,
      values,
      true,
    );
    return pageOf(params, rows, Number(rows[0]!.total));
  }
}

/**
 * What a list sorted by `field` orders by: the column, or for an optional field (fields.ts), NULL read
 * as the empty string, by code point whatever the column's collation: a user lacking the field sorts as
 * the empty string (contract; docs/decisions.md "Sorting by an optional field"). An index on this
 * expression (`(coalesce(phone, '' COLLATE "C"), created_at, seq)`) serves it; without one, the
 * page is sorted.
 */
function sortValue(field: string, table = ''): string {
  return fieldSpec(field).optional === true ? `coalesce(${table}${field}, '' COLLATE "C")` : `${table}${field}`;
}

/**
 * The largest seq: a cursor that carries none (made where creation order is `created_at` alone) places
 * itself after every user of its `created_at`.
 */
const LAST_SEQ = '9223372036854775807';

/**
 * The cursor's condition in orderBy's order, its values appended to `values`: after the cursor's
 * (value, created_at, seq). A descending value is `<=` then `<`, so that the value's index (with
 * created_at and seq after it) is read from the cursor on.
 */
function keysetAfter(params: ListParams, after: Position, values: unknown[]): string {
  const field = sortedField(params.sort);
  const at = (value: unknown) => `$${values.push(value)}`;
  const creation = () =>
    `(created_at, seq) > (${at(after.created_at)}::timestamp, ${at(after.seq ?? LAST_SEQ)}::bigint)`;
  if (field === undefined) return creation();
  if (field === 'created_at')
    return params.descending
      ? `(created_at, seq) < (${at(after.created_at)}::timestamp, ${at(after.seq ?? '0')}::bigint)`
      : creation();
  const key = field === 'updated_at' ? after.key : toStored(after.key);
  if (field === 'id') return `id ${params.descending ? '<' : '>'} ${at(key)}`;
  const sorted = sortValue(field);
  if (!params.descending)
    return `(${sorted}, created_at, seq) > (${at(key)}, ${at(after.created_at)}::timestamp, ${at(after.seq ?? LAST_SEQ)}::bigint)`;
  const value = at(key);
  return `${sorted} <= ${value} AND (${sorted} < ${value} OR ${creation()})`;
}

/**
 * The users of the list's role (every user without one): the count kept per role (migration 002), not
 * a count of the table. The role is the statement's first value.
 */
function roleCount(params: ListParams): string {
  return `SELECT coalesce(sum(users), 0)::bigint AS total FROM user_role_counts${params.role === undefined ? '' : ' WHERE role = $1'}`;
}

/** A page's row beside the one-row query it is read with (a total, or what a needle keeps). */
type PageRow = Row & {
  total: string | null;
  kept?: boolean | null;
  stale?: boolean | null;
  parts?: string | null;
  changes?: string | null;
  id: string | null;
  seq: string | null;
};

/**
 * A page's users (the rows with an id: the one-row query's row alone has none), the total and, when
 * more users follow, the position of its last user with its seq. A cursor's page reads one row more
 * than it holds, which tells; a numbered page knows by its total.
 */
function pageOf(params: ListParams, rows: PageRow[], total: number): ListResult {
  const found = rows.filter((row) => row.id !== null);
  const kept = found.slice(0, params.limit);
  const users = kept.map(userOf);
  const more =
    params.after === undefined ? users.length > 0 && params.offset + users.length < total : found.length > params.limit;
  return {
    users,
    total,
    ...(more && { next: { ...positionOf(users.at(-1)!, params.sort), seq: kept.at(-1)!.seq! } }),
  };
}

/**
 * ORDER BY of a list (query.ts): by the field, ties in creation order, (created_at, seq), also when
 * descending. id and (created_at, seq) are unique. Any other `sort` ties every user: creation order.
 * `reversed`: the same order backwards, every term's direction turned (what list.ts walks for a page
 * in the far half); an index serves it scanned the other way.
 */
function orderBy(params: ListParams, table: string, reversed = false): string {
  const [asc, desc] = reversed ? ['DESC', 'ASC'] : ['ASC', 'DESC'];
  const direction = params.descending ? desc : asc;
  const field = sortedField(params.sort);
  if (field === undefined) return `${table}created_at ${asc}, ${table}seq ${asc}`;
  if (field === 'id') return `${table}id ${direction}`;
  if (field === 'created_at') return `${table}created_at ${direction}, ${table}seq ${direction}`;
  return `${sortValue(field, table)} ${direction}, ${table}created_at ${asc}, ${table}seq ${asc}`;
}
