/**
 * How user strings are kept in SQLite. Its TEXT is UTF-8, which cannot hold a lone surrogate (`"\ud800"`
 * is valid JSON, and the contract stores names as sent): the driver would write U+FFFD instead. So the
 * stored fields are BLOBs of the string's UTF-16 code units, big-endian, each unit from U+D800 up shifted
 * as `compareCodePoints` (query.ts) shifts it. The encoding is one-to-one, so every string round-trips,
 * and SQLite orders BLOBs by memcmp then length, which on these bytes is exactly the memory store's
 * order: code-point order, lone surrogates where the memory store puts them too.
 *
 * Strings without units from U+D800 up (nearly all) are encoded and decoded by Buffer alone.
 */

import { codePointOrderKey } from '../../query.js';

const HIGH_UNITS = /[\ud800-\uffff]/g;

/** The string's code-point order key (query.ts), as big-endian UTF-16 units. */
export function toBlob(text: string): Buffer {
  return Buffer.from(codePointOrderKey(text), 'utf16le').swap16();
}

export function fromBlob(blob: Uint8Array): string {
  // A copy: swap16 works in place, and the driver's buffer is not ours to change.
  const text = Buffer.from(blob).swap16().toString('utf16le');
  return text.replace(HIGH_UNITS, (unit) => String.fromCharCode(unshift(unit.charCodeAt(0))));
}

/** Undoes compareCodePoints' remapping (U+E000..U+FFFF down to 0xD800..0xF7FF, surrogates up to 0xF800..0xFFFF). */
function unshift(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xf800 ? unit - 0x2000 : unit + 0x800;
}
