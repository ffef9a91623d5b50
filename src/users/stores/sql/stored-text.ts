/**
 * How user strings are kept in SQL text columns (PostgreSQL's every field, SQLite's search copies and
 * email key), which cannot hold what a JSON string can: U+0000, and lone surrogates (`"\ud800"` is
 * valid JSON, and the contract stores names as sent).
 *
 * Those are written as two- or three-character escapes introduced by U+0001, and U+0001 itself is
 * escaped, so every string round-trips exactly. Everything else is kept as is, so the columns stay
 * readable. The escapes form a prefix code whose order matches the characters they stand for
 * (U+0000 as 01 01, U+0001 as 01 02, then U+0002 and up as themselves), so under `COLLATE "C"` (UTF-8
 * byte order, which is code-point order) the stored strings sort exactly as the memory store sorts the
 * originals. Lone surrogates (01 03 X) are the one exception: they sort next to U+0001 instead of among
 * the astral characters; only a hand-written `\udXXX` escape can produce one.
 *
 * Search is a substring test. A match in the stored form is a match in the original, and the reverse,
 * as long as the match starts at the start of a character rather than inside an escape: `likePattern`
 * is exact for needles whose first stored character cannot be the inside of an escape, and
 * `containsAligned` (the SQL function `roster_contains_aligned`) confirms the others.
 */

const ESCAPE = '\u0001';
/** Lone surrogates are written as ESCAPE, U+0003, and a private-use character carrying the unit. */
const LONE_BASE = 0xe000;

const NEEDS_ESCAPE = /[\u0000\u0001\ud800-\udfff]/; // eslint-disable-line no-control-regex -- exactly what text cannot hold, and the escape

export function toStored(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value;
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit === 0) out += '\u0001\u0001';
    else if (unit === 1) out += '\u0001\u0002';
    else if (unit >= 0xd800 && unit <= 0xdbff && isLow(value.charCodeAt(i + 1))) out += value[i]! + value[++i]!;
    else if (unit >= 0xd800 && unit <= 0xdfff) out += `\u0001\u0003${String.fromCharCode(LONE_BASE + unit - 0xd800)}`;
    else out += value[i]!;
  }
  return out;
}

export function fromStored(stored: string): string {
  if (!stored.includes(ESCAPE)) return stored;
  let out = '';
  for (let i = 0; i < stored.length; i++) {
    if (stored[i] !== ESCAPE) {
      out += stored[i]!;
      continue;
    }
    const kind = stored[++i];
    if (kind === '\u0001') out += '\u0000';
    else if (kind === '\u0002') out += '\u0001';
    else out += String.fromCharCode(stored.charCodeAt(++i) - LONE_BASE + 0xd800);
  }
  return out;
}

function isLow(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** First characters of a stored needle that may also be the inside of an escape. */
const MAY_CONTINUE = /^[\u0001\u0002\u0003\ue000-\ue7ff]/; // eslint-disable-line no-control-regex -- the escapes' own characters

/** The `LIKE` pattern (backslash escapes) of stored strings that contain `storedNeedle` anywhere. */
export function anywherePattern(storedNeedle: string): string {
  return `%${storedNeedle.replace(/[\\%_]/g, '\\$&')}%`;
}

/**
 * The `LIKE` pattern matching stored strings that contain `storedNeedle`, or undefined when a plain
 * substring test could match inside an escape, and `containsAligned` must confirm the match.
 */
export function likePattern(storedNeedle: string): string | undefined {
  return MAY_CONTINUE.test(storedNeedle) ? undefined : anywherePattern(storedNeedle);
}

/**
 * Whether `storedHaystack` contains `storedNeedle` starting at a whole character: what the SQL
 * function `roster_contains_aligned` (migrations/postgres/003_aligned_search.sql) decides, written the same way
 * here so that the tests can hold it against a search of the original strings. One walk over the
 * haystack's whole characters, comparing at each: no regular expression built from the needle.
 */
export function containsAligned(storedHaystack: string, storedNeedle: string): boolean {
  const last = storedHaystack.length - storedNeedle.length;
  for (let at = 0; at <= last;) {
    if (storedHaystack.startsWith(storedNeedle, at)) return true;
    at += storedHaystack[at] !== ESCAPE ? 1 : storedHaystack[at + 1] === '\u0003' ? 3 : 2;
  }
  return false;
}
