/**
 * Benchmark child: readers of the change feed's Server-Sent Events streams (bench/sections/changes.ts).
 * Each stream is checked as its bytes come, kept as counts, not arrays: its changes' sequence numbers
 * must follow one another from where it started, none missing, none twice. The section runs two of
 * these children, so that a thousand streams' reading is not one event loop's.
 *
 * Reading is kept cheap on purpose (the readers share the load CPU with the writer): the chunks stay
 * Buffers, and only the `id:` lines are looked at, found with Buffer#indexOf; a line cut between two
 * chunks is carried over (its few bytes only).
 */
import { request, type IncomingMessage } from 'node:http';
import { answerParent } from '../ipc.js';

export type ReadersCommand =
  | { cmd: 'open'; url: string; streams: number; since: string }
  | { cmd: 'await'; last: number; timeoutMs: number }
  | { cmd: 'close' };

export interface ReadersResult {
  streams: number;
  /** Streams that saw exactly every change up to `last`, in order, once. */
  whole: number;
  /** The fewest changes any stream received. */
  fewest: number;
}

/** An id line starts after a line break: `\nid: <epoch>.<seq>\n`. */
const ID = Buffer.from('\nid: ');
const NL = 10;
const DOT = 46;

class StreamCheck {
  count = 0;
  bad = false;
  #carry: Buffer | undefined = Buffer.from('\n');

  constructor(
    public last: number,
    readonly response: IncomingMessage,
  ) {
    response.on('data', (chunk: Buffer) => this.#feed(chunk));
  }

  #feed(chunk: Buffer): void {
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
    this.count++;
  }
}

let streams: StreamCheck[] = [];

function open(url: string, since: number): Promise<StreamCheck> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false, headers: { accept: 'text/event-stream' } });
    req.on('error', reject);
    req.on('response', (response) => {
      if (response.statusCode !== 200) reject(new Error(`a stream was answered ${response.statusCode}`));
      else resolve(new StreamCheck(since, response));
    });
    req.end();
  });
}

async function handle(command: ReadersCommand): Promise<ReadersResult | number> {
  switch (command.cmd) {
    case 'open': {
      const since = Number(command.since.slice(command.since.lastIndexOf('.') + 1));
      for (let i = 0; i < command.streams; i++) streams.push(await open(command.url, since));
      return streams.length;
    }
    case 'await': {
      const deadline = Date.now() + command.timeoutMs;
      while (Date.now() < deadline && streams.some((stream) => stream.last < command.last && !stream.bad))
        await new Promise((resolve) => setTimeout(resolve, 100));
      return {
        streams: streams.length,
        whole: streams.filter((stream) => !stream.bad && stream.last === command.last).length,
        fewest: Math.min(...streams.map((stream) => stream.count)),
      };
    }
    case 'close':
      for (const stream of streams) stream.response.destroy();
      streams = [];
      return 0;
  }
}

answerParent<ReadersCommand>(handle);
