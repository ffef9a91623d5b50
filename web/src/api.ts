/** The user API (`api/v1/users`), with its error envelope turned into `ApiError`. */
import { API_BASE } from './config.js';
import type { Signing } from './credentials.js';

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

/** How requests are signed while a credential is in use (AUTH on); null sends none (AUTH=none). */
let signing: Signing | null = null;
let unauthorized: (error: ApiError) => void = () => undefined;

/** Every request from now on carries this credential (null: none). */
export function signRequests(value: Signing | null): void {
  signing = value;
}

/** Called with a 401 to a request signed with the credential in use, before the error is thrown. */
export function onUnauthorized(handler: (error: ApiError) => void): void {
  unauthorized = handler;
}

async function call<T>(
  method: string,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
  sign: Signing | null = signing,
): Promise<T | undefined> {
  let response: Response;
  try {
    const headers: Record<string, string> = { ...sign?.headers, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    response = await fetch(`${API_BASE}${path}`, {
      method,
      signal,
      headers,
      ...(sign ? { credentials: sign.credentials } : {}),
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
    throw new ApiError(
      response.status,
      'ERROR',
      `The server answered ${response.status} ${response.statusText} without a readable body.`,
    );
  }
  if (response.ok) return (envelope as { data?: T }).data;
  const error = (envelope as { error?: { code?: unknown; message?: unknown; details?: unknown } }).error ?? {};
  const details = Array.isArray(error.details)
    ? error.details.filter((d): d is FieldDetail => typeof d?.field === 'string' && typeof d?.message === 'string')
    : [];
  const failure = new ApiError(
    response.status,
    typeof error.code === 'string' ? error.code : 'ERROR',
    typeof error.message === 'string' ? error.message : `The server answered ${response.status}.`,
    details,
  );
  // Only for the credential still in use: a late answer to one signed out of since changes nothing.
  if (failure.status === 401 && sign === signing) unauthorized(failure);
  throw failure;
}

/** Reads one user with this credential (any principal may read): resolves if Roster accepts it, else throws its ApiError. */
export async function checkCredential(sign: Signing): Promise<void> {
  await call<UserPage>('GET', '/users?page=1&limit=1', undefined, undefined, sign);
}

export function listUsers(query: ListQuery, signal?: AbortSignal): Promise<UserPage> {
  const params = new URLSearchParams({
    page: String(query.page),
    limit: String(query.limit),
    sort: query.sort,
    order: query.order,
  });
  if (query.role !== '') params.set('role', query.role);
  if (query.search !== '') params.set('search', query.search);
  return call<UserPage>('GET', `/users?${params}`, undefined, signal) as Promise<UserPage>;
}

/** The part of health the console uses: which run of Roster answers (a new instance after a restart). */
export interface Health {
  instance?: string;
  started_at?: string;
}

export const health = () => call<Health>('GET', '/health') as Promise<Health>;

const userPath = (id: string) => `/users/${encodeURIComponent(id)}`;

export const createUser = (fields: UserFields) => call<User>('POST', '/users', fields) as Promise<User>;
export const replaceUser = (id: string, fields: UserFields) => call<User>('PUT', userPath(id), fields) as Promise<User>;
export const updateUser = (id: string, fields: Partial<UserFields>) =>
  call<User>('PATCH', userPath(id), fields) as Promise<User>;
export const deleteUser = (id: string) => call<void>('DELETE', userPath(id)) as Promise<void>;
