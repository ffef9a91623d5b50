/**
 * Roster's REST API, typed from its OpenAPI document (openapi.ts, `npm run client:types`): one
 * openapi-fetch method per `operationId`, resolving to `{ data, error, response }` (docs/clients.md, "A typed client").
 */
import createClient from 'openapi-fetch';
import {
  ETAG,
  IDEMPOTENCY_KEY,
  idempotencyKeyField,
  IDEMPOTENT_REPLAYED,
  IF_MATCH,
  IF_NONE_MATCH,
  LINK,
  nextLinkOf,
} from '../http-headers.js';
import type { components, operations, paths } from './openapi.js';
import {
  fetchChangesPage,
  watchChanges,
  type ChangesPageQuery,
  type ChangesReply,
  type FeedTransport,
  type WatchOptions,
} from './changes.js';
import { DEFAULT_RETRY, newIdempotencyKey, retrying, type RetryPolicy } from './retry.js';

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
  /**
   * How 503 and 429 replies are retried (retry.ts): DEFAULT_RETRY's fields, each replaceable; `false`
   * retries nothing.
   */
  retry?: Partial<RetryPolicy> | false;
}

/** What each call may add: a signal, headers of its own, the fetch's credentials mode, another fetch. */
// A type, not an interface: openapi-fetch's options take any further keys (an index signature).
export type CallOptions = {
  signal?: AbortSignal;
  headers?: Record<string, string>;
  credentials?: 'omit' | 'same-origin' | 'include';
  /** Sends each attempt (the retries are around it); the client's fetch when absent. */
  fetch?: (request: Request) => Promise<Response>;
  /** Sent as If-Match: the ETag the caller last saw; Roster answers 412 if the user changed since. */
  ifMatch?: string;
  /** Sent as If-None-Match on a read: Roster answers 304 while the user still has this ETag. */
  ifNoneMatch?: string;
};

/** A create's options: its idempotency key, a random one when absent (then the same on each retry). */
export type CreateOptions = CallOptions & { idempotencyKey?: string };

/** What openapi-fetch resolves to, plus the user's ETag and whether the reply was a replay (a create's stored reply). */
type Tagged<R extends { response: Response }> = R & { etag: string | undefined; replayed: boolean };

async function tagged<R extends { response: Response }>(reply: Promise<R>): Promise<Tagged<R>> {
  const result = await reply;
  const { headers } = result.response;
  return { ...result, etag: headers.get(ETAG) ?? undefined, replayed: headers.get(IDEMPOTENT_REPLAYED) === 'true' };
}

/** The document's paths start with /api/v1 (and /metrics, /livez, /readyz sit at the root): the base is what is before. */
export function rootOf(url: string): string {
  return url.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
}

/**
 * The query of the page that a list reply names in `Link: <…>; rel="next"` (the same list, by cursor),
 * or undefined on the last page. The link is read as Roster writes it: its own query string, root-relative.
 */
export function nextListQuery(response: Response): ListUsersQuery | undefined {
  const next = nextLinkOf(response.headers.get(LINK));
  if (next === undefined) return undefined;
  const { limit, page, ...rest } = Object.fromEntries(new URL(next, 'http://roster.invalid').searchParams);
  return {
    ...rest,
    ...(limit === undefined ? {} : { limit: Number(limit) }),
    ...(page === undefined ? {} : { page: Number(page) }),
  };
}

/**
 * The pages of one walk by `Link: rel="next"`: `next` gives the following page's query, and refuses a
 * link to a page the walk has asked for already. A server or a proxy that names the same next page
 * again (or a cycle of them) would otherwise hold the walk, and `roster users export`, forever.
 */
export class PageWalk {
  readonly #asked = new Set<string>();

  constructor(first: ListUsersQuery) {
    this.#asked.add(queryKey(first));
  }

  next(response: Response): ListUsersQuery | undefined {
    const query = nextListQuery(response);
    if (query === undefined) return undefined;
    const key = queryKey(query);
    if (this.#asked.has(key))
      throw new Error(`the list's Link: rel="next" names a page this walk has read already (${key})`);
    this.#asked.add(key);
    return query;
  }
}

/** A list query as one string, the same whatever the order of its parameters. */
function queryKey(query: ListUsersQuery): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.append(name, String(value));
  params.sort();
  return params.toString();
}

export function createRosterClient(options: RosterClientOptions) {
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  const policy = options.retry === false ? { ...DEFAULT_RETRY, retries: 0 } : { ...DEFAULT_RETRY, ...options.retry };
  /**
   * A call's options for openapi-fetch: its precondition headers, and its fetch with the retries around
   * it. Health and the probes are asked once: their 503 is the answer (a door or an engine is down).
   */
  const sent = (
    { ifMatch, ifNoneMatch, fetch, ...init }: CallOptions,
    extra: Record<string, string> = {},
    retried = true,
  ) => ({
    ...init,
    headers: {
      ...init.headers,
      ...extra,
      ...(ifMatch !== undefined ? { [IF_MATCH]: ifMatch } : {}),
      ...(ifNoneMatch !== undefined ? { [IF_NONE_MATCH]: ifNoneMatch } : {}),
    },
    fetch: retried ? retrying(fetch ?? baseFetch, policy) : (fetch ?? baseFetch),
  });
  const http = createClient<paths>({
    baseUrl: rootOf(options.url),
    ...(options.headers ? { headers: options.headers } : {}),
    // Headers given are the client's credential: never sent on to where a redirect points (fetch keeps
    // custom headers such as X-API-Key across origins; it drops only Authorization). Roster redirects nowhere.
    ...(options.headers && Object.keys(options.headers).length > 0 ? { redirect: 'error' as const } : {}),
    // Looked up on each request, so a fetch replaced after the client was made is the one used.
    fetch: baseFetch,
  });
  const operations = {
    listUsers: (query: ListUsersQuery = {}, init: CallOptions = {}) =>
      http.GET('/api/v1/users', { params: { query }, ...sent(init) }),
    /** The user and its `etag`, for a later If-Match. */
    getUser: (id: string, init: CallOptions = {}) =>
      tagged(http.GET('/api/v1/users/{id}', { params: { path: { id } }, ...sent(init) })),
    /** Sent with an Idempotency-Key (retried with the same one); `replayed` when Roster answered a stored reply. */
    createUser: (body: UserInput, { idempotencyKey = newIdempotencyKey(), ...init }: CreateOptions = {}) =>
      tagged(
        http.POST('/api/v1/users', {
          body: body as Schemas['UserInput'],
          ...sent(init, { [IDEMPOTENCY_KEY]: idempotencyKeyField(idempotencyKey) }),
        }),
      ),
    replaceUser: (id: string, body: UserInput, init: CallOptions = {}) =>
      tagged(
        http.PUT('/api/v1/users/{id}', {
          params: { path: { id } },
          body: body as Schemas['UserInput'],
          ...sent(init),
        }),
      ),
    /** Retried on 503 and 429 only with `ifMatch` (a repeat without it could apply twice). */
    updateUser: (id: string, body: UserPatch, init: CallOptions = {}) =>
      tagged(http.PATCH('/api/v1/users/{id}', { params: { path: { id } }, body, ...sent(init) })),
    deleteUser: (id: string, init: CallOptions = {}) =>
      http.DELETE('/api/v1/users/{id}', { params: { path: { id } }, ...sent(init) }),
    /** The change feed's JSON pages as openapi-fetch gives them; `changesPage` adds a 410's cursor, `watchUsers` streams. */
    listUserChanges: ({ wait, ...query }: ChangesPageQuery = {}, init: CallOptions = {}) =>
      http.GET('/api/v1/users/changes', {
        params: { query: { ...query, ...(wait === undefined ? {} : { wait: String(wait) }) } },
        ...sent(init),
      }),
    listChatMembers: (query: ListChatMembersQuery = {}, init: CallOptions = {}) =>
      http.GET('/api/v1/chat/members', { params: { query }, ...sent(init) }),
    getHealth: (init: CallOptions = {}) => http.GET('/api/v1/health', sent(init, {}, false)),
    getDocs: (init: CallOptions = {}) => http.GET('/api/v1/docs', sent(init)),
    getOpenApi: (init: CallOptions = {}) => http.GET('/api/v1/openapi.json', sent(init)),
    getAsyncApi: (init: CallOptions = {}) => http.GET('/api/v1/asyncapi.json', sent(init)),
    getLiveness: (init: CallOptions = {}) => http.GET('/livez', sent(init, {}, false)),
    getReadiness: (init: CallOptions = {}) => http.GET('/readyz', sent(init, {}, false)),
    /** The Prometheus text (METRICS on). */
    getMetrics: (init: CallOptions = {}) => http.GET('/metrics', { parseAs: 'text', ...sent(init) }),
  } satisfies Record<OperationName, unknown>;
  /**
   * Every page of a list, by cursor: the page `query` asks for, then each page its reply names in
   * `Link: rel="next"`, until the last. A walk neither repeats nor skips a user that stays in place
   * while it runs, whatever is written meanwhile. A reply other than 200 is yielded and ends the walk;
   * a link back to a page already read throws (PageWalk).
   */
  async function* walkUsers(query: ListUsersQuery = {}, init: CallOptions = {}) {
    const walk = new PageWalk(query);
    for (let asked: ListUsersQuery | undefined = query; asked !== undefined;) {
      const reply = await operations.listUsers(asked, init);
      yield reply;
      asked = reply.response.status === 200 ? walk.next(reply.response) : undefined;
    }
  }
  /** The change feed asked as this client asks: its root, its headers (credential), its fetch. */
  const feed = (init: Pick<CallOptions, 'headers' | 'fetch'> = {}, retried = true): FeedTransport => {
    const send = init.fetch ?? baseFetch;
    return {
      root: rootOf(options.url),
      headers: { ...options.headers, ...init.headers },
      fetch: retried ? retrying(send, policy) : send,
    };
  };
  /**
   * One JSON page of user changes after `since` (none: an empty page naming the head cursor), a long
   * poll with `wait`; a 410 CHANGES_RESET resolves with `reset`, the cursor to go on from after reloading.
   */
  const changesPage = (query: ChangesPageQuery = {}, init: CallOptions = {}): Promise<ChangesReply> =>
    fetchChangesPage(feed(init), query, init.signal);
  /**
   * The user changes as they happen (Server-Sent Events), resumed across reconnects: see changes.ts'
   * `watchChanges`. `for await (const item of client.watchUsers({ since, role, signal }))`.
   */
  const watchUsers = (watch: WatchOptions = {}, init: Pick<CallOptions, 'headers' | 'fetch'> = {}) =>
    watchChanges(feed(init, false), watch);
  return { ...operations, walkUsers, changesPage, watchUsers, http };
}

export type RosterClient = ReturnType<typeof createRosterClient>;
