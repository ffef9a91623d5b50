/**
 * The units of the search index (gram-index.ts): gram keys, one field's grams as extracted, and the
 * char-code helpers its writes use instead of slicing strings.
 */
import { SEARCHABLE_FIELDS } from '../../fields.js';
import type { Postings } from './postings.js';

/** How many fields a place distinguishes. */
export const PARTS = SEARCHABLE_FIELDS.length;
/** Above any place: an offset in a lower-cased field (at most a few hundred units) times PARTS. */
export const PLACES = 65536;

/**
 * Keys below this are those of every one-unit gram and of the two- and three-unit grams of ASCII:
 * their records are found in a table (8.6 MB of address space, of which only the pages of grams that
 * occur are ever touched), the rest in a Map.
 */
export const DIRECT = 0x22_0000;

export const key1 = (a: number): number => a;
export const key2 = (a: number, b: number): number =>
  a < 128 && b < 128 ? 0x1_0000 + ((a << 7) | b) : 2 ** 34 + a * 0x1_0000 + b;
export const key3 = (a: number, b: number, c: number): number =>
  a < 128 && b < 128 && c < 128 ? 0x2_0000 + ((a << 14) | (b << 7) | c) : 2 ** 49 + (a * 0x1_0000 + b) * 0x1_0000 + c;

/** The key of a needle of one to three units. */
export function keyOf(needle: string, at = 0, units = needle.length): number {
  const a = needle.charCodeAt(at);
  if (units === 1) return key1(a);
  const b = needle.charCodeAt(at + 1);
  return units === 2 ? key2(a, b) : key3(a, b, needle.charCodeAt(at + 2));
}

/** One user's grams: the records of its distinct grams of one and two units; its trigram occurrences as record × PLACES + place, sorted. */
export interface Grams {
  short: Int32Array;
  /** Per short gram: where it was first met in the field (#extractField), as offset × 4 + units. */
  shortAt: Int32Array;
  shortLength: number;
  tri: Float64Array;
  triLength: number;
}

/** Marks in #flags: a gram of a field's old text, of its new text. */
export const OLD = 1;
export const NEW = 2;

export const newGrams = (): Grams => ({
  short: new Int32Array(256),
  shortAt: new Int32Array(256),
  shortLength: 0,
  tri: new Float64Array(256),
  triLength: 0,
});

export function grow<T extends Int32Array | Uint16Array | Uint8Array | Float64Array>(array: T, least = 0): T {
  const grown = new (array.constructor as new (length: number) => T)(Math.max(least, array.length * 2));
  grown.set(array);
  return grown;
}

/** Where `text`'s `units` units at `at` occur in `part` from `from` on, or -1: compared by char code, no slice. */
export function indexOfUnits(part: string, from: number, text: string, at: number, units: number): number {
  const first = text.charCodeAt(at);
  for (let i = from; i + units <= part.length; i++) {
    if (part.charCodeAt(i) !== first) continue;
    let k = 1;
    while (k < units && part.charCodeAt(i + k) === text.charCodeAt(at + k)) k++;
    if (k === units) return i;
  }
  return -1;
}

/**
 * The seqs, ascending, where the trigrams `records` (rarest first) occur at consecutive places of one
 * field, each at its offset `at` in the needle: candidates from the rarest list, checked against the others'.
 */
export function intersect(postings: Postings, records: readonly { record: number; at: number }[]): Int32Array {
  // Candidates from the rarest trigram: (seq, place where the needle would start).
  const first = postings.decode(records[0]!.record);
  const seqs = new Int32Array(first.length);
  const starts = new Int32Array(first.length);
  let n = 0;
  const shift = records[0]!.at * PARTS;
  for (let i = 0; i < first.length; i++) {
    const start = first.places[i]! - shift;
    if (start < 0) continue; // the needle would begin before its field
    seqs[n] = first.seqs[i]!;
    starts[n++] = start;
  }
  for (let r = 1; r < records.length && n > 0; r++) {
    const { record, at } = records[r]!;
    const pairs = postings.decode(record, seqs[n - 1]);
    let p = 0;
    let kept = 0;
    for (let c = 0; c < n; c++) {
      const seq = seqs[c]!;
      const place = starts[c]! + at * PARTS;
      while (p < pairs.length && (pairs.seqs[p]! < seq || (pairs.seqs[p] === seq && pairs.places[p]! < place))) p++;
      if (p < pairs.length && pairs.seqs[p] === seq && pairs.places[p] === place) {
        seqs[kept] = seq;
        starts[kept++] = starts[c]!;
      }
    }
    n = kept;
  }
  // One seq per user (a needle may start at several places of one user).
  let distinct = 0;
  for (let c = 0; c < n; c++) if (distinct === 0 || seqs[distinct - 1] !== seqs[c]) seqs[distinct++] = seqs[c]!;
  return seqs.slice(0, distinct);
}

/**
 * The seqs, ascending, of the users holding the two units `a` `b` inside a trigram of ASCII: every
 * list of `ab?` and `?ab`. Each of them holds the pair, so they are all of its holders exactly when
 * as many as the pair's own count (the caller checks): missed are only a field that is the pair
 * alone, and a pair beside a unit outside ASCII. Undefined when a unit of the pair is not ASCII, or
 * when the lists hold more than `most` pairs (then a scan is no dearer).
 */
export function withPair(
  postings: Postings,
  recordOf: (key: number) => number | undefined,
  a: number,
  b: number,
  most: number,
): Int32Array | undefined {
  if (a >= 128 || b >= 128) return undefined;
  let seqs = new Int32Array(64);
  let n = 0;
  for (let c = 0; c < 128; c++) {
    for (const record of [recordOf(key3(a, b, c)), recordOf(key3(c, a, b))]) {
      if (record === undefined) continue;
      const pairs = postings.decode(record);
      if (n + pairs.length > most) return undefined;
      if (n + pairs.length > seqs.length) seqs = grow(seqs, n + pairs.length);
      seqs.set(pairs.seqs.subarray(0, pairs.length), n);
      n += pairs.length;
    }
  }
  const sorted = seqs.subarray(0, n).sort();
  let distinct = 0;
  for (let i = 0; i < n; i++) if (distinct === 0 || sorted[distinct - 1] !== sorted[i]) sorted[distinct++] = sorted[i]!;
  return sorted.slice(0, distinct);
}
