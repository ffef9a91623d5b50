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
 * The last searches' results are kept exact through every write (kept-matches.ts); only matches are ever sorted.
 */
import { SEARCHABLE_FIELDS } from '../../fields.js';
import { foundOf, type KeptMatches } from './kept-matches.js';
import type { Order } from './list-pages.js';
import { firstWhere, type OrderedIndex } from './ordered-index.js';
import { findsIn, searchedParts } from '../../query.js';
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
  ends: (Int32Array | Uint16Array)[];
}

/**
 * A kept result stands in for a scan while it holds at most one user in this many (#find). Measured
 * at 300 000 users: checking a user cost about 1.5 µs (its fields lower-cased, read at random), the
 * scan about 30 ns a user, so a result of a fiftieth of the users costs about what the scan does.
 */
const WITHIN_SHARE = 64;
/** ... or at most this many users, whatever their share: few checks cost less than any scan. */
const WITHIN_ANY = 256;

export class SearchText {
  /** Keyed by the chunk array itself, so chunks that are dropped take their text with them. */
  #texts = new WeakMap<readonly Seq[], ChunkText>();

  /** `kept` hears of every write from the store. */
  constructor(
    readonly kept: KeptMatches,
    readonly users: UserColumn,
  ) {}

  /** The chunk's users changed: its text is built again on the next search. */
  forget(chunk: readonly Seq[]): void {
    this.#texts.delete(chunk);
  }

  /**
   * The matches of `needle` (lower-cased, not empty) among the users in `index` (the creation index),
   * in `order` (of every role), as runs from a place on; and how many are of `role`. In creation order
   * the matches are read off as they are, forwards or back; in another order, off their sorted copy,
   * which the kept result holds until its users change.
   */
  matches(
    needle: string,
    order: Order,
    role: string | undefined,
    index: OrderedIndex<Seq>,
  ): { total: number; runs: (from: number, batch: number) => Generator<ArrayLike<Seq>> } {
    let found = this.kept.get(needle);
    if (!found) {
      found = foundOf(this.#find(needle, index), this.users);
      this.kept.keep(needle, found);
    }
    const { length } = found;
    let seqs = found.seqs;
    if (order.key !== undefined) {
      const name = `${order.field} ${order.descending}`;
      seqs = found.orders?.get(name) ?? this.kept.keepOrder(found, name, sorted(seqs.subarray(0, length), order));
    }
    const down = order.key === undefined && order.read === 'reversed';
    return {
      total: role === undefined ? length : (found.roles.get(role) ?? 0),
      runs: function* (from, batch) {
        for (let i = from; i < length; i += batch) {
          const end = Math.min(length, i + batch);
          yield down ? seqs.slice(length - end, length - i).reverse() : seqs.subarray(i, end);
        }
      },
    };
  }

  /**
   * Every user whose searchable fields hold `needle`, ascending: a scan of `index`, or, when a kept
   * result of a part of the needle is small (WITHIN_SHARE), its users checked one by one.
   */
  #find(needle: string, index: OrderedIndex<Seq>): Seq[] {
    const users = this.users;
    const within = this.kept.within(needle);
    if (within && within.length <= Math.max(WITHIN_ANY, index.size / WITHIN_SHARE)) {
      const seqs = Array.from(within.seqs.subarray(0, within.length));
      return seqs.filter((seq) => findsIn(searchedParts(users[seq]!), needle));
    }
    const found: Seq[] = [];
    for (const chunk of index.chunks()) {
      const { text, ends } = this.#textOf(chunk);
      const lastEnds = ends[PARTS - 1]!;
      let from = 0;
      for (let hit = text.indexOf(needle); hit !== -1; hit = text.indexOf(needle, from)) {
        // The user whose parts hold the hit: the first whose last part ends at or after it.
        const i = firstWhere(0, lastEnds.length - 1, (i) => lastEnds[i]! >= hit);
        const end = hit + needle.length;
        let part = 0;
        while (ends[part]![i]! < hit) part++;
        const start = part > 0 ? ends[part - 1]![i]! + 1 : i === 0 ? 0 : lastEnds[i - 1]! + 1;
        if (hit >= start && end <= ends[part]![i]!) {
          found.push(chunk[i]!);
          from = lastEnds[i]! + 1; // on to the next user: each counts once
        } else {
          from = hit + 1;
        }
      }
    }
    return found;
  }

  #textOf(chunk: readonly Seq[]): ChunkText {
    let built = this.#texts.get(chunk);
    if (!built) {
      const parts: string[] = [];
      let length = 0;
      for (const seq of chunk) {
        for (const part of searchedParts(this.users[seq]!)) {
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
