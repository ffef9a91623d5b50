/**
 * A sorted sequence with positional access: insert and remove in O(log n + B), the item at a rank in
 * O(log n), ranks of key bounds in O(log n). It is what lets the memory store answer a list page
 * without sorting or scanning all users.
 *
 * Written by hand because no maintained npm package offers it: the B-tree and red-black tree packages
 * (sorted-btree, bintrees, js-sdsl) have no rank queries, and functional-red-black-tree, which has, is
 * unmaintained and allocates a path of nodes per insert. The structure is the "list of sorted chunks"
 * of Python's sortedcontainers: items live in chunks of bounded size, kept in order; an insert
 * is a binary search over the chunks' last items, then one within a chunk, then a short splice.
 * Ranks come from the chunks' start offsets, recomputed lazily from the first chunk a write touched.
 *
 * With `tag`, each chunk also counts its items per tag (a small integer: the memory store tags users
 * by role), so a walk that wants only one tag skips whole chunks by their counts.
 */

/** Chunks split above this size by default. 1 000 000 items make about 2 700 chunks of 256..512. */
export const DEFAULT_CHUNK_SIZE = 512;

export class OrderedIndex<T> {
  readonly #compare: (a: T, b: T) => number;
  readonly #maxChunk: number;
  readonly #key: ((item: T) => string) | undefined;
  readonly #tag: ((item: T) => number) | undefined;
  readonly #chunks: T[][] = [];
  /** With `tag`: per chunk, its items' count per tag. */
  readonly #tagCounts: TagCounts | undefined;
  /**
   * With `key`: the key of each chunk's last item. The search for an item's chunk then compares
   * strings held here instead of calling `compare`, which for the store reads two users through a
   * column and an object each: at a million users those reads are cache misses, and they were most of
   * an insert's time.
   */
  readonly #lastKeys: string[] = [];
  /** Rank of the first item of each chunk; entries from #validStarts on are stale. */
  readonly #starts: number[] = [];
  #validStarts = 0;
  #size = 0;

  /**
   * `compare` must be a total order in which only an item equals itself (break ties, e.g. by a
   * sequence). Tests pass a tiny `maxChunk` to exercise splits with few items. `key`, if given,
   * must agree with `compare`: a smaller key means an earlier item, equal keys leave it to `compare`.
   * `tag`, if given, is read when an item comes in and when it goes (retag() moves an item between tags).
   */
  constructor(
    compare: (a: T, b: T) => number,
    options: {
      maxChunk?: number;
      key?: (item: T) => string;
      tag?: (item: T) => number;
    } = {},
  ) {
    this.#compare = compare;
    this.#key = options.key;
    this.#tag = options.tag;
    this.#tagCounts = options.tag ? new TagCounts() : undefined;
    this.#maxChunk = Math.max(2, options.maxChunk ?? DEFAULT_CHUNK_SIZE);
  }

  get size(): number {
    return this.#size;
  }

  insert(item: T): void {
    this.#size++;
    const chunks = this.#chunks;
    const last = chunks.length - 1;
    const lastChunk = chunks[last];
    // Appends (creation order, updated_at: every insert) skip both binary searches.
    const appended = !lastChunk || this.#compare(lastChunk[lastChunk.length - 1]!, item) < 0;
    if (appended && (!lastChunk || lastChunk.length >= this.#maxChunk)) {
      // Past a full last chunk: a new chunk rather than a split, so those indexes fill their chunks completely.
      chunks.push([item]);
      this.#renew(last + 1, true);
      this.#stale(last + 1);
      return;
    }
    const c = appended ? last : this.#chunkFor(item);
    const chunk = chunks[c]!;
    const at = appended ? chunk.length : this.#positionIn(chunk, item);
    // push at the end: splice makes an array of what it removed, even of nothing.
    if (at === chunk.length) chunk.push(item);
    else chunk.splice(at, 0, item);
    if (chunk.length > this.#maxChunk) {
      // Two new arrays of exactly their length: the full one has grown its capacity by half, which
      // halving it in place would keep (about 10 B of heap per item over three indexes).
      const half = chunk.length >> 1;
      chunks.splice(c, 1, chunk.slice(0, half), chunk.slice(half));
      this.#renew(c + 1, true);
      this.#renew(c, false);
    } else {
      if (at === chunk.length - 1) this.#fence(c, false);
      this.#tagCounts?.add(c, this.#tag!(item), 1);
    }
    this.#stale(c);
  }

  /** Removes the item (found by comparison, so its sort key must be what it was at insert). */
  remove(item: T): boolean {
    const found = this.#find(item);
    if (!found) return false;
    const [chunk, i, c] = found;
    chunk.splice(i, 1);
    this.#size--;
    if (chunk.length === 0) {
      this.#chunks.splice(c, 1);
      if (this.#key) this.#lastKeys.splice(c, 1);
      this.#tagCounts?.removeRow(c);
    } else {
      if (i === chunk.length) this.#fence(c, false);
      this.#tagCounts?.add(c, this.#tag!(item), -1);
    }
    this.#stale(c);
    return true;
  }

  /**
   * The item (at its place, found by comparison) now has tag `to` instead of `from`: for a change of
   * tag that leaves its sort key alone.
   */
  retag(item: T, from: number, to: number): boolean {
    const found = this.#find(item);
    if (!found) return false;
    this.#tagCounts?.add(found[2], from, -1);
    this.#tagCounts?.add(found[2], to, 1);
    return true;
  }

  /**
   * Where a walk of the items tagged `tag` that skips the first `skip` of them can start: the rank of
   * the first item of a chunk, and how many tagged items come before it (at most `skip`). Whole chunks
   * are skipped by their counts. Needs `tag`. `down`: the same from the end, the items from `rank` on
   * holding `skipped`; a walk down starts at `rank - 1`.
   */
  skipTagged(tag: number, skip: number, down = false): { rank: number; skipped: number } {
    const chunks = this.#chunks;
    let rank = down ? this.#size : 0;
    let skipped = 0;
    for (let i = 0; i < chunks.length; i++) {
      const c = down ? chunks.length - 1 - i : i;
      const n = this.#tagCounts!.get(c, tag);
      if (skipped + n > skip) break;
      skipped += n;
      rank += down ? -chunks[c]!.length : chunks[c]!.length;
    }
    return { rank, skipped };
  }

  #find(item: T): [chunk: T[], position: number, chunkIndex: number] | undefined {
    if (this.#chunks.length === 0) return undefined;
    const c = this.#chunkFor(item);
    const chunk = this.#chunks[c]!;
    const i = this.#positionIn(chunk, item);
    if (i === chunk.length || this.#compare(chunk[i]!, item) !== 0) return undefined;
    return [chunk, i, c];
  }

  /** The item at `rank` (0-based, ascending), if any. */
  at(rank: number): T | undefined {
    if (rank < 0 || rank >= this.#size) return undefined;
    const c = this.#chunkOfRank(rank);
    return this.#chunks[c]![rank - this.#starts[c]!];
  }

  /** Up to `count` items from `rank` on, ascending. */
  slice(rank: number, count: number): T[] {
    const out: T[] = [];
    if (rank < 0 || rank >= this.#size) return out;
    let c = this.#chunkOfRank(rank);
    let i = rank - this.#starts[c]!;
    for (; c < this.#chunks.length && out.length < count; c++, i = 0) {
      const chunk = this.#chunks[c]!;
      for (; i < chunk.length && out.length < count; i++) out.push(chunk[i]!);
    }
    return out;
  }

  /** Up to `count` items from `rank` down, descending. */
  sliceDown(rank: number, count: number): T[] {
    if (rank < 0 || rank >= this.#size) return [];
    const from = Math.max(0, rank - count + 1);
    return this.slice(from, rank - from + 1).reverse();
  }

  /**
   * Rank of the first item for which `atOrAfter` holds; `atOrAfter` must be false for a prefix of the
   * order and true for the rest (a lower or upper bound of some key).
   */
  firstRank(atOrAfter: (item: T) => boolean): number {
    const chunks = this.#chunks;
    const c = firstWhere(0, chunks.length, (c) => atOrAfter(chunks[c]![chunks[c]!.length - 1]!));
    if (c === chunks.length) return this.#size;
    const chunk = chunks[c]!;
    this.#refreshStarts();
    return this.#starts[c]! + firstWhere(0, chunk.length, (i) => atOrAfter(chunk[i]!));
  }

  /** Every item in ascending order, chunk by chunk: for full scans (search), without per-item calls. */
  chunks(): readonly (readonly T[])[] {
    return this.#chunks;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (const chunk of this.#chunks) yield* chunk;
  }

  /** Keeps chunk `c`'s last key and tag counts afresh, for a new chunk (`added`) or in place of the old ones. */
  #renew(c: number, added: boolean): void {
    this.#fence(c, added);
    const counts = this.#tagCounts;
    if (!counts) return;
    if (added) counts.insertRow(c);
    else counts.clearRow(c);
    for (const item of this.#chunks[c]!) counts.add(c, this.#tag!(item), 1);
  }

  /** Keeps the last key of chunk `c`, as a new entry (`added`) or in place of the old one. */
  #fence(c: number, added: boolean): void {
    if (!this.#key) return;
    const chunk = this.#chunks[c]!;
    const key = this.#key(chunk[chunk.length - 1]!);
    if (added) this.#lastKeys.splice(c, 0, key);
    else this.#lastKeys[c] = key;
  }

  /**
   * First chunk whose last item is not below `item`; the last chunk when every chunk is below. The
   * binary searches here and in #positionIn are written out rather than given to firstWhere: they run
   * a few times per insert of every index, and the closure firstWhere takes was made anew on each call
   * (a tenth of a create's allocations, measured with V8's sampling heap profiler).
   */
  #chunkFor(item: T): number {
    const chunks = this.#chunks;
    const compare = this.#compare;
    const lastKeys = this.#lastKeys;
    const key = this.#key?.(item);
    let lo = 0;
    let hi = chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const fence = lastKeys[mid];
      const atOrAfter =
        key !== undefined && fence !== key ? fence! > key : compare(chunks[mid]![chunks[mid]!.length - 1]!, item) >= 0;
      if (atOrAfter) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  /** First position in `chunk` whose item is not below `item`. */
  #positionIn(chunk: readonly T[], item: T): number {
    const compare = this.#compare;
    let lo = 0;
    let hi = chunk.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compare(chunk[mid]!, item) >= 0) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }

  #chunkOfRank(rank: number): number {
    this.#refreshStarts();
    return firstWhere(1, this.#chunks.length, (c) => this.#starts[c]! > rank) - 1;
  }

  #stale(chunk: number): void {
    if (chunk < this.#validStarts) this.#validStarts = chunk;
  }

  #refreshStarts(): void {
    const chunks = this.#chunks;
    let c = this.#validStarts;
    for (let rank = c === 0 ? 0 : this.#starts[c - 1]! + chunks[c - 1]!.length; c < chunks.length; c++) {
      this.#starts[c] = rank;
      rank += chunks[c]!.length;
    }
    this.#starts.length = chunks.length;
    this.#validStarts = chunks.length;
  }
}

/**
 * The first `i` in [lo, hi) for which `holds(i)`, or `hi`: `holds` must be false up to some `i` and
 * true from there on.
 */
export function firstWhere(lo: number, hi: number, holds: (i: number) => boolean): number {
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (holds(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * Counts per chunk and tag: one row of `width` counts per chunk, every row in one typed array. An
 * array per chunk cost about 170 B each (a JavaScript array's backing store starts with room for 16),
 * about 7 MB over the memory store's four field indexes at a million users; a row costs 4 B a tag.
 */
class TagCounts {
  #rows = new Int32Array(64);
  /** Counts per row: one more than the highest tag seen. */
  #width = 1;
  #length = 0;

  get(row: number, tag: number): number {
    return tag < this.#width ? this.#rows[row * this.#width + tag]! : 0;
  }

  add(row: number, tag: number, by: number): void {
    if (tag >= this.#width) this.#widen(tag + 1);
    this.#rows[row * this.#width + tag]! += by;
  }

  /** A row of zeros before row `row` (or at the end). */
  insertRow(row: number): void {
    const width = this.#width;
    if ((this.#length + 1) * width > this.#rows.length) {
      const rows = new Int32Array(Math.max(this.#rows.length * 2, (this.#length + 1) * width));
      rows.set(this.#rows);
      this.#rows = rows;
    }
    this.#rows.copyWithin((row + 1) * width, row * width, this.#length * width);
    this.#rows.fill(0, row * width, (row + 1) * width);
    this.#length++;
  }

  removeRow(row: number): void {
    const width = this.#width;
    this.#rows.copyWithin(row * width, (row + 1) * width, this.#length * width);
    this.#length--;
  }

  clearRow(row: number): void {
    this.#rows.fill(0, row * this.#width, (row + 1) * this.#width);
  }

  #widen(width: number): void {
    const old = this.#width;
    const rows = new Int32Array(Math.max(64, (this.#length + 1) * width * 2));
    for (let row = 0; row < this.#length; row++) rows.set(this.#rows.subarray(row * old, (row + 1) * old), row * width);
    this.#rows = rows;
    this.#width = width;
  }
}
