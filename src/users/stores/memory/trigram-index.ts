/**
 * A trigram index of the searchable fields, lower-cased, so that a needle asked for the first time
 * costs the users that hold its trigrams rather than a look at every user.
 *
 * Every field is indexed as it is compared (query.ts: `field.toLowerCase()`), with two end marks after
 * it, so that every character of the field starts a trigram: `ann` gives `ann`, `nn$`, `n$$`. A needle
 * of three characters is then the users of one trigram; a longer one, the users holding all of its
 * trigrams, each checked against its fields (they may lie apart); one of one or two characters, the
 * users of every trigram it starts. Lower-casing that changes a string's length (İ) changes nothing
 * here, as fields and needles are both compared lower-cased.
 *
 * Each trigram's users are a posting list of sequence numbers (search-text.ts: Seq), ascending, coded
 * as the differences between neighbours in 7-bit groups (varint) in blocks of shared pages
 * (PostingPages, below): the trigrams common
 * to many users (`exa`, `com`) cost one byte a user, at a million users about 40 MB in all, where
 * 32-bit numbers would cost 150 MB. New users have the highest sequence number, so an insert appends.
 * A change that adds a trigram to an older user, or takes one away, goes to a small sorted side list
 * of the trigram (added, gone), applied when the list is read; when the side lists outgrow a quarter
 * of the list, the list is coded afresh with them. So every list is exact at all times, and a needle
 * of up to three characters needs no user read at all.
 *
 * Written by hand: the npm full-text packages (flexsearch, lunr, minisearch) index words, not
 * substrings, and keep their postings as JavaScript arrays of numbers (8 B each); none of them
 * answers an arbitrary substring exactly.
 *
 * Not used by the memory store yet: wired in place of SearchText's text (commit 03dc1f5, reverted),
 * at a million users in-process, the store's RSS after searching was 704 MiB against 671 (its heap
 * and array buffers together the same: the difference is memory the process kept after the fill),
 * inserts cost 15 µs against 11 and renames 49 against 30, on a machine loaded 3 to 4.
 *
 * Measured alone, in-process at a million bench users (bench/users.ts), on a machine loaded 4 to 5
 * on its 2 cores, against SearchText's scan in the same process: 38.5 million postings take 42 MB
 * (1.1 B each) in 48 MiB of pages, and the RSS grew 58 MiB (88 MiB when each list had a buffer of its own,
 * grown by copying), where the scan's per-chunk text grew it 53 MiB (47 MB of heap). Building costs
 * about 5 µs a user, a rename about 25 µs more. `sen` 0.9 ms (scan 53), `99999@` 2.8 (12), `an` 9.8
 * (78), `hansen` 12 (22), `.com` 115 (121), `example` 123 (264), `a` 103 (216), a needle no user
 * holds nothing (9).
 */
import { SEARCHABLE_FIELDS } from '../../fields.js';
import type { User } from '../../schema.js';
import type { Seq, UserColumn } from './search-text.js';

/** Past every UTF-16 unit: the end mark. */
const END = 0x10000;
/** Each unit (or END) takes 17 bits of a wide trigram's code; three take 51, exact in a double. */
const UNIT = 0x20000;
/**
 * The first units seen get a small number of 10 bits (END is 1), so that the trigrams of those units
 * have a code of 30 bits, a small integer, which the Map of lists looks up without a number object;
 * trigrams with any later unit get a wide code above those.
 */
const NARROW_UNITS = 1024;
const WIDE = 2 ** 30;

/** Side lists of one trigram: users added out of order, and users gone from its coded list. */
interface Side {
  added: number[];
  gone: number[];
}

/** Side entries a list may gather before it is coded afresh: this many, or a quarter of the list. */
const SIDE_MIN = 16;

export class TrigramIndex {
  /** List number of each trigram's code. */
  readonly #lists = new Map<number, number>();
  /** The lists' coded bytes. Per list: the last (highest) user coded, and how many are. */
  readonly #store = new PostingPages();
  #last = new Int32Array(256);
  #count = new Int32Array(256);
  readonly #sides = new Map<number, Side>();
  /** Lists by the first unit of their trigram, and by the first two: what a short needle reads. */
  readonly #byFirst = new Map<number, number[]>();
  readonly #byFirstTwo = new Map<number, number[]>();
  /** One above the highest sequence number ever indexed. */
  #end = 0;
  /** Small number of each UTF-16 unit (0: none yet); see NARROW_UNITS. */
  readonly #unitIds = new Int16Array(0x10000);
  #unitsNumbered = 1;
  /** Per list, the last time #listsOf met it: how a user's trigrams are counted once. */
  #seen = new Int32Array(256);
  #epoch = 0;
  /** Scratch arrays for a user's lists. */
  #scratch: number[] = [];
  #other: number[] = [];

  /** A new user, with a sequence number above every other. */
  inserted(seq: Seq, user: User): void {
    if (seq >= this.#end) this.#end = seq + 1;
    for (const list of this.#listsOf(user, this.#scratch)) this.#add(list, seq);
  }

  /** The user at `seq` went from `before` to `after`: only the trigrams it lost or gained move. */
  updated(seq: Seq, before: User, after: User): void {
    if (SEARCHABLE_FIELDS.every((field) => before[field] === after[field])) return;
    const was = this.#listsOf(before, this.#other);
    const wasEpoch = this.#epoch;
    const is = this.#listsOf(after, this.#scratch);
    // Lists of both are now marked with the later epoch; those only of `was` keep the earlier one.
    for (const list of was) this.#seen[list] = wasEpoch;
    for (const list of is) {
      if (this.#seen[list] === wasEpoch) this.#seen[list] = 0;
      else this.#add(list, seq);
    }
    for (const list of was) if (this.#seen[list] === wasEpoch) this.#remove(list, seq);
  }

  removed(seq: Seq, user: User): void {
    for (const list of this.#listsOf(user, this.#scratch)) this.#remove(list, seq);
  }

  /**
   * The users whose lower-cased name or email holds `needle` (lower-cased, not empty), ascending.
   * `users` is read only to check the candidates of a needle longer than three characters.
   */
  find(needle: string, users: UserColumn): Int32Array {
    if (needle.length <= 2) return this.#starting(needle);
    const lists: number[] = [];
    for (let i = 0; i + 3 <= needle.length; i++) {
      const list = this.#lists.get(
        this.#codeOf(needle.charCodeAt(i), needle.charCodeAt(i + 1), needle.charCodeAt(i + 2)),
      );
      if (list === undefined) return new Int32Array(0);
      if (!lists.includes(list)) lists.push(list);
    }
    // The shortest list first: every other list only thins what it holds.
    lists.sort((a, b) => this.#count[a]! - this.#count[b]!);
    const found = this.#read(lists[0]!);
    let length = found.length;
    // A list that nearly every user is on (`exa`, `com`) would cost its decoding and thin out next to
    // nothing: the check of the candidates below stands in for it.
    for (let l = 1; l < lists.length && length > 0; l++)
      if (this.#count[lists[l]!]! < this.#end * 0.9) length = this.#within(lists[l]!, found, length);
    if (needle.length > 3) {
      let kept = 0;
      for (let i = 0; i < length; i++) {
        const seq = found[i]!;
        const user = users[seq]!;
        if (holds(user, needle)) found[kept++] = seq;
      }
      length = kept;
    }
    return found.subarray(0, length);
  }

  /** Users of every trigram that starts with `needle` (one or two units): a union, through a bitmap. */
  #starting(needle: string): Int32Array {
    const a = needle.charCodeAt(0);
    const lists = needle.length === 1 ? this.#byFirst.get(a) : this.#byFirstTwo.get(a * UNIT + needle.charCodeAt(1));
    if (!lists) return new Int32Array(0);
    const bits = new Int32Array((this.#end + 31) >>> 5);
    for (const list of lists) {
      this.#each(list, (seq) => {
        bits[seq >>> 5]! |= 1 << (seq & 31);
      });
    }
    let total = 0;
    for (const word of bits) total += bitCount(word);
    const found = new Int32Array(total);
    let at = 0;
    for (let w = 0; w < bits.length; w++) {
      let word = bits[w]!;
      while (word !== 0) {
        const low = word & -word;
        found[at++] = (w << 5) + 31 - Math.clz32(low);
        word ^= low;
      }
    }
    return found;
  }

  /** The code of a trigram: narrow when its three units have small numbers, else wide. */
  #codeOf(a: number, b: number, c: number): number {
    const ids = this.#unitIds;
    const ia = ids[a]!;
    const ib = b === END ? 1 : ids[b]!;
    const ic = c === END ? 1 : ids[c]!;
    if (ia > 0 && ib > 0 && ic > 0) return (ia << 20) | (ib << 10) | ic;
    return WIDE + (a * UNIT + b) * UNIT + c;
  }

  /** Numbers `unit`, if there is room: see NARROW_UNITS. */
  #number(unit: number): void {
    if (this.#unitIds[unit] === 0 && this.#unitsNumbered + 1 < NARROW_UNITS)
      this.#unitIds[unit] = ++this.#unitsNumbered;
  }

  /** The lists of the user's distinct trigrams (made where missing), in `out`. */
  #listsOf(user: User, out: number[]): number[] {
    out.length = 0;
    const epoch = ++this.#epoch;
    for (const field of SEARCHABLE_FIELDS) {
      const text = (user[field] ?? '').toLowerCase();
      const n = text.length;
      // Every unit numbered first: a trigram's code must not depend on where in a text it was met.
      for (let i = 0; i < n; i++) if (this.#unitIds[text.charCodeAt(i)] === 0) this.#number(text.charCodeAt(i));
      for (let i = 0; i < n; i++) {
        const a = text.charCodeAt(i);
        const b = i + 1 < n ? text.charCodeAt(i + 1) : END;
        const c = i + 2 < n ? text.charCodeAt(i + 2) : END;
        const code = this.#codeOf(a, b, c);
        let list = this.#lists.get(code);
        if (list === undefined) list = this.#newList(code, a, b);
        if (this.#seen[list] !== epoch) {
          this.#seen[list] = epoch;
          out.push(list);
        }
      }
    }
    return out;
  }

  #newList(code: number, a: number, b: number): number {
    const list = this.#lists.size;
    this.#lists.set(code, list);
    if (list === this.#last.length) {
      const grow = (old: Int32Array) => {
        const grown = new Int32Array(old.length * 2);
        grown.set(old);
        return grown;
      };
      this.#last = grow(this.#last);
      this.#count = grow(this.#count);
      this.#seen = grow(this.#seen);
    }
    this.#store.added(list);
    this.#last[list] = -1;
    listed(this.#byFirst, a, list);
    listed(this.#byFirstTwo, a * UNIT + b, list);
    return list;
  }

  #add(list: number, seq: Seq): void {
    const side = this.#sides.get(list);
    if (side) {
      const gone = indexOf(side.gone, seq);
      if (gone >= 0) {
        side.gone.splice(gone, 1);
        if (side.added.length === 0 && side.gone.length === 0) this.#sides.delete(list);
        return;
      }
    }
    if (seq > this.#last[list]!) {
      this.#append(list, seq);
      return;
    }
    const added = this.#sideOf(list).added;
    added.splice(insertionPoint(added, seq), 0, seq);
    this.#tidy(list);
  }

  #remove(list: number, seq: Seq): void {
    const side = this.#sideOf(list);
    const added = indexOf(side.added, seq);
    if (added >= 0) side.added.splice(added, 1);
    else side.gone.splice(insertionPoint(side.gone, seq), 0, seq);
    this.#tidy(list);
  }

  #sideOf(list: number): Side {
    let side = this.#sides.get(list);
    if (!side) {
      side = { added: [], gone: [] };
      this.#sides.set(list, side);
    }
    return side;
  }

  /** Codes the list afresh with its side lists once they hold more than a quarter of it. */
  #tidy(list: number): void {
    const side = this.#sides.get(list)!;
    const pending = side.added.length + side.gone.length;
    if (pending === 0) {
      this.#sides.delete(list);
      return;
    }
    if (pending <= Math.max(SIDE_MIN, this.#count[list]! >> 2)) return;
    const seqs = this.#read(list);
    this.#sides.delete(list);
    this.#store.clear(list);
    this.#last[list] = -1;
    this.#count[list] = 0;
    for (const seq of seqs) this.#append(list, seq);
  }

  #append(list: number, seq: Seq): void {
    this.#store.append(list, seq - this.#last[list]!);
    this.#last[list] = seq;
    this.#count[list]!++;
  }

  /** Calls `each` with every user of the list, ascending. */
  #each(list: number, each: (seq: Seq) => void): void {
    const side = this.#sides.get(list);
    const coded = this.#store.decode(list, this.#count[list]!);
    const added = side?.added ?? NONE;
    const gone = side?.gone ?? NONE;
    let a = 0;
    let g = 0;
    for (const seq of coded) {
      while (a < added.length && added[a]! < seq) each(added[a++]!);
      while (g < gone.length && gone[g]! < seq) g++;
      if (g < gone.length && gone[g] === seq) continue;
      each(seq);
    }
    while (a < added.length) each(added[a++]!);
  }

  /** Every user of the list, ascending. */
  #read(list: number): Int32Array {
    const side = this.#sides.get(list);
    const out = new Int32Array(this.#count[list]! + (side?.added.length ?? 0));
    let n = 0;
    this.#each(list, (seq) => {
      out[n++] = seq;
    });
    return out.subarray(0, n);
  }

  /** Keeps in `found` (its first `length`) only the users of the list; returns how many are left. */
  #within(list: number, found: Int32Array, length: number): number {
    const side = this.#sides.get(list);
    const coded = this.#store.decode(list, this.#count[list]!);
    const added = side?.added ?? NONE;
    const gone = side?.gone ?? NONE;
    let kept = 0;
    let c = 0;
    for (let i = 0; i < length; i++) {
      const want = found[i]!;
      while (c < coded.length && coded[c]! < want) c++;
      const held =
        (c < coded.length && coded[c] === want && indexOf(gone, want) < 0) ||
        (added.length > 0 && indexOf(added, want) >= 0);
      if (held) found[kept++] = want;
    }
    return kept;
  }

  /** Bytes the coded lists hold and use, lists and postings: for measurements. */
  stats(): {
    lists: number;
    postings: number;
    usedBytes: number;
    heldBytes: number;
    sides: number;
    sideEntries: number;
  } {
    let sideEntries = 0;
    for (const side of this.#sides.values()) sideEntries += side.added.length + side.gone.length;
    let postings = 0;
    for (let list = 0; list < this.#lists.size; list++) postings += this.#count[list]!;
    return {
      lists: this.#lists.size,
      postings,
      usedBytes: this.#store.usedBytes(),
      heldBytes: this.#store.heldBytes(),
      sides: this.#sides.size,
      sideEntries,
    };
  }
}

const NONE: readonly number[] = [];

function listed(map: Map<number, number[]>, key: number, list: number): void {
  const lists = map.get(key);
  if (lists) lists.push(list);
  else map.set(key, [list]);
}

/**
 * Whether a lower-cased field of `user` holds `needle` (lower-cased), as query.ts decides it; the field
 * as it is first. A lower-cased needle found in the field as it is is found in the field lower-cased
 * too, as lower-casing leaves lower-case letters alone (Σ's final form depends on what follows, but Σ is
 * upper-case): most matches (emails are mostly lower-case) are then found without making a string.
 */
function holds(user: User, needle: string): boolean {
  for (const field of SEARCHABLE_FIELDS) if ((user[field] ?? '').includes(needle)) return true;
  for (const field of SEARCHABLE_FIELDS) if ((user[field] ?? '').toLowerCase().includes(needle)) return true;
  return false;
}

/** Writes `value` (positive) at `at` in 7-bit groups, the low first; returns where it ends. */
function putVarint(bytes: Uint8Array, at: number, value: number): number {
  while (value >= 0x80) {
    bytes[at++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  bytes[at++] = value;
  return at;
}

function insertionPoint(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function indexOf(sorted: readonly number[], value: number): number {
  const at = insertionPoint(sorted, value);
  return at < sorted.length && sorted[at] === value ? at : -1;
}

function bitCount(word: number): number {
  let v = word - ((word >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return (Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 0xff;
}

/** Bytes of a page of PostingPages. */
const PAGE = 1 << 20;
/** Block sizes: 16 B, doubling, up to 4 KiB. */
const CLASSES = 9;
/** A block starts with its size class (1 B) and the next block's address in 16 B units (4 B). */
const HEADER = 8;

/**
 * The posting lists' bytes, in pages of 1 MiB that the index allocates once and never frees. Each list
 * is a chain of blocks, each twice the size of the one before up to 4 KiB, cut from a page or taken from
 * the blocks lists that were coded afresh gave back. A buffer of its own per list, grown by copying,
 * left its old buffers freed in the process's allocator, which kept them: at a million users the RSS
 * grew twice what the lists hold. No coded number starts with a zero byte, so zeros end a block's data.
 */
class PostingPages {
  readonly #pages: Uint8Array[] = [];
  /** Where the next block is cut from the last page. */
  #top = PAGE;
  /** Blocks given back, by size class. */
  readonly #free: number[][] = Array.from({ length: CLASSES }, () => []);
  /** Per list: its first block's address (0: none), its last block's, and where that one's data ends. */
  #head = new Float64Array(256);
  #tail = new Float64Array(256);
  #at = new Float64Array(256);
  #used = 0;

  /** List `list` exists (the next number). */
  added(list: number): void {
    if (list === this.#head.length) {
      const grow = (old: Float64Array) => {
        const grown = new Float64Array(old.length * 2);
        grown.set(old);
        return grown;
      };
      this.#head = grow(this.#head);
      this.#tail = grow(this.#tail);
      this.#at = grow(this.#at);
    }
  }

  append(list: number, delta: number): void {
    let tail = this.#tail[list]!;
    let at = this.#at[list]!;
    const room = tail === 0 ? 0 : tail + (16 << this.#pageOf(tail)[this.#offset(tail)]!) - at;
    if (room < 5) {
      const size = tail === 0 ? 0 : Math.min(CLASSES - 1, this.#pageOf(tail)[this.#offset(tail)]! + 1);
      const block = this.#block(size);
      if (tail === 0) this.#head[list] = block;
      else writeNext(this.#pageOf(tail), this.#offset(tail), block);
      this.#tail[list] = tail = block;
      at = block + HEADER;
    }
    const page = this.#pageOf(at);
    const offset = this.#offset(at);
    const end = putVarint(page, offset, delta);
    this.#used += end - offset;
    this.#at[list] = at + (end - offset);
  }

  /** The list's `count` numbers, each the sum of the deltas up to it (from -1). */
  decode(list: number, count: number): Int32Array {
    const out = new Int32Array(count);
    let n = 0;
    let seq = -1;
    for (let block = this.#head[list]!; block !== 0;) {
      const page = this.#pageOf(block);
      const offset = this.#offset(block);
      const end = offset + (16 << page[offset]!);
      let at = offset + HEADER;
      while (at < end && page[at] !== 0) {
        let delta = 0;
        let shift = 0;
        let byte: number;
        do {
          byte = page[at++]!;
          delta |= (byte & 0x7f) << shift;
          shift += 7;
        } while (byte & 0x80);
        out[n++] = seq += delta;
      }
      block = readNext(page, offset);
    }
    return out;
  }

  /** Gives the list's blocks back, zeroed, for other lists. */
  clear(list: number): void {
    for (let block = this.#head[list]!; block !== 0;) {
      const page = this.#pageOf(block);
      const offset = this.#offset(block);
      const size = page[offset]!;
      const next = readNext(page, offset);
      const end = offset + (16 << size);
      for (let at = offset + HEADER; at < end && page[at] !== 0; at++) this.#used--;
      page.fill(0, offset, end);
      this.#free[size]!.push(block);
      block = next;
    }
    this.#head[list] = 0;
    this.#tail[list] = 0;
    this.#at[list] = 0;
  }

  usedBytes(): number {
    return this.#used;
  }

  heldBytes(): number {
    return this.#pages.length * PAGE;
  }

  #block(size: number): number {
    const bytes = 16 << size;
    let block = this.#free[size]!.pop();
    if (block === undefined) {
      if (this.#top + bytes > PAGE) {
        this.#pages.push(new Uint8Array(PAGE));
        // Address 0 means none: the first page starts one block in.
        this.#top = this.#pages.length === 1 ? 16 : 0;
      }
      block = (this.#pages.length - 1) * PAGE + this.#top;
      this.#top += bytes;
    }
    this.#pageOf(block)[this.#offset(block)] = size;
    return block;
  }

  #pageOf(address: number): Uint8Array {
    return this.#pages[Math.floor(address / PAGE)]!;
  }

  #offset(address: number): number {
    return address % PAGE;
  }
}

function writeNext(page: Uint8Array, offset: number, block: number): void {
  const units = block / 16;
  page[offset + 1] = units & 0xff;
  page[offset + 2] = (units >>> 8) & 0xff;
  page[offset + 3] = (units >>> 16) & 0xff;
  page[offset + 4] = (units >>> 24) & 0xff;
}

function readNext(page: Uint8Array, offset: number): number {
  return (
    ((page[offset + 1]! | (page[offset + 2]! << 8) | (page[offset + 3]! << 16) | (page[offset + 4]! << 24)) >>> 0) * 16
  );
}
