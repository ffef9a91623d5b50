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
import {
  DIRECT,
  intersect,
  grow,
  indexOfUnits,
  key1,
  key2,
  key3,
  keyOf,
  NEW,
  newGrams,
  OLD,
  PARTS,
  PLACES,
  type Grams,
} from './gram-keys.js';

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
  /** Records whose role count #moveRole moved, to clear their marks. */
  #moved = new Int32Array(256);
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
    let longest = 0;
    for (const part of parts) if (part.length > longest) longest = part.length;
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
    if (before.role !== after.role) this.#moveRole(seq, before, after.role);
    this.#fieldsChanged(seq, before, after);
  }

  /** The user at `seq` is gone: each field diffed to nothing. */
  removed(seq: number, user: User): void {
    this.#fieldsChanged(seq, user, undefined);
  }

  #fieldsChanged(seq: number, before: User, after: User | undefined): void {
    for (let field = 0; field < PARTS; field++) {
      const name = SEARCHABLE_FIELDS[field]!;
      if (before[name] === after?.[name]) continue;
      const was = (before[name] ?? '').toLowerCase();
      const is = (after?.[name] ?? '').toLowerCase();
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
  #fieldChanged(seq: number, field: number, was: string, is: string, before: User, after: User | undefined): void {
    const role = this.#roleOf[seq]!;
    const others = this.#others;
    others.length = 0;
    for (let other = 0; other < PARTS; other++)
      // As the index holds them: fields before this one are diffed already, those after not yet.
      if (other !== field)
        others.push(((other < field ? after : before)?.[SEARCHABLE_FIELDS[other]!] ?? '').toLowerCase());
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

  /** The user at `seq` (as `user`) takes role `to`: each of its grams counted under that role instead. */
  #moveRole(seq: number, user: User, to: string): void {
    const from = this.#roleOf[seq]!;
    this.#setRole(seq, to);
    const role = this.#roleOf[seq]!;
    let moved = this.#moved;
    let n = 0;
    for (let field = 0; field < PARTS; field++) {
      // Short grams come marked OLD (once per user, as marks stay until the end); trigrams are marked NEW here.
      const grams = this.#extractField((user[SEARCHABLE_FIELDS[field]!] ?? '').toLowerCase(), field, this.#before, OLD);
      const records = grams.shortLength + grams.triLength;
      if (n + records > moved.length) this.#moved = moved = grow(moved, n + records);
      for (let i = 0; i < grams.shortLength; i++) moved[n++] = grams.short[i]!;
      for (let i = 0; i < grams.triLength; i++) {
        const record = Math.floor(grams.tri[i]! / PLACES);
        if (this.#flags[record]! & NEW) continue;
        this.#flags[record]! |= NEW;
        moved[n++] = record;
      }
    }
    for (let i = 0; i < n; i++) {
      this.#move(moved[i]!, from, role);
      this.#flags[moved[i]!] = 0;
    }
  }

  /** How many users hold `needle` (lower-cased, one to three units), of `role` if given: exact. */
  count(needle: string, role?: string): number {
    const record = this.recordOf(keyOf(needle));
    if (record === undefined) return 0;
    if (role === undefined) return this.#total[record]!;
    const number = this.#roleNumbers.get(role);
    return number === undefined || number >= this.#stride ? 0 : this.#byRole[record * this.#stride + number]!;
  }

  /** The users of its rarest trigram: at least as many as `needle` (three units or more) finds. */
  rarest(needle: string): number {
    let fewest = Infinity;
    for (let at = 0; at + 3 <= needle.length; at++) {
      const record = this.recordOf(keyOf(needle, at, 3));
      fewest = Math.min(fewest, record === undefined ? 0 : this.#total[record]!);
    }
    return fewest;
  }

  /** The seqs of every user whose searchable text holds `needle` (lower-cased, three units or more), ascending. */
  find(needle: string): Int32Array {
    const records: { record: number; at: number }[] = [];
    for (let at = 0; at + 3 <= needle.length; at++) {
      const record = this.recordOf(keyOf(needle, at, 3));
      if (record === undefined || this.#total[record] === 0) return new Int32Array(0);
      records.push({ record, at });
    }
    records.sort((x, y) => this.#total[x.record]! - this.#total[y.record]!);
    return intersect(this.postings, records);
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

  /** The record of a gram's key, made if new: from a table for grams of ASCII (and every one-unit gram), else the Map. */
  #record(key: number): number {
    if (key < DIRECT) {
      const record = this.#direct[key]! - 1;
      return record >= 0 ? record : (this.#direct[key] = this.#newRecord(key) + 1) - 1;
    }
    return this.#records.get(key) ?? this.#newRecord(key);
  }

  /** The record of a gram's key, if any. */
  recordOf(key: number): number | undefined {
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
