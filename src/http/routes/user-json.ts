/**
 * The replies of reads (a list page, a get by id), written from each user's JSON. A page of 20 users
 * serialised field by field costs more than the rest of the request, so the JSON of a frozen user (one
 * that cannot change: memory and SQLite hand out such objects, PostgreSQL new ones per read) is kept
 * per object (JsonCache). Users are serialised by fast-json-stringify from the `User` schema, as
 * Fastify would, in the reply schema's envelope (a test compares the bytes with Fastify's own).
 */
import fastJson from 'fast-json-stringify';
import { getHeapStatistics } from 'node:v8';
import { stringBytes } from '../../users/heap-size.js';
import { User, type UserList } from '../../users/schema.js';

/**
 * Without the schema's `required`: fast-json-stringify writes required properties first, which would put
 * an optional field after `updated_at`. The stores hand over users with every required field (fields.ts
 * ownFields); what is left is the table's order.
 */
const serializeUser: (user: User) => string = fastJson({ ...User, required: [] });

/**
 * Users whose JSON is kept, each entry for as long as its user object lives and the cache is not full.
 *
 * Weakly: the store drops a user's object when the user changes or is removed, and its JSON then goes
 * with it (a strong map kept every former version: BENCHMARKS.md, "Memory over a long run").
 *
 * When full it starts again empty: a bound on memory however many users are paged through (a million
 * users' JSON would be a few hundred MB), and the pages asked for most (the first ones of each order)
 * are back in it after one request. The bound is in bytes, counted as heap-size.ts does (two per
 * character, whatever the text) with the entry's slot: a 32nd of the heap, about 128 MiB on a 4 GiB heap
 * (some 250 000 users of 200 B of ASCII JSON). Entries of users already gone still count until the
 * cache starts again, so the count never falls short of what the entries hold. A user whose entry alone
 * would pass the bound is serialised every time instead.
 */
export class JsonCache {
  #entries = new WeakMap<User, string>();
  #bytes = 0;

  constructor(readonly maxBytes: number) {}

  /** What the entries take, as counted against `maxBytes`. */
  get bytes(): number {
    return this.#bytes;
  }

  json(user: User): string {
    return this.#entries.get(user) ?? this.#keep(user);
  }

  /** The JSON kept for `user`, if there is an entry. */
  kept(user: User): string | undefined {
    return this.#entries.get(user);
  }

  /** Makes the JSON of `user` and keeps it, unless it alone would pass the bound. */
  #keep(user: User): string {
    const json = flattened(serializeUser(user));
    const bytes = stringBytes(json) + ENTRY_BYTES;
    if (bytes > this.maxBytes) return json;
    if (this.#bytes + bytes > this.maxBytes) {
      this.#entries = new WeakMap();
      this.#bytes = 0;
    }
    this.#entries.set(user, json);
    this.#bytes += bytes;
    return json;
  }
}

/** A weak map's slot for one entry (key, value, and the table's slack), rounded up. */
const ENTRY_BYTES = 48;

/**
 * The same text as one flat string. The serializer builds its text piece by piece, and V8 keeps such a
 * string as a tree of its pieces until something reads it: 907 B of heap for a user of 206 characters,
 * against 263 B flat (measured with 100 000 users held in a map, Node 24). Reading a character
 * makes V8 flatten the tree in place. By hand: a package for it would be this same one-line trick, and a
 * copy through a Buffer would cost two copies of the text for the same result. The check is a real one
 * (the JSON of an object starts with `{`), so that no compiler can drop the read as unused.
 */
function flattened(json: string): string {
  if (json.charCodeAt(0) !== 0x7b) throw new Error('a user serialised to something other than an object');
  return json;
}

/** The one cache of the replies. */
export const replyCache = new JsonCache(Math.floor(getHeapStatistics().heap_size_limit / 32));

/** A user's JSON: kept in the reply cache when the user is frozen (it cannot change), else made anew. */
export function userJson(user: User): string {
  // Only frozen users have entries, so a kept one needs no check; Object.isFrozen on each user of a
  // page was 2 % of a default list's instructions (valgrind's callgrind, BENCHMARKS.md "Drift").
  return replyCache.kept(user) ?? (Object.isFrozen(user) ? replyCache.json(user) : serializeUser(user));
}

/**
 * A user's JSON made anew, the cache left as it was: for a user object just made, by a write (its
 * reply) or in the change feed (its frames). Reads fill the cache; an entry made here cost a weak map
 * entry per written user (an ephemeron for every collection to trace, and its text promoted with it)
 * for a read that may never come. In the change feed's bench, where every write reaches the streams,
 * the streams' rounds spent about a sixth less time in young-generation collections without those
 * entries (BENCHMARKS.md "Change feed"); a write's p99 did not move.
 */
export const freshUserJson = (user: User): string => serializeUser(user);

/**
 * The success envelope of one user, as JSON text. `cached`: false for the reply of a write, whose user
 * object was just made (freshUserJson).
 */
export function userReplyJson(message: string, user: User, cached = true): string {
  return `{"status":"success","message":${JSON.stringify(message)},"data":${cached ? userJson(user) : freshUserJson(user)}}`;
}

/** The success envelope of a list reply, as JSON text. */
export function listReplyJson(message: string, list: UserList): string {
  const { total, page, limit, pages } = list.pagination;
  let users = '';
  for (let index = 0; index < list.users.length; index++)
    users += (index === 0 ? '' : ',') + userJson(list.users[index]!);
  return (
    `{"status":"success","message":${JSON.stringify(message)},"data":{"users":[${users}],` +
    `"pagination":{"total":${total},"page":${page},"limit":${limit},"pages":${pages}}}}`
  );
}
