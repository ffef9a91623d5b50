/**
 * The WebSocket wire (RFC 6455) by hand, for the chat load generator: the client's opening handshake,
 * masked text frames out, and a reader of the server's (unmasked) frames that, when the payload is not
 * wanted, looks at frame headers only. Thousands of receiving clients then cost the generator little
 * more than the reads themselves.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';

export const OPCODE_TEXT = 0x1;
export const OPCODE_CLOSE = 0x8;

export function handshakeRequest(host: string, port: number): string {
  return (
    `GET / HTTP/1.1\r\nHost: ${host}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`
  );
}

/** One final, masked text frame (clients must mask), with a random masking key. */
export function maskedTextFrame(text: string): Buffer {
  const payload = Buffer.from(text, 'utf8');
  const length = payload.length;
  const headerLength = length < 126 ? 2 : length < 0x10000 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headerLength + 4 + length);
  frame[0] = 0x80 | OPCODE_TEXT;
  if (length < 126) frame[1] = 0x80 | length;
  else if (length < 0x10000) {
    frame[1] = 0x80 | 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 0x80 | 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  const key = frame.subarray(headerLength, headerLength + 4);
  key.writeUInt32BE((Math.random() * 0x1_0000_0000) >>> 0);
  for (let i = 0; i < length; i++) frame[headerLength + 4 + i] = payload[i]! ^ key[i & 3]!;
  return frame;
}

/**
 * Splits a stream of server frames. Server frames are never masked, so a header is 2, 4 or 10 bytes.
 * Without `wantPayload`, each frame is reported as soon as its header is read and its payload is
 * skipped; with it, frames are reported whole, with their payload.
 */
export class FrameReader {
  /** The start of a frame whose header (or, with wantPayload, whose payload) has not fully arrived. */
  #pending: Buffer | undefined;
  /** Payload bytes of the current frame still to skip. */
  #skip = 0;

  constructor(
    private readonly wantPayload: boolean,
    private readonly onFrame: (opcode: number, payload: Buffer | undefined) => void,
  ) {}

  /** Handles the next bytes of the stream. `chunk` may be reused once this returns: what is kept is copied. */
  push(chunk: Buffer): void {
    let data = chunk;
    let at = 0;
    if (this.#skip > 0) {
      at = Math.min(this.#skip, data.length);
      this.#skip -= at;
    } else if (this.#pending) {
      data = Buffer.concat([this.#pending, data]);
      this.#pending = undefined;
    }
    while (at < data.length) {
      const available = data.length - at;
      if (available < 2) break;
      const short = data[at + 1]! & 0x7f;
      const headerLength = short === 126 ? 4 : short === 127 ? 10 : 2;
      if (available < headerLength) break;
      const length =
        short === 126 ? data.readUInt16BE(at + 2) : short === 127 ? Number(data.readBigUInt64BE(at + 2)) : short;
      const opcode = data[at]! & 0x0f;
      const start = at + headerLength;
      if (this.wantPayload) {
        if (data.length - start < length) break;
        this.onFrame(opcode, data.subarray(start, start + length));
        at = start + length;
      } else {
        this.onFrame(opcode, undefined);
        const here = Math.min(length, data.length - start);
        this.#skip = length - here;
        at = start + here;
      }
    }
    if (at < data.length) this.#pending = Buffer.from(data.subarray(at));
  }
}

/** One read buffer for all clients of a generator process: reads are handled before the next one. */
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);

export interface RawConnection {
  host: string;
  port: number;
  /** Reads the server's frames once the handshake is through. */
  reader: FrameReader;
  /** The server answered 101: what follows is frames. */
  upgraded?: () => void;
  /** The server answered anything else. */
  refused: (error: Error) => void;
}

/**
 * Opens a raw client socket: sends the opening handshake, checks the server's answer, and hands every
 * byte after it to the frame reader. Reads go into one shared buffer (`onread`), so thousands of
 * clients cost no allocation per read.
 */
export function connectRaw({ host, port, reader, upgraded, refused }: RawConnection): Socket {
  let head: Buffer | undefined = Buffer.alloc(0);
  const received = (data: Buffer) => {
    if (!head) return reader.push(data);
    head = Buffer.concat([head, data]);
    const end = head.indexOf('\r\n\r\n');
    if (end === -1) return;
    const status = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
    if (!status.startsWith('HTTP/1.1 101')) return refused(new Error(`handshake refused: ${status}`));
    const rest = head.subarray(end + 4);
    head = undefined;
    upgraded?.();
    if (rest.length > 0) reader.push(rest);
  };
  const socket = connect({
    host,
    port,
    noDelay: true,
    onread: {
      buffer: READ_BUFFER,
      callback: (length) => {
        received(READ_BUFFER.subarray(0, length));
        return true; // keep reading
      },
    },
  });
  socket.write(handshakeRequest(host, port));
  return socket;
}
