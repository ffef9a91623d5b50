/**
 * The search of the list operation: a case-insensitive substring of a searchable field (fields.ts: the
 * name or the email), answered from the search index (gram-index.ts) with the exact total, whatever
 * the needle, seen before or not. How a page is found, cheapest first:
 *
 * 1. A needle searched lately: its kept result (kept-matches.ts), exact through every write.
 * 2. A needle of one to three units (UTF-16, lower-cased): its total is the index's count. When the
 *    page is near the start of the order for how often the needle occurs ((offset + limit) × users ÷
 *    total within WALK_BUDGET), the order is walked and each user tested until the page is full: `a`
 *    or `an` fill page 1 within a few dozen users, in any order, with or without a cursor.
 * 3. A needle of three units or more: every match from the trigram postings, intersected from the
 *    rarest (exact, no text read), when the rarest trigram is on at most POSTINGS_MAX users. Then the
 *    page is taken off the matches (only matches are sorted), or, when sorting them would cost more
 *    than walking the order, by a walk. A needle of two units on at most POSTINGS_MAX users: the
 *    users of the trigrams that hold it, when they are as many as its count (#fromPair).
 * 4. Otherwise (a one- or two-unit needle on a deep page or in a sorted order far in, or a trigram on
 *    most users): a scan of every user in slices of SCAN_SLICE, the event loop free between them, the
 *    result following the writes that come meanwhile (KeptMatches.track), and then kept.
 * Nothing but step 4 reads more than a few thousand users, and step 4 never holds the thread for more
 * than a slice.
 */
import { foundOf, type Found, type KeptMatches, type Scan, tally, insertAt } from './kept-matches.js';
import { GramIndex } from './gram-index.js';
import { withPair } from './gram-keys.js';
import { positionAfter, runs, take, type Order } from './list-pages.js';
import type { OrderedIndex } from './ordered-index.js';
import { comparePositions, positionOf, type ListParams } from '../../query.js';
import { SEARCHABLE_FIELDS } from '../../fields.js';
import type { User } from '../../schema.js';

/**
 * What the memory store's indexes hold: a user's sequence number, its place in creation order (the
 * store stamps created_at strictly increasing), which stays the same for the life of the user. The
 * user itself is `users[seq]`, a column the store swaps each new object into on update, so an update
 * leaves alone every index whose key did not change. A number rather than a wrapper object per user:
 * no object header per user, and index chunks hold small integers rather than pointers.
 */
export type Seq = number;
/** The store's users by sequence number; undefined where a user was removed. */
export type UserColumn = readonly (User | undefined)[];

/**
 * Users a walk expects to test (step 2). Testing a user (its fields lower-cased, then `includes`)
 * costs 0.2–0.5 µs at a million users, so about a millisecond at most; a walk that finds the
 * needle rarer than its total said gives up at four times this and takes step 3 or 4.
 */
const WALK_BUDGET = 2048;
/** Matches sorted for a page in another order than creation (their sorted copy is then kept). */
const SORT_BUDGET = 4096;
/**
 * The rarest trigram's users up to which the postings are read (step 3): about a millisecond of
 * decoding and intersecting at the most (a pair in 5–10 ns, about two pairs per user). `exam`, on
 * every user through `example.com`, is found by a scan in slices rather than in one piece.
 */
const POSTINGS_MAX = 50_000;
/** Users tested per slice of a scan (step 4): about a millisecond. */
const SCAN_SLICE = 2048;

/** The bounds above, which tests lower to drive every step with a handful of users. */
export interface SearchTuning {
  walkBudget: number;
  sortBudget: number;
  postingsMax: number;
  scanSlice: number;
}

const TUNING: SearchTuning = {
  walkBudget: WALK_BUDGET,
  sortBudget: SORT_BUDGET,
  postingsMax: POSTINGS_MAX,
  scanSlice: SCAN_SLICE,
};

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * New users whose grams wait to go into the index together (#settle). Indexing a user alone between
 * requests meets its hundred-odd records and posting lists cold, evicted by the request's own work:
 * at the server, creates cost about 23 µs more with the index than without, against 4 µs in a tight
 * loop. Taken in runs, the same work finds the lists it touched for the user before. 256 users take
 * about a millisecond: the create that fills the run pays it, one create in 256 (below p99).
 */
const SETTLE_AT = 256;

export class SearchText {
  readonly #index = new GramIndex();
  /**
   * Users inserted since the index last took them, and their seqs (ascending, so that each appends to
   * its lists). Kept as inserted: the store swaps an updated user into its column before it tells
   * the index, which must then take the user as it was.
   */
  readonly #pending: User[] = [];
  readonly #pendingSeqs: Seq[] = [];

  /** `kept` hears of every write from the store through inserted, updated and removed. */
  readonly #tuning: SearchTuning;

  constructor(
    readonly kept: KeptMatches,
    readonly users: UserColumn,
    tuning: Partial<SearchTuning> = {},
  ) {
    this.#tuning = { ...TUNING, ...tuning };
  }

  inserted(seq: Seq, user: User): void {
    this.#pendingSeqs.push(seq);
    if (this.#pending.push(user) >= SETTLE_AT) this.#settle();
    this.kept.changed(seq, undefined, user);
  }

  updated(seq: Seq, before: User, after: User): void {
    this.index.updated(seq, before, after);
    this.kept.updated(seq, before, after);
  }

  removed(seq: Seq, user: User): void {
    this.index.removed(seq, user);
    this.kept.changed(seq, user, undefined);
  }

  /**
   * The index, with every user inserted so far in it: what reads it and what changes a user in it get.
   */
  get index(): GramIndex {
    this.#settle();
    return this.#index;
  }

  #settle(): void {
    const pending = this.#pending;
    if (pending.length === 0) return;
    const seqs = this.#pendingSeqs;
    for (let i = 0; i < pending.length; i++) this.#index.inserted(seqs[i]!, pending[i]!);
    pending.length = 0;
    seqs.length = 0;
  }

  /**
   * The page of the users whose searchable fields hold `needle` (lower-cased, not empty): up to
   * `wanted` of them, in `order` (read off `inRole`, or off an index of every role filtered by role),
   * from `params`' offset or after its cursor; and how many there are of its role (or in all). The
   * page's users and the total are read in one turn, so no write comes between them.
   */
  async page(
    needle: string,
    params: ListParams,
    order: Order,
    inRole: OrderedIndex<Seq>,
    wanted: number,
    batch: number,
  ): Promise<Page> {
    return this.#page(needle, params, order, inRole, wanted, batch);
  }

  /** The users at `seqs`, now. */
  #read(seqs: Seq[], total: number): Page {
    return { users: seqs.map((seq) => this.users[seq]!), total };
  }

  #page(
    needle: string,
    params: ListParams,
    order: Order,
    inRole: OrderedIndex<Seq>,
    wanted: number,
    batch: number,
  ): Page | Promise<Page> {
    const { role, offset, after } = params;
    const kept = this.kept.get(needle);
    if (kept) return this.#read(this.#fromFound(kept, params, order, wanted, batch), totalOf(kept, role));
    let found: Found | undefined;
    let total: number;
    if (needle.length <= 3) {
      total = this.index.count(needle, role);
    } else if (this.index.rarest(needle) <= this.#tuning.postingsMax) {
      found = this.#fromPostings(needle);
      total = totalOf(found, role);
    } else {
      return this.#scanned(needle, params, order, wanted, batch);
    }
    if (total === 0 || (after === undefined && offset >= total)) return { users: [], total };
    const sortsLittle = found !== undefined && (order.key === undefined || found.length <= this.#tuning.sortBudget);
    if (!sortsLittle) {
      const walked = this.#walk(needle, params, order, inRole, wanted, batch, total);
      if (walked) return this.#read(walked, total);
    }
    if (!found && this.index.rarest(needle) <= this.#tuning.postingsMax && needle.length === 3)
      found = this.#fromPostings(needle);
    if (!found && needle.length === 2) found = this.#fromPair(needle);
    if (!found) return this.#scanned(needle, params, order, wanted, batch);
    this.kept.keep(needle, found);
    return this.#read(this.#fromFound(found, params, order, wanted, batch), total);
  }

  #fromPostings(needle: string): Found {
    const seqs = this.index.find(needle);
    return { seqs, length: seqs.length, roles: this.index.roleCounts(seqs, seqs.length) };
  }

  /**
   * A needle of two units, too rare to walk for: its holders off the trigram postings that hold it
   * (gram-keys.ts withPair), when they are as many as its exact count, so all of them; else undefined.
   */
  #fromPair(needle: string): Found | undefined {
    const { index } = this;
    const all = index.count(needle);
    if (all > this.#tuning.postingsMax) return undefined;
    const recordOf = (key: number) => index.recordOf(key);
    const seqs = withPair(index.postings, recordOf, needle.charCodeAt(0), needle.charCodeAt(1), 2 * all + 64);
    return seqs?.length === all ? { seqs, length: all, roles: index.roleCounts(seqs, all) } : undefined;
  }

  /** Step 4: every match found by a scan in slices, kept, and the page taken off it. */
  async #scanned(needle: string, params: ListParams, order: Order, wanted: number, batch: number): Promise<Page> {
    const scan = await this.#scan(needle);
    try {
      // Exact now: the scan has followed every write until this turn, which reads it to the end.
      this.kept.keep(needle, scan.found);
      return this.#read(this.#fromFound(scan.found, params, order, wanted, batch), totalOf(scan.found, params.role));
    } finally {
      this.kept.untrack(scan);
    }
  }

  /** Every user holding `needle`, ascending, read SCAN_SLICE at a time; still tracked (untrack it). */
  async #scan(needle: string): Promise<Scan> {
    const users = this.users;
    const scan = this.kept.track(needle, foundOf([], users));
    const { found } = scan;
    let seq = 0;
    for (;;) {
      const end = Math.min(users.length, seq + this.#tuning.scanSlice);
      for (; seq < end; seq++) {
        const user = users[seq];
        if (user === undefined || !holds(user, needle)) continue;
        insertAt(found, found.length, seq);
        found.length++;
        tally(found.roles, user.role, 1);
      }
      scan.cursor = seq;
      if (seq >= users.length) {
        // Done: from now on every write is followed, until the page is read off it (#scanned).
        scan.cursor = Infinity;
        return scan;
      }
      await nextTurn();
    }
  }

  /**
   * Step 2: the page found by testing users in the order from its start (or its cursor), if that is
   * expected to take at most WALK_BUDGET users and does take at most four times that; else undefined.
   */
  #walk(
    needle: string,
    params: ListParams,
    order: Order,
    inRole: OrderedIndex<Seq>,
    wanted: number,
    batch: number,
    total: number,
  ): Seq[] | undefined {
    const { offset, after } = params;
    const users = this.users;
    // Other roles are skipped, unless the order's index holds the role alone.
    const only = order.index === inRole ? undefined : params.role;
    const skip = after === undefined ? offset : 0;
    const { walkBudget } = this.#tuning;
    if (((skip + wanted) * order.index.size) / total > walkBudget) return undefined;
    const position = after === undefined ? 0 : positionAfter(order, users, after);
    const out: Seq[] = [];
    let budget = 4 * walkBudget;
    let skipped = 0;
    for (const run of runs(order, position, batch)) {
      for (const seq of run) {
        if (--budget < 0) return undefined;
        const user = users[seq]!;
        if (only !== undefined && user.role !== only) continue;
        if (!holds(user, needle)) continue;
        if (skipped < skip) skipped++;
        else if (out.push(seq) === wanted) return out;
      }
    }
    return out;
  }

  /**
   * The page off a search's matches: in creation order as they are, forwards or back; in another
   * order, off their sorted copy, which the kept result holds until its users change.
   */
  #fromFound(found: Found, params: ListParams, order: Order, wanted: number, batch: number): Seq[] {
    const { role, offset, after } = params;
    const { length } = found;
    let seqs = found.seqs;
    if (order.key !== undefined) {
      const name = `${order.field} ${order.descending}`;
      seqs = found.orders?.get(name) ?? this.kept.keepOrder(found, name, sorted(seqs.subarray(0, length), order));
    }
    const down = order.key === undefined && order.read === 'reversed';
    const matches = function* (from: number) {
      for (let i = from; i < length; i += batch) {
        const end = Math.min(length, i + batch);
        yield down ? seqs.slice(length - end, length - i).reverse() : seqs.subarray(i, end);
      }
    };
    // The matches are of every role: those of `role` are picked, and then the page starts at `offset`
    // of them, or after the cursor (with a role, sort=role is creation order: its key is the role's).
    const from = role === undefined && after === undefined ? offset : 0;
    const past = (user: User) => comparePositions(positionOf(user, params.sort), after!, params.descending) > 0;
    const skip = after === undefined ? offset - from : 0;
    return take(matches(from), this.users, role, skip, wanted, after && past);
  }
}

/** A page's users and the total, read in one turn, so that no write comes between them. */
interface Page {
  users: User[];
  total: number;
}

/**
 * Whether a searchable field of `user` holds `needle`: query.ts' findsIn(searchedParts()), field by
 * field without the array, and stopping at the first field that holds it. Walks and scans test
 * thousands of users per request, and their garbage is what the next collection pays for.
 */
function holds(user: User, needle: string): boolean {
  for (const field of SEARCHABLE_FIELDS) if ((user[field] ?? '').toLowerCase().includes(needle)) return true;
  return false;
}

const totalOf = (found: Found, role: string | undefined): number =>
  role === undefined ? found.length : (found.roles.get(role) ?? 0);

/**
 * Search matches (ascending) in a field's order: only the matches are sorted, never all users. The
 * sort is stable and the matches are in creation order, so ties keep creation order both ways.
 */
function sorted(matches: Int32Array, order: Order): Int32Array {
  const key = order.key!;
  const direction = order.descending ? -1 : 1;
  const keyed = Array.from(matches, (seq) => ({ seq, key: key(seq) }));
  keyed.sort((a, b) => direction * (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return Int32Array.from(keyed, (item) => item.seq);
}
