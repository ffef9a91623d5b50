/**
 * The open Server-Sent Events streams of the change feed, and how a change reaches them: once per
 * change, whatever their number. The log tells of a write (users/changes.ts `subscribe`); the fan-out
 * waits for the next turn of the event loop (setImmediate), so it runs after the write's reply went
 * out and never in the write's path; it reads the new changes once, makes each one's frame once (one
 * Buffer shared by every stream), and writes one buffer per stream: all the new frames together for a
 * stream without a filter, its own selection for one with. Streams are written in slices of
 * SLICE_STREAMS per turn, so requests arriving meanwhile are served between slices.
 *
 * A stream that starts behind the fan-out (a `since` in the past) reads the log at its own pace until it
 * reaches it, and only then joins it: nothing twice, nothing skipped. A stream whose unsent bytes pass
 * CHANGES_MAX_BACKLOG is closed, as the chat closes a slow member: the client resumes with its last id.
 * Written here: neither Fastify nor a plugin for it fans one change out to many streams this way.
 */
import type { ServerResponse } from 'node:http';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { FastifyBaseLogger } from 'fastify';
import { passes, type Change, type ChangeFilter, type ChangeLog } from '../users/changes.js';
import { changeFrame, HEARTBEAT_FRAME, HEARTBEAT_MS, resetFrame, RETRY_FRAME } from './change-json.js';

/** Changes read at once, by the fan-out or by a stream catching up. */
const READ_BATCH = 1000;
/**
 * Streams written per turn of the event loop during a fan-out. A write to a socket costs about 10 µs
 * (the writev system call, loopback delivery included: BENCHMARKS.md "Change feed"), so a slice holds
 * a request that arrives meanwhile for about 0.3 ms.
 */
const SLICE_STREAMS = 32;
/**
 * A fan-out starts at most every FAN_OUT_MS_PER_STREAM × the open streams, at least every
 * FAN_OUT_MIN_MS and at most every FAN_OUT_MAX_MS: the changes of the meantime go out together, one
 * write per stream. What a fan-out costs is its writes, one per stream, whatever the changes; at a
 * write a millisecond and 1 000 streams, a fan-out per write was a million socket writes a second
 * (writes then waited seconds), every 25 ms it is 40 000 (about 40 % of a CPU, and a write's p50 ×10:
 * BENCHMARKS.md); every 100 ms, 10 000. A change reaches a stream within FAN_OUT_MAX_MS plus a fan-out.
 */
const FAN_OUT_MIN_MS = 25;
const FAN_OUT_MAX_MS = 100;
const FAN_OUT_MS_PER_STREAM = 0.1;
/** How soon a fan-out whose read of the log failed (the database away) tries again. */
const READ_RETRY_MS = 1_000;

/**
 * Frames written to every live stream: the bytes, and the same as one chunk of HTTP/1.1's chunked
 * coding (RFC 9112 §7.1: the size in hex, CRLF, the bytes, CRLF). Framed here, once, rather than by
 * each response: a response's write frames its bytes as four socket writes, and at 1 000 streams a
 * fan-out's garbage (and the GC pauses it brought: BENCHMARKS.md "Change feed") grew with them.
 */
interface Shared {
  readonly body: Buffer;
  readonly chunk: Buffer;
}

const CRLF = Buffer.from('\r\n');
const shared = (body: Buffer): Shared => ({
  body,
  chunk: Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`, 'latin1'), body, CRLF]),
});

interface Stream {
  readonly res: ServerResponse;
  readonly filter: ChangeFilter | undefined;
  /** The last change written to it (or looked at, and filtered out). */
  pos: number;
  closed: boolean;
}

export interface ChangeStreamsOptions {
  maxBacklog: number;
  logger: FastifyBaseLogger;
  heartbeatMs?: number;
}

export class ChangeStreams {
  /** Streams at the fan-out's position: each change after it reaches them from the fan-out. */
  readonly #live = new Set<Stream>();
  /** Every open stream, live or catching up. */
  readonly #all = new Set<Stream>();
  /** The last change the fan-out has handed out; undefined until the first stream. */
  #head: number | undefined;
  #pending = false;
  #running = false;
  #closed = false;
  #unsubscribe: (() => void) | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #started: Promise<void> | undefined;
  /** When the last fan-out started (performance.now()). */
  #lastFanOut = -Infinity;
  #runner: (() => void) | undefined;

  constructor(
    private readonly log: ChangeLog,
    private readonly options: ChangeStreamsOptions,
  ) {}

  /** How many streams are open. */
  get size(): number {
    return this.#all.size;
  }

  /**
   * Serves `res` (its head already written) from `since` (a sequence number of this epoch, or `reset` to
   * say so first and follow from `head`).
   */
  async open(res: ServerResponse, since: number | { reset: number }, filter: ChangeFilter | undefined): Promise<void> {
    if (this.#closed) return void res.end(RETRY_FRAME);
    await (this.#started ??= this.#start());
    const stream: Stream = { res, filter, pos: 0, closed: false };
    this.#all.add(stream);
    res.once('close', () => this.#forget(stream));
    res.write(RETRY_FRAME);
    if (typeof since === 'number') stream.pos = since;
    else {
      stream.pos = since.reset;
      this.#write(stream, resetFrame(this.log.epoch, since.reset));
    }
    try {
      await this.#catchUp(stream);
    } catch (error) {
      // The log cannot be read (the database away): end the stream, its client resumes from its last
      // id; kept open, it would get heartbeats and never a change (it is not live yet).
      this.options.logger.warn({ err: error }, 'change feed: a stream could not catch up; it is ended');
      this.#forget(stream);
      res.end();
    }
  }

  /** Ends every stream (shutdown): their clients reconnect elsewhere with their last id. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#heartbeat);
    this.#unsubscribe?.();
    for (const stream of this.#all) {
      // A fan-out that is between two slices must not write to it after its end.
      stream.closed = true;
      stream.res.end();
    }
    this.#all.clear();
    this.#live.clear();
  }

  async #start(): Promise<void> {
    this.#head = await this.log.head();
    this.#unsubscribe = this.log.subscribe(() => this.#schedule());
    const every = this.options.heartbeatMs ?? HEARTBEAT_MS;
    this.#heartbeat = setInterval(() => {
      for (const stream of this.#all) this.#write(stream, HEARTBEAT_FRAME);
    }, every).unref();
  }

  /** Reads the log for `stream` until it reaches the fan-out, then hands it over. */
  async #catchUp(stream: Stream): Promise<void> {
    while (!stream.closed && !this.#closed) {
      if (stream.pos >= this.#head!) {
        this.#live.add(stream);
        return;
      }
      const read = await this.log.read(stream.pos, READ_BATCH, stream.filter);
      if (stream.closed) return;
      if ('reset' in read) {
        stream.pos = read.head;
        this.#write(stream, resetFrame(this.log.epoch, read.head));
        continue;
      }
      if (read.changes.length > 0) this.#write(stream, Buffer.concat(read.changes.map((c) => this.#frame(c))));
      stream.pos = read.next;
    }
  }

  #schedule(): void {
    if (this.#pending || this.#closed) return;
    this.#pending = true;
    const run = () => {
      this.#pending = false;
      if (this.#running) return void (this.#pending = true);
      this.#lastFanOut = performance.now();
      void this.#fanOut().finally(() => {
        if (this.#pending) this.#later();
      });
    };
    this.#runner = run;
    this.#later();
  }

  /** Runs the scheduled fan-out on the next turn, or once the interval (FAN_OUT_MIN_MS to _MAX_MS) has passed since the last. */
  #later(): void {
    const every = Math.min(FAN_OUT_MAX_MS, Math.max(FAN_OUT_MIN_MS, this.#live.size * FAN_OUT_MS_PER_STREAM));
    const wait = this.#lastFanOut + every - performance.now();
    if (wait > 0) setTimeout(this.#runner!, wait);
    else setImmediate(this.#runner!);
  }

  /** Hands the changes after the fan-out's position to the live streams. */
  async #fanOut(): Promise<void> {
    this.#running = true;
    try {
      for (;;) {
        const from = this.#head!;
        const read = await this.log.read(from, READ_BATCH);
        if (this.#closed) return;
        if ('reset' in read) {
          // The log dropped changes the fan-out had not handed out yet (it fell CHANGES_MAX behind).
          this.#head = read.head;
          for (const stream of this.#live) {
            stream.pos = read.head;
            this.#write(stream, resetFrame(this.log.epoch, read.head));
          }
          continue;
        }
        if (read.next === from) return;
        this.#head = read.next;
        await this.#hand(read.changes, from, read.next);
        // What came meanwhile waits for the next fan-out (#schedule), unless this one read a full batch.
        if (read.changes.length < READ_BATCH) return;
      }
    } catch (error) {
      this.options.logger.warn({ err: error }, 'change feed: reading the log failed; trying again shortly');
      // The log tells of a change once: without this retry, what it told of waits for the next write.
      setTimeout(() => this.#schedule(), READ_RETRY_MS).unref();
    } finally {
      this.#running = false;
    }
  }

  /** Writes `changes` (after `from`, up to `next`) to the streams live now, a slice per turn. */
  async #hand(changes: readonly Change[], from: number, next: number): Promise<void> {
    const frames = changes.map((change) => this.#frame(change));
    let all: Shared | undefined;
    let written = 0;
    for (const stream of [...this.#live]) {
      if (stream.closed) continue;
      if (stream.pos === from && stream.filter === undefined) {
        if (frames.length > 0) this.#writeShared(stream, (all ??= shared(Buffer.concat(frames))));
      } else {
        // A filter, or a stream that read past `from` itself while catching up: only what it lacks.
        const own = frames.filter(
          (_, index) => changes[index]!.seq > stream.pos && passes(changes[index]!, stream.filter),
        );
        if (own.length > 0) this.#write(stream, own.length === 1 ? own[0]! : Buffer.concat(own));
      }
      if (stream.pos < next) stream.pos = next;
      if (++written % SLICE_STREAMS === 0) await nextTurn();
    }
  }

  /** The frame of a change; the same change read twice (a catch-up and the fan-out) is one object in memory. */
  #frame(change: Change): Buffer {
    return changeFrame(this.log.epoch, change);
  }

  /**
   * Writes what every live stream gets: on a stream in the chunked coding (HTTP/1.1) whose head is
   * out, the one framed chunk straight to its socket (one socket write, nothing allocated per stream);
   * otherwise through the response, which frames it.
   */
  #writeShared(stream: Stream, bytes: Shared): void {
    const { res } = stream;
    const socket = res.socket;
    if (!res.chunkedEncoding || !res.headersSent || socket === null) return this.#write(stream, bytes.body);
    if (this.#fits(stream, bytes.body.length)) socket.write(bytes.chunk);
  }

  /** Writes, or closes a stream whose client does not read (past CHANGES_MAX_BACKLOG). */
  #write(stream: Stream, bytes: Buffer): void {
    if (this.#fits(stream, bytes.length)) stream.res.write(bytes);
  }

  /** Whether `length` more bytes keep `stream` within CHANGES_MAX_BACKLOG; if not, it is closed. */
  #fits(stream: Stream, length: number): boolean {
    if (stream.closed) return false;
    const { res } = stream;
    const unsent = res.writableLength + (res.socket?.writableLength ?? 0);
    if (unsent + length <= this.options.maxBacklog) return true;
    this.options.logger.warn({ unsent }, 'change feed: a stream that does not read is closed (CHANGES_MAX_BACKLOG)');
    this.#forget(stream);
    res.destroy();
    return false;
  }

  #forget(stream: Stream): void {
    stream.closed = true;
    this.#all.delete(stream);
    this.#live.delete(stream);
  }
}
