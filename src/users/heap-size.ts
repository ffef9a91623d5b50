/**
 * What a user kept in a cache costs the heap, at most: what the caches of decoded users (the SQLite
 * store's) and of their JSON (http/routes/user-json.ts) count against their bounds in bytes, so that
 * the bound holds whatever the users hold. V8 keeps a string in one byte per UTF-16 unit when every
 * unit is Latin-1, else in two; counting two for every unit, plus a header per string, and the object
 * with its map entry, errs on the side of too much without reading the strings.
 */
import { FIELD_NAMES } from './fields.js';
import type { User } from './schema.js';

/** A string's header on a 64-bit V8 (map, hash, length), rounded up. */
const STRING_HEADER_BYTES = 24;
/** A user object of six fields, and the entry of the map that holds it, rounded up. */
const USER_OBJECT_BYTES = 128;

/** The most heap `text` can take: two bytes per UTF-16 unit and its header. */
export function stringBytes(text: string): number {
  return STRING_HEADER_BYTES + 2 * text.length;
}

/** The most heap a user can take: the object and each of its strings (an absent optional field: a header). */
export function userBytes(user: User): number {
  const fields = user as Readonly<Record<string, string | undefined>>;
  return FIELD_NAMES.reduce((bytes, name) => bytes + stringBytes(fields[name] ?? ''), USER_OBJECT_BYTES);
}
