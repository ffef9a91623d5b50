/**
 * The replies of reads (a list page, a get by id), written from each user's JSON. A page of 20 users
 * serialised field by field costs more than the rest of the request; but a user's JSON only changes
 * when the user does. A store with stable objects (UserStore.stableObjects: the memory store) hands out
 * a new object on every change, so the JSON is kept per object; a store that makes new objects per read
 * (PostgreSQL) would only churn the cache, so its users are serialised each time. Each user is
 * serialised by fast-json-stringify from the `User` schema, the serializer Fastify would use, and the
 * envelope around is the reply schema's shape (a test compares the bytes with Fastify's own
 * serialisation of random replies).
 */
import fastJson from 'fast-json-stringify';
import { getHeapStatistics } from 'node:v8';
import { stringBytes, userBytes } from '../../users/heap-size.js';
import { User, type UserList } from '../../users/schema.js';

const serializeUser = fastJson(User);

/**
 * Users whose JSON is kept. When full it starts again empty: a bound on memory however many users are
 * paged through (a million users' JSON would be a few hundred MB), and the pages asked for most (the
 * first ones of each order) are back in it after one request. The bound is in bytes, counted as
 * heap-size.ts does (two per character), and for each entry both its JSON and the user it is kept for,
 * which the cache alone may be keeping alive (an updated user's former object): a 32nd of the heap,
 * about 128 MiB on a 4 GiB heap (some 100 000 users of 200 B of ASCII JSON), so that with MAX_USERS'
 * share of the heap it never crowds a small heap, whatever the users hold. A user whose entry alone
 * would pass the bound is serialised every time instead.
 */
export class JsonCache {
  readonly #entries = new Map<User, string>();
  #bytes = 0;

  constructor(readonly maxBytes: number) {}

  /** What the entries take, as counted against `maxBytes`. */
  get bytes(): number {
    return this.#bytes;
  }

  json(user: User): string {
    let json = this.#entries.get(user);
    if (json === undefined) {
      json = serializeUser(user);
      const bytes = stringBytes(json) + userBytes(user);
      if (bytes > this.maxBytes) return json;
      if (this.#bytes + bytes > this.maxBytes) {
        this.#entries.clear();
        this.#bytes = 0;
      }
      this.#entries.set(user, json);
      this.#bytes += bytes;
    }
    return json;
  }
}

/** The one cache of the replies. */
export const replyCache = new JsonCache(Math.floor(getHeapStatistics().heap_size_limit / 32));

export function userJson(user: User, cache = true): string {
  return cache ? replyCache.json(user) : serializeUser(user);
}

/** The success envelope of one user, as JSON text. */
export function userReplyJson(message: string, user: User, cache = true): string {
  return `{"status":"success","message":${JSON.stringify(message)},"data":${userJson(user, cache)}}`;
}

/** The success envelope of a list reply, as JSON text. */
export function listReplyJson(message: string, list: UserList, cache = true): string {
  const { total, page, limit, pages } = list.pagination;
  let users = '';
  for (let index = 0; index < list.users.length; index++)
    users += (index === 0 ? '' : ',') + userJson(list.users[index]!, cache);
  return (
    `{"status":"success","message":${JSON.stringify(message)},"data":{"users":[${users}],` +
    `"pagination":{"total":${total},"page":${page},"limit":${limit},"pages":${pages}}}}`
  );
}
