/**
 * A tiny RFC 6455 client over a raw `node:net` socket, for tests that must see the wire: the handshake
 * is written by hand, frames are encoded and decoded here (not by `ws`), so the tests can send frames a
 * real client library never would (unmasked, reserved bits, oversized control frames, ...).
 */
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

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

export interface HttpHead {
  statusLine: string;
  status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Record<string, string>;
}

/** Parses an HTTP response head (everything before the blank line). */
export function parseHead(text: string): HttpHead {
  const [statusLine = '', ...lines] = text.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? NaN);
  return { statusLine, status, headers };
}

export interface HttpExchange extends HttpHead {
  body: string;
  /** Whether the server closed the connection after the response. */
  closedByServer: boolean;
  elapsedMs: number;
}

/**
 * Writes raw request bytes and reads one HTTP response: the head, then the body by Content-Length
 * (or until the server closes). Rejects if nothing complete arrives within `timeoutMs` (a hang).
 */
export async function rawHttp(port: number, requestText: string | Buffer, timeoutMs = 3000): Promise<HttpExchange> {
  const started = Date.now();
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await once(socket, 'connect');
  socket.write(requestText);
  let buffer = Buffer.alloc(0);
  let closed = false;
  try {
    return await new Promise<HttpExchange>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no complete HTTP response within ${timeoutMs} ms; got ${JSON.stringify(buffer.toString('latin1'))}`,
            ),
          ),
        timeoutMs,
      );
      const tryFinish = (final: boolean) => {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) {
          if (final) {
            clearTimeout(timer);
            reject(
              new Error(`connection closed without a response head; got ${JSON.stringify(buffer.toString('latin1'))}`),
            );
          }
          return;
        }
        const head = parseHead(buffer.subarray(0, end).toString('latin1'));
        const bodyBytes = buffer.subarray(end + 4);
        const declared = head.headers['content-length'];
        let body: Buffer | undefined;
        if (head.headers['transfer-encoding']?.toLowerCase() === 'chunked') body = dechunk(bodyBytes);
        else if (declared !== undefined)
          body = bodyBytes.length >= Number(declared) ? bodyBytes.subarray(0, Number(declared)) : undefined;
        else if (final) body = bodyBytes;
        if (body === undefined) return;
        const complete = body;
        // Give the server's FIN a moment to arrive when it was sent with the response.
        const finish = () => {
          clearTimeout(timer);
          resolve({
            ...head,
            body: complete.toString('utf8'),
            closedByServer: closed,
            elapsedMs: Date.now() - started,
          });
        };
        // A keep-alive response will not be followed by a FIN; otherwise give the FIN a moment to arrive.
        if (closed || head.headers.connection?.toLowerCase() === 'keep-alive') finish();
        else {
          const grace = setTimeout(finish, 150);
          socket.once('end', () => {
            clearTimeout(grace);
            closed = true;
            finish();
          });
        }
      };
      socket.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        tryFinish(false);
      });
      socket.on('end', () => {
        closed = true;
        tryFinish(true);
      });
    });
  } finally {
    socket.destroy();
  }
}

/** Decodes a complete chunked body, or returns undefined while the last chunk has not arrived. */
function dechunk(bytes: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', offset);
    if (lineEnd < 0) return undefined;
    const size = parseInt(bytes.subarray(offset, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new Error('bad chunked encoding');
    const start = lineEnd + 2;
    if (size === 0) return bytes.indexOf('\r\n', start) >= 0 ? Buffer.concat(parts) : undefined;
    if (bytes.length < start + size + 2) return undefined;
    parts.push(bytes.subarray(start, start + size));
    offset = start + size + 2;
  }
}

/** Builds a handshake request; `headers` entries override or (with value null) remove the defaults. */
export function handshakeRequest(
  port: number,
  options: { path?: string; key?: string; headers?: Record<string, string | null>; method?: string } = {},
): { text: string; key: string } {
  const key = options.key ?? randomBytes(16).toString('base64');
  const headers: Record<string, string | null> = {
    Host: `127.0.0.1:${port}`,
    Upgrade: 'websocket',
    Connection: 'Upgrade',
    'Sec-WebSocket-Key': key,
    'Sec-WebSocket-Version': '13',
    ...options.headers,
  };
  const lines = Object.entries(headers)
    .filter((entry): entry is [string, string] => entry[1] !== null)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return { text: `${options.method ?? 'GET'} ${options.path ?? '/'} HTTP/1.1\r\n${lines}\r\n`, key };
}

/** A chat message as the server sends it (parsed JSON of a text frame). */
type Json = Record<string, unknown>;

/**
 * A WebSocket client speaking raw frames. Every frame received is kept in `frames` (in order);
 * `next` waits for one matching a predicate.
 */
export class RawClient {
  readonly frames: Frame[] = [];
  /** Set when the server's TCP FIN (or a reset) has been seen. */
  ended = false;
  readonly closed: Promise<void>;
  #buffer: Buffer = Buffer.alloc(0);
  #waiters: { predicate: (frame: Frame) => boolean; resolve: (frame: Frame) => void }[] = [];

  private constructor(
    readonly socket: Socket,
    readonly head: HttpHead,
    readonly key: string,
    rest: Buffer,
  ) {
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('end', () => {
      this.ended = true;
    });
    socket.on('close', () => {
      this.ended = true;
    });
    socket.on('data', (chunk: Buffer) => this.#feed(chunk));
    if (rest.length > 0) this.#feed(rest);
  }

  /** Connects, performs the handshake and checks nothing; read `head` for the server's answer. */
  static async open(
    port: number,
    options: { path?: string; key?: string; headers?: Record<string, string | null>; trailing?: Buffer } = {},
  ): Promise<RawClient> {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    socket.on('error', () => {});
    await once(socket, 'connect');
    const { text, key } = handshakeRequest(port, options);
    // `trailing` bytes (frames) go in the same write as the handshake, as a pipelining client would send them.
    socket.write(options.trailing ? Buffer.concat([Buffer.from(text, 'latin1'), options.trailing]) : text);
    let buffer = Buffer.alloc(0);
    const { head, rest } = await new Promise<{ head: HttpHead; rest: Buffer }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('handshake response timed out')), 3000);
      const onData = (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        clearTimeout(timer);
        socket.off('data', onData);
        socket.off('close', onClose);
        resolve({ head: parseHead(buffer.subarray(0, end).toString('latin1')), rest: buffer.subarray(end + 4) });
      };
      const onClose = () => {
        clearTimeout(timer);
        reject(new Error(`closed during handshake; got ${JSON.stringify(buffer.toString('latin1'))}`));
      };
      socket.on('data', onData);
      socket.once('close', onClose);
    });
    return new RawClient(socket, head, key, rest);
  }

  /** Opens and waits for the welcome `system` message (asserting a 101 first). */
  static async connect(port: number, options: { path?: string } = {}): Promise<RawClient> {
    const client = await RawClient.open(port, options);
    if (client.head.status !== 101) throw new Error(`handshake refused: ${client.head.statusLine}`);
    await client.nextMessage((m) => m.type === 'system');
    return client;
  }

  #feed(chunk: Buffer): void {
    this.#buffer = this.#buffer.length === 0 ? chunk : Buffer.concat([this.#buffer, chunk]);
    const { frames, rest } = decodeFrames(this.#buffer);
    this.#buffer = rest;
    for (const frame of frames) {
      this.frames.push(frame);
      this.#waiters = this.#waiters.filter((waiter) => {
        if (!waiter.predicate(frame)) return true;
        waiter.resolve(frame);
        return false;
      });
    }
  }

  /** Writes raw bytes (one or more frames, or a part of one). */
  write(bytes: Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(bytes, (error) => (error ? reject(error) : resolve())));
  }

  send(opcode: number, payload: Buffer | string = Buffer.alloc(0), options: EncodeOptions = {}): Promise<void> {
    return this.write(encodeFrame(opcode, payload, options));
  }

  sendJson(value: unknown): Promise<void> {
    return this.send(Opcode.text, JSON.stringify(value));
  }

  /** The first frame (already received or coming) that matches; it stays in `frames`. */
  next(predicate: (frame: Frame) => boolean, timeoutMs = 3000): Promise<Frame> {
    const seen = this.frames.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`timed out waiting for a frame; got ${this.frames.map(describeFrame).join(' | ') || 'none'}`),
          ),
        timeoutMs,
      );
      this.#waiters.push({
        predicate,
        resolve: (frame) => {
          clearTimeout(timer);
          resolve(frame);
        },
      });
    });
  }

  /** The parsed JSON of the first text frame whose message matches. */
  async nextMessage(predicate: (message: Json) => boolean, timeoutMs = 3000): Promise<Json> {
    const frame = await this.next((f) => f.opcode === Opcode.text && predicate(textMessage(f)), timeoutMs);
    return textMessage(frame);
  }

  /** The server's close frame: its code (or undefined when it has none) and reason. */
  async closeFrame(timeoutMs = 3000): Promise<{ code: number | undefined; reason: string; frame: Frame }> {
    const frame = await this.next((f) => f.opcode === Opcode.close, timeoutMs);
    return {
      code: frame.payload.length >= 2 ? frame.payload.readUInt16BE(0) : undefined,
      reason: frame.payload.subarray(2).toString('utf8'),
      frame,
    };
  }

  /** Waits until the server has closed the TCP connection. */
  async serverClosed(timeoutMs = 3000): Promise<void> {
    if (this.ended) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('server did not close the connection')), timeoutMs);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.socket.once('end', done);
      this.socket.once('close', done);
    });
  }

  destroy(): void {
    this.socket.destroy();
  }
}

export function textMessage(frame: Frame): Json {
  try {
    return JSON.parse(frame.payload.toString('utf8')) as Json;
  } catch {
    return {};
  }
}

function describeFrame(frame: Frame): string {
  const text =
    frame.opcode === Opcode.text
      ? frame.payload.toString('utf8').slice(0, 120)
      : frame.payload.toString('hex').slice(0, 40);
  return `op=${frame.opcode} fin=${frame.fin} len=${frame.payload.length} ${text}`;
}

/** A close frame payload: 2-byte code and optional reason. */
export function closePayload(code: number, reason = ''): Buffer {
  const buffer = Buffer.alloc(2 + Buffer.byteLength(reason));
  buffer.writeUInt16BE(code, 0);
  buffer.write(reason, 2, 'utf8');
  return buffer;
}
