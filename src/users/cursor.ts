/**
 * The list's cursor (`after`): an opaque string that holds a position (query.ts: Position) and a
 * digest of the list it was made for (role, search, sort, order). A cursor is read back only by the
 * same list: one altered, cut short or made for another list is refused, so a walk cannot silently
 * jump to another order's place. The digest is a check, not a secret (docs/decisions.md "The list's cursor").
 *
 * By hand: it is a few lines over node:crypto and base64url; no package does this shape.
 */
import { hash } from 'node:crypto';
import { FIELD_NAMES, fieldSpec } from './fields.js';
import type { Position } from './query.js';

/** The list a cursor belongs to: what must be the same on every page of one walk. */
export interface CursorList {
  role?: string | undefined;
  search?: string | undefined;
  sort: string;
  descending: boolean;
}

/** Longest cursor accepted, in characters: a position of the longest sort key (an email) fits many times. */
export const CURSOR_MAX_LENGTH = 4096;

const STAMP = /^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}$/;
const SEQ = /^[0-9]{1,19}$/;
/** The largest seq PostgreSQL's `bigint` holds (2^63 - 1); a larger one is no position of any store. */
const MAX_SEQ = 2n ** 63n - 1n;
const STAMPED: readonly string[] = FIELD_NAMES.filter((name) => fieldSpec(name).stamp !== undefined);

/**
 * Whether `text` is a time as users' stamps are written, one that exists (no 30 February) and that
 * every store can hold: not year 0000, which Date.parse takes (1 BC) but PostgreSQL's `timestamp` has
 * no year for. Anyone can mint a cursor (its digest is no secret), so what one holds must be refused
 * here, alike on every store, rather than by one engine's error.
 */
function isStamp(text: string): boolean {
  if (!STAMP.test(text) || text.startsWith('0000')) return false;
  const time = Date.parse(`${text.slice(0, 19)}Z`);
  return !Number.isNaN(time) && new Date(time).toISOString().slice(0, 19) === text.slice(0, 19);
}

/** Digest characters kept: 16 of base64url, the first 12 bytes (96 bits) of the SHA-256, so that an accidental change is never taken for a cursor. */
const DIGEST_CHARS = 16;

/**
 * Digests made lately, by what they digest. A list whose next page does not move (the default list
 * between writes) asks for the same cursor on every request, and a SHA-256 there was a tenth of the
 * request's CPU (BENCHMARKS.md, "Drift against a fixed older build"). By hand: a Map emptied when full
 * is the whole of the bound, which no cache package makes smaller.
 */
const digests = new Map<string, string>();
const DIGESTS_KEPT = 1024;

function digest(list: CursorList, payload: string): string {
  const of = JSON.stringify([list.role ?? null, list.search ?? null, list.sort, list.descending, payload]);
  let made = digests.get(of);
  if (made === undefined) {
    // One call, no Hash object: a third of createHash().update().digest() for a short text.
    made = hash('sha256', of, 'base64url').slice(0, DIGEST_CHARS);
    if (digests.size >= DIGESTS_KEPT) digests.clear();
    digests.set(of, made);
  }
  return made;
}

/**
 * The cursor made last, with what it was made of. The default list between writes names the same next
 * page on every request, and making its cursor (JSON, base64url, the digest's key) was 1.3 µs of a
 * 45 µs request (BENCHMARKS.md, "Drift against 41a4c31"); comparing seven strings is a fiftieth of that.
 */
let last: (CursorList & Position & { cursor: string }) | undefined;

export function encodeCursor(list: CursorList, position: Position): string {
  if (
    last !== undefined &&
    last.key === position.key &&
    last.created_at === position.created_at &&
    last.seq === position.seq &&
    last.sort === list.sort &&
    last.descending === list.descending &&
    last.role === list.role &&
    last.search === list.search
  ) {
    return last.cursor;
  }
  const fields = [position.key, position.created_at, ...(position.seq === undefined ? [] : [position.seq])];
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
  const cursor = `${payload}.${digest(list, payload)}`;
  last = { ...list, ...position, seq: position.seq, cursor };
  return cursor;
}

/** The position `cursor` holds, or undefined if it is not a cursor of this list. */
export function decodeCursor(list: CursorList, cursor: string): Position | undefined {
  const dot = cursor.indexOf('.');
  if (dot < 0 || cursor.length > CURSOR_MAX_LENGTH) return undefined;
  const payload = cursor.slice(0, dot);
  if (cursor.slice(dot + 1) !== digest(list, payload)) return undefined;
  let fields: unknown;
  try {
    fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(fields) || fields.length < 2 || fields.length > 3) return undefined;
  const [key, createdAt, seq] = fields as unknown[];
  if (typeof key !== 'string' || typeof createdAt !== 'string' || !isStamp(createdAt)) return undefined;
  // A stamp's key goes to the SQL stores as a time: it must be one.
  if (STAMPED.includes(list.sort) && !isStamp(key)) return undefined;
  if (seq !== undefined && (typeof seq !== 'string' || !SEQ.test(seq) || BigInt(seq) > MAX_SEQ)) return undefined;
  return { key, created_at: createdAt, ...(seq !== undefined && { seq }) };
}
