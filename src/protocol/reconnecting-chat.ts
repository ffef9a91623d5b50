/**
 * One logical chat connection that survives drops, for any client: it opens a WebSocket through the
 * `connect` it is given (the browser's WebSocket in the console, the `ws` package in `roster chat`),
 * sends the contract's application ping every 30 s, treats a ping left unanswered until the next one
 * as a dead connection, reconnects with exponential backoff and jitter, and with `history` keeps its
 * place in the room's history, so each reconnection asks for exactly what was missed. It touches no
 * socket API but the standard one and no timer but the global ones, so it runs unchanged in both.
 */
import { backoffDelay, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
import { ChatPosition } from './chat-codec.js';
import { readMessage, sendMessage, type ClientMessage, type ServerMessage } from './client/chat-client.js';

/** What the session needs of a WebSocket: the standard interface, which the browser's and `ws` share. */
export interface SessionSocket {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'open', listener: () => void): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'close', listener: (event: { code: number; reason: string }) => void): void;
  /** The browser says nothing of the cause; `ws` gives its message. */
  addEventListener(type: 'error', listener: (event: { message?: string }) => void): void;
}

export type SessionState =
  /** Opening a socket; `attempt` is 0 for the first try after start or after a welcome. */
  | { kind: 'connecting'; attempt: number }
  /** `reconnected`: an open connection of this session was lost before, and this one replaces it. */
  | { kind: 'open'; reconnected: boolean }
  /** Waiting `delayMs` before the next try. `wasOpen`: this follows a drop of an open connection. */
  | { kind: 'waiting'; attempt: number; delayMs: number; wasOpen: boolean };

/** Why the session ended without a stop() (with `retryFirst` off): nothing follows. */
export type SessionEnd =
  /** The address is not a WebSocket URL (opening a socket threw). */
  | { kind: 'unusable'; cause: string }
  /** The first connection never opened. */
  | { kind: 'unreachable'; cause: string };

/** A pong, matched with the ping it answers (pongs come in the order of the pings). */
export interface PongTiming {
  roundTripMs: number;
  /** The ping was asked for (`ping(true)`), not the keep-alive's. */
  asked: boolean;
}

export interface SessionEvents {
  state?(state: SessionState): void;
  /** A message of the service, once: repeats of history already seen are left out. */
  message?(message: ServerMessage, text: string, pong?: PongTiming): void;
  /** A frame that is none of the service's messages: its text, or binary data. */
  unknown?(data: unknown): void;
  /** An error on an open connection ('close' follows). */
  error?(message: string): void;
  /**
   * An open connection closed (or went silent: 1006) without stop(). A retry follows, unless the
   * listener stops the session (a client that does not reconnect for this code, say).
   */
  dropped?(code: number, reason: string): void;
  ended?(end: SessionEnd): void;
}

export interface SessionOptions {
  /** The chat's address, asked before every connection (the console reads it from its settings). */
  url: () => string | Promise<string>;
  /** Opens a socket to `url`; may throw for an address that is not a WebSocket URL. */
  connect: (url: string) => SessionSocket;
  /** Contract: a client sends an application-level ping every 30 seconds. */
  pingIntervalMs?: number;
  backoff?: BackoffOptions;
  /**
   * Recent messages asked for on joining; every reconnection then asks for what was missed (`since`),
   * so that nothing is lost or shown twice while the room keeps it. 0: the contract's frames only.
   */
  history?: number;
  /** Whether a first connection that never opened is retried (default) or ends the session. */
  retryFirst?: boolean;
}

/** A socket's close that Roster did not see: the keep-alive ping went unanswered (RFC 6455's 1006). */
const SILENT = 1006;

export class ReconnectingChat {
  #socket: SessionSocket | null = null;
  /** Failed tries since the last welcome; drives the backoff. */
  #attempt = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  #pingTimer: ReturnType<typeof setInterval> | undefined;
  /** Pings awaiting their pong, oldest first; `keepAlive`, the last one the interval sent. */
  #pings: { sentAt: number; asked: boolean }[] = [];
  #keepAlive: { sentAt: number; asked: boolean } | undefined;
  #stopped = true;
  /** A connection of this session has opened: the next one to open is a reconnection. */
  #everOpen = false;
  /** Counts start() calls: a connect still resolving its URL from before a stop and start gives up. */
  #generation = 0;
  /** Why the current attempt failed, as far as it is known. */
  #cause: string | undefined;
  readonly #options: Required<SessionOptions>;
  /** Where this session is in the room's history (with `history` on). */
  readonly #position: ChatPosition | undefined;

  constructor(
    options: SessionOptions,
    private readonly events: SessionEvents,
  ) {
    this.#options = { pingIntervalMs: 30_000, backoff: DEFAULT_BACKOFF, history: 0, retryFirst: true, ...options };
    this.#position = this.#options.history > 0 ? new ChatPosition(this.#options.history) : undefined;
  }

  /** (Re)starts the session: a first connection, recent history again. */
  start(): void {
    this.stop();
    this.#stopped = false;
    this.#attempt = 0;
    this.#everOpen = false;
    this.#position?.reset();
    this.#generation += 1;
    void this.#connect();
  }

  /** Skips the rest of the backoff wait (the console's "Retry now", the browser coming back online). */
  retryNow(): void {
    if (this.#stopped || this.#socket !== null || this.#retryTimer === undefined) return;
    void this.#connect();
  }

  /**
   * Ends the session: the socket is closed with `code` (its events are heard no more) and nothing is
   * retried. `onClosed` hears the server's answer to the close, if one comes.
   */
  stop(code = 1000, reason?: string, onClosed?: () => void): void {
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#stopHeartbeat();
    const socket = this.#socket;
    this.#socket = null;
    if (socket && onClosed) socket.addEventListener('close', () => onClosed());
    socket?.close(code, reason);
  }

  /** Sends one message; false when there is no open connection. */
  send(message: ClientMessage): boolean {
    return this.#socket !== null && sendMessage(this.#socket, message);
  }

  /** Sends an application ping, whose pong comes with its round trip; false when not open. */
  ping(asked = true): boolean {
    if (!this.send({ type: 'ping' })) return false;
    const ping = { sentAt: performance.now(), asked };
    this.#pings.push(ping);
    if (!asked) this.#keepAlive = ping;
    return true;
  }

  /** Pings sent and not yet answered. */
  get unanswered(): number {
    return this.#pings.length;
  }

  async #connect(): Promise<void> {
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#cause = undefined;
    this.events.state?.({ kind: 'connecting', attempt: this.#attempt });
    const generation = this.#generation;
    let socket: SessionSocket;
    try {
      const url = await this.#options.url();
      if (this.#stopped || generation !== this.#generation) return;
      socket = this.#options.connect(this.#position ? this.#position.url(url) : url);
    } catch (error) {
      if (this.#stopped || generation !== this.#generation) return;
      // The settings could not be loaded, or the address is not a WebSocket URL.
      this.#cause = error instanceof Error ? error.message : String(error);
      return this.#failed('unusable');
    }
    this.#socket = socket;
    socket.addEventListener('open', () => {
      if (this.#socket === socket) this.#opened();
    });
    socket.addEventListener('message', (event) => {
      if (this.#socket === socket) this.#received(event.data);
    });
    socket.addEventListener('error', (event) => {
      if (this.#socket !== socket) return;
      const message = typeof event.message === 'string' && event.message !== '' ? event.message : 'connection error';
      if (this.#pingTimer === undefined) this.#cause = message;
      else this.events.error?.(message);
    });
    // Every failure ends in 'close' (an 'error' event may precede it), open or not.
    socket.addEventListener('close', (event) => {
      if (this.#socket === socket) this.#closed(event.code, event.reason);
    });
  }

  /**
   * Ends the current attempt before it opened, for `cause` (a refusal the client read itself, say):
   * the socket is closed and its events are heard no more; the session goes on as for any failure.
   */
  abandon(cause: string): void {
    const socket = this.#socket;
    if (socket === null || this.#pingTimer !== undefined) return;
    this.#socket = null;
    this.#cause = cause;
    socket.close();
    this.#failed();
  }

  #opened(): void {
    const reconnected = this.#everOpen;
    this.#everOpen = true;
    this.#pingTimer = setInterval(() => this.#beat(), this.#options.pingIntervalMs);
    this.events.state?.({ kind: 'open', reconnected });
  }

  /** The keep-alive: dead when the last one is still unanswered, else another ping. */
  #beat(): void {
    if (this.#keepAlive !== undefined && this.#pings.includes(this.#keepAlive)) {
      // Dead even if the socket has not noticed (a silently dropped network path): reconnect.
      const socket = this.#socket;
      this.#closed(SILENT, '');
      socket?.close();
      return;
    }
    this.ping(false);
  }

  #received(data: unknown): void {
    const message = typeof data === 'string' ? readMessage(data) : undefined;
    if (message === undefined) return this.events.unknown?.(data);
    if (this.#position && !this.#position.accept(message)) return;
    // The welcome: the room accepted this connection, so the backoff starts over next time.
    if (message.type === 'system') this.#attempt = 0;
    let pong: PongTiming | undefined;
    if (message.type === 'pong') {
      const ping = this.#pings.shift();
      if (ping) pong = { roundTripMs: performance.now() - ping.sentAt, asked: ping.asked };
    }
    this.events.message?.(message, data as string, pong);
  }

  #closed(code: number, reason: string): void {
    const wasOpen = this.#pingTimer !== undefined;
    this.#socket = null;
    this.#stopHeartbeat();
    if (this.#stopped) return;
    if (!wasOpen) return this.#failed();
    this.events.dropped?.(code, reason);
    if (!this.#stopped) this.#scheduleRetry(true); // unless stopped by whoever heard of the drop
  }

  /** An attempt that never opened: retried, unless it was the first and those are not. */
  #failed(kind: SessionEnd['kind'] = 'unreachable'): void {
    if (this.#everOpen || this.#options.retryFirst) return this.#scheduleRetry(false);
    this.#end({ kind, cause: this.#cause ?? 'the connection closed before it opened' });
  }

  #scheduleRetry(wasOpen: boolean): void {
    const delayMs = backoffDelay(this.#attempt, this.#options.backoff);
    const attempt = this.#attempt;
    this.#attempt += 1;
    this.#retryTimer = setTimeout(() => void this.#connect(), delayMs);
    this.events.state?.({ kind: 'waiting', attempt, delayMs, wasOpen });
  }

  #end(end: SessionEnd): void {
    this.stop();
    this.events.ended?.(end);
  }

  #stopHeartbeat(): void {
    clearInterval(this.#pingTimer);
    this.#pingTimer = undefined;
    this.#pings = [];
    this.#keepAlive = undefined;
  }
}
