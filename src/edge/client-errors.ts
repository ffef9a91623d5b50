/**
 * Errors Node's HTTP parser raises before either door's own code sees a request (malformed HTTP, headers
 * too large, request timeout): the REST port's and the chat port's servers both answer them with the
 * error envelope, written straight to the socket.
 */
import type { Socket } from 'node:net';
import { RosterError } from '../errors.js';
import { writeRawError } from './raw-reply.js';

export function clientErrorHandler(error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  // A HEAD request refused by the parser still gets no body. Node hands over only the packet it was
  // parsing, which holds the request line when the request came in one piece (the usual case).
  const headOnly = Buffer.isBuffer(error.rawPacket) && error.rawPacket.subarray(0, 5).toString('latin1') === 'HEAD ';
  writeRawError(
    socket,
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new RosterError('HEADERS_TOO_LARGE', 'The request headers are too large')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new RosterError('REQUEST_TIMEOUT', 'The request took too long')
        : new RosterError('ERROR', 'The request is malformed'),
    { headOnly },
  );
}
