/**
 * The chat door: an HTTP server that only upgrades (http-server.ts), the `ws` library for the protocol
 * (framing errors, invalid UTF-8 and oversized messages are its to close, decided from the frame
 * header), and the glue between sockets and the `ChatRoom`: what docs/decisions.md asks beyond `ws`
 * (handshake replies, binary frames, the heartbeat, slow consumers, the connection limit, the
 * going-away close), and the handshake's protection when configured (handshake.ts, `ChatProtection`).
 *
 * The last line of defence: every handler of what a client sends (a request, a handshake, a frame)
 * runs guarded. An error nobody expected closes that one connection (1011, or a 500 before the
 * upgrade), is logged and counted (roster_chat_handler_errors_total); it never ends the process, which
 * holds everyone else's connections (and, with the memory store, every user).
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import type { Principal } from '../edge/authenticator.js';
import type { ChatConfig } from '../config/index.js';
import { clientKey } from '../edge/client-identity.js';
import { RosterError } from '../errors.js';
import { writeRawError } from '../edge/raw-reply.js';
import { NO_CHAT_METRICS, type ChatMetrics } from '../ops/metrics.js';
import { chatHttpServer } from './http-server.js';
import { Outbox } from './outbox.js';
import { admission, isWebSocketUpgrade, refuse, type ChatProtection } from './handshake.js';
import { MessageBudget } from './message-budget.js';
import type { ChatRoom, Member } from './room.js';
import { historyRequest, type HistoryRequest } from './history.js';

/** Close codes of RFC 6455 that Roster sends itself. */
const CloseCode = {
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

export interface ChatServer {
  readonly room: ChatRoom;
  listen(port: number, host: string): Promise<AddressInfo>;
  /** Sends 1001 to every connection, waits up to `timeoutMs` for the close handshakes, then stops. */
  close(timeoutMs: number): Promise<void>;
}

interface Connection {
  readonly member: Member;
  /** Whether the peer answered the last protocol ping. */
  alive: boolean;
  /** Set once Roster has started closing the connection: destroys it if the close handshake stalls. */
  graceTimer?: NodeJS.Timeout;
  /** What it shares with the other connections of its client (clientKey). */
  readonly client: Client;
  /** Closes the connection (1008) when the credential it joined with expires (a token's exp). */
  expiryTimer?: NodeJS.Timeout;
}

/** setTimeout's longest delay (about 24.8 days); a later expiry is waited for in several steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A client (its principal, else its address): its open connections, and their common message budget. */
interface Client {
  readonly key: string;
  open: number;
  readonly budget: MessageBudget | undefined;
}

export function createChatServer(
  config: ChatConfig,
  room: ChatRoom,
  logger: Logger,
  metrics: ChatMetrics = NO_CHAT_METRICS,
  protection: ChatProtection = {},
): ChatServer {
  const log = logger.child({ component: 'chat' });
  const connections = new Map<WebSocket, Connection>();
  // By clientKey: kept while the client has a connection, or a budget not yet refilled (pruned on the
  // heartbeat), so that reconnecting does not buy a fresh message budget.
  const clients = new Map<string, Client>();
  const outbox = new Outbox((frames) => metrics.messagesOut(frames));
  let closing = false;

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: config.maxPayload,
    perMessageDeflate: false, // compression costs CPU and memory per connection; chat messages are small
    clientTracking: false, // `connections` tracks them
  });

  /** An error no handler expected: logged, counted, and `end` closes what it concerns (only that). */
  const unexpected = (error: unknown, what: string, end: () => void) => {
    log.error({ err: error }, `chat ${what} failed unexpectedly`);
    metrics.handlerFailed();
    try {
      end();
    } catch (endError) {
      log.error({ err: endError }, 'closing after an unexpected error failed too');
    }
  };
  const server = chatHttpServer(config, protection, metrics, log, unexpected);
  const { messageLimit } = protection;
  const guarded =
    protection.origins !== undefined || protection.authenticator !== undefined || protection.limiter !== undefined;
  const addressOf = protection.addressOf ?? ((request: IncomingMessage) => request.socket.remoteAddress ?? '');
  const admit = admission(protection, addressOf);
  // Handshakes ws itself refuses (a malformed extension or subprotocol header): in the envelope too.
  wss.on('wsClientError', (error: Error, socket: Duplex) => refuse(socket, 'ERROR', error.message));

  server.on(
    'upgrade',
    guard('handshake', ([, socket]) => internalError(socket), upgrade),
  );

  /** `handler`, guarded: what it throws is `unexpected`, and `end` (given its arguments) closes what it concerns. */
  function guard<A extends unknown[]>(what: string, end: (args: NoInfer<A>) => void, handler: (...args: A) => void) {
    return (...args: A): void => {
      try {
        handler(...args);
      } catch (error) {
        unexpected(error, what, () => end(args));
      }
    };
  }

  /** Before the upgrade: a 500 in the envelope; after it (101 sent), the socket is only destroyed. */
  function internalError(socket: Duplex): void {
    if (socket.destroyed) return;
    if (!handshook.has(socket)) refuse(socket, 'INTERNAL_ERROR', 'An unexpected error occurred');
    else socket.destroy();
  }
  /** Sockets whose upgrade ws has completed. */
  const handshook = new WeakSet<Duplex>();

  function upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', (error) => log.debug({ err: error }, 'socket error during handshake'));
    if (closing) return refuse(socket, 'SERVICE_UNAVAILABLE', 'The chat is shutting down');
    if (!isWebSocketUpgrade(request)) return refuse(socket, 'ERROR', 'Not a WebSocket handshake');
    if (request.headers['sec-websocket-version'] !== '13') {
      return refuse(socket, 'UPGRADE_REQUIRED', 'Only WebSocket version 13 is supported', {
        'Sec-WebSocket-Version': '13',
      });
    }
    if (connections.size >= config.maxConnections) {
      return refuse(socket, 'SERVICE_UNAVAILABLE', 'The chat is full; try again later');
    }
    // ws checks what is left of the handshake (extension and subprotocol headers) and answers 400 itself.
    // It upgrades synchronously (no verifyClient), so accept() counts the client's connection before any
    // other handshake is looked at: the per-client check below cannot be raced.
    const join = (principal: Principal | undefined) => {
      const key = clientKey(principal, addressOf(request));
      const max = config.maxConnectionsPerClient; // WS_MAX_CONNECTIONS_PER_CLIENT
      if (max !== undefined && (clients.get(key)?.open ?? 0) >= max) {
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
            if (connection) closeConnection(ws, connection, CloseCode.internalError, 'Internal error');
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

  /** `socket` is the one ws writes to; the outbox writes chat frames to it too (outbox.ts). */
  function accept(ws: WebSocket, socket: Duplex, key: string, principal?: Principal, asked?: HistoryRequest): void {
    let client = clients.get(key);
    if (!client) {
      client = { key, open: 0, budget: messageLimit ? new MessageBudget(messageLimit) : undefined };
      clients.set(key, client);
    }
    client.open += 1;
    const { budget } = client;
    const writable = (): boolean => {
      if (ws.readyState !== WebSocket.OPEN) return false;
      // A slow consumer (docs/decisions.md): closed once the backlog it had before this turn passes the
      // bound, so its memory stays within the bound plus one turn's messages, and nobody else waits
      // for it. (What this turn wrote is still corked, unsent by design, so it does not count.)
      if (!outbox.isCorked(socket) && ws.bufferedAmount > config.maxBacklog) {
        dropSlowConsumer(ws, connection);
        return false;
      }
      return true;
    };
    const connection: Connection = {
      alive: true,
      client,
      member: {
        id: randomUUID(),
        ...(principal ? { name: principal.name } : {}),
        deliver(payload) {
          if (writable()) outbox.write(socket, payload);
        },
        deliverMany(payloads, from) {
          if (writable()) outbox.writeMany(socket, payloads, from);
        },
        replay(payloads, done) {
          outbox.replay(
            socket,
            payloads,
            () => ws.readyState === WebSocket.OPEN,
            done,
            (error) => fail(error, 'replay'),
          );
        },
        drop() {
          dropSlowConsumer(ws, connection);
        },
      },
    };
    const internal = () => closeConnection(ws, connection, CloseCode.internalError, 'Internal error');
    const fail = (error: unknown, what: string) => unexpected(error, what, internal);
    connections.set(ws, connection);
    metrics.opened();
    log.debug({ id: connection.member.id, online: connections.size }, 'chat connection opened');

    ws.on('pong', () => {
      connection.alive = true;
    });
    const received = (data: Buffer, isBinary: boolean) => {
      if (ws.readyState !== WebSocket.OPEN) return; // closing: whatever it still sends is not chat
      if (isBinary)
        return closeConnection(ws, connection, CloseCode.unsupportedData, 'Binary messages are not supported');
      metrics.messageIn();
      if (budget) {
        const verdict = budget.take(Date.now());
        if (verdict === 'close') return closeConnection(ws, connection, CloseCode.policyViolation, 'Too many messages');
        if (verdict === 'notify')
          room.notify(
            connection.member,
            `Slow down: at most ${budget.max} messages per ${budget.windowMs / 1000} s; messages over the limit are dropped.`,
          );
        if (verdict !== 'ok') return;
      }
      const refusal = room.receive(connection.member, data.toString('utf8'));
      if (refusal) closeConnection(ws, connection, refusal.code, refusal.reason);
    };
    ws.on('message', guard('message', internal, received));
    // A protocol error (1002, 1007, 1009), for which ws has already sent the matching close frame,
    // or a socket error (reset), after which there is nobody to tell.
    ws.on('error', (error) => {
      log.debug({ err: error, id: connection.member.id }, 'chat connection error');
      closeConnection(ws, connection);
    });
    const closed = (code: number) => {
      connections.delete(ws);
      connection.client.open -= 1;
      forgetIfIdle(connection.client, Date.now());
      clearTimeout(connection.graceTimer);
      clearTimeout(connection.expiryTimer);
      metrics.closed(code);
      leave(connection);
      log.debug({ id: connection.member.id, code, online: connections.size }, 'chat connection closed');
    };
    ws.on(
      'close',
      guard('close', () => {}, closed),
    );

    room.join(connection.member, asked);
    metrics.joined();
    if (principal?.expiresAt !== undefined) closeAtExpiry(ws, connection, principal.expiresAt);
  }

  /**
   * A session lasts no longer than its credential: REST refuses an expired token, so the chat must not
   * go on with it. The client reconnects with a fresh one (the console signs in again).
   */
  function closeAtExpiry(ws: WebSocket, connection: Connection, expiresAt: number): void {
    const delay = expiresAt - Date.now();
    if (delay <= 0) return closeConnection(ws, connection, CloseCode.policyViolation, 'The credential expired');
    connection.expiryTimer = setTimeout(() => closeAtExpiry(ws, connection, expiresAt), Math.min(delay, MAX_TIMER_MS));
    connection.expiryTimer.unref();
  }

  /** A client without connections is forgotten once its message budget is back to full. */
  function forgetIfIdle(client: Client, now: number): void {
    if (client.open === 0 && (!client.budget || client.budget.rested(now))) clients.delete(client.key);
  }

  function leave(connection: Connection): void {
    if (room.leave(connection.member)) metrics.left();
  }

  /**
   * Ends a connection Roster gives up on: it leaves the room at once (the others hear user_leave now,
   * not when the peer gets round to answering), gets the close frame when a code is given, and is
   * destroyed if the close handshake has not finished within CLOSE_GRACE_MS.
   */
  function closeConnection(ws: WebSocket, connection: Connection, code?: number, reason?: string): void {
    if (connection.graceTimer) return; // already closing
    // After the current broadcast, if one is under way: the others then hear user_leave after the
    // message being delivered, not in the middle of it. Until then deliver() skips the closing socket.
    queueMicrotask(() => leave(connection));
    if (code !== undefined) ws.close(code, reason);
    connection.graceTimer = setTimeout(() => ws.terminate(), CLOSE_GRACE_MS);
    connection.graceTimer.unref();
  }

  function dropSlowConsumer(ws: WebSocket, connection: Connection): void {
    log.warn({ id: connection.member.id, backlog: ws.bufferedAmount }, 'closing slow chat consumer');
    metrics.slowConsumerDropped();
    closeConnection(ws, connection, CloseCode.tryAgainLater, 'Too slow: unsent messages over the limit');
  }

  // Protocol-level heartbeat (docs/decisions.md); terminating fires 'close', which counts the peer out of the room.
  const heartbeat = setInterval(() => {
    for (const [ws, connection] of connections) {
      if (!connection.alive) {
        ws.terminate();
        continue;
      }
      connection.alive = false;
      ws.ping();
    }
    const now = Date.now();
    for (const client of clients.values()) forgetIfIdle(client, now);
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
      const open = [...connections.keys()];
      const closed = Promise.all(open.map((ws) => new Promise<void>((resolve) => ws.once('close', () => resolve()))));
      for (const ws of open) ws.close(CloseCode.goingAway, 'Server shutting down');
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
      clearTimeout(timer);
      for (const ws of connections.keys()) ws.terminate();
      server.closeAllConnections();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
