/**
 * Plain HTTP sent to a TLS port (`http://` for `https://`, `ws://` for `wss://`): answered with a 400
 * in the error envelope that says to use TLS, instead of a connection closed without a word.
 *
 * OpenSSL recognises an HTTP request where it expected a TLS record (ERR_SSL_HTTP_REQUEST) and Node
 * reports it as 'tlsClientError', before destroying the connection. The reply is written on the raw TCP
 * socket under the TLS one: Node keeps it as the TLS socket's `_parent`, an internal property with no
 * public equivalent; without it (another Node), the connection is closed as before. Written by hand:
 * neither Node nor Fastify offers this.
 */
import type { Server as TlsServer } from 'node:tls';
import type { Duplex } from 'node:stream';
import { RosterError } from '../errors.js';
import { writeRawError } from './raw-reply.js';

export function answerPlainHttp(server: TlsServer): void {
  server.on('tlsClientError', (error: Error & { code?: string }, tlsSocket: Duplex) => {
    if (error.code !== 'ERR_SSL_HTTP_REQUEST') return;
    const raw = (tlsSocket as Duplex & { _parent?: unknown })._parent;
    if (!raw || typeof (raw as Duplex).end !== 'function' || (raw as Duplex).destroyed) return;
    writeRawError(
      raw as Duplex,
      new RosterError('ERROR', 'This port speaks TLS only: use https:// (or wss:// for the chat)'),
    );
  });
}
