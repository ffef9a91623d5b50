/**
 * One chat connection: a member of the room (what the room sends it, written through the outbox), the
 * messages it sends (its client's message budget, then the room), its heartbeat, its credential's
 * expiry, and how Roster ends it (a close frame, then a grace period). The server (ws-server.ts) admits
 * connections and runs their lifecycle; the room calls the connection through `Member`.
 */
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import type { Principal } from '../edge/authenticator.js';
import type { ChatMetrics } from '../ops/metrics.js';
import type { HistoryRequest } from './history.js';
import type { MessageBudget } from './message-budget.js';
import type { Outbox } from './outbox.js';
import type { ChatRoom, Member } from './room.js';

/** Close codes of RFC 6455 that Roster sends itself. */
export const CloseCode = {
  goingAway: 1001,
  unsupportedData: 1003,
  policyViolation: 1008,
  internalError: 1011,
  tryAgainLater: 1013,
} as const;

/**
 * How long a close handshake that Roster starts (binary frame, slow consumer, protocol error) may take
 * before the socket is destroyed. ws waits 30 s; a peer that misbehaved does not deserve that long.
 */
const CLOSE_GRACE_MS = 2_000;

/** setTimeout's longest delay (about 24.8 days); a later expiry is waited for in several steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A client (its principal, else its address): its open connections, and their common message budget. */
export interface Client {
  readonly key: string;
  open: number;
  readonly budget: MessageBudget | undefined;
}

/** An error no handler expected: logged, counted, and `end` closes what it concerns (only that). */
export type Unexpected = (error: unknown, what: string, end: () => void) => void;

/** What every connection of one server shares. */
export interface ConnectionContext {
  readonly room: ChatRoom;
  readonly outbox: Outbox;
  readonly metrics: ChatMetrics;
  readonly log: Logger;
  /** WS_MAX_BACKLOG: unsent bytes past which a member is a slow consumer. */
  readonly maxBacklog: number;
  readonly unexpected: Unexpected;
  /** The connection has closed and left the room: the server forgets it. */
  closed(connection: ChatConnection, code: number): void;
}

/** `handler`, guarded: what it throws is `unexpected`, and `end` (given its arguments) closes what it concerns. */
export function guard<A extends unknown[]>(
  unexpected: Unexpected,
  what: string,
  end: (args: NoInfer<A>) => void,
  handler: (...args: A) => void,
) {
  return (...args: A): void => {
    try {
      handler(...args);
    } catch (error) {
      unexpected(error, what, () => end(args));
    }
  };
}

export class ChatConnection implements Member {
  /** The connection's random, unguessable identifier: the `from` of its chat messages. */
  readonly id = randomUUID();
  readonly name: string | undefined;
  /** Whether the peer answered the last protocol ping. */
  #alive = true;
  /** Set once Roster has started closing the connection: destroys it if the close handshake stalls. */
  #graceTimer: NodeJS.Timeout | undefined;
  /** Closes the connection (1008) when the credential it joined with expires (a token's exp). */
  #expiryTimer: NodeJS.Timeout | undefined;

  /** `socket` is the one ws writes to; the outbox writes chat frames to it too (outbox.ts). */
  constructor(
    readonly ws: WebSocket,
    private readonly socket: Duplex,
    /** What it shares with the other connections of its client (clientKey). */
    readonly client: Client,
    private readonly context: ConnectionContext,
    principal?: Principal,
  ) {
    this.name = principal?.name;
  }

  /** Listens to the socket and joins the room (with the history asked for); closes at the credential's expiry. */
  open(asked: HistoryRequest | undefined, expiresAt: number | undefined): void {
    const { ws, context } = this;
    const internal = () => this.close(CloseCode.internalError, 'Internal error');
    ws.on('pong', () => {
      this.#alive = true;
    });
    ws.on(
      'message',
      guard(context.unexpected, 'message', internal, (data: Buffer, isBinary: boolean) =>
        this.#received(data, isBinary),
      ),
    );
    // A protocol error (1002, 1007, 1009), for which ws has already sent the matching close frame,
    // or a socket error (reset), after which there is nobody to tell.
    ws.on('error', (error) => {
      context.log.debug({ err: error, id: this.id }, 'chat connection error');
      this.close();
    });
    ws.on(
      'close',
      guard(
        context.unexpected,
        'close',
        () => {},
        (code: number) => this.#closed(code),
      ),
    );
    context.room.join(this, asked);
    context.metrics.joined();
    if (expiresAt !== undefined) this.#closeAtExpiry(expiresAt);
  }

  deliver(payload: Buffer): void {
    if (this.#writable()) this.context.outbox.write(this.socket, payload);
  }

  deliverMany(payloads: readonly Buffer[], from: number): void {
    if (this.#writable()) this.context.outbox.writeMany(this.socket, payloads, from);
  }

  replay(payloads: readonly Buffer[], done: () => void): void {
    this.context.outbox.replay(
      this.socket,
      payloads,
      () => this.ws.readyState === WebSocket.OPEN,
      done,
      (error) => this.context.unexpected(error, 'replay', () => this.close(CloseCode.internalError, 'Internal error')),
    );
  }

  /** The room gives up on it: closed as a slow consumer. */
  drop(): void {
    this.context.log.warn({ id: this.id, backlog: this.ws.bufferedAmount }, 'closing slow chat consumer');
    this.context.metrics.slowConsumerDropped();
    this.close(CloseCode.tryAgainLater, 'Too slow: unsent messages over the limit');
  }

  /** The heartbeat (docs/decisions.md): a peer that did not answer the last ping is cut off, the others pinged. */
  heartbeat(): void {
    if (!this.#alive) return this.ws.terminate(); // fires 'close', which counts the peer out of the room
    this.#alive = false;
    this.ws.ping();
  }

  /**
   * Ends a connection Roster gives up on: it leaves the room at once (the others hear user_leave now,
   * not when the peer gets round to answering), gets the close frame when a code is given, and is
   * destroyed if the close handshake has not finished within CLOSE_GRACE_MS.
   */
  close(code?: number, reason?: string): void {
    if (this.#graceTimer) return; // already closing
    // After the current broadcast, if one is under way: the others then hear user_leave after the
    // message being delivered, not in the middle of it. Until then deliver() skips the closing socket.
    queueMicrotask(() => this.#leave());
    if (code !== undefined) this.ws.close(code, reason);
    this.#graceTimer = setTimeout(() => this.ws.terminate(), CLOSE_GRACE_MS);
    this.#graceTimer.unref();
  }

  #writable(): boolean {
    const { ws } = this;
    if (ws.readyState !== WebSocket.OPEN) return false;
    // A slow consumer (docs/decisions.md): closed once the backlog it had before this turn passes the
    // bound, so its memory stays within the bound plus one turn's messages, and nobody else waits
    // for it. (What this turn wrote is still corked, unsent by design, so it does not count.)
    if (!this.context.outbox.isCorked(this.socket) && ws.bufferedAmount > this.context.maxBacklog) {
      this.drop();
      return false;
    }
    return true;
  }

  #received(data: Buffer, isBinary: boolean): void {
    if (this.ws.readyState !== WebSocket.OPEN) return; // closing: whatever it still sends is not chat
    if (isBinary) return this.close(CloseCode.unsupportedData, 'Binary messages are not supported');
    const { room, metrics } = this.context;
    metrics.messageIn();
    const { budget } = this.client;
    if (budget) {
      const verdict = budget.take(Date.now());
      if (verdict === 'close') return this.close(CloseCode.policyViolation, 'Too many messages');
      if (verdict === 'notify')
        room.notify(
          this,
          `Slow down: at most ${budget.max} messages per ${budget.windowMs / 1000} s; messages over the limit are dropped.`,
        );
      if (verdict !== 'ok') return;
    }
    const refusal = room.receive(this, data.toString('utf8'));
    if (refusal) this.close(refusal.code, refusal.reason);
  }

  #closed(code: number): void {
    clearTimeout(this.#graceTimer);
    clearTimeout(this.#expiryTimer);
    this.context.metrics.closed(code);
    this.#leave();
    this.context.closed(this, code);
  }

  #leave(): void {
    if (this.context.room.leave(this)) this.context.metrics.left();
  }

  /**
   * A session lasts no longer than its credential: REST refuses an expired token, so the chat must not
   * go on with it. The client reconnects with a fresh one (the console signs in again).
   */
  #closeAtExpiry(expiresAt: number): void {
    const delay = expiresAt - Date.now();
    if (delay <= 0) return this.close(CloseCode.policyViolation, 'The credential expired');
    this.#expiryTimer = setTimeout(() => this.#closeAtExpiry(expiresAt), Math.min(delay, MAX_TIMER_MS));
    this.#expiryTimer.unref();
  }
}
