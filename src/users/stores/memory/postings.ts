/**
 * The posting lists of the search index (gram-index.ts): per trigram, every occurrence as a pair
 * (seq, place), sorted by seq and then place. Hand-written rather than a library's, because what it
 * must be is narrow: out of the JavaScript heap's object graph (a million users hold about 40 million
 * occurrences, which as objects or JS arrays would be that many more things for every major GC to
 * mark), appended to at the end by every create, and changed in the middle by updates and deletes.
 *
 * A list is three typed arrays:
 * - `base`: the bulk, varint-coded (the seq's distance from the previous pair's, then the place), in a
 *   byte buffer that grows by half. A create appends to it: a new user's seq is the highest.
 * - `removed`: sorted seqs whose pairs in `base` no longer count (the user changed or left).
 * - `extras`: pairs added by updates, sorted, as plain integers.
 * A list reads as `base` without `removed`, merged with `extras`. When `removed` and `extras` grow past
 * a quarter of the list it is written again as one `base` (compacted), so that cost is spread over
 * the writes that made it necessary.
 */

/** A list's pairs, decoded: seqs and places, in `seqs[0..length)`, `places[0..length)`. */
export interface Pairs {
  seqs: Int32Array;
  places: Int32Array;
  length: number;
}

/** Changes a list takes before it is compacted: at least this many, or a quarter of its pairs. */
const COMPACT_AT_LEAST = 32;
const COMPACT_SHARE = 4;

export class Postings {
  // Per list id (the gram's record number, gram-index.ts), parallel arrays, grown together (#room).
  #base: (Uint8Array | undefined)[] = [];
  #bytes = new Int32Array(0);
  /** The last seq in `base`, plus one (0: none). */
  #lastPlusOne = new Int32Array(0);
  /** Pairs in `base`. */
  #pairs = new Int32Array(0);
  #removed: (Int32Array | undefined)[] = [];
  #removedLength = new Int32Array(0);
  /** Pairs as [seq, place, seq, place, …]. */
  #extras: (Int32Array | undefined)[] = [];
  #extrasLength = new Int32Array(0);
  /** Reused by decode() for the lists it reads; grown to the longest read. */
  #scratch: Pairs = { seqs: new Int32Array(1024), places: new Int32Array(1024), length: 0 };

  /** Bytes held by the lists (their buffers' capacity), for the memory figures. */
  heldBytes(): number {
    let held = 0;
    for (const list of [this.#base, this.#removed, this.#extras])
      for (const array of list) held += array?.byteLength ?? 0;
    return held;
  }

  /** Appends `seq`'s places (ascending) to list `id`: `seq` is above every seq the list holds. */
  append(id: number, seq: number, places: ArrayLike<number>, from: number, to: number): void {
    this.#room(id);
    let base = this.#base[id];
    let at = this.#bytes[id]!;
    // At most five bytes per varint, two varints per pair.
    const need = at + 10 * (to - from);
    if (!base || base.length < need) {
      const grown = new Uint8Array(Math.max(16, need, grownLength(base)));
      if (base) grown.set(base.subarray(0, at));
      this.#base[id] = base = grown;
    }
    let last = this.#lastPlusOne[id]! - 1;
    for (let i = from; i < to; i++) {
      at = putVarint(base, at, seq - last);
      at = putVarint(base, at, places[i]!);
      last = seq;
    }
    this.#bytes[id] = at;
    this.#lastPlusOne[id] = last + 1;
    this.#pairs[id] = this.#pairs[id]! + (to - from);
  }

  /** Appends one pair: as append(), for the create's path, which meets a user's pairs one by one. */
  appendOne(id: number, seq: number, place: number): void {
    if (id >= this.#bytes.length) this.#room(id);
    let base = this.#base[id];
    let at = this.#bytes[id]!;
    if (base === undefined || base.length < at + 10) {
      const grown = new Uint8Array(Math.max(16, grownLength(base)));
      if (base) grown.set(base.subarray(0, at));
      this.#base[id] = base = grown;
    }
    const last = this.#lastPlusOne[id]! - 1;
    at = putVarint(base, at, seq - last);
    this.#bytes[id] = putVarint(base, at, place);
    this.#lastPlusOne[id] = seq + 1;
    this.#pairs[id] = this.#pairs[id]! + 1;
  }

  /** Drops every pair of `seq` from list `id`. */
  remove(id: number, seq: number): void {
    this.#room(id);
    this.#dropExtras(id, seq);
    if (seq <= this.#lastPlusOne[id]! - 1) {
      const length = this.#removedLength[id]!;
      let removed = this.#removed[id];
      const at = firstAtOrAbove(removed, 1, length, seq);
      if (at < length && removed![at] === seq) return;
      if (!removed || removed.length === length) {
        const grown = new Int32Array(Math.max(8, length * 2));
        if (removed) grown.set(removed);
        this.#removed[id] = removed = grown;
      }
      removed.copyWithin(at + 1, at, length);
      removed[at] = seq;
      this.#removedLength[id] = length + 1;
    }
    this.#compactIfDue(id);
  }

  /** Adds `seq`'s places (ascending) to list `id`, which holds no pair of `seq` (remove() first). */
  add(id: number, seq: number, places: ArrayLike<number>, from: number, to: number): void {
    this.#room(id);
    if (seq > this.#lastPlusOne[id]! - 1 && this.#extrasLength[id]! === 0) {
      this.append(id, seq, places, from, to);
      return;
    }
    const length = this.#extrasLength[id]!;
    let extras = this.#extras[id];
    const count = to - from;
    if (!extras || extras.length < length + 2 * count) {
      const grown = new Int32Array(Math.max(8, (length + 2 * count) * 2));
      if (extras) grown.set(extras.subarray(0, length));
      this.#extras[id] = extras = grown;
    }
    const at = 2 * firstAtOrAbove(extras, 2, length / 2, seq);
    extras.copyWithin(at + 2 * count, at, length);
    for (let i = 0; i < count; i++) {
      extras[at + 2 * i] = seq;
      extras[at + 2 * i + 1] = places[from + i]!;
    }
    this.#extrasLength[id] = length + 2 * count;
    this.#compactIfDue(id);
  }

  /**
   * List `id`'s pairs with seq at most `until`, in order, into a buffer reused by the next call (copy
   * what must outlive it). `until` stops the read early: the pairs past it are not decoded.
   */
  decode(id: number, until = Infinity): Pairs {
    this.#room(id);
    const need = this.#pairs[id]! + this.#extrasLength[id]! / 2;
    if (this.#scratch.seqs.length < need) {
      const size = Math.max(need, this.#scratch.seqs.length * 2);
      this.#scratch = { seqs: new Int32Array(size), places: new Int32Array(size), length: 0 };
    }
    const out = this.#scratch;
    const { seqs, places } = out;
    const base = this.#base[id];
    const end = this.#bytes[id]!;
    const removed = this.#removed[id];
    const removedLength = this.#removedLength[id]!;
    const extras = this.#extras[id];
    const extrasLength = this.#extrasLength[id]!;
    let n = 0;
    let r = 0;
    let x = 0;
    let seq = -1;
    let at = 0;
    while (at < end) {
      // Two varints, inline: this loop reads millions of bytes a second.
      let byte = base![at++]!;
      let delta = byte & 0x7f;
      for (let shift = 7; byte & 0x80; shift += 7) delta += ((byte = base![at++]!) & 0x7f) * 2 ** shift;
      byte = base![at++]!;
      let place = byte & 0x7f;
      for (let shift = 7; byte & 0x80; shift += 7) place += ((byte = base![at++]!) & 0x7f) * 2 ** shift;
      seq += delta;
      if (seq > until) break;
      while (r < removedLength && removed![r]! < seq) r++;
      if (r < removedLength && removed![r] === seq) continue;
      // Extras that come first.
      while (x < extrasLength && (extras![x]! < seq || (extras![x] === seq && extras![x + 1]! < place))) {
        seqs[n] = extras![x]!;
        places[n++] = extras![x + 1]!;
        x += 2;
      }
      seqs[n] = seq;
      places[n++] = place;
    }
    for (; x < extrasLength && extras![x]! <= until; x += 2) {
      seqs[n] = extras![x]!;
      places[n++] = extras![x + 1]!;
    }
    out.length = n;
    return out;
  }

  /** Makes the arrays hold list `id`: grown by half, kept packed (no holes) for V8. */
  #room(id: number): void {
    if (id < this.#bytes.length) return;
    const size = Math.max(1024, id + 1, Math.ceil(this.#bytes.length * 1.5));
    const widen = (array: Int32Array) => {
      const grown = new Int32Array(size);
      grown.set(array);
      return grown;
    };
    const pad = <T>(array: (T | undefined)[]) =>
      array.concat(new Array<undefined>(size - array.length).fill(undefined));
    this.#bytes = widen(this.#bytes);
    this.#lastPlusOne = widen(this.#lastPlusOne);
    this.#pairs = widen(this.#pairs);
    this.#removedLength = widen(this.#removedLength);
    this.#extrasLength = widen(this.#extrasLength);
    this.#base = pad(this.#base);
    this.#removed = pad(this.#removed);
    this.#extras = pad(this.#extras);
  }

  #dropExtras(id: number, seq: number): void {
    const extras = this.#extras[id];
    if (!extras) return;
    const length = this.#extrasLength[id]!;
    const from = 2 * firstAtOrAbove(extras, 2, length / 2, seq);
    let to = from;
    while (to < length && extras[to] === seq) to += 2;
    if (to === from) return;
    extras.copyWithin(from, to, length);
    this.#extrasLength[id] = length - (to - from);
  }

  #compactIfDue(id: number): void {
    const changes = this.#removedLength[id]! + this.#extrasLength[id]! / 2;
    if (changes < Math.max(COMPACT_AT_LEAST, this.#pairs[id]! / COMPACT_SHARE)) return;
    // Decoded into the scratch buffers and coded again in one loop, into a buffer sized for it with
    // room to grow (at most ten bytes a pair).
    const { seqs, places, length } = this.decode(id);
    let base = new Uint8Array(Math.max(16, Math.ceil(this.#bytes[id]! * 1.1) + 10 * (this.#extrasLength[id]! / 2)));
    let at = 0;
    let last = -1;
    for (let i = 0; i < length; i++) {
      if (at + 10 > base.length) {
        const grown = new Uint8Array(grownLength(base));
        grown.set(base);
        base = grown;
      }
      at = putVarint(base, at, seqs[i]! - last);
      at = putVarint(base, at, places[i]!);
      last = seqs[i]!;
    }
    this.#base[id] = length > 0 ? base : undefined;
    this.#bytes[id] = at;
    this.#lastPlusOne[id] = last + 1;
    this.#pairs[id] = length;
    this.#removed[id] = undefined;
    this.#removedLength[id] = 0;
    this.#extras[id] = undefined;
    this.#extrasLength[id] = 0;
  }
}

/**
 * A list's next capacity: half as much again while small, a fifth once past 64 KiB, where most of the
 * bytes are (the lists of `com`, `exa` and the like, on every user), so that room to grow is about a
 * tenth of what the lists hold rather than a quarter.
 */
function grownLength(base: Uint8Array | undefined): number {
  const length = base?.length ?? 0;
  return Math.ceil(length * (length < 65_536 ? 1.5 : 1.2));
}

/** Writes `value` (a non-negative integer) as a varint at `at`; returns where the next byte goes. */
function putVarint(bytes: Uint8Array, at: number, value: number): number {
  // Seqs and places are below 2^31: a shift rather than a division per byte.
  while (value >= 0x80) {
    bytes[at++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  bytes[at++] = value;
  return at;
}

/** The first of `count` entries (each `stride` integers, keyed by the first) whose key is at least `seq`. */
function firstAtOrAbove(array: Int32Array | undefined, stride: number, count: number, seq: number): number {
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (array![mid * stride]! < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
