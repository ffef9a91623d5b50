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
  /** Index of the first user of the page: (page - 1) * limit. */
  offset: number;
  limit: number;
}

export interface ListResult {
  users: User[];
  total: number;
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

function matchesSearch(user: User, needle: string): boolean {
  return SEARCHABLE_FIELDS.some((field) => (user[field] ?? '').toLowerCase().includes(needle));
}

/** Applies the whole list query to users given in creation order. */
export function queryUsers(usersInCreationOrder: Iterable<User>, params: ListParams): ListResult {
  const needle = params.search?.toLowerCase();
  const kept: User[] = [];
  for (const user of usersInCreationOrder) {
    if (params.role !== undefined && user.role !== params.role) continue;
    if (needle !== undefined && !matchesSearch(user, needle)) continue;
    kept.push(user);
  }
  const direction = params.descending ? -1 : 1;
  // Array.prototype.sort is stable, so ties keep creation order in both directions.
  const keyed = kept.map((user) => ({ user, key: sortKey(user, params.sort) }));
  keyed.sort((a, b) => direction * compareCodePoints(a.key, b.key));
  return {
    users: keyed.slice(params.offset, params.offset + params.limit).map((entry) => entry.user),
    total: kept.length,
  };
}
