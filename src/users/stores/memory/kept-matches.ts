import { firstWhere } from './ordered-index.js';
import { findsIn, searchedParts } from '../../query.js';
import { SEARCHABLE_FIELDS } from '../../fields.js';
import type { Seq, UserColumn } from './search-text.js';
import type { User } from '../../schema.js';

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
  for (const seq of seqs) tally(roles, users[seq]!.role, 1);
  return { seqs: Int32Array.from(seqs), length: seqs.length, roles };
}

/** Whether `found` holds `seq`. */
function holds(found: Found, seq: Seq): boolean {
  const at = firstAtOrAbove(found, seq);
  return at < found.length && found.seqs[at] === seq;
}

/**
 * The results of the last few searches, kept exact through every write, so that a search asked again
 * (the same needle, any role, any page) costs its page rather than a scan, also right after a write.
 * Each write tests the user it changes against every kept needle (a few `includes`) and adds or removes
 * it; nothing else is invalidated.
 *
 * A result also keeps the sorted copies of itself asked last (ORDERS_KEPT), until any of its users changes.
 * So kept results hold at most three times `maxSeqs` users.
 *
 * A needle asked for the first time is found from the search index (gram-index.ts), or by a scan
 * in slices (search-text.ts); a scan under way hears of writes as kept results do (track()), for the
 * users it has passed, so that it ends exact however many writes came between its slices.
 */
export class KeptMatches {
  /** By lower-cased needle; a Map keeps insertion order, so its first entry is the least recently used. */
  readonly #kept = new Map<string, Found>();
  #held = 0;
  readonly #scans = new Set<Scan>();

  /**
   * At most `maxNeedles` needles (each write tests every one) holding at most `maxSeqs` users in all
   * (4 B each, up to twice that with the room to grow); a result over half of that is not kept. Half,
   * so that a two-letter needle's result (`an`: 186 889 of a million users, under 1 MB) is kept with
   * room for others: a short needle's deep or sorted pages are the costliest to find again (a scan:
   * search-text.ts).
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
   * Follows `found`, the result of a scan of `needle` under way, through writes to users below
   * `cursor` (those the scan has passed; it reads the others as they are when it gets to them), until
   * untrack().
   */
  track(needle: string, found: Found): Scan {
    const scan = { needle, found, cursor: 0 };
    this.#scans.add(scan);
    return scan;
  }

  untrack(scan: Scan): void {
    this.#scans.delete(scan);
  }

  /** Keeps `sorted`, `found` in the order named `name`, and returns it. */
  keepOrder(found: Found, name: string, sorted: Int32Array): Int32Array {
    found.orders ??= new Map();
    if (found.orders.size >= ORDERS_KEPT) found.orders.delete(found.orders.keys().next().value!);
    found.orders.set(name, sorted);
    return sorted;
  }

  /** The user at `seq` went from `before` to `after`. */
  updated(seq: Seq, before: User, after: User): void {
    // Every update changes updated_at at least: sorted copies holding the user are out of date.
    for (const found of this.#kept.values()) if (found.orders && holds(found, seq)) found.orders = undefined;
    if (before.role !== after.role || SEARCHABLE_FIELDS.some((field) => before[field] !== after[field]))
      this.changed(seq, before, after);
  }

  /** Adds `seq` to, or deletes it from, each kept result as its needle finds `before` and `after` (if any). */
  changed(seq: Seq, before: User | undefined, after: User | undefined): void {
    if (this.#kept.size === 0 && this.#scans.size === 0) return;
    const was = before && searchedParts(before);
    const is = after && searchedParts(after);
    const follow = (needle: string, found: Found, kept: boolean) => {
      const wasFound = was !== undefined && findsIn(was, needle);
      const isFound = is !== undefined && findsIn(is, needle);
      if (wasFound && isFound) {
        // Still found: only its role's count may move. Deleting and adding it again would move the
        // rest of a large result (`an`'s 187 000 users) twice.
        tally(found.roles, before!.role, -1);
        tally(found.roles, after!.role, 1);
      } else if (wasFound) {
        const at = firstAtOrAbove(found, seq);
        found.seqs.copyWithin(at, at + 1, found.length);
        this.#resized(found, -1, before!.role, kept);
      } else if (isFound) {
        const at = firstAtOrAbove(found, seq);
        insertAt(found, at, seq);
        this.#resized(found, 1, after!.role, kept);
      }
    };
    for (const [needle, found] of this.#kept) follow(needle, found, true);
    for (const scan of this.#scans) if (seq < scan.cursor) follow(scan.needle, scan.found, false);
    this.#trim();
  }

  /** `found` gained (1) or lost (-1) a user of `role`: its sorted copies are out of date. */
  #resized(found: Found, by: number, role: string, kept: boolean): void {
    found.length += by;
    found.orders = undefined;
    if (kept) this.#held += by;
    tally(found.roles, role, by);
  }
}

/** A scan under way (search-text.ts) and how far it has read: users below `cursor`. */
export interface Scan {
  needle: string;
  found: Found;
  cursor: number;
}

/** Puts `seq` at `at` of `found.seqs`, growing it as needed; `found.length` is the caller's. */
export function insertAt(found: Found, at: number, seq: Seq): void {
  if (found.length === found.seqs.length) {
    const grown = new Int32Array(Math.max(8, found.length * 2));
    grown.set(found.seqs);
    found.seqs = grown;
  }
  found.seqs.copyWithin(at + 1, at, found.length);
  found.seqs[at] = seq;
}

export const tally = (roles: Map<string, number>, role: string, by: number) =>
  roles.set(role, (roles.get(role) ?? 0) + by);

const firstAtOrAbove = (found: Found, seq: Seq): number => firstWhere(0, found.length, (i) => found.seqs[i]! >= seq);
