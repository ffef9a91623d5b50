/**
 * The chat's write path, built for broadcast. Stock `ws` frames every `send()` anew and writes it to
 * the socket at once: one header allocation and one system call per message per member. Here:
 * - each message is framed once (with `ws`'s own `Sender.frame`), however many members receive it;
 *   a broadcast hands the same payload to every member, so a one-entry cache suffices;
 * - each socket is corked at its first write of an event-loop turn and uncorked after the turn's I/O
 *   (setImmediate), so everything it receives in one turn goes out in one `writev`.
 * Frames are written to the socket that `ws` itself writes to; nothing is queued on the `ws` side
 * (compression is off), so its own frames (pong, ping, close) keep their order with ours.
 */
import type { Duplex } from 'node:stream';
import * as wsModule from 'ws';

const TEXT = { fin: true, rsv1: false, opcode: 0x1, mask: false, readOnly: true };
/** The static half of ws's Sender that is used here (@types/ws does not describe it). */
const { Sender } = wsModule as unknown as { Sender: { frame(data: Buffer, options: typeof TEXT): Buffer[] } };
const frame = Sender.frame.bind(Sender);

type Failed = (error: unknown) => void;

export class Outbox {
  readonly #flushed: (frames: number) => void;
  #frames = 0;
  #lastPayload: Buffer | undefined;
  #lastFrame: Buffer | undefined;
  /** The last batch written with writeMany: its frames back to back, and where each one starts. */
  #lastBatch: readonly Buffer[] | undefined;
  #lastBatchFrames: Buffer | undefined;
  #lastBatchOffsets: number[] = [];
  readonly #corked = new Set<Duplex>();

  /** `flushed` hears, once per turn, how many frames the turn wrote (for metrics, without a call per frame). */
  constructor(flushed: (frames: number) => void = () => {}) {
    this.#flushed = flushed;
  }

  /** Whether `socket` has been written to in this turn (its writes are still corked). */
  isCorked(socket: Duplex): boolean {
    return this.#corked.has(socket);
  }

  /** Writes `payload` as one text frame. */
  write(socket: Duplex, payload: Buffer): void {
    if (payload !== this.#lastPayload) {
      this.#lastPayload = payload;
      this.#lastFrame = Buffer.concat(frame(payload, TEXT));
    }
    this.#cork(socket);
    socket.write(this.#lastFrame!);
    this.#frames++;
  }

  /**
   * Writes `payloads` as text frames without copying them (a replay's Buffers are the history's own,
   * shared by every replay: each frame's header, then the payload itself), as fast as the peer reads
   * them: the socket holds one buffer's worth (its highWaterMark, plus a frame) and the rest waits for
   * 'drain'. Calls `done` once all are written; stops without it once `open` is false (the connection
   * is gone). `failed` hears an error thrown after a 'drain'.
   */
  replay(socket: Duplex, payloads: readonly Buffer[], open: () => boolean, done: () => void, failed: Failed): void {
    let next = 0;
    const pump = () => {
      if (!open()) return;
      while (next < payloads.length) {
        this.#cork(socket);
        let room = true;
        for (const part of frame(payloads[next++]!, TEXT)) room = socket.write(part);
        this.#frames++;
        if (!room && next < payloads.length) {
          socket.once('drain', () => {
            try {
              pump();
            } catch (error) {
              failed(error);
            }
          });
          return;
        }
      }
      done();
    };
    pump();
  }

  /**
   * Writes `payloads[from]` onwards as text frames, in one write. A batch handed to many sockets (the
   * room's coalesced notices) is framed once, into one buffer, and each socket gets a view of its part.
   */
  writeMany(socket: Duplex, payloads: readonly Buffer[], from: number): void {
    if (payloads !== this.#lastBatch) {
      this.#lastBatch = payloads;
      const parts: Buffer[] = [];
      this.#lastBatchOffsets = [];
      let offset = 0;
      for (const payload of payloads) {
        this.#lastBatchOffsets.push(offset);
        for (const part of frame(payload, TEXT)) {
          parts.push(part);
          offset += part.length;
        }
      }
      this.#lastBatchFrames = Buffer.concat(parts, offset);
    }
    this.#cork(socket);
    socket.write(this.#lastBatchFrames!.subarray(this.#lastBatchOffsets[from]));
    this.#frames += payloads.length - from;
  }

  #cork(socket: Duplex): void {
    if (this.#corked.has(socket)) return;
    socket.cork();
    this.#corked.add(socket);
    this.#scheduleFlush();
  }

  readonly #scheduleFlush = oncePerTurn(() => {
    // The payload cache would otherwise pin the last message until the next one.
    this.#lastPayload = undefined;
    this.#lastFrame = undefined;
    this.#lastBatch = undefined;
    this.#lastBatchFrames = undefined;
    for (const socket of this.#corked) socket.uncork();
    this.#corked.clear();
    this.#flushed(this.#frames);
    this.#frames = 0;
  });
}

/** `run` after this turn's I/O (setImmediate), once however often it is asked for in the turn. */
export function oncePerTurn(run: () => void): () => void {
  let scheduled = false;
  return () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      run();
    });
  };
}
