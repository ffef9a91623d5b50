/**
 * Flow control of the chat: what decisions.md calls slow consumers, done so that a burst does not cost
 * healthy members their connection.
 *
 * A broadcast queues the same frame on every member's socket. When a member's unsent backlog passes
 * `maxBacklog`, it is *congested*: from then on, every connection whose message is handled is paused
 * (its socket is no longer read) until no member is congested, so the room never accepts chat faster
 * than its members drain it, and memory stays bounded. A member that drains below the bound within
 * `slowConsumerMs` was only behind a burst; one that does not is a slow consumer and is handed to
 * `onSlow` (closed with 1013), which releases the paused senders. A backlog that reaches
 * `HARD_LIMIT_FACTOR × maxBacklog` is refused outright, whatever the clock says.
 *
 * Hand-written because `ws` offers the pieces (bufferedAmount, send callbacks, pause/resume) but no
 * policy across connections.
 */
import type { WebSocket } from 'ws';

/** A backlog this many times the bound is never allowed to grow further. */
export const HARD_LIMIT_FACTOR = 8;

export interface FlowLimits {
  maxBacklog: number;
  slowConsumerMs: number;
}

export class FlowControl {
  /** Congested members, each with the timer that declares it a slow consumer. */
  readonly #congested = new Map<WebSocket, NodeJS.Timeout>();
  /** Senders paused while some member is congested. */
  readonly #paused = new Set<WebSocket>();
  readonly #hardLimit: number;

  constructor(
    private readonly limits: FlowLimits,
    private readonly onSlow: (ws: WebSocket) => void,
  ) {
    this.#hardLimit = limits.maxBacklog * HARD_LIMIT_FACTOR;
  }

  /** Queues a text frame; false (and nothing queued) when the backlog would pass the hard limit. */
  send(ws: WebSocket, frame: Buffer): boolean {
    const backlog = ws.bufferedAmount + frame.length;
    if (backlog > this.#hardLimit) return false;
    if (backlog <= this.limits.maxBacklog) {
      ws.send(frame, { binary: false });
      return true;
    }
    // Over the bound: this frame's callback runs once everything queued before it has been written,
    // which is when the member may have drained.
    ws.send(frame, { binary: false }, () => this.#flushed(ws));
    if (!this.#congested.has(ws)) {
      const timer = setTimeout(() => this.onSlow(ws), this.limits.slowConsumerMs);
      timer.unref();
      this.#congested.set(ws, timer);
    }
    return true;
  }

  /** Call after handling a sender's message: pauses the sender while some member is congested. */
  afterReceive(sender: WebSocket): void {
    if (this.#congested.size === 0 || this.#paused.has(sender)) return;
    sender.pause();
    this.#paused.add(sender);
  }

  /** Call when a connection closes or is being closed. */
  forget(ws: WebSocket): void {
    this.#paused.delete(ws);
    this.#relieve(ws);
  }

  #flushed(ws: WebSocket): void {
    if (ws.bufferedAmount <= this.limits.maxBacklog) this.#relieve(ws);
  }

  #relieve(ws: WebSocket): void {
    const timer = this.#congested.get(ws);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.#congested.delete(ws);
    if (this.#congested.size > 0) return;
    for (const sender of this.#paused) sender.resume();
    this.#paused.clear();
  }
}
