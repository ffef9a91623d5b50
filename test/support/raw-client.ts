/**
 * A tiny RFC 6455 client over a raw `node:net` socket, for tests that must see the wire: the handshake
 * is written by hand and frames go through frames.ts, not `ws`.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import {
  decodeFrames,
  encodeFrame,
  Opcode,
  textMessage,
  type EncodeOptions,
  type Frame,
  type FrameJson,
} from './frames.js';
import { parseHead, type HttpHead } from './raw-http.js';
import { within } from './wait.js';

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
    // Errors are ignored above, so a refused connection would never emit 'connect': bounded.
    await within(once(socket, 'connect'), 5000, `a connection to port ${port}`);
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
  async nextMessage(predicate: (message: FrameJson) => boolean, timeoutMs = 3000): Promise<FrameJson> {
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

function describeFrame(frame: Frame): string {
  const text =
    frame.opcode === Opcode.text
      ? frame.payload.toString('utf8').slice(0, 120)
      : frame.payload.toString('hex').slice(0, 40);
  return `op=${frame.opcode} fin=${frame.fin} len=${frame.payload.length} ${text}`;
}
