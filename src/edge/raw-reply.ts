/**
 * Error replies written straight to a socket, for the moments before (or outside) Fastify: HTTP parse
 * errors, CONNECT requests, refused WebSocket handshakes. Same envelope and headers as every other
 * error reply.
 */
import { STATUS_CODES, type ServerOptions } from 'node:http';
import type { Duplex } from 'node:stream';
import { envelopeOf, type RosterError } from '../errors.js';

/**
 * Node server options for slow clients. Node checks these deadlines only every
 * `connectionsCheckingInterval` (30 s by default), which would let a trickling client hold its socket
 * for up to that much longer than the setting says; checking every second keeps the settings honest.
 */
export function timeouts(headersTimeoutMs: number, requestTimeoutMs: number): ServerOptions {
  return {
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestTimeoutMs,
    connectionsCheckingInterval: Math.min(1_000, headersTimeoutMs),
  };
}

/** The media type of every JSON reply (envelopes, and JSON text written by hand). */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Headers every reply of Roster carries. */
export const COMMON_HEADERS: Readonly<Record<string, string>> = { 'X-Content-Type-Options': 'nosniff' };

/**
 * Writes the error as a complete HTTP/1.1 response, then closes the connection. With `headOnly` (the
 * request was a HEAD) the body is left out, as HTTP requires; Content-Length still gives its size.
 */
export function writeRawError(socket: Duplex, error: RosterError, options: { headOnly?: boolean } = {}): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(envelopeOf(error));
  const headers = {
    Connection: 'close',
    'Content-Type': JSON_CONTENT_TYPE,
    'Content-Length': String(Buffer.byteLength(body)),
    ...COMMON_HEADERS,
    ...error.headers,
  };
  const head = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.once('finish', () => socket.destroy());
  socket.end(`HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\n${head}\r\n${options.headOnly ? '' : body}`);
}
