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
 */

/** Chunks split above this size by default. 1 000 000 items make about 2 700 chunks of 256..512. */
export const DEFAULT_CHUNK_SIZE = 512;

export class OrderedIndex<T> {
  readonly #compare: (a: T, b: T) => number;
  readonly #maxChunk: number;
  readonly #changed: ((chunk: readonly T[]) => void) | undefined;
  readonly #chunks: T[][] = [];
  /** Rank of the first item of each chunk; entries from #validStarts on are stale. */
  readonly #starts: number[] = [];
  #validStarts = 0;
  #size = 0;

  /**
   * `compare` must be a total order in which only an item equals itself (break ties, e.g. by a
   * sequence). Tests pass a tiny `maxChunk` to exercise splits with few items. `changed` hears of
   * every chunk whose contents change, for caches kept per chunk (search-text.ts).
   */
  constructor(
    compare: (a: T, b: T) => number,
    options: { maxChunk?: number; changed?: (chunk: readonly T[]) => void } = {},
  ) {
    this.#compare = compare;
    this.#maxChunk = Math.max(2, options.maxChunk ?? DEFAULT_CHUNK_SIZE);
    this.#changed = options.changed;
  }

  get size(): number {
    return this.#size;
  }

  insert(item: T): void {
    this.#size++;
    if (this.#chunks.length === 0) {
      this.#chunks.push([item]);
      this.#stale(0);
      return;
    }
    const c = this.#chunkFor(item);
    const chunk = this.#chunks[c]!;
    const at = this.#positionIn(chunk, item);
    if (at === chunk.length && c === this.#chunks.length - 1 && chunk.length >= this.#maxChunk) {
      // Appending past a full last chunk (creation order, updated_at: every insert lands there):
      // start a new chunk rather than split, so those indexes fill their chunks completely.
      this.#chunks.push([item]);
    } else {
      chunk.splice(at, 0, item);
      this.#changed?.(chunk);
      if (chunk.length > this.#maxChunk) this.#chunks.splice(c + 1, 0, chunk.splice(chunk.length >> 1));
    }
    this.#stale(c);
  }

  /** Puts `next` in the place of `item`; both must sort the same. */
  replace(item: T, next: T): boolean {
    const found = this.#find(item);
    if (!found) return false;
    const [chunk, i] = found;
    chunk[i] = next;
    this.#changed?.(chunk);
    return true;
  }

  /** Removes the item (found by comparison, so its sort key must be what it was at insert). */
  remove(item: T): boolean {
    const found = this.#find(item);
    if (!found) return false;
    const [chunk, i, c] = found;
    chunk.splice(i, 1);
    this.#changed?.(chunk);
    this.#size--;
    if (chunk.length === 0) this.#chunks.splice(c, 1);
    this.#stale(c);
    return true;
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
    const out: T[] = [];
    if (rank < 0 || rank >= this.#size) return out;
    let c = this.#chunkOfRank(rank);
    let i = rank - this.#starts[c]!;
    while (c >= 0 && out.length < count) {
      const chunk = this.#chunks[c]!;
      for (; i >= 0 && out.length < count; i--) out.push(chunk[i]!);
      c--;
      if (c >= 0) i = this.#chunks[c]!.length - 1;
    }
    return out;
  }

  /**
   * Rank of the first item for which `atOrAfter` holds; `atOrAfter` must be false for a prefix of the
   * order and true for the rest (a lower or upper bound of some key).
   */
  firstRank(atOrAfter: (item: T) => boolean): number {
    const chunks = this.#chunks;
    let lo = 0;
    let hi = chunks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const chunk = chunks[mid]!;
      if (atOrAfter(chunk[chunk.length - 1]!)) hi = mid;
      else lo = mid + 1;
    }
    if (lo === chunks.length) return this.#size;
    const chunk = chunks[lo]!;
    let a = 0;
    let b = chunk.length;
    while (a < b) {
      const mid = (a + b) >> 1;
      if (atOrAfter(chunk[mid]!)) b = mid;
      else a = mid + 1;
    }
    this.#refreshStarts();
    return this.#starts[lo]! + a;
  }

  /** Every item in ascending order, chunk by chunk: for full scans (search), without per-item calls. */
  chunks(): readonly (readonly T[])[] {
    return this.#chunks;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (const chunk of this.#chunks) yield* chunk;
  }

  /** First chunk whose last item is not below `item`; the last chunk when every chunk is below. */
  #chunkFor(item: T): number {
    const chunks = this.#chunks;
    let lo = 0;
    let hi = chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const chunk = chunks[mid]!;
      if (this.#compare(chunk[chunk.length - 1]!, item) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** First position in `chunk` whose item is not below `item`. */
  #positionIn(chunk: readonly T[], item: T): number {
    let lo = 0;
    let hi = chunk.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.#compare(chunk[mid]!, item) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #chunkOfRank(rank: number): number {
    this.#refreshStarts();
    const starts = this.#starts;
    let lo = 0;
    let hi = this.#chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= rank) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  #stale(chunk: number): void {
    if (chunk < this.#validStarts) this.#validStarts = chunk;
  }

  #refreshStarts(): void {
    const chunks = this.#chunks;
    const starts = this.#starts;
    let c = this.#validStarts;
    if (c >= chunks.length) {
      starts.length = chunks.length;
      return;
    }
    let rank = c === 0 ? 0 : starts[c - 1]! + chunks[c - 1]!.length;
    for (; c < chunks.length; c++) {
      starts[c] = rank;
      rank += chunks[c]!.length;
    }
    starts.length = chunks.length;
    this.#validStarts = chunks.length;
  }
}
