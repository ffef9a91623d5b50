/**
 * The list operation's query logic as pure functions, in the contract's processing order: filter by
 * role, filter by search, sort, then slice. Stores may answer faster (indexes, SQL), but their results
 * must equal these.
 */
import { SEARCHABLE_FIELDS, SORTABLE_FIELDS, type SortableField } from './fields.js';
import type { User } from './schema.js';

/**
 * The sortable field (fields.ts) `sort` names, or undefined. Any other `sort` ties every user (all sort
 * as the empty string, contract), so the list is in creation order. Every store orders by these alone.
 */
export function sortedField(sort: string): SortableField | undefined {
  return (SORTABLE_FIELDS as readonly string[]).includes(sort) ? (sort as SortableField) : undefined;
}

export interface ListParams {
  role?: string | undefined;
  search?: string | undefined;
  sort: string;
  descending: boolean;
  /** Index of the first user of the page: (page - 1) * limit. Ignored (0) with `after`. */
  offset: number;
  limit: number;
  /** A cursor's position (cursor.ts): the page holds the users after it in the list's order. */
  after?: Position | undefined;
}

export interface ListResult {
  users: User[];
  total: number;
  /**
   * The position of the page's last user when more users follow it: where the next page starts. A store
   * may leave it out of a page-number page; the service then takes it from the last user (positionOf),
   * which is exact in every store whose creation order is `created_at` order alone.
   */
  next?: Position | undefined;
}

/**
 * A place in a list's order, between users: just after the user whose sort key (sortKey) is `key` and
 * whose place in creation order is `created_at`, with PostgreSQL's `seq` where instances may stamp the
 * same `created_at` (stores/postgres/list.ts). It holds values, not a rank, so it stays where it is
 * while users are written around it: a walk from cursor to cursor never repeats a user and never skips
 * one that existed throughout.
 */
export interface Position {
  key: string;
  created_at: string;
  /** PostgreSQL's tiebreaker within one `created_at` (a decimal bigint); other stores leave it out. */
  seq?: string | undefined;
}

/** Where `user` stands in a list sorted by `sort`. */
export function positionOf(user: User, sort: string): Position {
  return { key: sortKey(user, sort), created_at: user.created_at };
}

/**
 * Where the page after `result` starts when more users follow it: the store's `next`, or, on a
 * page-number page that a store left without it, its last user's position.
 */
export function nextPosition(params: ListParams, result: ListResult): Position | undefined {
  if (result.next !== undefined || params.after !== undefined) return result.next;
  const last = result.users.at(-1);
  const more = last !== undefined && params.offset + result.users.length < result.total;
  return more ? positionOf(last, params.sort) : undefined;
}

/**
 * The list's order on positions: by key (code points; descending when asked), ties in creation order
 * in both directions. `created_at` is unique in one instance's users, so it decides every tie here.
 */
export function comparePositions(a: Position, b: Position, descending: boolean): number {
  const byKey = compareCodePoints(a.key, b.key);
  if (byKey !== 0) return descending ? -byKey : byKey;
  return a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0;
}

/** The value a user sorts by: a field it lacks sorts as the empty string (contract). */
export function sortKey(user: User, field: string): string {
  // hasOwn, not `in`: `sort=__proto__` or `sort=constructor` must not reach Object.prototype.
  const value: unknown = Object.hasOwn(user, field) ? (user as unknown as Record<string, unknown>)[field] : '';
  return typeof value === 'string' ? value : String(value ?? '');
}

/**
 * Compares strings by Unicode code point (docs/decisions.md). JavaScript's `<` compares UTF-16 code units,
 * which puts astral characters (emoji) before U+E000..U+FFFF; shifting the units as below makes the
 * code-unit order equal the code-point order.
 */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return fixup(x) - fixup(y);
  }
  return a.length - b.length;
}

/**
 * A string whose UTF-16 order (JavaScript's `<`, which runs natively) is the code-point order of `text`:
 * `text` itself unless it holds units from U+D800 up, which are remapped as in compareCodePoints.
 * Indexes keep these keys so their comparisons need no loop in JavaScript.
 */
export function codePointOrderKey(text: string): string {
  if (!HIGH_UNIT.test(text)) return text;
  let key = '';
  for (let i = 0; i < text.length; i++) key += String.fromCharCode(fixup(text.charCodeAt(i)));
  return key;
}

const HIGH_UNIT = /[\ud800-\uffff]/;

function fixup(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

/** The user's searchable fields (fields.ts), lower-cased: where a lower-cased needle is looked for. */
export const searchedParts = (user: User): string[] =>
  SEARCHABLE_FIELDS.map((field) => (user[field] ?? '').toLowerCase());

/** Whether `needle` (lower-cased) is in one of `parts` (searchedParts). */
export const findsIn = (parts: readonly string[], needle: string): boolean =>
  parts.some((part) => part.includes(needle));

/** Applies the whole list query to users given in creation order. */
export function queryUsers(usersInCreationOrder: Iterable<User>, params: ListParams): ListResult {
  const needle = params.search?.toLowerCase();
  const kept: User[] = [];
  for (const user of usersInCreationOrder) {
    if (params.role !== undefined && user.role !== params.role) continue;
    if (needle !== undefined && !findsIn(searchedParts(user), needle)) continue;
    kept.push(user);
  }
  const direction = params.descending ? -1 : 1;
  // Array.prototype.sort is stable, so ties keep creation order in both directions.
  const keyed = kept.map((user) => ({ user, key: sortKey(user, params.sort) }));
  keyed.sort((a, b) => direction * compareCodePoints(a.key, b.key));
  const { after } = params;
  const from =
    after === undefined
      ? params.offset
      : keyed.filter((entry) => comparePositions(positionOf(entry.user, params.sort), after, params.descending) <= 0)
          .length;
  const users = keyed.slice(from, from + params.limit).map((entry) => entry.user);
  const more = from + users.length < keyed.length && users.length > 0;
  return { users, total: kept.length, ...(more && { next: positionOf(users.at(-1)!, params.sort) }) };
}
