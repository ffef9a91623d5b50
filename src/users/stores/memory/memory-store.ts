/**
 * The default store: users in memory, for the life of the process (contract). All operations are
 * synchronous underneath, so each one is atomic with respect to concurrent requests.
 *
 * Every list page is answered from an index, so its cost does not grow with the number of users:
 * - by id and by normalised email (Maps);
 * - creation order, for everyone and for each role (the role filter's default page);
 * - one sorted index per field (id, name, email, updated_at), each ordered by (value, creation order)
 *   and kept up to date on every write. Sorting by role needs no index of its own: it is the per-role
 *   creation indexes read one after the other in role order (ties keep creation order both ways).
 * A role filter with another sort walks that sort's index and skips other roles: each chunk of a field
 * index counts its users per role (ordered-index.ts: tags), so whole chunks before the page are skipped
 * by their counts, and only the chunk where the page starts and the page itself are read user by user.
 * Only search looks at every user, the first time a needle is asked (search-text.ts: SearchText) and
 * no kept result of a part of it is small enough to check instead; the result is then kept, exact
 * through writes, for the needle's next pages and orders (KeptMatches). Only matches are ever sorted.
 *
 * Creation order is `created_at` order: the store stamps every write from its clock, which makes
 * `created_at` strictly increasing (docs/decisions.md); indexes break ties by (`created_at`, `id`) all the same.
 *
 * Every index holds a user's sequence number (search-text.ts: Seq) rather than the user object, and
 * `#users[seq]` is the user: an update swaps the new object into that column, so it moves the user only
 * in the indexes whose key changed (always updated_at; name, say, for a rename) and leaves the others
 * alone. Creation order is then one integer comparison.
 */
import { DEFAULT_CHUNK_SIZE, OrderedIndex } from './ordered-index.js';
import type { Clock } from '../../../clock.js';
import { createClock } from '../../../clock.js';
import { ownFields, SEARCHABLE_FIELDS } from '../../fields.js';
import {
  codePointOrderKey,
  comparePositions,
  positionOf,
  sortedField,
  type ListParams,
  type ListResult,
  type Position,
} from '../../query.js';
import {
  fieldIndexes,
  INDEXED,
  KEYED,
  keyOf,
  reverseWithinTies,
  type IndexedField,
  type Keys,
  type Order,
} from './field-indexes.js';
import type { User } from '../../schema.js';
import { foundOf, KeptMatches, SearchText, searchedParts, type Seq } from './search-text.js';
import {
  CHANGED,
  emailKey,
  type Changed,
  type Changes,
  type Expected,
  type Keep,
  type NewUser,
  type UserStore,
} from '../../store.js';
import { MemoryIdempotencyKeys } from './idempotency-keys.js';
import { claimLost } from '../../idempotency-keys.js';

export interface MemoryStoreOptions {
  /** Chunk size of the sorted indexes (ordered-index.ts), which is also the search block; tests make it tiny. */
  indexChunkSize?: number;
  /** What stamps `created_at` and `updated_at`; a clock of its own by default. */
  clock?: Clock;
  /** IDEMPOTENCY_MAX_KEYS: idempotency keys kept at most. */
  maxKeys?: number;
  /** Search results kept (search-text.ts: KeptMatches): needles, and users over all of them. */
  keptSearches?: { needles: number; users: number };
}

/**
 * Search results kept by default: 16 needles, each tested by every write that changes a name, an email
 * or a role (with 16 kept, inserts and renames measured within their noise: about 20 and 7 µs at
 * 100 000 users), and 500 000 users in all: 2 MB, 4 MB with room to grow, and at most 4 MB more of
 * sorted copies. A result over 250 000 users (half) is scanned for each time it is asked.
 */
const KEPT_SEARCHES = { needles: 16, users: 500_000 };

/**
 * A kept result stands in for a scan while it holds at most one user in this many (#matches). Measured
 * at 300 000 users: checking a user cost about 1.5 µs (its fields lower-cased, read at random), the
 * scan about 30 ns a user, so a result of a fiftieth of the users costs about what the scan does.
 */
const WITHIN_SHARE = 64;
/** ... or at most this many users, whatever their share: few checks cost less than any scan. */
const WITHIN_ANY = 256;

/** IDEMPOTENCY_MAX_KEYS' default, for stores made without settings (tests, the bench). */
const MAX_KEYS = 100_000;

const creationOrder = (a: Seq, b: Seq): number => a - b;

/** Whether a write's If-Match versions miss the user (store.ts: Expected). */
const changedSince = (user: User, expected: Expected | undefined) =>
  expected !== undefined && !expected.includes(user.updated_at);

/**
 * Chunk size of the field indexes. Smaller than the creation indexes' (the search block): an insert's
 * search within a chunk reads users through the column, a cache miss per step at a million users,
 * while the search over chunks reads the keys kept per chunk. Measured in-process, inserts into 300 000
 * users took about 12 µs with 64 or 128 against 15 µs with 512; 128 keeps the rank bookkeeping a
 * write invalidates (one seq per chunk after it) to about 8 000 chunks at a million users.
 */
const FIELD_CHUNK_SIZE = 128;

export class MemoryUserStore implements UserStore {
  readonly keys: MemoryIdempotencyKeys;
  /**
   * The users by sequence number; a removed user leaves `undefined`. Stored users are never mutated:
   * an update stores a new object in the user's place.
   */
  readonly #users: (User | undefined)[] = [];
  readonly #byId = new Map<string, Seq>();
  /**
   * Users by email key. Usually one, but the contract's default PUT and PATCH apply no uniqueness
   * check, so several users can come to share an email after creation.
   */
  readonly #byEmail = new Map<string, Seq | Seq[]>();
  /**
   * Code-point sort keys of the few users with characters from U+D800 up (emoji, say), whose UTF-16
   * order differs (query.ts). Everyone else sorts by the field itself.
   */
  readonly #oddKeys = new Map<Seq, Keys>();
  readonly #creation: OrderedIndex<Seq>;
  readonly #creationByRole = new Map<string, OrderedIndex<Seq>>();
  readonly #fields: Record<IndexedField, OrderedIndex<Seq>>;
  /** A small number per role ever stored, the field indexes' tag (ordered-index.ts) for it. */
  readonly #roleNumbers = new Map<string, number>();
  readonly #text = new SearchText();
  readonly #kept: KeptMatches;
  readonly #chunkSize: number;
  readonly #fieldChunkSize: number;
  readonly #clock: Clock;

  constructor(options: MemoryStoreOptions = {}) {
    this.#chunkSize = options.indexChunkSize ?? DEFAULT_CHUNK_SIZE;
    this.#clock = options.clock ?? createClock();
    this.keys = new MemoryIdempotencyKeys(options.maxKeys ?? MAX_KEYS);
    const kept = options.keptSearches ?? KEPT_SEARCHES;
    this.#kept = new KeptMatches(kept.needles, kept.users);
    // Search reads the creation index's chunks and keeps its lower-cased text per chunk.
    this.#creation = new OrderedIndex(creationOrder, {
      maxChunk: this.#chunkSize,
      changed: (chunk) => this.#text.forget(chunk),
    });
    this.#fieldChunkSize = options.indexChunkSize ?? FIELD_CHUNK_SIZE;
    this.#fields = fieldIndexes(this.#users, this.#oddKeys, this.#fieldChunkSize, (seq) =>
      this.#roleNumber(this.#users[seq]!.role),
    );
  }

  async get(id: string): Promise<User | undefined> {
    const seq = this.#byId.get(id);
    return seq === undefined ? undefined : this.#users[seq];
  }

  async list(params: ListParams): Promise<ListResult> {
    const { role } = params;
    const inRole = role === undefined ? this.#creation : this.#creationByRole.get(role);
    if (!inRole || inRole.size === 0) return { users: [], total: 0 };
    const order = this.#orderOf(params, inRole);
    // The empty needle is in every field: the search is no filter.
    const needle = params.search === undefined || params.search === '' ? undefined : params.search.toLowerCase();
    if (params.after !== undefined) return this.#listAfter(params, params.after, inRole, order, needle);
    if (needle !== undefined) return this.#search(needle, order, params);
    const wanted = role === undefined || order.index === inRole ? undefined : role;
    return { users: this.#usersOf(this.#page(order, wanted, params.offset, params.limit)), total: inRole.size };
  }

  async insert(fields: NewUser, keep?: Keep): Promise<User | 'email_taken'> {
    // All in one turn: the claim checked, the user stored and the key's reply kept (store.ts: Keep).
    if (keep && !this.keys.holds(keep.claim)) throw claimLost();
    const key = emailKey(fields.email);
    if (this.#byEmail.has(key)) return 'email_taken';
    if (this.#byId.has(fields.id)) throw new Error(`duplicate user id ${fields.id}`);
    const now = this.#clock.next();
    // Exactly the user's own fields, in the contract's order, whatever else `fields` carries; frozen,
    // as the same object goes to every reader until the user changes.
    const user = Object.freeze(ownFields({ ...fields, created_at: now, updated_at: now }));
    // The reply is made before anything is stored: if making it failed, nothing would be.
    const reply = keep?.replyOf(user);
    const seq: Seq = this.#users.push(user) - 1;
    this.#byId.set(user.id, seq);
    this.#holdEmail(key, seq);
    this.#noteOddKeys(seq);
    this.#creation.insert(seq);
    this.#roleIndex(user.role).insert(seq);
    for (const field of INDEXED) this.#fields[field].insert(seq);
    this.#kept.inserted(seq, user);
    if (keep) this.keys.keep(keep.claim, reply!);
    return user;
  }

  async update(
    id: string,
    changes: Changes,
    options: { uniqueEmail: boolean; expected?: Expected },
  ): Promise<User | 'not_found' | 'email_taken' | Changed> {
    const seq = this.#byId.get(id);
    if (seq === undefined) return 'not_found';
    const before = this.#users[seq]!;
    if (changedSince(before, options.expected)) return CHANGED;
    const next = Object.freeze(ownFields({ ...before, ...changes, updated_at: this.#clock.next() }));
    const oldKey = emailKey(before.email);
    const newKey = emailKey(next.email);
    if (options.uniqueEmail && this.#emailHolders(newKey).some((other) => other !== seq)) return 'email_taken';

    // Indexes find a user by its keys, so it leaves the indexes of changed keys while the column still holds
    // the old user, and comes back once it holds the new one. Indexes of unchanged keys are not touched.
    const moved = INDEXED.filter((field) => before[field] !== next[field]);
    for (const field of moved) this.#fields[field].remove(seq);
    if (before.role !== next.role) this.#roleIndex(before.role).remove(seq);
    if (oldKey !== newKey) this.#releaseEmail(oldKey, seq);
    this.#oddKeys.delete(seq);

    this.#users[seq] = next;
    this.#noteOddKeys(seq);
    for (const field of moved) this.#fields[field].insert(seq);
    if (before.role !== next.role) {
      this.#roleIndex(next.role).insert(seq);
      // The indexes the user stayed in count it under its new role.
      const from = this.#roleNumber(before.role);
      const to = this.#roleNumber(next.role);
      for (const field of INDEXED) if (!moved.includes(field)) this.#fields[field].retag(seq, from, to);
    }
    if (oldKey !== newKey) this.#holdEmail(newKey, seq);
    // Search keeps lower-cased text per creation chunk: the user's chunk is built again.
    if (SEARCHABLE_FIELDS.some((field) => before[field] !== next[field])) this.#creation.touch(seq);
    this.#kept.updated(seq, before, next);
    return next;
  }

  async remove(id: string, options: { expected?: Expected } = {}): Promise<boolean | Changed> {
    const seq = this.#byId.get(id);
    if (seq === undefined) return false;
    const user = this.#users[seq]!;
    if (changedSince(user, options.expected)) return CHANGED;
    this.#byId.delete(id);
    this.#releaseEmail(emailKey(user.email), seq);
    this.#creation.remove(seq);
    this.#roleIndex(user.role).remove(seq);
    for (const field of INDEXED) this.#fields[field].remove(seq);
    this.#oddKeys.delete(seq);
    this.#kept.removed(seq, user);
    this.#users[seq] = undefined;
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
   * A page of the users whose searchable fields hold `needle` (lower-cased, not empty): from the kept
   * result of the needle, or from a scan, whose result is then kept if it is small enough.
   */
  #search(needle: string, order: Order, params: ListParams): ListResult {
    const { role, offset, limit } = params;
    const { total, at } = this.#searched(needle, order, role);
    const page: Seq[] = [];
    // Without a role every match counts: the page starts at `offset`; with one, the others are skipped.
    let skip = role === undefined ? 0 : offset;
    for (let i = role === undefined ? offset : 0; page.length < limit; i++) {
      const seq = at(i);
      if (seq === undefined) break;
      if (role !== undefined && this.#users[seq]!.role !== role) continue;
      if (skip > 0) skip--;
      else page.push(seq);
    }
    return { users: this.#usersOf(page), total };
  }

  /**
   * The matches of `needle` in the asked order, `at(i)` the i-th (of every role; undefined past the
   * last), and the total of `role`. In creation order the matches are read off as they are, forwards or
   * back; in another order, off their sorted copy, which the kept result holds until its users change.
   */
  #searched(
    needle: string,
    order: Order,
    role: string | undefined,
  ): { total: number; at: (i: number) => Seq | undefined } {
    let found = this.#kept.get(needle);
    if (!found) {
      found = foundOf(this.#matches(needle), this.#users);
      this.#kept.keep(needle, found);
    }
    const total = role === undefined ? found.length : (found.roles.get(role) ?? 0);
    let seqs: ArrayLike<Seq> = found.seqs;
    const { length } = found;
    let down = order.read === 'reversed';
    if (order.field !== undefined) {
      const name = `${order.field} ${order.read} ${order.descending === true}`;
      let sorted = this.#kept.order(found, name);
      if (!sorted) {
        sorted = Int32Array.from(this.#sorted(found.seqs.subarray(0, length), order));
        this.#kept.keepOrder(found, name, sorted);
      }
      seqs = sorted;
      down = false;
    }
    const ordered = seqs;
    const at = (i: number) => (i < length ? ordered[down ? length - 1 - i : i] : undefined);
    return { total, at };
  }

  /**
   * How to read the asked order: an index, and how to walk it.
   * - `ascending`: the index in its own order.
   * - `reversed`: the index backwards; right when no two users share a key (creation order, id).
   * - `descendingGroups`: descending by key, but users with equal keys keep creation order (docs/decisions.md:
   *   ties are stable in both directions), so groups of equal keys are read backwards, each forwards.
   * - `byRole`: the per-role creation indexes one after the other, in ascending or descending role
   *   order, each forwards: users of one role tie, and ties keep creation order both ways.
   */
  #orderOf(params: ListParams, inRole: OrderedIndex<Seq>): Order {
    const field = sortedField(params.sort);
    if (field === 'created_at') return { index: inRole, read: params.descending ? 'reversed' : 'ascending' };
    // A field no user has, or `role` within one role: every user ties, so creation order both ways.
    if (field === undefined || (field === 'role' && params.role !== undefined))
      return { index: inRole, read: 'ascending' };
    if (field === 'role') return { index: this.#creation, field, read: 'byRole', descending: params.descending };
    const index = this.#fields[field];
    if (!params.descending) return { index, field, read: 'ascending' };
    return { index, field, read: field === 'id' ? 'reversed' : 'descendingGroups' };
  }

  /**
   * Up to `limit` users from position `offset` of the order: found by rank in O(log n) when every
   * user of the index counts; with `role`, by walking the index and skipping other roles, from the
   * chunk where the page starts (#roleWalkStart).
   */
  #page(order: Order, role: string | undefined, offset: number, limit: number): Seq[] {
    const { index } = order;
    const size = index.size;
    if (limit <= 0) return [];
    if (role === undefined) {
      if (offset >= size) return [];
      if (order.read === 'ascending') return index.slice(offset, limit);
      if (order.read === 'reversed') return index.sliceDown(size - 1 - offset, limit);
      if (order.read === 'byRole') return this.#rolePage(order.descending === true, offset, limit);
      return this.#descendingPage(order, offset, limit);
    }
    // Walk the order group by group, skipping other roles and the first `offset` users.
    const out: Seq[] = [];
    const start = this.#roleWalkStart(order, role, offset);
    let skip = offset - start.skipped;
    for (const group of this.#groups(order, start.rank)) {
      for (const seq of group) {
        if (this.#users[seq]!.role !== role) continue;
        if (skip > 0) skip--;
        else if (out.push(seq) === limit) return out;
      }
    }
    return out;
  }

  /**
   * Where a walk of the users of `role` in the order can start to reach position `offset` among them:
   * the rank to read from (the first for ascending reads, the highest for the others) and how many users
   * of the role come before it in the order. Whole chunks are skipped by their counts per role; reading
   * backwards by descending groups, the start is moved up to the end of a group of equal keys, as the
   * group is read forwards.
   */
  #roleWalkStart(order: Order, role: string, offset: number): { rank: number; skipped: number } {
    const { index } = order;
    const tag = this.#roleNumber(role);
    if (order.read === 'ascending') return index.skipTagged(tag, offset);
    let { rank, skipped } = index.skipTaggedDown(tag, offset);
    if (order.read === 'descendingGroups' && rank > 0 && rank < index.size) {
      const field = order.field!;
      const odd = this.#oddKeys;
      const users = this.#users;
      const value = keyOf(odd, users, index.at(rank)!, field);
      if (keyOf(odd, users, index.at(rank - 1)!, field) === value) {
        const end = index.firstRank((seq) => keyOf(odd, users, seq, field) > value);
        for (const seq of index.slice(rank, end - rank)) if (users[seq]!.role === role) skipped--;
        rank = end;
      }
    }
    return { rank: rank - 1, skipped };
  }

  /** The per-role creation indexes in ascending (or descending) code-point order of the role. */
  #rolesInOrder(descending: boolean): OrderedIndex<Seq>[] {
    const roles = [...this.#creationByRole.entries()]
      .filter(([, index]) => index.size > 0)
      .map(([role, index]) => ({ key: codePointOrderKey(role), index }));
    roles.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    if (descending) roles.reverse();
    return roles.map((role) => role.index);
  }

  /** A page of the role order: whole roles skipped by their size, then slices of the next ones. */
  #rolePage(descending: boolean, offset: number, limit: number): Seq[] {
    const out: Seq[] = [];
    let skip = offset;
    for (const index of this.#rolesInOrder(descending)) {
      if (skip >= index.size) {
        skip -= index.size;
        continue;
      }
      out.push(...index.slice(skip, limit - out.length));
      skip = 0;
      if (out.length === limit) break;
    }
    return out;
  }

  /**
   * A page of descending groups by rank. Position p of the descending order lies in the group holding
   * ascending rank size-1-p; if that group spans ascending ranks [lo, hi], its users take descending
   * positions size-1-hi .. size-1-lo, in ascending order.
   */
  #descendingPage(order: Order, offset: number, limit: number): Seq[] {
    const { index } = order;
    const field = order.field!;
    const odd = this.#oddKeys;
    const users = this.#users;
    const size = index.size;
    const out: Seq[] = [];
    let position = offset;
    while (out.length < limit && position < size) {
      const value = keyOf(odd, users, index.at(size - 1 - position)!, field);
      const lo = index.firstRank((seq) => keyOf(odd, users, seq, field) >= value);
      const hi = index.firstRank((seq) => keyOf(odd, users, seq, field) > value) - 1;
      const from = lo + (position - (size - 1 - hi));
      const taken = index.slice(from, Math.min(limit - out.length, hi - from + 1));
      out.push(...taken);
      position += taken.length;
    }
    return out;
  }

  /**
   * The order from rank `from` on (the first rank read; for reads other than ascending, the highest) as
   * runs of users to read forwards. Descending groups: the group of equal keys holding the last not yet
   * read user spans ascending ranks [lo, hi]; it is read forwards, then the one before. `from` must end
   * a group there.
   */
  *#groups(order: Order, from: number): Generator<readonly Seq[]> {
    const { index } = order;
    if (order.read === 'ascending') {
      for (let rank = from; rank < index.size; rank += 512) yield index.slice(rank, 512);
      return;
    }
    if (order.read === 'byRole') throw new Error('the role order with a role filter is one role index');
    if (order.read === 'reversed') {
      for (let rank = from; rank >= 0; rank -= 64) yield index.sliceDown(rank, 64);
      return;
    }
    const field = order.field!;
    const odd = this.#oddKeys;
    const users = this.#users;
    const key = (seq: Seq) => keyOf(odd, users, seq, field);
    for (let hi = from; hi >= 0;) {
      // The groups that end within the next chunk's worth of ranks down, read off one slice; a group
      // that may go on below the slice is found by rank.
      const below = index.sliceDown(hi, this.#fieldChunkSize);
      let i = 0;
      while (i < below.length) {
        let j = i + 1;
        const value = key(below[i]!);
        while (j < below.length && key(below[j]!) === value) j++;
        if (j === below.length && hi - j >= 0) break;
        yield below.slice(i, j).reverse();
        i = j;
      }
      hi -= i;
      if (i < below.length) {
        const value = key(below[i]!);
        const lo = index.firstRank((seq) => key(seq) >= value);
        for (let from = lo; from <= hi; from += 512) yield index.slice(from, Math.min(512, hi - from + 1));
        hi = lo - 1;
      }
    }
  }

  // ---- The cursor's page (`after`): the users after a position (query.ts: Position), found by key. ----

  /**
   * The page after `after`: its place in the order is found in O(log n) by comparing keys (the
   * users' own place may have moved, or they may be gone), then read as a page-number page from
   * there. One user more than the page is read, to tell whether more follow (`next`).
   */
  #listAfter(
    params: ListParams,
    after: Position,
    inRole: OrderedIndex<Seq>,
    order: Order,
    needle: string | undefined,
  ): ListResult {
    const { role, limit } = params;
    let seqs: Seq[];
    let total: number;
    if (needle !== undefined) {
      // The matches in order (kept, or scanned); those after the cursor, of the role, kept.
      const searched = this.#searched(needle, order, role);
      total = searched.total;
      seqs = [];
      const users = this.#users;
      let passed = false;
      for (let i = 0, seq = searched.at(0); seq !== undefined && seqs.length <= limit; seq = searched.at(++i)) {
        const user = users[seq]!;
        // Only users of the role are in the list's order (with a role, sort=role is creation order).
        if (role !== undefined && user.role !== role) continue;
        passed ||= comparePositions(positionOf(user, params.sort), after, params.descending) > 0;
        if (passed) seqs.push(seq);
      }
    } else {
      const start = this.#rankAfter(order, after);
      const wanted = role === undefined || order.index === inRole ? undefined : role;
      seqs =
        wanted === undefined
          ? this.#page(order, undefined, start, limit + 1)
          : this.#walk(order, wanted, start, limit + 1);
      total = inRole.size;
    }
    const users = this.#usersOf(seqs.slice(0, limit));
    const more = seqs.length > limit;
    return { users, total, ...(more && { next: positionOf(users.at(-1)!, params.sort) }) };
  }

  /** How many users of the order (all roles of its index) come before `after`, from the keys, in O(log n). */
  #rankAfter(order: Order, after: Position): number {
    const { index } = order;
    const users = this.#users;
    const odd = this.#oddKeys;
    const created = after.created_at;
    if (order.read === 'byRole') {
      // Whole roles before the cursor's, then the users of its role created up to it.
      const key = codePointOrderKey(after.key);
      let rank = 0;
      for (const [role, inRole] of this.#creationByRole) {
        const roleKey = codePointOrderKey(role);
        if (order.descending === true ? roleKey > key : roleKey < key) rank += inRole.size;
        else if (roleKey === key) rank += inRole.firstRank((seq) => users[seq]!.created_at > created);
      }
      return rank;
    }
    const field = order.field;
    // Creation order (created_at, or a sort where every user ties): created_at alone places the cursor.
    if (field === undefined) {
      if (order.read === 'reversed') return index.size - index.firstRank((seq) => users[seq]!.created_at >= created);
      return index.firstRank((seq) => users[seq]!.created_at > created);
    }
    const key = codePointOrderKey(after.key);
    /** -1, 0 or 1 as `seq` comes before, at or after the cursor in the index's own (ascending) order. */
    const versus = (seq: Seq): number => {
      const own = keyOf(odd, users, seq, field);
      if (own !== key) return own < key ? -1 : 1;
      const stamp = users[seq]!.created_at;
      return stamp < created ? -1 : stamp > created ? 1 : 0;
    };
    if (order.read === 'ascending') return index.firstRank((seq) => versus(seq) > 0);
    if (order.read === 'reversed') return index.size - index.firstRank((seq) => versus(seq) >= 0);
    // Descending groups: every key above the cursor's, then its own group up to the cursor.
    const above = index.size - index.firstRank((seq) => keyOf(odd, users, seq, field) > key);
    const ownGroup =
      index.firstRank((seq) => versus(seq) > 0) - index.firstRank((seq) => keyOf(odd, users, seq, field) >= key);
    return above + ownGroup;
  }

  /** Up to `limit` users of `role` from position `start` of the order on (all roles counted in `start`). */
  #walk(order: Order, role: string, start: number, limit: number): Seq[] {
    const out: Seq[] = [];
    const batch = Math.max(limit, 256);
    for (let at = start; at < order.index.size && out.length < limit; at += batch) {
      for (const seq of this.#page(order, undefined, at, batch)) {
        if (this.#users[seq]!.role === role && out.push(seq) === limit) break;
      }
    }
    return out;
  }

  // ---- End of the cursor's page. ----

  /**
   * Every user whose searchable fields hold `needle`, ascending: a scan, or, when a kept result of a
   * part of the needle is small (WITHIN_SHARE), its users checked one by one.
   */
  #matches(needle: string): Seq[] {
    const within = this.#kept.within(needle);
    if (!within || within.length > Math.max(WITHIN_ANY, this.#byId.size / WITHIN_SHARE))
      return this.#text.find(this.#creation, this.#users, needle, undefined);
    const out: Seq[] = [];
    for (let i = 0; i < within.length; i++) {
      const seq = within.seqs[i]!;
      if (searchedParts(this.#users[seq]!).some((part) => part.includes(needle))) out.push(seq);
    }
    return out;
  }

  /** Search matches (ascending) in a field's order: only the matches are sorted, never all users. */
  #sorted(matches: Int32Array, order: Order): Seq[] {
    const field = order.field!;
    const odd = this.#oddKeys;
    const users = this.#users;
    const keyed = Array.from(matches, (seq) => ({ seq, key: keyOf(odd, users, seq, field) }));
    // Array sort is stable and the matches are in creation order, so ties stay in creation order.
    keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const descending = order.read === 'byRole' ? order.descending === true : order.read !== 'ascending';
    if (descending) keyed.reverse();
    const ordered = keyed.map((item) => item.seq);
    // Reversing also reversed ties; descending order keeps them in creation order.
    return descending && order.read !== 'reversed'
      ? reverseWithinTies(ordered, (seq) => keyOf(odd, users, seq, field))
      : ordered;
  }

  #roleNumber(role: string): number {
    let number = this.#roleNumbers.get(role);
    if (number === undefined) {
      number = this.#roleNumbers.size;
      this.#roleNumbers.set(role, number);
    }
    return number;
  }

  #roleIndex(role: string): OrderedIndex<Seq> {
    let index = this.#creationByRole.get(role);
    if (!index) {
      index = new OrderedIndex(creationOrder, { maxChunk: this.#chunkSize });
      this.#creationByRole.set(role, index);
    }
    return index;
  }

  #usersOf(seqs: readonly Seq[]): User[] {
    return seqs.map((seq) => this.#users[seq]!);
  }

  #noteOddKeys(seq: Seq): void {
    const user = this.#users[seq]!;
    if (KEYED.every((field) => codePointOrderKey(user[field]) === user[field])) return;
    const keys = {} as Keys;
    for (const field of KEYED) keys[field] = codePointOrderKey(user[field]);
    this.#oddKeys.set(seq, keys);
  }

  #emailHolders(key: string): Seq[] {
    const held = this.#byEmail.get(key);
    return held === undefined ? [] : Array.isArray(held) ? held : [held];
  }

  #holdEmail(key: string, seq: Seq): void {
    const held = this.#byEmail.get(key);
    if (held === undefined) this.#byEmail.set(key, seq);
    else if (Array.isArray(held)) held.push(seq);
    else this.#byEmail.set(key, [held, seq]);
  }

  #releaseEmail(key: string, seq: Seq): void {
    const rest = this.#emailHolders(key).filter((other) => other !== seq);
    if (rest.length === 0) this.#byEmail.delete(key);
    else this.#byEmail.set(key, rest.length === 1 ? rest[0]! : rest);
  }
}
