/**
 * Benchmark child: readers of the change feed's Server-Sent Events streams (bench/sections/changes.ts).
 * The section runs two of these children, so that a thousand streams' reading is not one event loop's.
 *
 * Every stream of a round starts from the same cursor and has no filter, so each must receive the same
 * bytes: the same frames, in the same order, whatever the chunks they come in (only the heartbeat
 * comments fall anywhere; they are taken out). So one stream per child, the reference, is checked frame
 * by frame: its sequence numbers must follow one another from where it started, none missing, none
 * twice. Every stream, the reference too, keeps only its length and a CRC-32 of its bytes; a stream is
 * whole when both equal the reference's and the reference is whole.
 *
 * Reading is kept cheap on purpose (the readers share the load CPU with the writer): every socket reads
 * into one shared buffer (net's `onread`) and the chunked coding is taken off here; the reference looks
 * at the `id:` lines only (Buffer#indexOf, a line cut between two chunks carried over); every stream
 * makes one zlib.crc32 call a chunk (native, some GB/s). Through Node's HTTP client, which gives every
 * read a buffer of its own, the readers filled the load CPU (checking only the reference frame by frame
 * did not change that; reading the sockets this way took it to about 60 %), and readers that fell
 * behind were closed at CHANGES_MAX_BACKLOG.
 */
import { connect, type Socket } from 'node:net';
import { crc32 } from 'node:zlib';
import { answerParent } from '../ipc.js';

export type ReadersCommand =
  | { cmd: 'open'; url: string; streams: number; since: string }
  | { cmd: 'await'; last: number; timeoutMs: number }
  | { cmd: 'close' };

export interface ReadersResult {
  streams: number;
  /** Streams that saw exactly every change up to `last`, in order, once. */
  whole: number;
}

/** A heartbeat comment (src/http/change-json.ts): written between two writes of frames, never inside one. */
const HEARTBEAT = Buffer.from(': heartbeat\n\n');
const EMPTY = Buffer.alloc(0);

/** A stream's bytes without the heartbeats, as a length and a CRC-32. */
class Digest {
  #length = 0;
  #crc = 0;
  /** The chunk's last bytes, that may start a heartbeat the next chunk ends. */
  #tail = EMPTY;

  feed(chunk: Buffer): void {
    let from = 0;
    if (this.#tail.length > 0) {
      const edge = Buffer.concat([this.#tail, chunk.subarray(0, HEARTBEAT.length)]);
      const at = edge.indexOf(HEARTBEAT);
      if (at >= 0 && at < this.#tail.length) {
        this.#add(this.#tail.subarray(0, at));
        from = at + HEARTBEAT.length - this.#tail.length;
      } else this.#add(this.#tail);
      this.#tail = EMPTY;
    }
    for (let at = chunk.indexOf(HEARTBEAT, from); at >= 0; at = chunk.indexOf(HEARTBEAT, from)) {
      this.#add(chunk.subarray(from, at));
      from = at + HEARTBEAT.length;
    }
    const keep = Math.max(from, chunk.length - (HEARTBEAT.length - 1));
    this.#add(chunk.subarray(from, keep));
    if (keep < chunk.length) this.#tail = Buffer.from(chunk.subarray(keep));
  }

  /** How many bytes came so far. */
  get length(): number {
    return this.#length + this.#tail.length;
  }

  /** The length and CRC of what came so far. */
  get value(): { length: number; crc: number } {
    return { length: this.length, crc: crc32(this.#tail, this.#crc) };
  }

  #add(bytes: Buffer): void {
    this.#length += bytes.length;
    this.#crc = crc32(bytes, this.#crc);
  }
}

/** An id line starts after a line break: `\nid: <epoch>.<seq>\n`. */
const ID = Buffer.from('\nid: ');
const NL = 10;
const DOT = 46;

/** The reference stream's frames: their sequence numbers, checked one by one. */
class FrameCheck {
  bad = false;
  #carry: Buffer | undefined = Buffer.from('\n');

  constructor(public last: number) {}

  feed(chunk: Buffer): void {
    if (this.#carry) {
      // The carried bytes are "\n" plus at most a line's start: the next 128 bytes complete it
      // (an id line is shorter).
      const head = Buffer.concat([this.#carry, chunk.subarray(0, 128)]);
      this.#carry = undefined;
      if (head.indexOf(ID) === 0) {
        const end = head.indexOf(NL, ID.length);
        if (end < 0) return void (this.#carry = head); // a tiny chunk: keep collecting
        this.#seq(head, end);
      }
    }
    let at = chunk.indexOf(ID);
    while (at >= 0) {
      const end = chunk.indexOf(NL, at + ID.length);
      if (end < 0) return void (this.#carry = Buffer.from(chunk.subarray(at)));
      this.#seq(chunk, end);
      at = chunk.indexOf(ID, end);
    }
    // The chunk may end in an id line's first bytes: keep "\n" and them for the next chunk.
    const lastBreak = chunk.lastIndexOf(NL);
    if (lastBreak >= 0 && chunk.length - lastBreak <= ID.length)
      if (ID.subarray(0, chunk.length - lastBreak).equals(chunk.subarray(lastBreak)))
        this.#carry = Buffer.from(chunk.subarray(lastBreak));
  }

  /** Reads the sequence number that ends at `end` (after the cursor's dot). */
  #seq(bytes: Buffer, end: number): void {
    const dot = bytes.lastIndexOf(DOT, end);
    let seq = 0;
    for (let index = dot + 1; index < end; index++) seq = seq * 10 + bytes[index]! - 48;
    if (seq !== this.last + 1) this.bad = true;
    this.last = seq;
  }
}

/**
 * The chunked transfer coding taken off a response body (RFC 9112 §7.1): the chunks' data is handed
 * on as it comes, the size lines skipped. (Written here: the readers take the bytes from the socket
 * themselves, so that no read allocates; Node's HTTP client gives every read a buffer of its own.)
 */
class Dechunk {
  #left = 0;
  #size = 0;
  /** Whether the size line's digits are over (a chunk extension or the CR follows). */
  #sized = false;
  #state: 'size' | 'data' | 'crlf' = 'size';
  #crlf = 0;

  constructor(private readonly data: (bytes: Buffer) => void) {}

  feed(bytes: Buffer): void {
    let at = 0;
    while (at < bytes.length) {
      if (this.#state === 'data') {
        const take = Math.min(this.#left, bytes.length - at);
        if (take > 0) this.data(bytes.subarray(at, at + take));
        at += take;
        this.#left -= take;
        if (this.#left === 0) [this.#state, this.#crlf] = ['crlf', 2];
      } else if (this.#state === 'crlf') {
        at++;
        if (--this.#crlf === 0) this.#state = 'size';
      } else {
        const byte = bytes[at++]!;
        if (byte === NL) {
          [this.#state, this.#left] = ['data', this.#size];
          [this.#size, this.#sized] = [0, false];
        } else if (!this.#sized) {
          const digit = HEX.indexOf(byte | 0x20);
          if (digit >= 0) this.#size = this.#size * 16 + digit;
          else this.#sized = true;
        }
      }
    }
  }
}

const HEX = Buffer.from('0123456789abcdef');
const HEAD_END = Buffer.from('\r\n\r\n');
/** The one buffer every socket of this child reads into (net's `onread`): a read allocates nothing. */
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);

class Stream {
  readonly digest = new Digest();
  readonly #body: Dechunk;
  /** The response head's bytes while it is incomplete; undefined once read. */
  #head: Buffer | undefined = EMPTY;

  constructor(
    readonly socket: Socket,
    readonly frames: FrameCheck | undefined,
    private readonly opened: (status: string) => void,
  ) {
    this.#body = new Dechunk((bytes) => {
      this.digest.feed(bytes);
      frames?.feed(bytes);
    });
  }

  /** Bytes read from the socket (in READ_BUFFER: used before this returns). */
  read(bytes: Buffer): void {
    if (this.#head !== undefined) {
      const head = Buffer.concat([this.#head, bytes]);
      const end = head.indexOf(HEAD_END);
      if (end < 0) return void (this.#head = head);
      this.#head = undefined;
      this.opened(head.subarray(0, head.indexOf('\r\n')).toString('latin1'));
      bytes = head.subarray(end + HEAD_END.length);
    }
    this.#body.feed(bytes);
  }
}

let streams: Stream[] = [];

function open(url: string, frames: FrameCheck | undefined): Promise<Stream> {
  const { hostname, port, pathname, search } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: hostname,
      port: Number(port),
      onread: {
        buffer: READ_BUFFER,
        callback: (size) => {
          stream.read(READ_BUFFER.subarray(0, size));
          return true;
        },
      },
    });
    const stream: Stream = new Stream(socket, frames, (status) => {
      if (/^HTTP\/1\.1 200 /.test(status)) resolve(stream);
      else reject(new Error(`a stream was answered ${status}`));
    });
    socket.on('error', reject);
    socket.write(`GET ${pathname}${search} HTTP/1.1\r\nhost: ${hostname}:${port}\r\naccept: text/event-stream\r\n\r\n`);
  });
}

async function handle(command: ReadersCommand): Promise<ReadersResult | number> {
  switch (command.cmd) {
    case 'open': {
      const since = Number(command.since.slice(command.since.lastIndexOf('.') + 1));
      for (let i = 0; i < command.streams; i++)
        streams.push(await open(command.url, i === 0 ? new FrameCheck(since) : undefined));
      return streams.length;
    }
    case 'await': {
      const deadline = Date.now() + command.timeoutMs;
      const pause = () => new Promise((resolve) => setTimeout(resolve, 100));
      const reference = streams[0]!;
      const frames = reference.frames!;
      while (Date.now() < deadline && frames.last < command.last && !frames.bad) await pause();
      const expected = reference.digest.value;
      const same = (stream: Stream) => {
        const { length, crc } = stream.digest.value;
        return length === expected.length && crc === expected.crc;
      };
      // The others may still be reading what the reference has read.
      while (Date.now() < deadline && streams.some((stream) => stream.digest.length < expected.length)) await pause();
      const whole = !frames.bad && frames.last === command.last;
      return { streams: streams.length, whole: whole ? streams.filter(same).length : 0 };
    }
    case 'close':
      for (const stream of streams) stream.socket.destroy();
      streams = [];
      return 0;
  }
}

answerParent<ReadersCommand>(handle);
