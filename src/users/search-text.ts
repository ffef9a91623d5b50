/**
 * The search of the list operation: a case-insensitive substring of the name or the email (contract),
 * which no ordered index can answer, so every user is looked at. This makes that look cheap.
 *
 * Search reads the creation index chunk by chunk. For each chunk it keeps, built on the first search
 * after the chunk changed, one string of all its users' lower-cased names and emails and where each
 * user's parts end. A search runs the engine's native `indexOf` along those strings and only looks at
 * the users where the needle was found, rather than calling `includes` twice per user. A hit counts
 * only if it lies wholly inside one name or one email, so the result is exactly
 * `name.toLowerCase().includes(needle) || email.toLowerCase().includes(needle)` (query.ts).
 */
import type { OrderedIndex } from './ordered-index.js';
import type { User } from './schema.js';

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

interface ChunkText {
  /** Lower-cased `name SEPARATOR email SEPARATOR` of every user of the chunk, in its order. */
  text: string;
  /**
   * Per user: where its name ends (its email starts one later) and where its email ends. 16-bit when
   * the chunk's text is short enough (it nearly always is): at a million users the offsets are a
   * quarter of what this cache holds.
   */
  nameEnds: Offsets;
  emailEnds: Offsets;
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
      const { text, nameEnds, emailEnds } = this.#textOf(chunk, users);
      let from = 0;
      for (let hit = text.indexOf(needle); hit !== -1; hit = text.indexOf(needle, from)) {
        const i = userAt(emailEnds, hit);
        const end = hit + needle.length;
        const nameStart = i === 0 ? 0 : emailEnds[i - 1]! + 1;
        const inName = hit >= nameStart && end <= nameEnds[i]!;
        const inEmail = hit > nameEnds[i]! && end <= emailEnds[i]!;
        if (inName || inEmail) {
          const seq = chunk[i]!;
          if (role === undefined || users[seq]!.role === role) found.push(seq);
          from = emailEnds[i]! + 1; // on to the next user: each counts once
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
        const name = user.name.toLowerCase();
        const email = user.email.toLowerCase();
        parts.push(name, SEPARATOR, email, SEPARATOR);
        length += name.length + email.length + 2;
      }
      const Offsets = length <= 0xffff ? Uint16Array : Int32Array;
      const nameEnds = new Offsets(chunk.length);
      const emailEnds = new Offsets(chunk.length);
      let end = 0;
      for (let i = 0; i < chunk.length; i++) {
        nameEnds[i] = end + parts[4 * i]!.length;
        emailEnds[i] = nameEnds[i]! + 1 + parts[4 * i + 2]!.length;
        end = emailEnds[i]! + 1;
      }
      built = { text: parts.join(''), nameEnds, emailEnds };
      this.#texts.set(chunk, built);
    }
    return built;
  }
}

/** The user whose parts contain position `at`: the first whose email ends at or after it. */
function userAt(emailEnds: Offsets, at: number): number {
  let lo = 0;
  let hi = emailEnds.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (emailEnds[mid]! < at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
