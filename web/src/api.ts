/** The user API (`api/v1/users`), with its error envelope turned into `ApiError`. */
import { API_BASE } from './config.js';

export interface User {
  id: string;
  name: string;
  email: string;
  role: string;
  created_at: string;
  updated_at: string;
}

export type UserFields = Pick<User, 'name' | 'email' | 'role'>;

export interface UserPage {
  users: User[];
  pagination: { total: number; page: number; limit: number; pages: number };
}

export interface ListQuery {
  page: number;
  limit: number;
  role: string;
  search: string;
  sort: string;
  order: 'asc' | 'desc';
}

export interface FieldDetail {
  field: string;
  message: string;
}

/** An error reply of the API (status and envelope), or status 0 when the request never got an answer. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldDetail[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

async function call<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T | undefined> {
  let response: Response;
  try {
    response = await fetch(`${API_BASE}${path}`, {
      method,
      signal,
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ApiError(0, 'NETWORK_ERROR', 'The server could not be reached. Check the connection and try again.');
  }
  if (response.status === 204) return undefined;
  let envelope: unknown;
  try {
    envelope = await response.json();
  } catch {
    throw new ApiError(response.status, 'ERROR', `The server answered ${response.status} ${response.statusText} without a readable body.`);
  }
  if (response.ok) return (envelope as { data?: T }).data;
  const error = (envelope as { error?: { code?: unknown; message?: unknown; details?: unknown } }).error ?? {};
  const details = Array.isArray(error.details)
    ? error.details.filter((d): d is FieldDetail => typeof d?.field === 'string' && typeof d?.message === 'string')
    : [];
  throw new ApiError(
    response.status,
    typeof error.code === 'string' ? error.code : 'ERROR',
    typeof error.message === 'string' ? error.message : `The server answered ${response.status}.`,
    details,
  );
}

export function listUsers(query: ListQuery, signal?: AbortSignal): Promise<UserPage> {
  const params = new URLSearchParams({ page: String(query.page), limit: String(query.limit), sort: query.sort, order: query.order });
  if (query.role !== '') params.set('role', query.role);
  if (query.search !== '') params.set('search', query.search);
  return call<UserPage>('GET', `/users?${params}`, undefined, signal) as Promise<UserPage>;
}

const userPath = (id: string) => `/users/${encodeURIComponent(id)}`;

export const createUser = (fields: UserFields) => call<User>('POST', '/users', fields) as Promise<User>;
export const replaceUser = (id: string, fields: UserFields) => call<User>('PUT', userPath(id), fields) as Promise<User>;
export const updateUser = (id: string, fields: Partial<UserFields>) => call<User>('PATCH', userPath(id), fields) as Promise<User>;
export const deleteUser = (id: string) => call<void>('DELETE', userPath(id)) as Promise<void>;
