/**
 * RFC 6455 frames encoded and decoded here (not by `ws`), so the tests can send frames a real client
 * library never would (unmasked, reserved bits, oversized control frames, ...) and see exactly what the
 * server sent.
 */
import { createHash, randomBytes } from 'node:crypto';

export const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export const Opcode = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

/** The Sec-WebSocket-Accept value the server must answer for `key`. */
export function acceptFor(key: string): string {
  return createHash('sha1')
    .update(key + WS_GUID)
    .digest('base64');
}

export interface EncodeOptions {
  /** FIN bit; default true. */
  fin?: boolean;
  rsv1?: boolean;
  rsv2?: boolean;
  rsv3?: boolean;
  /** Set the MASK bit and mask the payload; default true (clients must mask). */
  mask?: boolean;
  /** Length written in the header instead of the payload's; with `headerOnly` this sends a promise of data. */
  declaredLength?: number;
  /** Write only the header (and masking key), not the payload. */
  headerOnly?: boolean;
}

/** Encodes one frame. The length form is the shortest that fits (7-bit, 16-bit 126, 64-bit 127). */
export function encodeFrame(
  opcode: number,
  payload: Buffer | string = Buffer.alloc(0),
  options: EncodeOptions = {},
): Buffer {
  const data = typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload;
  const { fin = true, rsv1 = false, rsv2 = false, rsv3 = false, mask = true } = options;
  const length = options.declaredLength ?? data.length;
  const first = (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | (rsv2 ? 0x20 : 0) | (rsv3 ? 0x10 : 0) | (opcode & 0x0f);
  const maskBit = mask ? 0x80 : 0;
  let header: Buffer;
  if (length < 126) {
    header = Buffer.from([first, maskBit | length]);
  } else if (length < 0x10000) {
    header = Buffer.alloc(4);
    header[0] = first;
    header[1] = maskBit | 126;
    header.writeUInt16BE(length, 2);
  } else {
    header = Buffer.alloc(10);
    header[0] = first;
    header[1] = maskBit | 127;
    header.writeBigUInt64BE(BigInt(length), 2);
  }
  if (!mask) return options.headerOnly ? header : Buffer.concat([header, data]);
  const key = randomBytes(4);
  if (options.headerOnly) return Buffer.concat([header, key]);
  const masked = Buffer.alloc(data.length);
  for (let i = 0; i < data.length; i++) masked[i] = data[i]! ^ key[i % 4]!;
  return Buffer.concat([header, key, masked]);
}

export interface Frame {
  fin: boolean;
  rsv: number;
  opcode: number;
  masked: boolean;
  /** The length form the header used: 7, 16 or 64. */
  lengthForm: 7 | 16 | 64;
  payload: Buffer;
}

/** Decodes as many whole frames as `buffer` holds; returns them and the unused rest. */
export function decodeFrames(buffer: Buffer): { frames: Frame[]; rest: Buffer } {
  const frames: Frame[] = [];
  let offset = 0;
  for (;;) {
    if (buffer.length - offset < 2) break;
    const b0 = buffer[offset]!;
    const b1 = buffer[offset + 1]!;
    const masked = (b1 & 0x80) !== 0;
    let length = b1 & 0x7f;
    let pos = offset + 2;
    let lengthForm: 7 | 16 | 64 = 7;
    if (length === 126) {
      if (buffer.length - pos < 2) break;
      length = buffer.readUInt16BE(pos);
      pos += 2;
      lengthForm = 16;
    } else if (length === 127) {
      if (buffer.length - pos < 8) break;
      length = Number(buffer.readBigUInt64BE(pos));
      pos += 8;
      lengthForm = 64;
    }
    let key: Buffer | undefined;
    if (masked) {
      if (buffer.length - pos < 4) break;
      key = buffer.subarray(pos, pos + 4);
      pos += 4;
    }
    if (buffer.length - pos < length) break;
    const payload = Buffer.from(buffer.subarray(pos, pos + length));
    if (key) for (let i = 0; i < payload.length; i++) payload[i] = payload[i]! ^ key[i % 4]!;
    frames.push({ fin: (b0 & 0x80) !== 0, rsv: (b0 >> 4) & 0x7, opcode: b0 & 0x0f, masked, lengthForm, payload });
    offset = pos + length;
  }
  return { frames, rest: buffer.subarray(offset) };
}

/** A chat message as the server sends it (parsed JSON of a text frame). */
export type FrameJson = Record<string, unknown>;

export function textMessage(frame: Frame): FrameJson {
  try {
    return JSON.parse(frame.payload.toString('utf8')) as FrameJson;
  } catch {
    return {};
  }
}

/** A close frame payload: 2-byte code and optional reason. */
export function closePayload(code: number, reason = ''): Buffer {
  const buffer = Buffer.alloc(2 + Buffer.byteLength(reason));
  buffer.writeUInt16BE(code, 0);
  buffer.write(reason, 2, 'utf8');
  return buffer;
}
