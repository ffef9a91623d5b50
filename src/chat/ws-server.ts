/**
 * The chat door: an HTTP server that only upgrades (http-server.ts), the `ws` library for the protocol
 * (framing errors, invalid UTF-8 and oversized messages are its to close, decided from the frame
 * header), admission (handshake replies, the connection limits, the handshake's protection when
 * configured: handshake.ts, `ChatProtection`) and the lifecycle (the heartbeat, the going-away close).
 * Each admitted socket is a `ChatConnection` (connection.ts), which the `ChatRoom` calls as its member:
 * binary frames, slow consumers, the message budget and the credential's expiry are its own.
 *
 * The last line of defence: every handler of what a client sends (a request, a handshake, a frame)
 * runs guarded. An error nobody expected closes that one connection (1011, or a 500 before the
 * upgrade), is logged and counted (roster_chat_handler_errors_total); it never ends the process, which
 * holds everyone else's connections (and, with the memory store, every user).
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Principal } from '../edge/authenticator.js';
import type { ChatConfig, RateLimit } from '../config/index.js';
import { clientKey } from '../edge/client-identity.js';
import { RosterError } from '../errors.js';
import { writeRawError } from '../edge/raw-reply.js';
import { NO_CHAT_METRICS, type ChatMetrics } from '../ops/metrics.js';
import { chatHttpServer } from './http-server.js';
import { Outbox } from './outbox.js';
import { admission, isWebSocketUpgrade, refuse, type ChatProtection } from './handshake.js';
import { MessageBudget } from './message-budget.js';
import type { ChatRoom } from './room.js';
import {
  ChatConnection,
  CloseCode,
  guard,
  type Client,
  type ConnectionContext,
  type Unexpected,
} from './connection.js';
import { historyRequest, type HistoryRequest } from './history.js';

export interface ChatServer {
  readonly room: ChatRoom;
  listen(port: number, host: string): Promise<AddressInfo>;
  /** Sends 1001 to every connection, waits up to `timeoutMs` for the close handshakes, then stops. */
  close(timeoutMs: number): Promise<void>;
}

/**
 * The clients of the open connections, by clientKey: kept while the client has a connection, or a
 * budget not yet refilled (pruned on the heartbeat), so that reconnecting does not buy a fresh budget.
 */
class ChatClients {
  readonly #byKey = new Map<string, Client>();

  constructor(private readonly messageLimit: RateLimit | undefined) {}

  /** How many connections the client of `key` has open. */
  open(key: string): number {
    return this.#byKey.get(key)?.open ?? 0;
  }

  /** The client of `key`, counting one more connection of it. */
  join(key: string): Client {
    let client = this.#byKey.get(key);
    if (!client) {
      client = { key, open: 0, budget: this.messageLimit ? new MessageBudget(this.messageLimit) : undefined };
      this.#byKey.set(key, client);
    }
    client.open += 1;
    return client;
  }

  /** One connection of `client` fewer. */
  leave(client: Client, now: number): void {
    client.open -= 1;
    this.#forgetIfIdle(client, now);
  }

  prune(now: number): void {
    for (const client of this.#byKey.values()) this.#forgetIfIdle(client, now);
  }

  /** A client without connections is forgotten once its message budget is back to full. */
  #forgetIfIdle(client: Client, now: number): void {
    if (client.open === 0 && (!client.budget || client.budget.rested(now))) this.#byKey.delete(client.key);
  }
}

/** An error no handler expected: logged, counted, and `end` closes what it concerns (only that). */
function reporter(log: Logger, metrics: ChatMetrics): Unexpected {
  return (error, what, end) => {
    log.error({ err: error }, `chat ${what} failed unexpectedly`);
    metrics.handlerFailed();
    try {
      end();
    } catch (endError) {
      log.error({ err: endError }, 'closing after an unexpected error failed too');
    }
  };
}

/** The going-away close (1001) to every connection, `timeoutMs` for their close handshakes, then cut. */
async function closeAll(sockets: () => Iterable<WebSocket>, timeoutMs: number): Promise<void> {
  const open = [...sockets()];
  const closed = Promise.all(open.map((ws) => new Promise<void>((resolve) => ws.once('close', () => resolve()))));
  for (const ws of open) ws.close(CloseCode.goingAway, 'Server shutting down');
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
  for (const ws of sockets()) ws.terminate();
}

/** Sockets whose upgrade ws has completed. */
const handshook = new WeakSet<Duplex>();

/** Before the upgrade: a 500 in the envelope; after it (101 sent), the socket is only destroyed. */
function internalError(socket: Duplex): void {
  if (socket.destroyed) return;
  if (!handshook.has(socket)) refuse(socket, 'INTERNAL_ERROR', 'An unexpected error occurred');
  else socket.destroy();
}

/** Refuses what no admission can let in (shutting down, not WebSocket 13, the chat full); whether it did. */
function refusedAtOnce(request: IncomingMessage, socket: Duplex, closing: boolean, full: boolean): boolean {
  if (closing) refuse(socket, 'SERVICE_UNAVAILABLE', 'The chat is shutting down');
  else if (!isWebSocketUpgrade(request)) refuse(socket, 'ERROR', 'Not a WebSocket handshake');
  else if (request.headers['sec-websocket-version'] !== '13')
    refuse(socket, 'UPGRADE_REQUIRED', 'Only WebSocket version 13 is supported', { 'Sec-WebSocket-Version': '13' });
  else if (full) refuse(socket, 'SERVICE_UNAVAILABLE', 'The chat is full; try again later');
  else return false;
  return true;
}

export function createChatServer(
  config: ChatConfig,
  room: ChatRoom,
  logger: Logger,
  metrics: ChatMetrics = NO_CHAT_METRICS,
  protection: ChatProtection = {},
): ChatServer {
  const log = logger.child({ component: 'chat' });
  const connections = new Map<WebSocket, ChatConnection>();
  const clients = new ChatClients(protection.messageLimit);
  let closing = false;

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: config.maxPayload,
    perMessageDeflate: false, // compression costs CPU and memory per connection; chat messages are small
    clientTracking: false, // `connections` tracks them
  });
  const unexpected = reporter(log, metrics);
  const context: ConnectionContext = {
    room,
    outbox: new Outbox((frames) => metrics.messagesOut(frames)),
    metrics,
    log,
    maxBacklog: config.maxBacklog,
    unexpected,
    closed(connection, code) {
      connections.delete(connection.ws);
      clients.leave(connection.client, Date.now());
      log.debug({ id: connection.id, code, online: connections.size }, 'chat connection closed');
    },
  };
  const server = chatHttpServer(config, protection, metrics, log, unexpected);
  const guarded =
    protection.origins !== undefined || protection.authenticator !== undefined || protection.limiter !== undefined;
  const addressOf = protection.addressOf ?? ((request: IncomingMessage) => request.socket.remoteAddress ?? '');
  const admit = admission(protection, addressOf);
  // Handshakes ws itself refuses (a malformed extension or subprotocol header): in the envelope too.
  wss.on('wsClientError', (error: Error, socket: Duplex) => refuse(socket, 'ERROR', error.message));
  server.on(
    'upgrade',
    guard(unexpected, 'handshake', ([, socket]) => internalError(socket), upgrade),
  );

  function upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', (error) => log.debug({ err: error }, 'socket error during handshake'));
    if (refusedAtOnce(request, socket, closing, connections.size >= config.maxConnections)) return;
    // ws checks what is left of the handshake (extension and subprotocol headers) and answers 400 itself.
    // It upgrades synchronously (no verifyClient), so accept() counts the client's connection before any
    // other handshake is looked at: the per-client check below cannot be raced.
    const join = (principal: Principal | undefined) => {
      const key = clientKey(principal, addressOf(request));
      const max = config.maxConnectionsPerClient; // WS_MAX_CONNECTIONS_PER_CLIENT
      if (max !== undefined && clients.open(key) >= max) {
        const message = `At most ${max} chat connections per client; close one first`;
        return refuse(socket, 'TOO_MANY_CONNECTIONS', message);
      }
      wss.handleUpgrade(request, socket, head, (ws) => {
        handshook.add(socket);
        try {
          accept(ws, socket, key, principal, historyRequest(request.url));
        } catch (error) {
          // The upgrade is done: a failure closes the new connection with 1011.
          unexpected(error, 'join', () => {
            const connection = connections.get(ws);
            if (connection) connection.close(CloseCode.internalError, 'Internal error');
            else ws.close(CloseCode.internalError, 'Internal error');
          });
        }
      });
    };
    if (!guarded) return join(undefined);
    admit(request)
      .then((verdict) => {
        if (socket.destroyed) return;
        if (verdict instanceof RosterError) return writeRawError(socket, verdict);
        if (closing) return refuse(socket, 'SERVICE_UNAVAILABLE', 'The chat is shutting down');
        join(verdict);
      })
      .catch((error: unknown) => unexpected(error, 'handshake', () => internalError(socket)));
  }

  /** Counts the connection in for its client, then opens it: it joins the room. */
  function accept(ws: WebSocket, socket: Duplex, key: string, principal?: Principal, asked?: HistoryRequest): void {
    const connection = new ChatConnection(ws, socket, clients.join(key), context, principal);
    connections.set(ws, connection);
    metrics.opened();
    log.debug({ id: connection.id, online: connections.size }, 'chat connection opened');
    connection.open(asked, principal?.expiresAt);
  }

  // Protocol-level heartbeat (docs/decisions.md), and the clients no longer worth remembering.
  const heartbeat = setInterval(() => {
    for (const connection of connections.values()) connection.heartbeat();
    clients.prune(Date.now());
  }, config.heartbeatMs);
  heartbeat.unref();

  return {
    room,
    async listen(port, host) {
      // A deeper accept queue than Node's 511, so a crowd connecting at once is not kept waiting on
      // SYN retries (the kernel caps it at net.core.somaxconn).
      server.listen({ port, host, backlog: 4096 });
      await once(server, 'listening'); // rejects with an 'error' first
      return server.address() as AddressInfo;
    },
    async close(timeoutMs) {
      closing = true;
      clearInterval(heartbeat);
      server.close();
      await closeAll(() => connections.keys(), timeoutMs);
      server.closeAllConnections();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
