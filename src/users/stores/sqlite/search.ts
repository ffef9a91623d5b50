/**
 * The SQLite store's searches (docs/decisions.md, "Search on SQLite"): their totals, from the counts of
 * short needles (short-needles.ts) or kept exact by every write (kept-searches.ts), and their pages by
 * number, from the matches kept, the trigram index (search-index.ts keeps it current) or a walk of the
 * list's order. A search's cursor page is list-sql.ts' pageAfter with `matching`'s condition. Every
 * read that may take long runs off the REST thread (`read`: sqlite-readers.ts); what is kept here is
 * kept only from a read no write overtook.
 */
import { SEARCHABLE_FIELDS } from '../../fields.js';
import { sortedField, type ListParams } from '../../query.js';
import type { NewUser } from '../../store.js';
import { searchColumn } from '../sql/columns.js';
import { likePattern } from '../sql/stored-text.js';
import { fromBlob, toBlob } from './blob-text.js';
import type { Statements } from './sqlite-connection.js';
import type { Read } from './sqlite-readers.js';
import { KEPT_NEEDLES, KeptNeedle, type Searched } from './kept-searches.js';
import { isShort } from './short-needles.js';
import { inCreationOrder, orderBy, type Matching } from './sqlite-list.js';
import { searchTexts } from '../sql/columns.js';
import type { SearchIndex } from './search-index.js';
import { runRead } from './sqlite-readers.js';

/** Needles remembered as searched once at most; past this many, the memory starts again empty. */
const SEEN_NEEDLES = 10_000;

/** A walk's offset from which it runs on the store's connection rather than a reader (#pageWalked). */
const DEEP_WALK = 2_000;

/** Characters in a trigram: the shortest needle the search index (migration 004) can find. */
const TRIGRAM = 3;

/** The stored lower-cased texts of the searchable fields, as a delete returns them. */
export const SEARCHED_COLUMNS = SEARCHABLE_FIELDS.map(searchColumn).join(', ');

/**
 * FROM and WHERE of the users matching the stored `needle`: with a trigram, and `indexed`, a phrase of
 * the index (inside an FTS5 string only the double quote is special, written twice); else instr() on
 * each column. A needle whose first character may be the inside of an escape (sql/stored-text.ts) has
 * its hits confirmed at whole characters.
 */
export function matching(needle: string, indexed: boolean): Matching & { from: string } {
  const aligned = likePattern(needle) !== undefined;
  const test = (column: string) =>
    aligned ? `instr(users.${column}, ?) > 0` : `roster_contains_aligned(users.${column}, ?)`;
  const anyField = `(${SEARCHABLE_FIELDS.map((field) => test(searchColumn(field))).join(' OR ')})`;
  const needles = SEARCHABLE_FIELDS.map(() => needle);
  if (!indexed || [...needle].length < TRIGRAM) return { from: 'users', where: anyField, values: needles };
  const match = `"${needle.replaceAll('"', '""')}"`;
  const from = 'users_search JOIN users ON users.created_at = users_search.rowid';
  if (aligned) return { from, where: 'users_search MATCH ?', values: [match] };
  return { from, where: `users_search MATCH ? AND ${anyField}`, values: [match, ...needles] };
}

export class Searches {
  /** What is kept of the last KEPT_NEEDLES needles searched, by stored needle, the one searched longest ago first. */
  readonly #kept = new Map<string, KeptNeedle>();
  /** Needles searched once and not kept since (#firstTotal): the next search of one keeps it. */
  readonly #seen = new Set<string>();
  /** Writes told of so far: a count read off this thread is kept only if none came while it was read. */
  #writes = 0;

  constructor(
    private readonly statement: Statements,
    private readonly read: Read,
    private readonly index: SearchIndex,
    /** The users of a role, or of every role (undefined). */
    private readonly usersOf: (role: string | undefined) => number,
    /** Matches kept per needle at most (KEPT_MATCHES unless the tests ask for fewer). */
    private readonly keptMatches: number,
  ) {}

  /**
   * A search's total (of its role, if any): for a short needle, the sum of its counts (one read of
   * their primary key); else kept, or counted once and then kept.
   */
  async total(params: ListParams, needle: string): Promise<number> {
    if (this.#counted(needle)) {
      const [where, values] = params.role === undefined ? ['', []] : [' AND role = ?', [toBlob(params.role)]];
      return this.statement(`SELECT coalesce(sum(users), 0) FROM users_search_grams WHERE gram = ?${where}`)
        .pluck()
        .get(needle, ...values) as number;
    }
    if (this.index.current && !this.#kept.has(needle) && !this.#seen.has(needle))
      return this.#firstTotal(params, needle);
    this.#seen.delete(needle);
    const kept = await this.#keptNeedle(needle);
    const all = kept.total(undefined)!;
    if (params.role === undefined) return all;
    const role = kept.total(params.role);
    if (role !== undefined) return role;
    const writes = this.#writes;
    const counted = await this.#countRole(needle, params.role, all);
    return writes === this.#writes && this.#kept.get(needle) === kept ? kept.counted(params.role, counted) : counted;
  }

  /**
   * The rowids of a search's page by number, its `total` known: from the matches kept, else from the
   * trigram index, unless the needle is too short for it, the index is not current, or walking the
   * list's order reads fewer rows.
   */
  async page(params: ListParams, needle: string, total: number): Promise<number[]> {
    if (params.offset >= total || params.limit <= 0) return [];
    // A short needle's page walks the list's order: it is held by enough users for the walk to be short.
    if (this.#counted(needle)) return this.#pageWalked(params, needle);
    // A needle searched once is not kept (#firstTotal): its page from the index, or a walk.
    const kept = this.index.current && !this.#kept.has(needle) ? undefined : await this.#keptNeedle(needle);
    if (kept?.matches) return this.#pageOfMatches(params, kept.matches);
    const walk =
      [...needle].length < TRIGRAM ||
      !this.index.current ||
      (!inCreationOrder(params) && this.#walkIsShorter(params, total));
    return walk ? this.#pageWalked(params, needle) : this.#pageIndexed(params, needle);
  }

  /** A committed write of the user at `rowid`: as it was (undefined: created) and as it is. */
  changed(rowid: number, before: NewUser | undefined, after: NewUser): void {
    this.#writes++;
    // A write that finds nothing kept need not look at its user's text.
    if (this.#kept.size === 0) return;
    const was: Searched | undefined = before && { role: before.role, texts: searchTexts(before) };
    const is: Searched = { role: after.role, texts: searchTexts(after) };
    for (const kept of this.#kept.values()) kept.changed(rowid, was, is);
  }

  /** A committed delete of the user at `rowid`, with the texts of SEARCHED_COLUMNS. */
  removed(rowid: number, role: string, texts: (string | null)[]): void {
    this.#writes++;
    for (const kept of this.#kept.values()) kept.changed(rowid, { role, texts }, undefined);
  }

  clear(): void {
    this.#writes++;
    this.#kept.clear();
  }

  /**
   * The total of a needle searched for the first time (or first since SEEN_NEEDLES others): counted in
   * the trigram index alone, and not kept. Keeping reads every match while they are at most
   * `keptMatches` (10 000 row reads, a tenth of a second), which a term typed once never repays: a
   * person typing sends a new term on every keystroke. A needle that comes back is kept.
   */
  async #firstTotal(params: ListParams, needle: string): Promise<number> {
    if (this.#seen.size >= SEEN_NEEDLES) this.#seen.clear();
    this.#seen.add(needle);
    const { from, where, values } = matching(needle, true);
    const counted = where === 'users_search MATCH ?' ? 'users_search' : from;
    const all = await this.read<number>(`SELECT count(*) FROM ${counted} WHERE ${where}`, values, 'value');
    return params.role === undefined || all === 0 ? all : this.#countRole(needle, params.role, all);
  }

  /** Whether `needle`'s total comes from the counts of short needles: short, and the counts current. */
  #counted(needle: string): boolean {
    return this.index.current && isShort(needle);
  }

  /**
   * The kept counts (and, while few, matches) of `needle`, counted at its first search; now the last
   * searched. Counted off this thread: kept only if no write came meanwhile (one the count may have
   * missed would not be in it), else used for this search alone.
   */
  async #keptNeedle(needle: string): Promise<KeptNeedle> {
    let kept = this.#kept.get(needle);
    if (kept === undefined) {
      const writes = this.#writes;
      kept = await this.#countMatches(needle);
      if (writes !== this.#writes) return kept;
      // Another search of the same needle may have kept it meanwhile: the one kept first stays.
      kept = this.#kept.get(needle) ?? kept;
    }
    this.#kept.delete(needle);
    if (this.#kept.size >= KEPT_NEEDLES) this.#kept.delete(this.#kept.keys().next().value!);
    this.#kept.set(needle, kept);
    return kept;
  }

  /**
   * Whether walking the list's order, testing each user until the page is full (about
   * (offset + limit) × users / total rows, the matches being spread through the order), reads fewer
   * rows than sorting the `total` matches.
   */
  #walkIsShorter(params: ListParams, total: number): boolean {
    return (params.offset + params.limit) * this.usersOf(undefined) < total * total;
  }

  /**
   * The users matching `needle`, counted once: by a scan of the table, every role, or in the trigram
   * index, which knows no roles (each is counted when a search first filters by it: #countRole). While
   * the matches are at most `keptMatches`, they are kept too.
   */
  async #countMatches(needle: string): Promise<KeptNeedle> {
    const { from, where, values } = matching(needle, this.index.current);
    let total: number | undefined;
    if (from !== 'users') {
      const counted = where === 'users_search MATCH ?' ? 'users_search' : from;
      total = await this.read<number>(`SELECT count(*) FROM ${counted} WHERE ${where}`, values, 'value');
    }
    if (total === undefined || total <= this.keptMatches) {
      const few = await this.read<[number, Uint8Array][]>(
        `SELECT users.created_at, users.role FROM ${from} WHERE ${where} LIMIT ?`,
        [...values, this.keptMatches + 1],
        'rows',
      );
      if (few.length <= this.keptMatches) {
        const matches = new Map(few.map(([rowid, role]) => [rowid, fromBlob(role)]));
        const counts = new Map<string, number>();
        for (const role of matches.values()) counts.set(role, (counts.get(role) ?? 0) + 1);
        return new KeptNeedle(needle, matches.size, counts, matches, this.keptMatches);
      }
    }
    if (total !== undefined) return new KeptNeedle(needle, total, undefined, undefined, this.keptMatches);
    const counts = await this.read<[Uint8Array, number][]>(
      `SELECT users.role, count(*) FROM ${from} WHERE ${where} GROUP BY users.role`,
      values,
      'rows',
    );
    const perRole = counts.map(([role, users]): [string, number] => [fromBlob(role), users]);
    const all = perRole.reduce((sum, [, users]) => sum + users, 0);
    return new KeptNeedle(needle, all, perRole, undefined, this.keptMatches);
  }

  /**
   * The users of `role` matching `needle`, which has trigrams, counted the cheaper way: each user of
   * the role (found in its index) read and tested, or each of the needle's matches (found in the
   * trigram index) read for its role; both read one row per user, so the fewer users win.
   */
  async #countRole(needle: string, role: string, matches: number): Promise<number> {
    const users = this.usersOf(role);
    if (users === 0) return 0;
    const { from, where, values } = matching(needle, users > matches && this.index.current);
    return this.read<number>(
      `SELECT count(*) FROM ${from} WHERE ${where} AND users.role = ?`,
      [...values, toBlob(role)],
      'value',
    );
  }

  /** A page of the matches kept: sorted here in creation order, by SQLite for any other order. */
  async #pageOfMatches(params: ListParams, matches: Map<number, string>): Promise<number[]> {
    const rowids: number[] = [];
    for (const [rowid, role] of matches) if (params.role === undefined || role === params.role) rowids.push(rowid);
    if (inCreationOrder(params)) {
      rowids.sort(sortedField(params.sort) === undefined || !params.descending ? (a, b) => a - b : (a, b) => b - a);
      return rowids.slice(params.offset, params.offset + params.limit);
    }
    // The matches first (CROSS JOIN keeps that order of the loops), each read by its rowid, then sorted.
    return this.read(
      `SELECT users.created_at FROM json_each(?) AS matches CROSS JOIN users ON users.created_at = matches.value
       ORDER BY ${orderBy(params, false, 'users.')} LIMIT ? OFFSET ?`,
      [JSON.stringify(rowids), params.limit, params.offset],
      'column',
    );
  }

  /**
   * A page through the trigram index: in creation order (the default) straight from the index's own
   * rowid order; in any other order, the matches alone sorted.
   */
  #pageIndexed(params: ListParams, needle: string): Promise<number[]> {
    const { from, where, values } = this.#withRole(matching(needle, true), params, ' AND users.role = ?');
    const inOrder = inCreationOrder(params);
    // The users table only when a filter or the order reads it: the index alone gives rowids in order.
    const table = where === 'users_search MATCH ?' && inOrder ? 'users_search' : from;
    const order = inOrder
      ? `users_search.rowid ${sortedField(params.sort) === undefined || !params.descending ? 'ASC' : 'DESC'}`
      : orderBy(params, false, 'users.');
    return this.read(
      `SELECT users_search.rowid FROM ${table} WHERE ${where} ORDER BY ${order} LIMIT ? OFFSET ?`,
      [...values, params.limit, params.offset],
      'column',
    );
  }

  /**
   * A page found by walking the list's order (its index) and testing each user, until the page is
   * full: for a needle many users hold, few rows. In creation order a role filter walks the role's
   * index (its entries are in rowid order); in any other order `+role` keeps the role from picking the
   * index, so that the order does, and no match list is sorted.
   */
  #pageWalked(params: ListParams, needle: string): Promise<number[]> {
    const role = inCreationOrder(params) ? ' AND users.role = ?' : ' AND +users.role = ?';
    const { where, values } = this.#withRole(matching(needle, false), params, role);
    const sql = `SELECT users.created_at FROM users WHERE ${where} ORDER BY ${orderBy(params, false, 'users.')} LIMIT ? OFFSET ?`;
    // A deep walk runs on the store's own connection, as before the readers: on a reader thread a walk
    // of 300 000 users took minutes where it takes about a second here (not yet understood).
    if (params.offset >= DEEP_WALK)
      return Promise.resolve(
        runRead(this.statement(sql), [...values, params.limit, params.offset], 'column') as number[],
      );
    return this.read(sql, [...values, params.limit, params.offset], 'column');
  }

  /** `matched` with `condition` on the list's role, if it has one, added. */
  #withRole<T extends Matching>(matched: T, params: ListParams, condition: string): T {
    if (params.role === undefined) return matched;
    return { ...matched, where: matched.where + condition, values: [...matched.values, toBlob(params.role)] };
  }
}
