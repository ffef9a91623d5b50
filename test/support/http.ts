/**
 * HTTP requests of the tests: `request` through fetch (keep-alive, parsed JSON), `plainRequest` over a
 * connection of its own, `sendRaw` for bytes no client library would send, and a port nothing listens on.
 */
import { once } from 'node:events';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo } from 'node:net';

export interface JsonResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON body, or undefined when the body is empty. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

/**
 * One HTTP request; a plain object body is sent as JSON, a string body as is. Rejects, naming the
 * request, if the whole answer has not arrived within `timeoutMs`: fetch alone waits up to 300 s for a
 * server that never answers. 60 s by default, well past the slowest honest answer of the suite.
 */
export async function request(
  url: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<JsonResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined;
  if (typeof options.body === 'string') body = options.body;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const method = options.method ?? 'GET';
  const timeoutMs = options.timeoutMs ?? 60_000;
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(timeoutMs) });
    text = await response.text();
  } catch (error) {
    if ((error as Error).name !== 'TimeoutError') throw error;
    throw new Error(`no answer to ${method} ${url} within ${timeoutMs} ms`);
  }
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text.length > 0 ? JSON.parse(text) : undefined,
  };
}

export interface PlainResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** Parsed JSON body, or undefined when the body is empty or not JSON. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/**
 * One request over its own TCP connection (no agent, `Connection: close`), so that it goes through
 * accept like a new client would and leaves no kept-alive socket behind (which matters to tests of the
 * connection cap). Rejects if no complete answer arrives within `timeoutMs`.
 */
export function plainRequest(
  url: string,
  options: { method?: string; body?: string | Buffer; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<PlainResponse> {
  const { method = 'GET', body, headers = {}, timeoutMs = 5000 } = options;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, agent: false, headers: { connection: 'close', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = text.length > 0 ? JSON.parse(text) : undefined;
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
      });
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer to ${method} ${url} within ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body);
  });
}

/** Sends raw bytes and resolves with everything the server answered before closing, or within `waitMs`. */
export function sendRaw(port: number, data: string, waitMs = 2000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(received);
    }, waitMs);
    socket.on('data', (chunk) => (received += chunk.toString()));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(received);
    });
    socket.on('error', reject);
    socket.write(data);
  });
}

/** A port that was free a moment ago: nothing listens there. */
export async function freePort(): Promise<number> {
  const server = createTcpServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
