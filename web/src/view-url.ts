/**
 * The users view in the page's address: search, role, sort, order, page and page size as query
 * parameters named like the list API's, so a view can be shared and survives a reload. Only values
 * other than the defaults are written.
 */
import { USER_SORT_FIELDS } from '@roster/protocol';
import type { ListQuery } from './api.js';

export const DEFAULT_QUERY: ListQuery = { page: 1, limit: 10, role: '', search: '', sort: 'created_at', order: 'desc' };

/** The fields the list sorts by (the generated `UserSortField` enum). */
const SORTS: readonly string[] = USER_SORT_FIELDS;
const LIMIT_MAX = 1000;

/** The view named by a query string; what is missing or unreadable is the default. */
export function readView(search: string): ListQuery {
  const params = new URLSearchParams(search);
  const view = { ...DEFAULT_QUERY };
  const whole = (name: string, max: number) => {
    const value = params.get(name);
    return value !== null && /^[1-9]\d{0,14}$/.test(value) && Number(value) <= max ? Number(value) : undefined;
  };
  view.page = whole('page', Number.MAX_SAFE_INTEGER) ?? view.page;
  view.limit = whole('limit', LIMIT_MAX) ?? view.limit;
  view.search = params.get('search') ?? '';
  view.role = params.get('role') ?? '';
  const sort = params.get('sort');
  if (sort !== null && SORTS.includes(sort)) view.sort = sort;
  const order = params.get('order');
  if (order === 'asc' || order === 'desc') view.order = order;
  return view;
}

/** The query string for a view (without `?`; empty for the default view). */
export function writeView(view: ListQuery): string {
  const params = new URLSearchParams();
  if (view.search !== '') params.set('search', view.search);
  if (view.role !== '') params.set('role', view.role);
  if (view.sort !== DEFAULT_QUERY.sort) params.set('sort', view.sort);
  if (view.order !== DEFAULT_QUERY.order) params.set('order', view.order);
  if (view.page !== DEFAULT_QUERY.page) params.set('page', String(view.page));
  if (view.limit !== DEFAULT_QUERY.limit) params.set('limit', String(view.limit));
  return params.toString();
}
