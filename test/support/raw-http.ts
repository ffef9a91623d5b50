/** One HTTP exchange over a raw `node:net` socket: bytes written as given, the response read by hand. */
import { once } from 'node:events';
import { connect } from 'node:net';
import { within } from './wait.js';

export interface HttpHead {
  statusLine: string;
  status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Record<string, string>;
}

/** Parses an HTTP response head (everything before the blank line). */
export function parseHead(text: string): HttpHead {
  const [statusLine = '', ...lines] = text.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? NaN);
  return { statusLine, status, headers };
}

export interface HttpExchange extends HttpHead {
  body: string;
  /** Whether the server closed the connection after the response. */
  closedByServer: boolean;
  elapsedMs: number;
}

/**
 * Writes raw request bytes and reads one HTTP response: the head, then the body by Content-Length
 * (or until the server closes). Rejects if nothing complete arrives within `timeoutMs` (a hang).
 */
export async function rawHttp(port: number, requestText: string | Buffer, timeoutMs = 3000): Promise<HttpExchange> {
  const started = Date.now();
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  // Errors are ignored above, so a refused connection would never emit 'connect': bounded.
  await within(once(socket, 'connect'), timeoutMs, `a connection to port ${port}`);
  socket.write(requestText);
  let buffer = Buffer.alloc(0);
  let closed = false;
  try {
    return await new Promise<HttpExchange>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(
              `no complete HTTP response within ${timeoutMs} ms; got ${JSON.stringify(buffer.toString('latin1'))}`,
            ),
          ),
        timeoutMs,
      );
      const tryFinish = (final: boolean) => {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) {
          if (final) {
            clearTimeout(timer);
            reject(
              new Error(`connection closed without a response head; got ${JSON.stringify(buffer.toString('latin1'))}`),
            );
          }
          return;
        }
        const head = parseHead(buffer.subarray(0, end).toString('latin1'));
        const bodyBytes = buffer.subarray(end + 4);
        const declared = head.headers['content-length'];
        let body: Buffer | undefined;
        if (head.headers['transfer-encoding']?.toLowerCase() === 'chunked') body = dechunk(bodyBytes);
        else if (declared !== undefined)
          body = bodyBytes.length >= Number(declared) ? bodyBytes.subarray(0, Number(declared)) : undefined;
        else if (final) body = bodyBytes;
        if (body === undefined) return;
        const complete = body;
        // Give the server's FIN a moment to arrive when it was sent with the response.
        const finish = () => {
          clearTimeout(timer);
          resolve({
            ...head,
            body: complete.toString('utf8'),
            closedByServer: closed,
            elapsedMs: Date.now() - started,
          });
        };
        // A keep-alive response will not be followed by a FIN; otherwise give the FIN a moment to arrive.
        if (closed || head.headers.connection?.toLowerCase() === 'keep-alive') finish();
        else {
          const grace = setTimeout(finish, 150);
          socket.once('end', () => {
            clearTimeout(grace);
            closed = true;
            finish();
          });
        }
      };
      socket.on('data', (chunk: Buffer) => {
        buffer = Buffer.concat([buffer, chunk]);
        tryFinish(false);
      });
      socket.on('end', () => {
        closed = true;
        tryFinish(true);
      });
    });
  } finally {
    socket.destroy();
  }
}

/** Decodes a complete chunked body, or returns undefined while the last chunk has not arrived. */
function dechunk(bytes: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', offset);
    if (lineEnd < 0) return undefined;
    const size = parseInt(bytes.subarray(offset, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new Error('bad chunked encoding');
    const start = lineEnd + 2;
    if (size === 0) return bytes.indexOf('\r\n', start) >= 0 ? Buffer.concat(parts) : undefined;
    if (bytes.length < start + size + 2) return undefined;
    parts.push(bytes.subarray(start, start + size));
    offset = start + size + 2;
  }
}
