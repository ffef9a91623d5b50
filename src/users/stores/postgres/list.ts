/**
 * The list operation in PostgreSQL: one statement for a page and its total, with the totals of
 * searches remembered per instance while the users do not change (migration 005).
 */
import type pg from 'pg';
import { SEARCHABLE_FIELDS } from '../../fields.js';
import { positionOf, sortedField, type ListParams, type ListResult, type Position } from '../../query.js';
import { searchColumn } from '../sql/columns.js';
import { anywherePattern, likePattern, toStored } from '../sql/stored-text.js';
import { columns, fromRow as userOf, RAW_COLUMNS, type Row } from './rows.js';

/** Offsets beyond this are past any table; PostgreSQL's bigint could not take page × limit at its largest. */
const MAX_OFFSET = 2 ** 62;
/** Search totals an instance keeps (see list); past this many, the oldest is forgotten. */
const SEARCH_TOTALS = 1_000;

/**
 * Names of the statements that every pooled connection prepares once (parse and plan once, then only
 * bind and execute), by their text; the same text always gets the same name, as node-postgres requires.
 * Only statements whose best plan does not depend on the values are named: search is not (how many rows
 * a needle matches decides between walking an index and reading the matches), so PostgreSQL plans each
 * search for its needle. The texts named come from a fixed set (a list's filters and orders), so this
 * stays small.
 */
const statementNames = new Map<string, string>();

export function prepared(text: string, values: unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `roster_${statementNames.size + 1}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}

/** A search's total as counted, and the number of changes to users (migration 005) it was counted after. */
interface SearchTotal {
  changes: string;
  total: number;
}

/** Runs one statement; `named`: prepared once per connection (see `prepared`). */
type Query = <R extends pg.QueryResultRow>(
  text: string,
  values: unknown[],
  named?: boolean,
) => Promise<pg.QueryResult<R>>;

export class PostgresList {
  /** By role and stored needle: totals this instance has counted. Oldest first. */
  readonly #searchTotals = new Map<string, SearchTotal>();

  constructor(private readonly query: Query) {}

  async list(params: ListParams): Promise<ListResult> {
    const values: unknown[] = [];
    const filters: string[] = [];
    if (params.role !== undefined) {
      values.push(toStored(params.role));
      filters.push(`role = $${values.length}`);
    }
    let needle: string | undefined;
    if (params.search !== undefined) {
      needle = toStored(params.search.toLowerCase());
      const pattern = likePattern(needle);
      if (pattern !== undefined) {
        values.push(pattern);
        filters.push(
          `(${SEARCHABLE_FIELDS.map((field) => `${searchColumn(field)} LIKE $${values.length}`).join(' OR ')})`,
        );
      } else {
        // LIKE finds the needle anywhere; only rows holding an escape need the alignment confirmed.
        values.push(anywherePattern(needle), needle);
        const [like, exact] = [`$${values.length - 1}`, `$${values.length}`];
        const aligned = (column: string) =>
          `(${column} LIKE ${like} AND (strpos(${column}, E'\\x01') = 0 OR roster_contains_aligned(${column}, ${exact})))`;
        filters.push(`(${SEARCHABLE_FIELDS.map((field) => aligned(searchColumn(field))).join(' OR ')})`);
      }
    }
    const where = filters.length === 0 ? 'true' : filters.join(' AND ');
    if (params.after !== undefined) return this.#listAfter(params, params.after, where, values, needle);
    values.push(params.limit, Math.min(params.offset, MAX_OFFSET));
    if (needle === undefined) return this.#page(params, values, where);
    const [limit, offset] = [`$${values.length - 1}`, `$${values.length}`];
    // One statement, so the page and the total come from the same snapshot; the total is known even
    // when the page lies beyond the last user.
    const page = (total: string, named: boolean) =>
      this.query<PageRow>(
        `SELECT t.*, ${columns('p.')}, p.seq
         FROM (${total}) t
         LEFT JOIN LATERAL (
           SELECT ${RAW_COLUMNS}, seq FROM users WHERE ${where}
           ORDER BY ${orderBy(params, '')} LIMIT ${limit} OFFSET ${offset}
         ) p ON true
         ORDER BY ${orderBy(params, 'p.')}`,
        values,
        named,
      );
    const usersOf = (rows: (Row & { id: string | null; seq: string | null })[]) =>
      rows.filter((row) => row.id !== null);
    const { rows, total } = await this.#searched(params, needle, where, page);
    return numberedPage(params, usersOf(rows), total);
  }

  /**
   * A search's page and its total. The total is counted unless this instance counted it already after
   * the same number of changes to users (migration 005), read with the page: then it is the count of
   * this snapshot. Otherwise the page is read again with the count (a second statement, so that both
   * come from one snapshot); a statement without the count costs PostgreSQL less to plan. `page` runs
   * the page's statement beside the given one-row query.
   */
  async #searched(
    params: ListParams,
    needle: string,
    where: string,
    page: (total: string, named: boolean) => Promise<pg.QueryResult<PageRow>>,
  ): Promise<{ rows: PageRow[]; total: number }> {
    const key = JSON.stringify([params.role ?? null, needle]);
    const known = this.#searchTotals.get(key);
    const changes = 'SELECT coalesce(sum(changes), 0) AS changes FROM user_changes';
    if (known) {
      const { rows } = await page(changes, false);
      if (rows[0]!.changes === known.changes) return { rows, total: known.total };
    }
    const { rows } = await page(
      `SELECT c.changes, (SELECT count(*) FROM users WHERE ${where}) AS total FROM (${changes}) c`,
      false,
    );
    const total = Number(rows[0]!.total);
    this.#rememberTotal(key, { changes: rows[0]!.changes!, total });
    return { rows, total };
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
    const { rows } = await this.query<Row & { total: string; id: string | null; seq: string | null }>(
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
    return numberedPage(
      params,
      rows.filter((row) => row.id !== null),
      Number(rows[0]!.total),
    );
  }

  // ---- The cursor's page (`after`): a keyset WHERE on the list's order, read from its index. ----

  /**
   * The page after `after` (query.ts: Position): the rows whose (sort value, created_at, seq) come
   * after the cursor's in the list's order, read from the sort's index from the cursor on, up to one
   * row more than the page, which tells whether more follow. The total comes as on a page-number page:
   * the kept count per role, or the search's count (remembered per instance, as `list` does), in the
   * same statement, so from the same snapshot.
   */
  async #listAfter(
    params: ListParams,
    after: Position,
    where: string,
    filterValues: unknown[],
    needle: string | undefined,
  ): Promise<ListResult> {
    const values = [...filterValues];
    const keyset = keysetAfter(params, after, values);
    values.push(params.limit + 1);
    const limit = `$${values.length}`;
    const page = (total: string, named: boolean) =>
      this.query<PageRow>(
        `SELECT t.*, ${columns('p.')}, p.seq
         FROM (${total}) t
         LEFT JOIN LATERAL (
           SELECT ${RAW_COLUMNS}, seq FROM users WHERE ${where} AND ${keyset}
           ORDER BY ${orderBy(params, '')} LIMIT ${limit}
         ) p ON true
         ORDER BY ${orderBy(params, 'p.')}`,
        values,
        named,
      );
    const cursorPage = (rows: (Row & { id: string | null; seq: string | null })[], total: number): ListResult => {
      const found = rows.filter((row) => row.id !== null);
      const kept = found.slice(0, params.limit);
      const users = kept.map(userOf);
      const more = found.length > params.limit;
      return {
        users,
        total,
        ...(more && { next: { ...positionOf(users.at(-1)!, params.sort), seq: kept.at(-1)!.seq! } }),
      };
    };
    if (needle === undefined) {
      const { rows } = await page(roleCount(params), true);
      return cursorPage(rows, Number(rows[0]!.total));
    }
    const { rows, total } = await this.#searched(params, needle, where, page);
    return cursorPage(rows, total);
  }

  // ---- End of the cursor's page. ----

  #rememberTotal(key: string, total: SearchTotal): void {
    this.#searchTotals.delete(key);
    if (this.#searchTotals.size >= SEARCH_TOTALS) this.#searchTotals.delete(this.#searchTotals.keys().next().value!);
    this.#searchTotals.set(key, total);
  }
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
  if (!params.descending)
    return `(${field}, created_at, seq) > (${at(key)}, ${at(after.created_at)}::timestamp, ${at(after.seq ?? LAST_SEQ)}::bigint)`;
  const value = at(key);
  return `${field} <= ${value} AND (${field} < ${value} OR ${creation()})`;
}

/**
 * The users of the list's role (every user without one): the count kept per role (migration 002), not
 * a count of the table. The role is the statement's first value.
 */
function roleCount(params: ListParams): string {
  return `SELECT coalesce(sum(users), 0)::bigint AS total FROM user_role_counts${params.role === undefined ? '' : ' WHERE role = $1'}`;
}

/** A page's row beside the one-row query it is read with (a total, or the number of changes). */
type PageRow = Row & { total: string | null; changes?: string; id: string | null; seq: string | null };

/** A page asked by number and, when more users follow it, the position of its last user with its seq. */
function numberedPage(params: ListParams, rows: (Row & { seq: string | null })[], total: number): ListResult {
  const users = rows.map(userOf);
  const more = users.length > 0 && params.offset + users.length < total;
  return {
    users,
    total,
    ...(more && { next: { ...positionOf(users.at(-1)!, params.sort), seq: rows.at(-1)!.seq! } }),
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
  return `${table}${field} ${direction}, ${table}created_at ${asc}, ${table}seq ${asc}`;
}
