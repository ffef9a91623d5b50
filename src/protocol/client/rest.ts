/**
 * Roster's REST API, typed from its OpenAPI document: openapi-fetch over the `paths` that
 * openapi-typescript generated from /api/v1/openapi.json (openapi.ts, `npm run client:types`). One
 * method per operation, named by its `operationId`; each resolves to openapi-fetch's
 * `{ data, error, response }`, where `data` is the success envelope and `error` the error envelope
 * (`ErrorEnvelope`) of the status answered. Runs in the browser console and in Node (`roster users`).
 */
import createClient from 'openapi-fetch';
import type { components, operations, paths } from './openapi.js';

export type { components, operations, paths } from './openapi.js';

type Schemas = components['schemas'];
export type User = Schemas['User'];
/**
 * The document's UserInput, with `role` any string: ROLES is a setting, and the types were generated
 * from a Roster with the default one (admin, user); the service says which it accepts (422).
 */
export type UserInput = Omit<Schemas['UserInput'], 'role'> & { role?: string };
export type UserPatch = Schemas['UserPatch'];
export type UserList = Schemas['UserList'];
export type Pagination = Schemas['Pagination'];
export type Health = Schemas['Health'];
export type ErrorEnvelope = Schemas['ErrorEnvelope'];
export type ErrorCode = Schemas['ErrorCode'];
export type FieldDetail = Schemas['FieldDetail'];
export type ListUsersQuery = NonNullable<operations['listUsers']['parameters']['query']>;
export type ListChatMembersQuery = NonNullable<operations['listChatMembers']['parameters']['query']>;

/** The operations a client calls: every `operationId` but the HEAD and OPTIONS variants. */
export type OperationName = Exclude<keyof operations, `${string}Head` | `options${string}`>;

export interface RosterClientOptions {
  /**
   * Where Roster is: its REST origin (`http://127.0.0.1:5000`) or its API URL (`…/api/v1`); a path
   * before `/api/v1` (a proxy's prefix) is kept.
   */
  url: string;
  /** Sent with every request (a credential: `x-api-key`, `authorization`). */
  headers?: Record<string, string>;
  /** The fetch to use; the global one when absent. */
  fetch?: (request: Request) => Promise<Response>;
}

/** What each call may add: a signal, headers of its own, the fetch's credentials mode, another fetch. */
// A type, not an interface: openapi-fetch's options take any further keys (an index signature).
export type CallOptions = {
  signal?: AbortSignal;
  headers?: Record<string, string>;
  credentials?: 'omit' | 'same-origin' | 'include';
  fetch?: (request: Request) => Promise<Response>;
};

/** The document's paths start with /api/v1 (and /metrics, /livez, /readyz sit at the root): the base is what is before. */
export function rootOf(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
}

export function createRosterClient(options: RosterClientOptions) {
  const http = createClient<paths>({
    baseUrl: rootOf(options.url),
    ...(options.headers ? { headers: options.headers } : {}),
    // Headers given are the client's credential: never sent on to where a redirect points (fetch keeps
    // custom headers such as X-API-Key across origins; it drops only Authorization). Roster redirects nowhere.
    ...(options.headers && Object.keys(options.headers).length > 0 ? { redirect: 'error' as const } : {}),
    // Looked up on each request, so a fetch replaced after the client was made is the one used.
    fetch: options.fetch ?? ((request: Request) => globalThis.fetch(request)),
  });
  const operations = {
    listUsers: (query: ListUsersQuery = {}, init: CallOptions = {}) =>
      http.GET('/api/v1/users', { params: { query }, ...init }),
    getUser: (id: string, init: CallOptions = {}) =>
      http.GET('/api/v1/users/{id}', { params: { path: { id } }, ...init }),
    createUser: (body: UserInput, init: CallOptions = {}) =>
      http.POST('/api/v1/users', { body: body as Schemas['UserInput'], ...init }),
    replaceUser: (id: string, body: UserInput, init: CallOptions = {}) =>
      http.PUT('/api/v1/users/{id}', { params: { path: { id } }, body: body as Schemas['UserInput'], ...init }),
    updateUser: (id: string, body: UserPatch, init: CallOptions = {}) =>
      http.PATCH('/api/v1/users/{id}', { params: { path: { id } }, body, ...init }),
    deleteUser: (id: string, init: CallOptions = {}) =>
      http.DELETE('/api/v1/users/{id}', { params: { path: { id } }, ...init }),
    listChatMembers: (query: ListChatMembersQuery = {}, init: CallOptions = {}) =>
      http.GET('/api/v1/chat/members', { params: { query }, ...init }),
    getHealth: (init: CallOptions = {}) => http.GET('/api/v1/health', init),
    getDocs: (init: CallOptions = {}) => http.GET('/api/v1/docs', init),
    getOpenApi: (init: CallOptions = {}) => http.GET('/api/v1/openapi.json', init),
    getAsyncApi: (init: CallOptions = {}) => http.GET('/api/v1/asyncapi.json', init),
    getLiveness: (init: CallOptions = {}) => http.GET('/livez', init),
    getReadiness: (init: CallOptions = {}) => http.GET('/readyz', init),
    /** The Prometheus text (METRICS on). */
    getMetrics: (init: CallOptions = {}) => http.GET('/metrics', { parseAs: 'text', ...init }),
  } satisfies Record<OperationName, unknown>;
  return { ...operations, http };
}

export type RosterClient = ReturnType<typeof createRosterClient>;
