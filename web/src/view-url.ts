/**
 * The users view in the page's address: search, role, sort, order, page and page size as query
 * parameters named like the list API's, so a view can be shared and survives a reload. Only values
 * other than the defaults are written.
 */
import type { ListQuery } from './api.js';
import type { components } from '@roster/protocol';

export const DEFAULT_QUERY: ListQuery = { page: 1, limit: 10, role: '', search: '', sort: 'created_at', order: 'desc' };

/** Words for each field the list sorts by: every one of the generated `UserSortField`, as the compiler checks. */
export const SORT_LABELS: Record<string, string> = {
  id: 'id',
  name: 'name',
  email: 'email',
  role: 'role',
  created_at: 'creation time',
  updated_at: 'update time',
} satisfies Record<components['schemas']['UserSortField'], string>;
const SORTS = Object.keys(SORT_LABELS);
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
