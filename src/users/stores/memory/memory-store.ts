/**
 * The default store: users in memory, for the life of the process (contract). All operations are
 * synchronous underneath, so each one is atomic with respect to concurrent requests.
 *
 * Every list page is answered from an index, so its cost does not grow with the number of users: by
 * id and by normalised email (Maps); creation order, for everyone and for each role; one sorted index
 * per field (field-indexes.ts); how a page walks them is list-pages.ts'. Search has an index of
 * its own (search-text.ts, gram-index.ts).
 *
 * Creation order is `created_at` order: the store stamps every write from its clock, which makes
 * `created_at` strictly increasing (docs/decisions.md). Indexes hold sequence numbers (search-text.ts: Seq).
 */
import { DEFAULT_CHUNK_SIZE, OrderedIndex } from './ordered-index.js';
import { createClock, type Clock } from '../../../clock.js';
import { ownFields } from '../../fields.js';
import { codePointOrderKey, positionOf, sortedField, type ListParams, type ListResult } from '../../query.js';
import { fieldIndexes, INDEXED, KEYED, keyOf, type IndexedField, type Keys } from './field-indexes.js';
import { KeptMatches } from './kept-matches.js';
import { positionAfter, roleStart, runs, take, type Order } from './list-pages.js';
import type { User } from '../../schema.js';
import { SearchText, type SearchTuning, type Seq } from './search-text.js';
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
import { MemoryIdempotencyKeys } from './memory-idempotency-keys.js';
import { claimLost, type KeyBounds } from '../../idempotency-keys.js';
import type { ChangeBounds } from '../../changes.js';
import { MemoryChangeLog } from './memory-changes.js';

export interface MemoryStoreOptions {
  /** Chunk size of the sorted indexes (ordered-index.ts); tests make it tiny. */
  indexChunkSize?: number;
  /** What stamps `created_at` and `updated_at`; a clock of its own by default. */
  clock?: Clock;
  /** IDEMPOTENCY_MAX_KEYS, IDEMPOTENCY_MAX_KEYS_PER_PRINCIPAL, IDEMPOTENCY_MAX_BYTES. */
  keyBounds?: KeyBounds;
  /** Search results kept (kept-matches.ts): needles, and users over all of them. */
  keptSearches?: { needles: number; users: number };
  /** CHANGES_MAX and CHANGES_MAX_AGE_SECONDS (users/changes.ts). */
  changeBounds?: ChangeBounds;
  /** The bounds of search's steps (search-text.ts); tests lower them to reach every step with few users. */
  searchTuning?: Partial<SearchTuning>;
}

/**
 * Search results kept by default: 16 needles, each tested by every write that changes a name, an email
 * or a role (with 16 kept, inserts and renames measured within their noise: about 20 and 7 µs at
 * 100 000 users), and 500 000 users in all: 2 MB, 4 MB with room to grow, and at most 4 MB more of
 * sorted copies. A result over 250 000 users (half) is scanned for each time it is asked.
 */
const KEPT_SEARCHES = { needles: 16, users: 500_000 };

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

/**
 * New users wait to go into the field indexes together, this many at most (#settle): one at a time
 * between requests, each insert met its chunks cold; in a run, the chunks an insert touched are still
 * warm for the next. Anything that reads or changes the field indexes settles first.
 */
const SETTLE_AT = 256;

export class MemoryUserStore implements UserStore {
  readonly keys: MemoryIdempotencyKeys;
  /** Every write's change, appended in the write's own synchronous step (memory-changes.ts). */
  readonly changes: MemoryChangeLog;
  /** The users by sequence number (search-text.ts: Seq), never mutated; a removed user leaves `undefined`. */
  readonly #users: (User | undefined)[] = [];
  readonly #byId = new Map<string, Seq>();
  /**
   * Users by email key. Usually one, but the contract's default PUT and PATCH apply no uniqueness
   * check, so several users can come to share an email after creation.
   */
  readonly #byEmail = new Map<string, Seq | Seq[]>();
  /** Code-point sort keys of the few users whose UTF-16 order differs (field-indexes.ts: Keys). */
  readonly #oddKeys = new Map<Seq, Keys>();
  readonly #creation: OrderedIndex<Seq>;
  readonly #creationByRole = new Map<string, OrderedIndex<Seq>>();
  readonly #fields: Record<IndexedField, OrderedIndex<Seq>>;
  /** A small number per role ever stored, the field indexes' tag (ordered-index.ts) for it. */
  readonly #roleNumbers = new Map<string, number>();
  readonly #search: SearchText;
  /** Seqs inserted but not yet in the field indexes (#settle), ascending. */
  readonly #unsorted: Seq[] = [];
  readonly #chunkSize: number;
  readonly #fieldChunkSize: number;
  readonly #clock: Clock;

  constructor(options: MemoryStoreOptions = {}) {
    this.#chunkSize = options.indexChunkSize ?? DEFAULT_CHUNK_SIZE;
    this.#clock = options.clock ?? createClock();
    this.keys = new MemoryIdempotencyKeys(options.keyBounds);
    this.changes = new MemoryChangeLog(options.changeBounds);
    const kept = options.keptSearches ?? KEPT_SEARCHES;
    this.#search = new SearchText(new KeptMatches(kept.needles, kept.users), this.#users, options.searchTuning);
    this.#creation = new OrderedIndex(creationOrder, { maxChunk: this.#chunkSize });
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
    this.#settle();
    const { role, offset, limit, after } = params;
    const inRole = role === undefined ? this.#creation : this.#creationByRole.get(role);
    if (!inRole || inRole.size === 0) return { users: [], total: 0 };
    const order = this.#orderOf(params, inRole);
    // The empty needle is in every field: the search is no filter.
    const needle = params.search === undefined || params.search === '' ? undefined : params.search.toLowerCase();
    // A cursor's page reads one user more, to tell whether more follow (`next`).
    const wanted = after === undefined ? limit : limit + 1;
    const users = this.#users;
    let found: User[];
    let total: number;
    if (needle !== undefined) {
      // Read in the same turn as its total (search-text.ts: Page); this turn may be later than the call's.
      ({ users: found, total } = await this.#search.page(needle, params, order, inRole, wanted, this.#fieldChunkSize));
    } else {
      total = inRole.size;
      // Other roles are skipped, unless the order's index holds the role alone.
      const only = order.index === inRole ? undefined : role;
      const start =
        after !== undefined
          ? { position: positionAfter(order, users, after), skipped: 0 }
          : only === undefined
            ? { position: offset, skipped: offset }
            : roleStart(order, users, only, this.#roleNumber(only), offset);
      const skip = after === undefined ? offset - start.skipped : 0;
      // Without a filter the page is the next `wanted` users; with one, runs of a chunk's size.
      const batch = only === undefined ? wanted : this.#fieldChunkSize;
      found = take(runs(order, start.position, batch), users, only, skip, wanted).map((seq) => users[seq]!);
    }
    const page = found.slice(0, limit);
    const more = after !== undefined && found.length > limit;
    return { users: page, total, ...(more && { next: positionOf(page.at(-1)!, params.sort) }) };
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
    if (this.#unsorted.push(seq) >= SETTLE_AT) this.#settle();
    this.#search.inserted(seq, user);
    if (keep) this.keys.keep(keep.claim, reply!);
    this.changes.append('created', user.id, user, null, now);
    return user;
  }

  async update(
    id: string,
    changes: Changes,
    options: { uniqueEmail: boolean; expected?: Expected },
  ): Promise<User | 'not_found' | 'email_taken' | Changed> {
    const seq = this.#byId.get(id);
    if (seq === undefined) return 'not_found';
    this.#settle();
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
    this.#search.updated(seq, before, next);
    this.changes.append('updated', id, next, before.role, next.updated_at);
    return next;
  }

  async remove(id: string, options: { expected?: Expected } = {}): Promise<boolean | Changed> {
    const seq = this.#byId.get(id);
    if (seq === undefined) return false;
    this.#settle();
    const user = this.#users[seq]!;
    if (changedSince(user, options.expected)) return CHANGED;
    this.#byId.delete(id);
    this.#releaseEmail(emailKey(user.email), seq);
    this.#creation.remove(seq);
    this.#roleIndex(user.role).remove(seq);
    for (const field of INDEXED) this.#fields[field].remove(seq);
    this.#oddKeys.delete(seq);
    this.#search.removed(seq, user);
    this.#users[seq] = undefined;
    this.changes.append('deleted', id, null, user.role, this.#clock.next());
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

  /** Every user inserted so far into the field indexes, index by index. */
  #settle(): void {
    const unsorted = this.#unsorted;
    if (unsorted.length === 0) return;
    for (const field of INDEXED) {
      const index = this.#fields[field];
      for (const seq of unsorted) index.insert(seq);
    }
    unsorted.length = 0;
  }

  /** How to read the asked order (list-pages.ts: Order). */
  #orderOf(params: ListParams, inRole: OrderedIndex<Seq>): Order {
    const field = sortedField(params.sort);
    const { descending } = params;
    if (field === 'created_at') return { index: inRole, read: descending ? 'reversed' : 'ascending' };
    // A field no user has, or `role` within one role: every user ties, so creation order both ways.
    if (field === undefined || (field === 'role' && params.role !== undefined))
      return { index: inRole, read: 'ascending' };
    const key = (seq: Seq) => keyOf(this.#oddKeys, this.#users, seq, field);
    if (field === 'role') {
      const roles = [...this.#creationByRole]
        .filter(([, index]) => index.size > 0)
        .map(([role, index]) => ({ key: codePointOrderKey(role), index }));
      roles.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      if (descending) roles.reverse();
      return { index: this.#creation, field, key, read: 'byRole', descending, roles };
    }
    const read = !descending ? 'ascending' : field === 'id' ? 'reversed' : 'descendingGroups';
    return { index: this.#fields[field], field, key, read, descending };
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

  #noteOddKeys(seq: Seq): void {
    const user = this.#users[seq]!;
    // An optional field the user lacks sorts as the empty string, which needs no key of its own.
    if (KEYED.every((field) => codePointOrderKey(user[field] ?? '') === (user[field] ?? ''))) return;
    const keys = {} as Keys;
    for (const field of KEYED) keys[field] = codePointOrderKey(user[field] ?? '');
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
