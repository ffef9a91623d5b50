/**
 * The chat door: an HTTP server that only upgrades, the `ws` library for the protocol, and the glue
 * between sockets and the `ChatRoom`. Protocol violations are `ws`'s job (1002 for framing errors,
 * 1007 for invalid UTF-8, 1009 for a message over `maxPayload`, decided from the frame header); this
 * file adds what decisions.md asks beyond that: handshake replies, binary frames (1003), the heartbeat,
 * slow consumers (1013), the connection limit (503) and the going-away close (1001) on shutdown.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import type { ChatConfig } from '../config.js';
import { RosterError } from '../errors.js';
import { clientErrorHandler } from '../http/errors.js';
import { timeouts, writeRawError } from '../http/raw-reply.js';
import { NO_CHAT_METRICS, type ChatMetrics } from '../metrics.js';
import { Outbox } from './outbox.js';
import type { ChatRoom, Member } from './room.js';

/** Close codes of RFC 6455 that Roster sends itself. */
export const CloseCode = {
  goingAway: 1001,
  unsupportedData: 1003,
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
}

export function createChatServer(config: ChatConfig, room: ChatRoom, logger: Logger, metrics: ChatMetrics = NO_CHAT_METRICS): ChatServer {
  const log = logger.child({ component: 'chat' });
  const connections = new Map<WebSocket, Connection>();
  const outbox = new Outbox((frames) => metrics.messagesOut(frames));
  let closing = false;

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: config.maxPayload,
    perMessageDeflate: false, // compression costs CPU and memory per connection; chat messages are small
    clientTracking: false, // `connections` tracks them
  });

  const server: Server = createServer(timeouts(config.handshakeTimeoutMs, config.handshakeTimeoutMs), (request) => {
    // A plain HTTP request to the chat port is a handshake without an upgrade: 400 (decisions.md).
    const refusal = new RosterError(400, 'ERROR', 'This port accepts WebSocket connections only');
    writeRawError(request.socket, refusal, { headOnly: request.method === 'HEAD' });
  });
  // Upgraded sockets still count as the server's connections. Room for handshakes beyond the room's
  // limit, so that the next ones get their 503 rather than a dropped connection; past that, the kernel
  // backlog is the only queue.
  server.maxConnections = 2 * config.maxConnections;
  // Malformed HTTP, headers too large, too slow: the same replies as on the REST port.
  server.on('clientError', clientErrorHandler);
  // Once listening, a server error (say, out of file descriptors on accept) is logged, not fatal.
  server.on('error', (error) => log.error({ err: error }, 'chat server error'));
  // Handshakes ws itself refuses (a malformed extension or subprotocol header): in the envelope too.
  wss.on('wsClientError', (error: Error, socket: Duplex) => refuse(socket, 400, 'ERROR', error.message));

  server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', (error) => log.debug({ err: error }, 'socket error during handshake'));
    if (closing) return refuse(socket, 503, 'SERVICE_UNAVAILABLE', 'The chat is shutting down');
    if (!isWebSocketUpgrade(request)) return refuse(socket, 400, 'ERROR', 'Not a WebSocket handshake');
    if (request.headers['sec-websocket-version'] !== '13') {
      return refuse(socket, 426, 'UPGRADE_REQUIRED', 'Only WebSocket version 13 is supported', { 'Sec-WebSocket-Version': '13' });
    }
    if (connections.size >= config.maxConnections) {
      return refuse(socket, 503, 'SERVICE_UNAVAILABLE', 'The chat is full; try again later');
    }
    // ws checks what is left of the handshake (extension and subprotocol headers) and answers 400 itself.
    wss.handleUpgrade(request, socket, head, (ws) => accept(ws, socket));
  });

  /** `socket` is the one ws writes to; the outbox writes chat frames to it too (outbox.ts). */
  function accept(ws: WebSocket, socket: Duplex): void {
    const connection: Connection = {
      alive: true,
      member: {
        id: randomUUID(),
        deliver(payload) {
          if (ws.readyState !== WebSocket.OPEN) return;
          // A slow consumer (decisions.md): closed once the backlog it had before this turn passes the
          // bound, so its memory stays within the bound plus one turn's messages, and nobody else waits
          // for it. (What this turn wrote is still corked, unsent by design, so it does not count.)
          if (!outbox.isCorked(socket) && ws.bufferedAmount > config.maxBacklog) return dropSlowConsumer(ws, connection);
          outbox.write(socket, payload);
        },
      },
    };
    connections.set(ws, connection);
    metrics.opened();
    log.debug({ id: connection.member.id, online: connections.size }, 'chat connection opened');

    ws.on('pong', () => {
      connection.alive = true;
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (ws.readyState !== WebSocket.OPEN) return; // closing: whatever it still sends is not chat
      if (isBinary) return closeConnection(ws, connection, CloseCode.unsupportedData, 'Binary messages are not supported');
      metrics.messageIn();
      room.receive(connection.member, data.toString('utf8'));
    });
    // A protocol error (1002, 1007, 1009), for which ws has already sent the matching close frame,
    // or a socket error (reset), after which there is nobody to tell.
    ws.on('error', (error) => {
      log.debug({ err: error, id: connection.member.id }, 'chat connection error');
      closeConnection(ws, connection);
    });
    ws.on('close', (code: number) => {
      connections.delete(ws);
      clearTimeout(connection.graceTimer);
      metrics.closed(code);
      leave(connection);
      log.debug({ id: connection.member.id, code, online: connections.size }, 'chat connection closed');
    });

    room.join(connection.member);
    metrics.joined();
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

  // Protocol-level heartbeat (decisions.md): ping everyone each interval, terminate whoever did not
  // answer the previous ping. Terminating fires 'close', which counts the peer out of the room.
  const heartbeat = setInterval(() => {
    for (const [ws, connection] of connections) {
      if (!connection.alive) {
        ws.terminate();
        continue;
      }
      connection.alive = false;
      ws.ping();
    }
  }, config.heartbeatMs);
  heartbeat.unref();

  return {
    room,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        // A deeper accept queue than Node's 511, so a crowd connecting at once is not kept waiting on
        // SYN retries (the kernel caps it at net.core.somaxconn).
        server.listen({ port, host, backlog: 4096 }, () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      });
    },
    async close(timeoutMs) {
      closing = true;
      clearInterval(heartbeat);
      server.close();
      const open = [...connections.keys()];
      const closed = Promise.all(open.map((ws) => new Promise<void>((resolve) => ws.once('close', () => resolve()))));
      for (const ws of open) ws.close(CloseCode.goingAway, 'Server shutting down');
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      });
      await Promise.race([closed, timedOut]);
      clearTimeout(timer);
      for (const ws of connections.keys()) ws.terminate();
      server.closeAllConnections();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

function isWebSocketUpgrade(request: IncomingMessage): boolean {
  return (
    request.method === 'GET' &&
    request.httpVersion === '1.1' && // RFC 6455 4.1: HTTP/1.1 or higher; Node's server speaks at most 1.1 here
    request.headers.upgrade?.toLowerCase() === 'websocket' &&
    // RFC 6455 4.2.1: the key is 16 random bytes in base64. Checked here so the refusal is in the
    // envelope (ws would answer with an HTML body).
    /^[+/0-9A-Za-z]{22}==$/.test(request.headers['sec-websocket-key'] ?? '')
  );
}

/** Refuses a handshake with an HTTP reply in the error envelope, then closes the socket. */
function refuse(socket: Duplex, status: number, code: string, message: string, headers?: Record<string, string>): void {
  writeRawError(socket, new RosterError(status, code, message, undefined, headers));
}
