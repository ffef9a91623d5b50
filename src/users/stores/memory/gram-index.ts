/**
 * The memory store's search index: the grams of every user's searchable text, lower-cased per field
 * exactly as query.ts' search does (searchedParts), in UTF-16 code units, so that a needle's grams are
 * those of any text it is found in, whatever lower-casing did to lengths (İ becomes two units).
 *
 * - For every gram of one, two and three units: how many users hold it, in all and per role. A needle
 *   of up to three units is one gram, so its total is read here, exact, with no scan.
 * - For every trigram: where it occurs, as (seq, place) pairs (postings.ts); the place is the offset in
 *   the field times the number of fields plus the field's number. A needle of three units or more is
 *   found where its trigrams occur at consecutive offsets of one field: the overlapping trigrams pin
 *   every unit, so the intersection is exact (no candidate needs checking against the text), read
 *   from the rarest trigram's list and checked against the others'.
 *
 * Grams are keyed by their units themselves (no hashing, so no two grams share a record); ASCII
 * grams get small keys, which V8 keeps as small integers.
 */
import { SEARCHABLE_FIELDS } from '../../fields.js';
import { searchedParts } from '../../query.js';
import type { User } from '../../schema.js';
import { Postings } from './postings.js';

/** How many fields a place distinguishes. */
const PARTS = SEARCHABLE_FIELDS.length;
/** Above any place: an offset in a lower-cased field (at most a few hundred units) times PARTS. */
const PLACES = 65536;

/**
 * Keys below this are those of every one-unit gram and of the two- and three-unit grams of ASCII:
 * their records are found in a table (8.6 MB of address space, of which only the pages of grams that
 * occur are ever touched), the rest in a Map.
 */
const DIRECT = 0x22_0000;

const key1 = (a: number): number => a;
const key2 = (a: number, b: number): number =>
  a < 128 && b < 128 ? 0x1_0000 + ((a << 7) | b) : 2 ** 34 + a * 0x1_0000 + b;
const key3 = (a: number, b: number, c: number): number =>
  a < 128 && b < 128 && c < 128 ? 0x2_0000 + ((a << 14) | (b << 7) | c) : 2 ** 49 + (a * 0x1_0000 + b) * 0x1_0000 + c;

/** The key of a needle of one to three units. */
function keyOf(needle: string, at = 0, units = needle.length): number {
  const a = needle.charCodeAt(at);
  if (units === 1) return key1(a);
  const b = needle.charCodeAt(at + 1);
  return units === 2 ? key2(a, b) : key3(a, b, needle.charCodeAt(at + 2));
}

/** One user's grams: the records of its distinct grams of one and two units; its trigram occurrences as record × PLACES + place, sorted. */
interface Grams {
  short: Int32Array;
  /** Per short gram: where it was first met in the field (#extractField), as offset × 4 + units. */
  shortAt: Int32Array;
  shortLength: number;
  tri: Float64Array;
  triLength: number;
}

/** Marks in #flags: a gram of a field's old text, of its new text. */
const OLD = 1;
const NEW = 2;

const newGrams = (): Grams => ({
  short: new Int32Array(256),
  shortAt: new Int32Array(256),
  shortLength: 0,
  tri: new Float64Array(256),
  triLength: 0,
});

export class GramIndex {
  /** Record number + 1 by gram key, for keys below DIRECT (0: none yet). */
  readonly #direct = new Int32Array(DIRECT);
  /** Record number by gram key, for the others. */
  readonly #records = new Map<number, number>();
  /** Records made. */
  #size = 0;
  /** Per record: users holding the gram. */
  #total = new Int32Array(1024);
  /** Per record and role number: users of the role holding the gram (record × #stride + role). */
  #byRole = new Int32Array(1024 * 4);
  #stride = 4;
  /** Per record: the extraction that saw it last (dedupes a user's grams without sorting). */
  #seen = new Int32Array(1024);
  #stamp = 0;
  /** Per record: OLD and NEW marks while #fieldChanged diffs a field, zero otherwise. */
  #flags = new Uint8Array(1024);
  /** The other fields' lower-cased text while #fieldChanged runs, and places scratch for #replaceField. */
  readonly #others: string[] = [];
  #places = new Int32Array(64);
  readonly #roleNumbers = new Map<string, number>();
  readonly #roleNames: string[] = [];
  /** Per seq: its user's role number. */
  #roleOf = new Uint16Array(1024);
  readonly postings = new Postings();
  readonly #before = newGrams();
  readonly #after = newGrams();

  /**
   * A new user (its seq above all others). The hot path of every create, so in one pass with no
   * buffer: its seq is above every list's, so each occurrence is appended as it is met, in place order.
   */
  inserted(seq: number, user: User): void {
    this.#setRole(seq, user.role);
    const role = this.#roleOf[seq]!;
    const stamp = ++this.#stamp;
    const parts = searchedParts(user);
    const longest = Math.max(...parts.map((part) => part.length));
    for (let at = 0; at < longest; at++) {
      for (let field = 0; field < PARTS; field++) {
        const text = parts[field]!;
        if (at >= text.length) continue;
        const a = text.charCodeAt(at);
        let record = this.#record(key1(a));
        if (this.#seen[record] !== stamp) this.#first(record, role, stamp);
        if (at + 1 >= text.length) continue;
        const b = text.charCodeAt(at + 1);
        record = this.#record(key2(a, b));
        if (this.#seen[record] !== stamp) this.#first(record, role, stamp);
        if (at + 2 >= text.length) continue;
        record = this.#record(key3(a, b, text.charCodeAt(at + 2)));
        if (this.#seen[record] !== stamp) this.#first(record, role, stamp);
        this.postings.appendOne(record, seq, at * PARTS + field);
      }
    }
  }

  /** A gram met for the first time in a user: counted. */
  #first(record: number, role: number, stamp: number): void {
    this.#seen[record] = stamp;
    this.#total[record]!++;
    this.#byRole[record * this.#stride + role]!++;
  }

  /**
   * The user at `seq` went from `before` to `after`. A write that changes no searchable field and not
   * the role leaves the index alone; one that keeps the role diffs only the fields that changed
   * (#fieldChanged); a change of role moves every gram's role count (#roleChanged).
   */
  updated(seq: number, before: User, after: User): void {
    if (before.role !== after.role) {
      this.#roleChanged(seq, before, after);
      return;
    }
    for (let field = 0; field < PARTS; field++) {
      const name = SEARCHABLE_FIELDS[field]!;
      if (before[name] === after[name]) continue;
      const was = (before[name] ?? '').toLowerCase();
      const is = (after[name] ?? '').toLowerCase();
      if (was !== is) this.#fieldChanged(seq, field, was, is, before, after);
    }
  }

  /**
   * Field `field` of the user at `seq` went from `was` to `is` (lower-cased), its role the same: only
   * the grams of the field's old and new text are looked at, and of those only the ones not in both
   * are counted again; a trigram's postings are written again only where its places in the field
   * changed. Whether the user's other fields hold a gram is read off their text (#otherHolds), not
   * their grams.
   */
  #fieldChanged(seq: number, field: number, was: string, is: string, before: User, after: User): void {
    const role = this.#roleOf[seq]!;
    const others = this.#others;
    others.length = 0;
    for (let other = 0; other < PARTS; other++)
      // As the index holds them: fields before this one are diffed already, those after not yet.
      if (other !== field)
        others.push(((other < field ? after : before)[SEARCHABLE_FIELDS[other]!] ?? '').toLowerCase());
    const old = this.#extractField(was, field, this.#before, OLD);
    const now = this.#extractField(is, field, this.#after, NEW);
    const flags = this.#flags;
    for (const grams of [old, now])
      for (let i = 0; i < grams.shortLength; i++) {
        const record = grams.short[i]!;
        const mark = flags[record]!;
        if (mark === 0) continue; // already counted (in both lists)
        flags[record] = 0;
        const where = grams.shortAt[i]!;
        if (mark === (OLD | NEW) || this.#othersHold(mark === OLD ? was : is, where >> 2, where & 3)) continue;
        this.#count(record, role, mark === OLD ? -1 : 1);
      }
    // Trigrams: both sorted by record, then place; a record's places compared as a run.
    const a = old.tri;
    const b = now.tri;
    let i = 0;
    let j = 0;
    while (i < old.triLength || j < now.triLength) {
      const ra = i < old.triLength ? Math.floor(a[i]! / PLACES) : Infinity;
      const rb = j < now.triLength ? Math.floor(b[j]! / PLACES) : Infinity;
      const record = Math.min(ra, rb);
      let ie = i;
      while (ie < old.triLength && Math.floor(a[ie]! / PLACES) === record) ie++;
      let je = j;
      while (je < now.triLength && Math.floor(b[je]! / PLACES) === record) je++;
      let same = ie - i === je - j;
      for (let k = 0; same && k < ie - i; k++) same = a[i + k] === b[j + k];
      if (!same) {
        const place = (ra === record ? a[i]! : b[j]!) - record * PLACES;
        const other = this.#othersHold(ra === record ? was : is, (place - field) / PARTS, 3);
        if (ra !== record || rb !== record) {
          if (!other) this.#count(record, role, ra === record ? -1 : 1);
        }
        if (!other && rb !== record) this.postings.remove(record, seq);
        else this.#replaceField(record, seq, field, b, j, je, ra === record ? was : is, (place - field) / PARTS);
      }
      i = ie;
      j = je;
    }
  }

  /** Whether a field other than the one diffed (#others) holds `text`'s `units` units at `at`: by char codes. */
  #othersHold(text: string, at: number, units: number): boolean {
    for (const other of this.#others) if (indexOfUnits(other, 0, text, at, units) >= 0) return true;
    return false;
  }

  /**
   * Puts `seq`'s places of trigram `record` in place of those it had: the diffed field's, coded in
   * `tri[from..to)`, and the other fields' (found in their text, the trigram being `text`'s three
   * units at `at`), ascending.
   */
  #replaceField(
    record: number,
    seq: number,
    field: number,
    tri: Float64Array,
    from: number,
    to: number,
    text: string,
    at: number,
  ): void {
    this.postings.remove(record, seq);
    let n = 0;
    let places = this.#places;
    const push = (place: number) => {
      if (n === places.length) this.#places = places = grow(places);
      places[n++] = place;
    };
    for (let k = from; k < to; k++) push(tri[k]! - record * PLACES);
    let other = 0;
    for (let part = 0; part < PARTS; part++) {
      if (part === field) continue;
      const holder = this.#others[other++]!;
      for (
        let found = indexOfUnits(holder, 0, text, at, 3);
        found >= 0;
        found = indexOfUnits(holder, found + 1, text, at, 3)
      )
        push(found * PARTS + part);
    }
    if (n === 0) return;
    places.subarray(0, n).sort();
    this.postings.add(record, seq, places, 0, n);
  }

  /** The grams of one field's lower-cased `text` into `grams`, each short gram marked `mark` in #flags once. */
  #extractField(text: string, field: number, grams: Grams, mark: number): Grams {
    grams.shortLength = 0;
    grams.triLength = 0;
    for (let at = 0; at < text.length; at++) {
      const a = text.charCodeAt(at);
      let record = this.#record(key1(a));
      if ((this.#flags[record]! & mark) === 0) this.#mark(grams, record, mark, at * 4 + 1);
      if (at + 1 >= text.length) continue;
      const b = text.charCodeAt(at + 1);
      record = this.#record(key2(a, b));
      if ((this.#flags[record]! & mark) === 0) this.#mark(grams, record, mark, at * 4 + 2);
      if (at + 2 >= text.length) continue;
      record = this.#record(key3(a, b, text.charCodeAt(at + 2)));
      if (grams.triLength === grams.tri.length) grams.tri = grow(grams.tri);
      grams.tri[grams.triLength++] = record * PLACES + at * PARTS + field;
    }
    grams.tri.subarray(0, grams.triLength).sort();
    return grams;
  }

  #mark(grams: Grams, record: number, mark: number, where: number): void {
    this.#flags[record]! |= mark;
    if (grams.shortLength === grams.short.length) {
      grams.short = grow(grams.short);
      grams.shortAt = grow(grams.shortAt);
    }
    grams.shortAt[grams.shortLength] = where;
    grams.short[grams.shortLength++] = record;
  }

  /** The user at `seq` changed role (and perhaps searchable fields): every gram of it diffed whole. */
  #roleChanged(seq: number, before: User, after: User): void {
    const was = this.#extract(before, this.#before);
    const oldRole = this.#roleOf[seq]!;
    this.#setRole(seq, after.role);
    const newRole = this.#roleOf[seq]!;
    const is = this.#extract(after, this.#after);
    // Grams of one and two units: `#seen` marks those of `is` (the later extraction).
    const stamp = this.#stamp;
    for (let i = 0; i < was.shortLength; i++) {
      const record = was.short[i]!;
      if (this.#seen[record] !== stamp) this.#count(record, oldRole, -1);
      else if (oldRole !== newRole) this.#move(record, oldRole, newRole);
    }
    this.#stamp++;
    for (let i = 0; i < was.shortLength; i++) this.#seen[was.short[i]!] = this.#stamp;
    for (let i = 0; i < is.shortLength; i++)
      if (this.#seen[is.short[i]!] !== this.#stamp) this.#count(is.short[i]!, newRole, 1);
    // Trigrams: both sorted by record, then place; a record's places compared as a run.
    const a = was.tri;
    const b = is.tri;
    let i = 0;
    let j = 0;
    while (i < was.triLength || j < is.triLength) {
      const ra = i < was.triLength ? Math.floor(a[i]! / PLACES) : Infinity;
      const rb = j < is.triLength ? Math.floor(b[j]! / PLACES) : Infinity;
      const record = Math.min(ra, rb);
      let ie = i;
      while (ie < was.triLength && Math.floor(a[ie]! / PLACES) === record) ie++;
      let je = j;
      while (je < is.triLength && Math.floor(b[je]! / PLACES) === record) je++;
      if (ra === record && rb === record) {
        if (oldRole !== newRole) this.#move(record, oldRole, newRole);
        let same = ie - i === je - j;
        for (let k = 0; same && k < ie - i; k++) same = a[i + k] === b[j + k];
        if (!same) this.#replace(record, seq, b, j, je);
      } else if (ra === record) {
        this.#count(record, oldRole, -1);
        this.postings.remove(record, seq);
      } else {
        this.#count(record, newRole, 1);
        this.#replace(record, seq, b, j, je);
      }
      i = ie;
      j = je;
    }
  }

  /** The user at `seq` is gone. */
  removed(seq: number, user: User): void {
    const grams = this.#extract(user, this.#before);
    const role = this.#roleOf[seq]!;
    for (let i = 0; i < grams.shortLength; i++) this.#count(grams.short[i]!, role, -1);
    this.#eachTrigram(grams, (record) => {
      this.#count(record, role, -1);
      this.postings.remove(record, seq);
    });
  }

  /** How many users hold `needle` (lower-cased, one to three units), of `role` if given: exact. */
  count(needle: string, role?: string): number {
    const record = this.#recordOf(keyOf(needle));
    if (record === undefined) return 0;
    if (role === undefined) return this.#total[record]!;
    const number = this.#roleNumbers.get(role);
    return number === undefined || number >= this.#stride ? 0 : this.#byRole[record * this.#stride + number]!;
  }

  /** The users of its rarest trigram: at least as many as `needle` (three units or more) finds. */
  rarest(needle: string): number {
    let fewest = Infinity;
    for (let at = 0; at + 3 <= needle.length; at++) {
      const record = this.#recordOf(keyOf(needle, at, 3));
      fewest = Math.min(fewest, record === undefined ? 0 : this.#total[record]!);
    }
    return fewest;
  }

  /** The seqs of every user whose searchable text holds `needle` (lower-cased, three units or more), ascending. */
  find(needle: string): Int32Array {
    const records: { record: number; at: number }[] = [];
    for (let at = 0; at + 3 <= needle.length; at++) {
      const record = this.#recordOf(keyOf(needle, at, 3));
      if (record === undefined || this.#total[record] === 0) return new Int32Array(0);
      records.push({ record, at });
    }
    records.sort((x, y) => this.#total[x.record]! - this.#total[y.record]!);
    // Candidates from the rarest trigram: (seq, place where the needle would start).
    const first = this.postings.decode(records[0]!.record);
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
      const pairs = this.postings.decode(record, seqs[n - 1]);
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

  /** How many of `seqs[0..length)` each role has. */
  roleCounts(seqs: ArrayLike<number>, length: number): Map<string, number> {
    const counts = new Int32Array(this.#roleNames.length);
    for (let i = 0; i < length; i++) counts[this.#roleOf[seqs[i]!]!]!++;
    const roles = new Map<string, number>();
    for (const [number, name] of this.#roleNames.entries()) if (counts[number]! > 0) roles.set(name, counts[number]!);
    return roles;
  }

  /** Bytes held in typed arrays by the index (postings and counts), for the memory figures. */
  heldBytes(): number {
    return (
      this.postings.heldBytes() +
      this.#total.byteLength +
      this.#byRole.byteLength +
      this.#seen.byteLength +
      this.#roleOf.byteLength
    );
  }

  /** Each trigram of `grams` with its places (`places[from..to)`, ascending). */
  #eachTrigram(grams: Grams, each: (record: number, places: Float64Array, from: number, to: number) => void): void {
    const { tri, triLength } = grams;
    for (let i = 0; i < triLength;) {
      const record = Math.floor(tri[i]! / PLACES);
      let end = i + 1;
      while (end < triLength && Math.floor(tri[end]! / PLACES) === record) end++;
      // Places in place of the coded entries, for postings to read: entries of this run are done with.
      for (let k = i; k < end; k++) tri[k] = tri[k]! - record * PLACES;
      each(record, tri, i, end);
      for (let k = i; k < end; k++) tri[k] = tri[k]! + record * PLACES;
      i = end;
    }
  }

  /** Puts `seq`'s places of `record`, coded in `tri[from..to)`, in place of those it had. */
  #replace(record: number, seq: number, tri: Float64Array, from: number, to: number): void {
    this.postings.remove(record, seq);
    const places = new Int32Array(to - from);
    for (let k = from; k < to; k++) places[k - from] = tri[k]! - record * PLACES;
    this.postings.add(record, seq, places, 0, places.length);
  }

  /** The user's grams, into `grams`; records are made for grams never seen. */
  #extract(user: User, grams: Grams): Grams {
    const stamp = ++this.#stamp;
    const parts = searchedParts(user);
    let longest = 0;
    for (const part of parts) longest = Math.max(longest, part.length);
    grams.shortLength = 0;
    grams.triLength = 0;
    // Offsets outside, fields inside: trigram entries come out in place order.
    for (let at = 0; at < longest; at++) {
      for (let field = 0; field < PARTS; field++) {
        const text = parts[field]!;
        if (at >= text.length) continue;
        const a = text.charCodeAt(at);
        this.#short(grams, this.#record(key1(a)), stamp);
        if (at + 1 >= text.length) continue;
        const b = text.charCodeAt(at + 1);
        this.#short(grams, this.#record(key2(a, b)), stamp);
        if (at + 2 >= text.length) continue;
        const record = this.#record(key3(a, b, text.charCodeAt(at + 2)));
        if (grams.triLength === grams.tri.length) grams.tri = grow(grams.tri);
        grams.tri[grams.triLength++] = record * PLACES + at * PARTS + field;
      }
    }
    grams.tri.subarray(0, grams.triLength).sort();
    return grams;
  }

  #short(grams: Grams, record: number, stamp: number): void {
    if (this.#seen[record] === stamp) return;
    this.#seen[record] = stamp;
    if (grams.shortLength === grams.short.length) grams.short = grow(grams.short);
    grams.short[grams.shortLength++] = record;
  }

  /** The record of a gram's key, made if new: from a table for grams of ASCII (and every one-unit gram), else the Map. */
  #record(key: number): number {
    if (key < DIRECT) {
      const record = this.#direct[key]! - 1;
      return record >= 0 ? record : (this.#direct[key] = this.#newRecord(key) + 1) - 1;
    }
    return this.#records.get(key) ?? this.#newRecord(key);
  }

  /** The record of a gram's key, if any. */
  #recordOf(key: number): number | undefined {
    if (key >= DIRECT) return this.#records.get(key);
    const record = this.#direct[key]! - 1;
    return record >= 0 ? record : undefined;
  }

  #newRecord(key: number): number {
    const record = this.#size++;
    if (key >= DIRECT) this.#records.set(key, record);
    if (record === this.#total.length) {
      this.#total = grow(this.#total);
      this.#seen = grow(this.#seen);
      this.#flags = grow(this.#flags);
      const byRole = new Int32Array(this.#total.length * this.#stride);
      byRole.set(this.#byRole);
      this.#byRole = byRole;
    }
    return record;
  }

  #count(record: number, role: number, by: number): void {
    this.#total[record]! += by;
    this.#byRole[record * this.#stride + role]! += by;
  }

  #move(record: number, from: number, to: number): void {
    this.#byRole[record * this.#stride + from]!--;
    this.#byRole[record * this.#stride + to]!++;
  }

  #setRole(seq: number, role: string): void {
    let number = this.#roleNumbers.get(role);
    if (number === undefined) {
      number = this.#roleNames.push(role) - 1;
      this.#roleNumbers.set(role, number);
      if (number >= this.#stride) this.#widen(this.#stride * 2);
    }
    while (seq >= this.#roleOf.length) this.#roleOf = grow(this.#roleOf);
    this.#roleOf[seq] = number;
  }

  /** More role numbers per record. */
  #widen(stride: number): void {
    const byRole = new Int32Array(this.#total.length * stride);
    for (let record = 0; record < this.#size; record++)
      byRole.set(this.#byRole.subarray(record * this.#stride, (record + 1) * this.#stride), record * stride);
    this.#byRole = byRole;
    this.#stride = stride;
  }
}

function grow<T extends Int32Array | Uint16Array | Uint8Array | Float64Array>(array: T): T {
  const grown = new (array.constructor as new (length: number) => T)(array.length * 2);
  grown.set(array);
  return grown;
}

/** Where `text`'s `units` units at `at` occur in `part` from `from` on, or -1: compared by char code, no slice. */
function indexOfUnits(part: string, from: number, text: string, at: number, units: number): number {
  const first = text.charCodeAt(at);
  for (let i = from; i + units <= part.length; i++) {
    if (part.charCodeAt(i) !== first) continue;
    let k = 1;
    while (k < units && part.charCodeAt(i + k) === text.charCodeAt(at + k)) k++;
    if (k === units) return i;
  }
  return -1;
}
