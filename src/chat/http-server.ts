/**
 * The HTTP server under the chat door, which only upgrades (ws-server.ts handles its 'upgrade'): a
 * plain request is refused, TLS when configured, and the same guards and replies to malformed HTTP as
 * the REST port.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import type { ChatConfig } from '../config/index.js';
import { clientErrorHandler } from '../edge/client-errors.js';
import { guardConnections } from '../edge/connection-guard.js';
import { timeouts, writeRawError } from '../edge/raw-reply.js';
import { answerPlainHttp } from '../edge/tls-plain.js';
import { RosterError } from '../errors.js';
import type { ChatMetrics } from '../ops/metrics.js';
import type { ChatProtection } from './handshake.js';

/** Handshakes beyond WS_MAX_CONNECTIONS that are at least answered (503) rather than dropped on accept. */
const HANDSHAKE_HEADROOM = 256;

/** `unexpected`: the door's last line of defence (ws-server.ts), for an error no handler expected. */
export function chatHttpServer(
  config: ChatConfig,
  protection: ChatProtection,
  metrics: ChatMetrics,
  log: Logger,
  unexpected: (error: unknown, what: string, end: () => void) => void,
): Server {
  const plainRequest = (request: IncomingMessage) => {
    try {
      // A plain HTTP request to the chat port is a handshake without an upgrade: 400 (docs/decisions.md).
      const refusal = new RosterError('ERROR', 'This port accepts WebSocket connections only');
      writeRawError(request.socket, refusal, { headOnly: request.method === 'HEAD' });
    } catch (error) {
      unexpected(error, 'request', () => request.socket.destroy());
    }
  };
  const serverOptions = timeouts(config.handshakeTimeoutMs, config.handshakeTimeoutMs);
  const server: Server = protection.tls
    ? (createTlsServer(
        {
          ...serverOptions,
          cert: protection.tls.cert,
          key: protection.tls.key,
          ciphers: protection.tls.ciphers,
          minVersion: 'TLSv1.2',
        },
        plainRequest,
      ) as unknown as Server)
    : createServer(serverOptions, plainRequest);
  // Upgraded sockets still count as the server's connections. Room for handshakes beyond the room's
  // limit, so that the next ones get their 503 rather than a dropped connection: as many again, and
  // at least HANDSHAKE_HEADROOM however small the limit (a burst arrives before any 503 has closed
  // its socket); past that, the kernel backlog is the only queue.
  server.maxConnections = config.maxConnections + Math.max(config.maxConnections, HANDSHAKE_HEADROOM);
  // One address holds only its share of those, nor any silently for long (edge/connection-guard.ts).
  guardConnections(server, {
    ...config.connections,
    exempt: protection.trustedPeer ?? (() => false),
    onRefused: (reason) => metrics.connectionRefused(reason),
  });
  // Malformed HTTP, headers too large, too slow: the same replies as on the REST port.
  server.on('clientError', clientErrorHandler);
  // ws:// to the WSS port: a 400 that says so (edge/tls-plain.ts).
  if (protection.tls) answerPlainHttp(server as unknown as TlsServer);
  // Once listening, a server error (say, out of file descriptors on accept) is logged, not fatal.
  // (A failure to listen is the start's to report, main.ts: not logged here.)
  server.on('error', (error) => {
    if (server.listening) log.error({ err: error }, 'chat server error');
  });
  return server;
}
