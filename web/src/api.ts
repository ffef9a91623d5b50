/**
 * The user API (`api/v1/users`) through Roster's typed client (client/rest.ts, openapi-fetch over the
 * OpenAPI document's types), with its error envelope turned into `ApiError`. The console decides on an
 * error's code (the catalog's, src/errors.ts), never on its HTTP status, which it only shows.
 */
import {
  createRosterClient,
  type ErrorCode,
  type User,
  type UserInput,
  type UserList,
  type WatchItem,
  type WatchOptions,
} from '@roster/protocol';
import { API_BASE } from './config.js';
import type { Signing } from './credentials.js';

export type { Change, User, WatchItem, WatchState } from '@roster/protocol';
export { WatchError } from '@roster/protocol';

/** Values of writable fields, by field name (the generated field table's), as the form holds them. */
export type UserValues = Record<string, string>;

export type UserPage = UserList;

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

/**
 * The codes an `ApiError` may carry: the catalog's, and two of the console's own for replies that carry
 * none: no answer at all (status 0), and an answer without a readable error envelope.
 */
export type FailureCode = ErrorCode | 'NETWORK_ERROR' | 'UNREADABLE_REPLY';

/** An error reply of the API (status and envelope), or status 0 when the request never got an answer. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: FailureCode,
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

/** Resolved against the page, so the console also works under a proxy's path prefix. */
const client = createRosterClient({ url: new URL(API_BASE, document.baseURI).href });

/** What every typed call resolves to (openapi-fetch): the success envelope or the error one. */
interface Reply<T> {
  data?: { data: T };
  error?: unknown;
  response: Response;
}

type Send<T> = (init: {
  signal?: AbortSignal;
  headers: Record<string, string>;
  credentials?: RequestCredentials;
  fetch: (request: Request) => Promise<Response>;
}) => Promise<Reply<T>>;

async function call<T>(send: Send<T>, signal?: AbortSignal, sign: Signing | null = signing): Promise<T | undefined> {
  // The reply, kept to name its status when its body cannot be read.
  let answered: Response | undefined;
  let reply: Reply<T>;
  try {
    reply = await send({
      ...(signal ? { signal } : {}),
      headers: { ...sign?.headers, accept: 'application/json' },
      ...(sign ? { credentials: sign.credentials } : {}),
      fetch: async (request) => (answered = await fetch(request)),
    });
  } catch (error) {
    if (signal?.aborted) throw error;
    if (answered === undefined)
      throw new ApiError(0, 'NETWORK_ERROR', 'The server could not be reached. Check the connection and try again.');
    throw new ApiError(
      answered.status,
      'UNREADABLE_REPLY',
      `The server answered ${answered.status} ${answered.statusText} without a readable body.`,
    );
  }
  const { response } = reply;
  if (response.status === 204) return undefined;
  if (response.ok) return reply.data?.data;
  // openapi-fetch hands over an error body that is not JSON as its text (none: undefined).
  if (typeof reply.error !== 'object' || reply.error === null)
    throw new ApiError(
      response.status,
      'UNREADABLE_REPLY',
      `The server answered ${response.status} ${response.statusText} without a readable body.`,
    );
  const error: { code?: unknown; message?: unknown; details?: unknown } =
    (reply.error as { error?: object } | undefined)?.error ?? {};
  const details = Array.isArray(error.details)
    ? error.details.filter((d): d is FieldDetail => typeof d?.field === 'string' && typeof d?.message === 'string')
    : [];
  const failure = new ApiError(
    response.status,
    typeof error.code === 'string' ? (error.code as ErrorCode) : 'UNREADABLE_REPLY',
    typeof error.message === 'string' ? error.message : `The server answered ${response.status}.`,
    details,
  );
  // Only for the credential still in use: a late answer to one signed out of since changes nothing.
  if (failure.code === 'UNAUTHORIZED' && sign === signing) unauthorized(failure);
  throw failure;
}

/** Reads one user with this credential (any principal may read): resolves if Roster accepts it, else throws its ApiError. */
export async function checkCredential(sign: Signing): Promise<void> {
  await call((init) => client.listUsers({ page: 1, limit: 1 }, init), undefined, sign);
}

export function listUsers(query: ListQuery, signal?: AbortSignal): Promise<UserPage> {
  const wanted = {
    page: query.page,
    limit: query.limit,
    sort: query.sort,
    order: query.order,
    ...(query.role !== '' ? { role: query.role } : {}),
    ...(query.search !== '' ? { search: query.search } : {}),
  };
  return call((init) => client.listUsers(wanted, init), signal) as Promise<UserPage>;
}

/** The part of health the console uses: which run of Roster answers (a new instance after a restart). */
export interface Health {
  instance?: string;
  started_at?: string;
}

export const health = () => call<Health>((init) => client.getHealth(init)) as Promise<Health>;

/** A user as read, with the ETag its reply carried (undefined from a Roster without ETags). */
export interface TaggedUser {
  user: User;
  etag: string | undefined;
}

/** One user, with the ETag that a save or a delete sends back as If-Match. */
export async function getUser(id: string): Promise<TaggedUser> {
  let etag: string | undefined;
  const user = (await call(async (init) => {
    const reply = await client.getUser(id, init);
    etag = reply.etag;
    return reply;
  })) as User;
  return { user, etag };
}

/** If-Match, when the console has the user's ETag: Roster answers 412 PRECONDITION_FAILED if the user changed since. */
const ifMatch = (etag: string | undefined) => (etag === undefined ? {} : { ifMatch: etag });

/** A create, sent with an Idempotency-Key of its own, so the client's retries (503, 429) create it once. */
/** Sent as the form has them: the API's validation, which the form's checks mirror, has the last word. */
export const createUser = (fields: UserValues) =>
  call((init) => client.createUser(fields as UserInput, init)) as Promise<User>;
export const replaceUser = (id: string, fields: UserValues, etag?: string) =>
  call((init) => client.replaceUser(id, fields as UserInput, { ...init, ...ifMatch(etag) })) as Promise<User>;
export const updateUser = (id: string, fields: UserValues, etag?: string) =>
  call((init) => client.updateUser(id, fields, { ...init, ...ifMatch(etag) })) as Promise<User>;
export const deleteUser = (id: string, etag?: string) =>
  call((init) => client.deleteUser(id, { ...init, ...ifMatch(etag) })) as Promise<void>;

/** Whether `error` is an API failure with this code. */
export const failedWith = (error: unknown, code: FailureCode): error is ApiError =>
  error instanceof ApiError && error.code === code;

/**
 * The head of the user change feed: the cursor to follow from once the list is loaded, so that a change
 * written between the two reads is still seen (a JSON page without `since` names the head).
 */
export async function changesHead(signal?: AbortSignal): Promise<string> {
  const sign = signing;
  let reply;
  try {
    reply = await client.changesPage(
      { limit: 1 },
      { headers: { ...sign?.headers }, fetch: signedFetch(sign), ...(signal ? { signal } : {}) },
    );
  } catch (error) {
    if (signal?.aborted) throw error;
    throw new ApiError(0, 'NETWORK_ERROR', 'The server could not be reached. Check the connection and try again.');
  }
  if (reply.data) return reply.data.next;
  const { status } = reply.response;
  const failure = new ApiError(
    status,
    reply.error?.error.code ?? 'UNREADABLE_REPLY',
    reply.error?.error.message ?? `The server answered ${status}.`,
  );
  if (failure.code === 'UNAUTHORIZED' && sign === signing) unauthorized(failure);
  throw failure;
}

/**
 * The user changes after `since`, as the typed client's watch reads them (fetch streaming, resumed
 * across drops): not the browser's EventSource, which cannot send the credential's header.
 */
export function watchUserChanges(since: string, options: Omit<WatchOptions, 'since'>): AsyncGenerator<WatchItem> {
  const sign = signing;
  return client.watchUsers({ ...options, since }, { headers: { ...sign?.headers }, fetch: signedFetch(sign) });
}

/** fetch with the credential's mode (`omit` for Basic: no browser sign-in pop-up on a 401). */
const signedFetch = (sign: Signing | null) => (request: Request) =>
  fetch(sign ? new Request(request, { credentials: sign.credentials }) : request);
