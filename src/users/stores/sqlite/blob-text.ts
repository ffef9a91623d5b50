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

const HIGH_UNIT = /[\ud800-\uffff]/;

export function toBlob(text: string): Buffer {
  const buffer = Buffer.from(text, 'utf16le');
  if (HIGH_UNIT.test(text)) {
    for (let at = 0; at < buffer.length; at += 2) buffer.writeUInt16LE(shift(buffer.readUInt16LE(at)), at);
  }
  return buffer.swap16();
}

export function fromBlob(blob: Uint8Array): string {
  // A copy: swap16 works in place, and the driver's buffer is not ours to change.
  const buffer = Buffer.from(blob).swap16();
  let high = false;
  for (let at = 1; at < buffer.length; at += 2) {
    if (buffer[at]! >= 0xd8) {
      high = true;
      break;
    }
  }
  if (high) {
    for (let at = 0; at < buffer.length; at += 2) buffer.writeUInt16LE(unshift(buffer.readUInt16LE(at)), at);
  }
  return buffer.toString('utf16le');
}

/** compareCodePoints' remapping: U+E000..U+FFFF down to 0xD800..0xF7FF, surrogates up to 0xF800..0xFFFF. */
function shift(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

function unshift(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit >= 0xf800 ? unit - 0x2000 : unit + 0x800;
}
