/**
 * The default store: users in memory, for the life of the process (contract). All operations are
 * synchronous underneath, so each one is atomic with respect to concurrent requests.
 *
 * Every list page is answered from an index, so its cost does not grow with the number of users:
 * - by id and by normalised email (Maps);
 * - creation order, for everyone and for each role (the role filter's default page);
 * - one sorted index per field a user has (id, name, email, role, updated_at), each ordered by
 *   (value, creation order) and kept up to date on every write.
 * A role filter with another sort walks that sort's index and skips other roles: it reads only as far
 * as the page, never sorts. Only search must look at every user (search-text.ts); it then orders just
 * the matches.
 *
 * Creation order is `created_at` order: the store stamps every write from its clock, which makes
 * `created_at` strictly increasing (docs/decisions.md); indexes break ties by (`created_at`, `id`) all the same.
 *
 * Memory matters at a million users, so the indexes hold the user objects themselves, with no wrapper.
 */
import { DEFAULT_CHUNK_SIZE, OrderedIndex } from './ordered-index.js';
import type { Clock } from '../clock.js';
import { createClock } from '../clock.js';
import { codePointOrderKey, SORTED_FIELDS, sortedField, type ListParams, type ListResult } from './query.js';
import type { User } from './schema.js';
import { SearchText } from './search-text.js';
import { emailKey, type Changes, type NewUser, type UserStore } from './store.js';

/** The fields with a sorted index of their own; `created_at` is the creation index itself. */
type IndexedField = Exclude<(typeof SORTED_FIELDS)[number], 'created_at'>;
const INDEXED = SORTED_FIELDS.filter((field): field is IndexedField => field !== 'created_at');
type Keys = Record<IndexedField, string>;

export interface MemoryStoreOptions {
  /** Chunk size of the sorted indexes (ordered-index.ts), which is also the search block; tests make it tiny. */
  indexChunkSize?: number;
  /** What stamps `created_at` and `updated_at`; a clock of its own by default. */
  clock?: Clock;
}

const creationOrder = (a: User, b: User): number =>
  a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

export class MemoryUserStore implements UserStore {
  // Stored users are never mutated: an update stores a new object.
  readonly #byId = new Map<string, User>();
  /**
   * Users by email key. Usually one, but the contract's default PUT and PATCH apply no uniqueness
   * check, so several users can come to share an email after creation.
   */
  readonly #byEmail = new Map<string, User | User[]>();
  /**
   * Code-point sort keys of the few users with characters from U+D800 up (emoji, say), whose UTF-16
   * order differs (query.ts). Everyone else sorts by the field itself.
   */
  readonly #oddKeys = new Map<User, Keys>();
  readonly #creation: OrderedIndex<User>;
  readonly #creationByRole = new Map<string, OrderedIndex<User>>();
  readonly #fields: Record<IndexedField, OrderedIndex<User>>;
  readonly #text = new SearchText();
  readonly #chunkSize: number;
  readonly #clock: Clock;

  constructor(options: MemoryStoreOptions = {}) {
    this.#chunkSize = options.indexChunkSize ?? DEFAULT_CHUNK_SIZE;
    this.#clock = options.clock ?? createClock();
    // Search reads the creation index's chunks and keeps its lower-cased text per chunk.
    this.#creation = new OrderedIndex(creationOrder, {
      maxChunk: this.#chunkSize,
      changed: (chunk) => this.#text.forget(chunk),
    });
    // One comparison per field, written out: reads of a fixed property name are what the engine makes
    // fast, and these run a few hundred times per write.
    const odd = this.#oddKeys;
    const ordered = (x: string, y: string, a: User, b: User): number => (x < y ? -1 : x > y ? 1 : creationOrder(a, b));
    const index = (compare: (a: User, b: User) => number): OrderedIndex<User> =>
      new OrderedIndex(compare, { maxChunk: this.#chunkSize });
    this.#fields = {
      id: index((a, b) => ordered(a.id, b.id, a, b)),
      name: index((a, b) =>
        odd.size === 0 ? ordered(a.name, b.name, a, b) : ordered(keyOf(odd, a, 'name'), keyOf(odd, b, 'name'), a, b),
      ),
      email: index((a, b) =>
        odd.size === 0
          ? ordered(a.email, b.email, a, b)
          : ordered(keyOf(odd, a, 'email'), keyOf(odd, b, 'email'), a, b),
      ),
      role: index((a, b) =>
        odd.size === 0 ? ordered(a.role, b.role, a, b) : ordered(keyOf(odd, a, 'role'), keyOf(odd, b, 'role'), a, b),
      ),
      updated_at: index((a, b) =>
        odd.size === 0
          ? ordered(a.updated_at, b.updated_at, a, b)
          : ordered(keyOf(odd, a, 'updated_at'), keyOf(odd, b, 'updated_at'), a, b),
      ),
    };
  }

  async get(id: string): Promise<User | undefined> {
    return this.#byId.get(id);
  }

  async list(params: ListParams): Promise<ListResult> {
    const { role } = params;
    const inRole = role === undefined ? this.#creation : this.#creationByRole.get(role);
    if (!inRole || inRole.size === 0) return { users: [], total: 0 };
    const order = this.#orderOf(params, inRole);
    if (params.search !== undefined) {
      const matches = this.#text.find(this.#creation, params.search.toLowerCase(), role);
      return { users: this.#pageOfMatches(matches, order, params.offset, params.limit), total: matches.length };
    }
    const wanted = role === undefined || order.index === inRole ? undefined : role;
    return { users: this.#page(order, wanted, params.offset, params.limit), total: inRole.size };
  }

  async insert(fields: NewUser): Promise<User | 'email_taken'> {
    const key = emailKey(fields.email);
    if (this.#byEmail.has(key)) return 'email_taken';
    if (this.#byId.has(fields.id)) throw new Error(`duplicate user id ${fields.id}`);
    const now = this.#clock.next();
    // Exactly the user's own fields, in the contract's order, whatever else `fields` carries.
    const user: User = {
      id: fields.id,
      name: fields.name,
      email: fields.email,
      role: fields.role,
      created_at: now,
      updated_at: now,
    };
    this.#byId.set(user.id, user);
    this.#holdEmail(key, user);
    this.#noteOddKeys(user);
    this.#creation.insert(user);
    this.#roleIndex(user.role).insert(user);
    for (const field of INDEXED) this.#fields[field].insert(user);
    return user;
  }

  async update(
    id: string,
    changes: Changes,
    options: { uniqueEmail: boolean },
  ): Promise<User | 'not_found' | 'email_taken'> {
    const before = this.#byId.get(id);
    if (!before) return 'not_found';
    const next: User = { ...before, ...changes, updated_at: this.#clock.next() };
    const oldKey = emailKey(before.email);
    const newKey = emailKey(next.email);
    if (options.uniqueEmail && this.#emailHolders(newKey).some((other) => other !== before)) return 'email_taken';

    // Indexes find a user by its keys, so each is moved (or the object swapped in place) before the
    // old keys are forgotten.
    for (const field of INDEXED) {
      const index = this.#fields[field];
      if (before[field] === next[field]) index.replace(before, next);
      else index.remove(before);
    }
    this.#creation.replace(before, next);
    if (before.role === next.role) this.#roleIndex(before.role).replace(before, next);
    else this.#roleIndex(before.role).remove(before);
    if (oldKey === newKey) this.#swapEmailHolder(oldKey, before, next);
    else this.#releaseEmail(oldKey, before);
    this.#oddKeys.delete(before);

    this.#byId.set(id, next);
    if (oldKey !== newKey) this.#holdEmail(newKey, next);
    this.#noteOddKeys(next);
    for (const field of INDEXED) if (before[field] !== next[field]) this.#fields[field].insert(next);
    if (before.role !== next.role) this.#roleIndex(next.role).insert(next);
    return next;
  }

  async remove(id: string): Promise<boolean> {
    const user = this.#byId.get(id);
    if (!user) return false;
    this.#byId.delete(id);
    this.#releaseEmail(emailKey(user.email), user);
    this.#creation.remove(user);
    this.#roleIndex(user.role).remove(user);
    for (const field of INDEXED) this.#fields[field].remove(user);
    this.#oddKeys.delete(user);
    return true;
  }

  async count(): Promise<number> {
    return this.#byId.size;
  }

  async seed(users: readonly NewUser[]): Promise<boolean> {
    if (this.#byId.size > 0) return false;
    for (const user of users) await this.insert(user);
    return true;
  }

  async close(): Promise<void> {}

  /**
   * How to read the asked order: an index, and how to walk it.
   * - `ascending`: the index in its own order.
   * - `reversed`: the index backwards; right when no two users share a key (creation order, id).
   * - `descendingGroups`: descending by key, but users with equal keys keep creation order (docs/decisions.md:
   *   ties are stable in both directions), so groups of equal keys are read backwards, each forwards.
   */
  #orderOf(params: ListParams, inRole: OrderedIndex<User>): Order {
    const field = sortedField(params.sort);
    if (field === 'created_at') return { index: inRole, read: params.descending ? 'reversed' : 'ascending' };
    // A field no user has, or `role` within one role: every user ties, so creation order both ways.
    if (field === undefined || (field === 'role' && params.role !== undefined))
      return { index: inRole, read: 'ascending' };
    const index = this.#fields[field];
    if (!params.descending) return { index, field, read: 'ascending' };
    return { index, field, read: field === 'id' ? 'reversed' : 'descendingGroups' };
  }

  /**
   * Up to `limit` users from position `offset` of the order: found by rank in O(log n) when every
   * user of the index counts; with `role`, by walking the index and skipping other roles.
   */
  #page(order: Order, role: string | undefined, offset: number, limit: number): User[] {
    const { index } = order;
    const size = index.size;
    if (limit <= 0) return [];
    if (role === undefined) {
      if (offset >= size) return [];
      if (order.read === 'ascending') return index.slice(offset, limit);
      if (order.read === 'reversed') return index.sliceDown(size - 1 - offset, limit);
      return this.#descendingPage(order, offset, limit);
    }
    // Walk the order group by group, skipping other roles and the first `offset` users.
    const out: User[] = [];
    let skip = offset;
    for (const group of this.#groups(order)) {
      for (const user of group) {
        if (role !== undefined && user.role !== role) continue;
        if (skip > 0) skip--;
        else if (out.push(user) === limit) return out;
      }
    }
    return out;
  }

  /**
   * A page of descending groups by rank. Position p of the descending order lies in the group holding
   * ascending rank size-1-p; if that group spans ascending ranks [lo, hi], its users take descending
   * positions size-1-hi .. size-1-lo, in ascending order.
   */
  #descendingPage(order: Order, offset: number, limit: number): User[] {
    const { index } = order;
    const field = order.field!;
    const odd = this.#oddKeys;
    const size = index.size;
    const out: User[] = [];
    let position = offset;
    while (out.length < limit && position < size) {
      const value = keyOf(odd, index.at(size - 1 - position)!, field);
      const lo = index.firstRank((user) => keyOf(odd, user, field) >= value);
      const hi = index.firstRank((user) => keyOf(odd, user, field) > value) - 1;
      const from = lo + (position - (size - 1 - hi));
      const taken = index.slice(from, Math.min(limit - out.length, hi - from + 1));
      out.push(...taken);
      position += taken.length;
    }
    return out;
  }

  /**
   * The order as runs of users to read forwards. Descending groups: the group of equal keys holding
   * the last not yet read user spans ascending ranks [lo, hi]; it is read forwards, then the one before.
   */
  *#groups(order: Order): Generator<readonly User[]> {
    const { index } = order;
    if (order.read === 'ascending') {
      yield* index.chunks();
      return;
    }
    if (order.read === 'reversed') {
      for (let rank = index.size - 1; rank >= 0; rank -= 64) yield index.sliceDown(rank, 64);
      return;
    }
    const field = order.field!;
    const odd = this.#oddKeys;
    for (let hi = index.size - 1; hi >= 0;) {
      const value = keyOf(odd, index.at(hi)!, field);
      const lo = index.firstRank((user) => keyOf(odd, user, field) >= value);
      for (let from = lo; from <= hi; from += 512) yield index.slice(from, Math.min(512, hi - from + 1));
      hi = lo - 1;
    }
  }

  /**
   * The asked page of search matches, which arrive in creation order: sliced as they are (or reversed)
   * for creation order; otherwise only the matches are sorted, never all users.
   */
  #pageOfMatches(matches: User[], order: Order, offset: number, limit: number): User[] {
    let ordered = matches;
    if (order.field === undefined) {
      if (order.read === 'reversed') ordered = matches.slice().reverse();
    } else {
      const field = order.field;
      const odd = this.#oddKeys;
      const keyed = matches.map((user) => ({ user, key: keyOf(odd, user, field) }));
      // Array sort is stable and the matches are in creation order, so ties stay in creation order.
      keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      if (order.read !== 'ascending') keyed.reverse();
      ordered = keyed.map((entry) => entry.user);
      // Reversing also reversed ties; descending order keeps them in creation order.
      if (order.read === 'descendingGroups') ordered = reverseWithinTies(ordered, (user) => keyOf(odd, user, field));
    }
    return ordered.slice(offset, offset + limit);
  }

  #roleIndex(role: string): OrderedIndex<User> {
    let index = this.#creationByRole.get(role);
    if (!index) {
      index = new OrderedIndex(creationOrder, { maxChunk: this.#chunkSize });
      this.#creationByRole.set(role, index);
    }
    return index;
  }

  #noteOddKeys(user: User): void {
    if (INDEXED.every((field) => codePointOrderKey(user[field]) === user[field])) return;
    const keys = {} as Keys;
    for (const field of INDEXED) keys[field] = codePointOrderKey(user[field]);
    this.#oddKeys.set(user, keys);
  }

  #emailHolders(key: string): User[] {
    const held = this.#byEmail.get(key);
    return held === undefined ? [] : Array.isArray(held) ? held : [held];
  }

  #holdEmail(key: string, user: User): void {
    const held = this.#byEmail.get(key);
    if (held === undefined) this.#byEmail.set(key, user);
    else if (Array.isArray(held)) held.push(user);
    else this.#byEmail.set(key, [held, user]);
  }

  /** The same email key, held now by the updated object (no Map delete and re-insert). */
  #swapEmailHolder(key: string, before: User, next: User): void {
    const held = this.#byEmail.get(key);
    if (held === before) this.#byEmail.set(key, next);
    else if (Array.isArray(held) && held.includes(before)) held[held.indexOf(before)] = next;
  }

  #releaseEmail(key: string, user: User): void {
    const rest = this.#emailHolders(key).filter((other) => other !== user);
    if (rest.length === 0) this.#byEmail.delete(key);
    else this.#byEmail.set(key, rest.length === 1 ? rest[0]! : rest);
  }
}

interface Order {
  index: OrderedIndex<User>;
  /** The field of a field index; undefined for creation order. */
  field?: IndexedField;
  read: 'ascending' | 'reversed' | 'descendingGroups';
}

function keyOf(odd: Map<User, Keys>, user: User, field: IndexedField): string {
  return odd.get(user)?.[field] ?? user[field];
}

/** Reverses each run of equal keys in place of order; the runs themselves keep their places. */
function reverseWithinTies(users: User[], key: (user: User) => string): User[] {
  const out: User[] = [];
  for (let start = 0; start < users.length;) {
    let end = start + 1;
    const value = key(users[start]!);
    while (end < users.length && key(users[end]!) === value) end++;
    for (let i = end - 1; i >= start; i--) out.push(users[i]!);
    start = end;
  }
  return out;
}
