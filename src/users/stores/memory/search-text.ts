/**
 * The search of the list operation: a case-insensitive substring of a searchable field (fields.ts: the
 * name or the email), which no ordered index can answer, so every user is looked at. This makes that
 * look cheap.
 *
 * Search reads the creation index chunk by chunk. For each chunk it keeps, built on the first search
 * after the chunk changed, one string of all its users' lower-cased searchable fields and where each
 * user's parts end. A search runs the engine's native `indexOf` along those strings and only looks at
 * the users where the needle was found, rather than calling `includes` per field and user. A hit
 * counts only if it lies wholly inside one part, so the result is exactly what query.ts's search
 * finds.
 *
 * The results of the last searches are kept (KeptMatches, below) and kept exact through every write,
 * so a needle asked again costs its page rather than a scan.
 */
import { SEARCHABLE_FIELDS } from '../../fields.js';
import type { OrderedIndex } from './ordered-index.js';
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

/** Between parts; any character would do, since hits across parts are refused anyway. */
const SEPARATOR = '\u0000';

type Offsets = Int32Array | Uint16Array;

/** How many parts each user has in a chunk's text: its searchable fields (fields.ts). */
const PARTS = SEARCHABLE_FIELDS.length;

interface ChunkText {
  /** Lower-cased `name SEPARATOR email SEPARATOR` (each searchable field) of every user of the chunk, in its order. */
  text: string;
  /**
   * Per searchable field, per user: where that part ends (the next starts one later). 16-bit when the
   * chunk's text is short enough (it nearly always is): at a million users the offsets are a quarter of
   * what this cache holds.
   */
  ends: Offsets[];
}

export class SearchText {
  /** Keyed by the chunk array itself, so chunks that are dropped take their text with them. */
  #texts = new WeakMap<readonly Seq[], ChunkText>();

  /** The chunk's users changed: its text is built again on the next search. */
  forget(chunk: readonly Seq[]): void {
    this.#texts.delete(chunk);
  }

  /** Users of `index` whose lower-cased name or email contains `needle` (lower-cased), in its order. */
  find(index: OrderedIndex<Seq>, users: UserColumn, needle: string, role: string | undefined): Seq[] {
    const found: Seq[] = [];
    for (const chunk of index.chunks()) {
      if (needle === '') {
        for (const seq of chunk) if (role === undefined || users[seq]!.role === role) found.push(seq);
        continue;
      }
      const { text, ends } = this.#textOf(chunk, users);
      const lastEnds = ends[PARTS - 1]!;
      let from = 0;
      for (let hit = text.indexOf(needle); hit !== -1; hit = text.indexOf(needle, from)) {
        const i = userAt(lastEnds, hit);
        const end = hit + needle.length;
        let part = 0;
        while (ends[part]![i]! < hit) part++;
        const start = part > 0 ? ends[part - 1]![i]! + 1 : i === 0 ? 0 : lastEnds[i - 1]! + 1;
        if (hit >= start && end <= ends[part]![i]!) {
          const seq = chunk[i]!;
          if (role === undefined || users[seq]!.role === role) found.push(seq);
          from = lastEnds[i]! + 1; // on to the next user: each counts once
        } else {
          from = hit + 1;
        }
      }
    }
    return found;
  }

  #textOf(chunk: readonly Seq[], users: UserColumn): ChunkText {
    let built = this.#texts.get(chunk);
    if (!built) {
      const parts: string[] = [];
      let length = 0;
      for (const seq of chunk) {
        const user = users[seq]!;
        for (const field of SEARCHABLE_FIELDS) {
          const part = (user[field] ?? '').toLowerCase();
          parts.push(part, SEPARATOR);
          length += part.length + 1;
        }
      }
      const Offsets = length <= 0xffff ? Uint16Array : Int32Array;
      const ends = SEARCHABLE_FIELDS.map(() => new Offsets(chunk.length));
      let end = -1;
      for (let i = 0; i < chunk.length; i++) {
        for (let part = 0; part < PARTS; part++) {
          end += 1 + parts[2 * (PARTS * i + part)]!.length;
          ends[part]![i] = end;
        }
      }
      built = { text: parts.join(''), ends };
      this.#texts.set(chunk, built);
    }
    return built;
  }
}

/** The user whose parts contain position `at`: the first whose last part ends at or after it. */
function userAt(lastEnds: Offsets, at: number): number {
  let lo = 0;
  let hi = lastEnds.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (lastEnds[mid]! < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The users one needle finds, in creation order, and how many of them each role has. */
export interface Found {
  /** Sequence numbers, ascending, in the first `length` places. */
  seqs: Int32Array;
  length: number;
  roles: Map<string, number>;
  /** The same users sorted in other orders (by the order's name), until one of them changes. */
  orders?: Map<string, Int32Array>;
}

/** Sorted copies kept per result: the two orders asked last. */
const ORDERS_KEPT = 2;

/** What a scan found (sequence numbers, ascending), counted by role. */
export function foundOf(seqs: readonly Seq[], users: UserColumn): Found {
  const roles = new Map<string, number>();
  for (const seq of seqs) {
    const role = users[seq]!.role;
    roles.set(role, (roles.get(role) ?? 0) + 1);
  }
  return { seqs: Int32Array.from(seqs), length: seqs.length, roles };
}

/** Whether `found` holds `seq`. */
function holds(found: Found, seq: Seq): boolean {
  const at = firstAtOrAbove(found, seq);
  return at < found.length && found.seqs[at] === seq;
}

/** Whether `needle` (lower-cased) is in one of the lower-cased searchable fields `parts`. */
const findsIn = (parts: readonly string[], needle: string): boolean => parts.some((part) => part.includes(needle));

/** The user's searchable fields, lower-cased, as query.ts compares them. */
export const searchedParts = (user: User): string[] =>
  SEARCHABLE_FIELDS.map((field) => (user[field] ?? '').toLowerCase());

/**
 * The results of the last few searches, kept exact through every write, so that a search asked again
 * (the same needle, any role, any page) costs its page rather than a scan, also right after a write.
 * Each write tests the user it changes against every kept needle (a few `includes`) and adds or removes
 * it; nothing else is invalidated.
 *
 * A result also keeps the sorted copies of itself asked last (ORDERS_KEPT), until any of its users changes.
 * So kept results hold at most three times `maxSeqs` users.
 *
 * A needle asked for the first time still scans. A trigram index would answer it from the users of
 * its trigrams: its 38.5 million postings at a million users take 42 MB delta-coded (150 MB as 32-bit
 * integers), about what the scan's per-chunk text holds (47 MB), so it can only replace that text,
 * not join it. Built and wired in that way (commit 03dc1f5, reverted by edf25e9; BENCHMARKS.md,
 * "Lists at a million users"), it found a needle the first time in 18 to 95 ms where the scan took 31
 * to 484, but the process's RSS ended 33 MiB higher and inserts and renames cost 40 and 65 % more at
 * the store, so it is not used. Kept results cost what they find, within `maxSeqs`.
 */
export class KeptMatches {
  /** By lower-cased needle; a Map keeps insertion order, so its first entry is the least recently used. */
  readonly #kept = new Map<string, Found>();
  #held = 0;

  /**
   * At most `maxNeedles` needles (each write tests every one) holding at most `maxSeqs` users in all
   * (4 B each, up to twice that with the room to grow); a result over half of that is not kept. Half,
   * so that a two-letter needle's result (`an`: 186 889 of a million users, under 1 MB) is kept with
   * room for others: a short needle is the costliest to scan again, and no shorter kept result can
   * stand in for it (within()).
   */
  constructor(
    readonly maxNeedles: number,
    readonly maxSeqs: number,
  ) {}

  /** The kept result of `needle`, now the most recently used, if any. */
  get(needle: string): Found | undefined {
    const found = this.#kept.get(needle);
    if (found) {
      this.#kept.delete(needle);
      this.#kept.set(needle, found);
    }
    return found;
  }

  /** Keeps what a scan found for `needle`, if it is small enough, evicting the least recently used. */
  keep(needle: string, found: Found): void {
    if (this.maxNeedles === 0 || found.length > this.maxSeqs / 2) return;
    while (this.#kept.size >= this.maxNeedles) this.#dropOldest();
    this.#kept.set(needle, found);
    this.#held += found.length;
    this.#trim();
  }

  /** Drops the least recently used results while the kept ones hold more than `maxSeqs` users. */
  #trim(): void {
    while (this.#held > this.maxSeqs) this.#dropOldest();
  }

  #dropOldest(): void {
    const [oldest, dropped] = this.#kept.entries().next().value!;
    this.#kept.delete(oldest);
    this.#held -= dropped.length;
  }

  /**
   * The smallest kept result of a needle that `needle` contains, if any: whoever `needle` finds is in
   * it, so checking its users can stand in for a scan (a needle typed one more letter at a time).
   */
  within(needle: string): Found | undefined {
    let best: Found | undefined;
    for (const [kept, found] of this.#kept)
      if (needle.includes(kept) && (!best || found.length < best.length)) best = found;
    return best;
  }

  /** `found` sorted in the order named `name`, if kept. */
  order(found: Found, name: string): Int32Array | undefined {
    return found.orders?.get(name);
  }

  keepOrder(found: Found, name: string, sorted: Int32Array): void {
    found.orders ??= new Map();
    if (found.orders.size >= ORDERS_KEPT) found.orders.delete(found.orders.keys().next().value!);
    found.orders.set(name, sorted);
  }

  /** A new user, with a sequence number above every other. */
  inserted(seq: Seq, user: User): void {
    if (this.#kept.size === 0) return;
    const parts = searchedParts(user);
    for (const [needle, found] of this.#kept) if (findsIn(parts, needle)) this.#add(found, seq, user.role);
    this.#trim();
  }

  /** The user at `seq` went from `before` to `after`. */
  updated(seq: Seq, before: User, after: User): void {
    if (this.#kept.size === 0) return;
    // Every update changes updated_at at least: sorted copies holding the user are out of date.
    for (const found of this.#kept.values()) if (found.orders && holds(found, seq)) found.orders = undefined;
    if (before.role === after.role && SEARCHABLE_FIELDS.every((field) => before[field] === after[field])) return;
    const was = searchedParts(before);
    const is = searchedParts(after);
    for (const [needle, found] of this.#kept) {
      const wasFound = findsIn(was, needle);
      const isFound = findsIn(is, needle);
      if (wasFound && isFound) {
        // Still found: only its role's count may move. Deleting and adding it again would move the
        // rest of a large result (`an`'s 187 000 users) twice.
        this.#recount(found, before.role, after.role);
      } else if (wasFound) {
        this.#delete(found, seq, before.role);
      } else if (isFound) {
        this.#add(found, seq, after.role);
      }
    }
    this.#trim();
  }

  removed(seq: Seq, user: User): void {
    if (this.#kept.size === 0) return;
    const parts = searchedParts(user);
    for (const [needle, found] of this.#kept) if (findsIn(parts, needle)) this.#delete(found, seq, user.role);
  }

  #add(found: Found, seq: Seq, role: string): void {
    if (found.length === found.seqs.length) {
      const grown = new Int32Array(Math.max(8, found.length * 2));
      grown.set(found.seqs);
      found.seqs = grown;
    }
    const at = firstAtOrAbove(found, seq);
    found.seqs.copyWithin(at + 1, at, found.length);
    found.seqs[at] = seq;
    found.length++;
    found.orders = undefined;
    this.#held++;
    found.roles.set(role, (found.roles.get(role) ?? 0) + 1);
  }

  #recount(found: Found, from: string, to: string): void {
    if (from === to) return;
    found.roles.set(from, found.roles.get(from)! - 1);
    found.roles.set(to, (found.roles.get(to) ?? 0) + 1);
  }

  #delete(found: Found, seq: Seq, role: string): void {
    const at = firstAtOrAbove(found, seq);
    found.seqs.copyWithin(at, at + 1, found.length);
    found.length--;
    found.orders = undefined;
    this.#held--;
    found.roles.set(role, found.roles.get(role)! - 1);
  }
}

function firstAtOrAbove(found: Found, seq: Seq): number {
  const { seqs } = found;
  let lo = 0;
  let hi = found.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (seqs[mid]! < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
