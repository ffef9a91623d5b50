/**
 * The SQL of the SQLite store's list pages (query.ts defines the lists): their order, the index that
 * holds it, and the cursor's keyset. Each statement reads rowids (created_at) only; the store then
 * hands out the users of those rowids. The store says where each read runs (sqlite-readers.ts): a
 * page that walks many index entries, off the REST thread.
 */

/** Index entries a page by number walks at most to be read on the REST thread (a fraction of a millisecond). */
const WALKED_HERE = 2_000;

/** How many index entries numberedPage walks for `params`: the entries before the page, from the nearer end, and the page. */
export function entriesWalked(params: ListParams, total: number): number {
  return Math.min(params.offset, Math.max(total - params.offset, 0)) + params.limit;
}

/** Whether numberedPage's walk is short enough to run on the REST thread. */
export const walkIsShort = (params: ListParams, total: number): boolean => entriesWalked(params, total) <= WALKED_HERE;
import { fieldSpec } from '../../fields.js';
import { sortedField, type ListParams, type Position } from '../../query.js';
import { toBlob } from './blob-text.js';
import type { Read } from './sqlite-readers.js';
import { microsOf } from './sqlite-rows.js';

/** A search's condition on `users` (a WHERE and its values); see search.ts. */
export interface Matching {
  where: string;
  values: unknown[];
}

/**
 * The rowids of a page by number (offset) of the list without search, whose `total` is known. A page
 * costs a walk over the index entries before it (each index holds the order and ends with the rowid,
 * so only the index is read). A page in the far half is read in the reversed order from the other end
 * (the same index walked backwards), then turned round: no walk passes half the users.
 */
export async function numberedPage(read: Read, params: ListParams, total: number): Promise<number[]> {
  if (params.offset >= total || params.limit <= 0) return [];
  const [where, values] = params.role === undefined ? ['', []] : ['WHERE role = ?', [toBlob(params.role)]];
  const far = params.offset > total - params.offset;
  const [limit, offset] = far
    ? [Math.min(params.limit, total - params.offset), Math.max(total - params.offset - params.limit, 0)]
    : [params.limit, params.offset];
  const rowids = await read<number[]>(
    `SELECT created_at FROM users${indexedBy(params)} ${where} ORDER BY ${orderBy(params, far)} LIMIT ? OFFSET ?`,
    [...values, limit, offset],
    'column',
  );
  return far ? rowids.reverse() : rowids;
}

/**
 * The rowids of the page after `after` (query.ts: Position), and one more if more follow: the users
 * (of `search`'s matches, if given) whose (sort value, rowid) come after the cursor's in the list's
 * order, read from the sort's index (each ends with the rowid, so the cursor's place is one seek).
 * A search's page tests each user it walks, the matches being spread through the order.
 */
export function pageAfter(read: Read, params: ListParams, after: Position, search?: Matching): Promise<number[]> {
  const filters = [...(params.role === undefined ? [] : ['role = ?']), ...(search ? [search.where] : [])];
  const values = [...(params.role === undefined ? [] : [toBlob(params.role)]), ...(search?.values ?? [])];
  // Without search, the page's own index is named, as for a page by number.
  const index = search === undefined ? indexedBy(params) : '';
  const where = [...filters, keysetAfter(params)].join(' AND ');
  return read(
    `SELECT created_at FROM users${index} WHERE ${where} ORDER BY ${orderBy(params)} LIMIT ?`,
    [...values, ...keysetValues(params, after), params.limit + 1],
    'column',
  );
}

/** Whether the list is in creation order (rowid order), either way: by created_at, or by no sortable field. */
export function inCreationOrder(params: ListParams): boolean {
  const field = sortedField(params.sort);
  return field === undefined || field === 'created_at';
}

/**
 * Whether `field` is optional (fields.ts): users without it hold NULL, and sort as the empty string
 * (contract; docs/decisions.md "Sorting by an optional field"), so the list orders by sortValue.
 */
const isOptional = (field: string): boolean => fieldSpec(field).optional === true;

/** What a list sorted by `field` orders by: the column, or for an optional field, NULL read as x''. */
function sortValue(field: string, table = ''): string {
  return isOptional(field) ? `coalesce(${table}${field}, x'')` : `${table}${field}`;
}

/**
 * ` INDEXED BY` the page's index, or nothing for an optional field: the field's migration may give it
 * an index on sortValue (`coalesce(phone, x''), created_at, role`), or none, so the planner chooses.
 */
function indexedBy(params: ListParams): string {
  const field = sortedField(params.sort);
  return field !== undefined && isOptional(field) ? '' : ` INDEXED BY ${pageIndex(params)}`;
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
  const value = sortValue(field);
  return `${value} ${before}= ? AND (${value} ${before} ? OR created_at > ?)`;
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
export function orderBy(params: ListParams, reversed = false, table = ''): string {
  const [asc, desc] = reversed ? ['DESC', 'ASC'] : ['ASC', 'DESC'];
  const direction = params.descending ? desc : asc;
  const field = sortedField(params.sort);
  if (field === undefined) return `${table}created_at ${asc}`;
  if (field === 'created_at' || field === 'id' || field === 'updated_at') return `${table}${field} ${direction}`;
  return `${sortValue(field, table)} ${direction}, ${table}created_at ${asc}`;
}
