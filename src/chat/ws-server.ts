/**
 * The chat door: an HTTP server that only upgrades, the `ws` library for the protocol, and the glue
 * between sockets and the `ChatRoom`. Protocol violations are `ws`'s job (1002 for framing errors,
 * 1007 for invalid UTF-8, 1009 for a message over `maxPayload`, decided from the frame header); this
 * file adds what decisions.md asks beyond that: handshake replies, binary frames (1003), the heartbeat,
 * slow consumers (1013), the connection limit (503) and the going-away close (1001) on shutdown.
 */
import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocket, WebSocketServer } from 'ws';
import type { ChatConfig } from '../config.js';
import { envelopeOf, RosterError } from '../errors.js';
import type { ChatRoom, Member } from './room.js';

/** Close codes of RFC 6455 that Roster sends itself. */
export const CloseCode = {
  goingAway: 1001,
  unsupportedData: 1003,
  tryAgainLater: 1013,
} as const;

/** How long a slow consumer's close handshake may take before its socket is destroyed. */
const SLOW_CONSUMER_GRACE_MS = 2_000;
/** Handshake headers must arrive within this. */
const HANDSHAKE_TIMEOUT_MS = 10_000;

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
}

export function createChatServer(config: ChatConfig, room: ChatRoom, logger: Logger): ChatServer {
  const log = logger.child({ component: 'chat' });
  const connections = new Map<WebSocket, Connection>();
  let closing = false;

  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: config.maxPayload,
    perMessageDeflate: false, // compression costs CPU and memory per connection; chat messages are small
    clientTracking: false, // `connections` tracks them
  });

  const server: Server = createServer((request, response) => {
    // A plain HTTP request to the chat port is a handshake without an upgrade: 400 (decisions.md).
    const body = JSON.stringify(envelopeOf(new RosterError(400, 'ERROR', 'This port accepts WebSocket connections only')));
    response.writeHead(400, { 'content-type': 'application/json; charset=utf-8', 'x-content-type-options': 'nosniff' });
    response.end(body);
    request.resume();
  });
  server.headersTimeout = HANDSHAKE_TIMEOUT_MS;
  server.requestTimeout = HANDSHAKE_TIMEOUT_MS;
  server.on('clientError', (_error, socket) => refuse(socket, 400, 'ERROR', 'Malformed handshake'));

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
    // ws checks the rest of the handshake (key shape, method) and answers 400 itself when it fails.
    wss.handleUpgrade(request, socket, head, (ws) => accept(ws));
  });

  function accept(ws: WebSocket): void {
    const connection: Connection = {
      alive: true,
      member: {
        id: randomUUID(),
        deliver(frame) {
          if (ws.readyState !== WebSocket.OPEN) return;
          if (ws.bufferedAmount > config.maxBacklog) return dropSlowConsumer(ws);
          ws.send(frame, { binary: false });
        },
      },
    };
    connections.set(ws, connection);
    log.debug({ id: connection.member.id, online: connections.size }, 'chat connection opened');

    ws.on('pong', () => {
      connection.alive = true;
    });
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (isBinary) return ws.close(CloseCode.unsupportedData, 'Binary messages are not supported');
      room.receive(connection.member, data.toString('utf8'));
    });
    // Protocol errors reach here after ws has sent the matching close frame; nothing more to do.
    ws.on('error', (error) => log.debug({ err: error, id: connection.member.id }, 'chat connection error'));
    ws.on('close', (code: number) => {
      connections.delete(ws);
      room.leave(connection.member);
      log.debug({ id: connection.member.id, code, online: connections.size }, 'chat connection closed');
    });

    room.join(connection.member);
  }

  function dropSlowConsumer(ws: WebSocket): void {
    log.warn({ id: connections.get(ws)?.member.id, backlog: ws.bufferedAmount }, 'closing slow chat consumer');
    ws.close(CloseCode.tryAgainLater, 'Too slow: unsent messages over the limit');
    setTimeout(() => ws.terminate(), SLOW_CONSUMER_GRACE_MS).unref();
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
        server.listen(port, host, () => {
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
    request.headers.upgrade?.toLowerCase() === 'websocket' &&
    typeof request.headers['sec-websocket-key'] === 'string' &&
    request.headers['sec-websocket-key'].length > 0
  );
}

/** Refuses a handshake with an HTTP reply in the error envelope, then closes the socket. */
function refuse(socket: Duplex, status: number, code: string, message: string, headers: Record<string, string> = {}): void {
  if (!socket.writable) return void socket.destroy();
  const body = JSON.stringify(envelopeOf(new RosterError(status, code, message)));
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.once('finish', () => socket.destroy());
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`,
  );
}
