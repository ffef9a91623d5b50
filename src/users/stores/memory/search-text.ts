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
