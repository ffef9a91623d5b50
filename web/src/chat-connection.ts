/**
 * One logical chat connection that survives drops: it opens a WebSocket, sends the contract's
 * application ping every 30 s, treats a ping left unanswered until the next one as a dead connection,
 * and reconnects with exponential backoff and jitter whenever the socket closes.
 */
import {
  backoffDelay,
  ChatPosition,
  DEFAULT_BACKOFF,
  onMessage,
  sendMessage,
  type BackoffOptions,
  type ClientMessage,
  type ServerMessage,
} from '@roster/protocol';

/** Messages the service sends, as the typed client reads them (the chat's one codec). */
export type { ServerMessage } from '@roster/protocol';

export type ConnectionState =
  /** Opening a socket; `attempt` is 0 for the first try after start or after a successful session. */
  | { kind: 'connecting'; attempt: number }
  | { kind: 'open' }
  /** Waiting `delayMs` before the next try. `wasOpen`: this follows a drop of an open connection. */
  | { kind: 'waiting'; attempt: number; delayMs: number; wasOpen: boolean };

export interface ConnectionEvents {
  state(state: ConnectionState): void;
  message(message: ServerMessage): void;
}

export interface ConnectionOptions {
  /** Contract: a client sends an application-level ping every 30 seconds. */
  pingIntervalMs: number;
  backoff: BackoffOptions;
  /**
   * Recent messages asked for on joining; every reconnection then asks for what was missed (`since`),
   * so that nothing is lost or shown twice while the room keeps it. 0: the contract's frames only.
   */
  history: number;
}

const DEFAULT_CONNECTION_OPTIONS: ConnectionOptions = { pingIntervalMs: 30_000, backoff: DEFAULT_BACKOFF, history: 50 };

export class ChatConnection {
  #socket: WebSocket | null = null;
  /** Failed tries since the last successful session; drives the backoff. */
  #attempt = 0;
  #retryTimer: number | undefined;
  #pingTimer: number | undefined;
  #awaitingPong = false;
  #stopped = false;
  /** Counts start() calls: a connect still resolving its URL from before a stop and start gives up. */
  #generation = 0;
  /** Where this session is in the room's history (with `history` on). */
  readonly #position: ChatPosition | undefined;

  constructor(
    private readonly resolveUrl: () => Promise<string>,
    private readonly events: ConnectionEvents,
    private readonly options: ConnectionOptions = DEFAULT_CONNECTION_OPTIONS,
  ) {
    this.#position = options.history > 0 ? new ChatPosition(options.history) : undefined;
  }

  get isOpen(): boolean {
    return this.#socket?.readyState === WebSocket.OPEN;
  }

  start(): void {
    this.#stopped = false;
    this.#attempt = 0;
    this.#position?.reset();
    this.#generation += 1;
    void this.#connect();
  }

  /** Skips the rest of the backoff wait (the "Retry now" button, or the browser coming back online). */
  retryNow(): void {
    if (this.#stopped || this.#socket !== null || this.#retryTimer === undefined) return;
    void this.#connect();
  }

  stop(): void {
    this.#stopped = true;
    window.clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#stopHeartbeat();
    const socket = this.#socket;
    this.#socket = null;
    socket?.close(1000, 'Leaving');
  }

  /** Sends one JSON message; false when there is no open connection. */
  send(message: ClientMessage): boolean {
    return this.#socket !== null && sendMessage(this.#socket, message);
  }

  async #connect(): Promise<void> {
    window.clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.events.state({ kind: 'connecting', attempt: this.#attempt });
    const generation = this.#generation;
    let socket: WebSocket;
    try {
      const url = await this.resolveUrl();
      socket = new WebSocket(this.#position ? this.#position.url(url) : url);
    } catch {
      if (this.#stopped || generation !== this.#generation) return;
      // The settings could not be loaded, or the address is not a valid WebSocket URL.
      this.#scheduleRetry(false);
      return;
    }
    if (this.#stopped || generation !== this.#generation) {
      socket.close();
      return;
    }
    this.#socket = socket;
    socket.addEventListener('open', () => {
      if (this.#socket !== socket) return;
      this.#startHeartbeat();
      this.events.state({ kind: 'open' });
    });
    onMessage(socket, (message) => {
      if (this.#socket !== socket || (this.#position && !this.#position.accept(message))) return;
      if (message.type === 'pong') this.#awaitingPong = false;
      // The welcome: the room accepted this connection, so the backoff starts over next time.
      if (message.type === 'system') this.#attempt = 0;
      this.events.message(message);
    });
    // Every failure ends in 'close' (an 'error' event always precedes it), open or not.
    socket.addEventListener('close', () => {
      if (this.#socket !== socket) return;
      this.#dropped();
    });
  }

  #dropped(): void {
    const wasOpen = this.#pingTimer !== undefined;
    this.#socket = null;
    this.#stopHeartbeat();
    if (!this.#stopped) this.#scheduleRetry(wasOpen);
  }

  #scheduleRetry(wasOpen: boolean): void {
    const delayMs = backoffDelay(this.#attempt, this.options.backoff);
    const attempt = this.#attempt;
    this.#attempt += 1;
    this.#retryTimer = window.setTimeout(() => void this.#connect(), delayMs);
    this.events.state({ kind: 'waiting', attempt, delayMs, wasOpen });
  }

  #startHeartbeat(): void {
    this.#awaitingPong = false;
    this.#pingTimer = window.setInterval(() => {
      if (this.#awaitingPong) {
        // No pong for a whole interval: the connection is dead even if the browser has not noticed
        // (a silently dropped network path). Give up on it and reconnect.
        const socket = this.#socket;
        this.#dropped();
        socket?.close();
        return;
      }
      this.#awaitingPong = this.send({ type: 'ping' });
    }, this.options.pingIntervalMs);
  }

  #stopHeartbeat(): void {
    window.clearInterval(this.#pingTimer);
    this.#pingTimer = undefined;
    this.#awaitingPong = false;
  }
}
