/**
 * A real HTTP server in front of a Roster that plays its outages: for each request, a plan says whether
 * to answer 503 (or 429) itself, to forward the request and answer 503 in place of Roster's reply (the
 * write happened, its answer was lost), or to forward it as it is. Every request that reached it is
 * recorded (method, path, headers, body). Closed when the test ends.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

/**
 * What the front does with one request: answer `status` itself (before or after forwarding), or
 * forward. 409 is IDEMPOTENCY_KEY_IN_USE (a keyed create still being processed).
 */
export type FlakyStep =
  | { answer: 503 | 429 | 409; retryAfter?: string; forwardFirst?: boolean }
  // Forwarded; with `link`, the reply's Link header replaced by it (a server whose links go wrong).
  | { forward: true; link?: string };

export interface SeenRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** What the client was answered. */
  status: number;
}

export interface FlakyApi {
  /** The front's API URL (…/api/v1), to give the client in Roster's place. */
  api: string;
  seen: SeenRequest[];
}

/**
 * `plan(request, n)` is asked for the n-th request (0-based) that reached the front; `target` is the
 * Roster's origin.
 */
export async function flakyApi(
  t: TestContext,
  target: string,
  plan: (request: { method: string; path: string }, n: number) => FlakyStep,
): Promise<FlakyApi> {
  const seen: SeenRequest[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const method = request.method ?? 'GET';
      const path = request.url ?? '/';
      const step = plan({ method, path }, seen.length);
      const record: SeenRequest = { method, path, headers: request.headers, body, status: 0 };
      seen.push(record);
      const refuse = (status: 503 | 429 | 409, retryAfter?: string) => {
        record.status = status;
        const code = { 503: 'SERVICE_UNAVAILABLE', 429: 'RATE_LIMITED', 409: 'IDEMPOTENCY_KEY_IN_USE' }[status];
        response
          .writeHead(status, {
            'content-type': 'application/json',
            ...(retryAfter === undefined ? {} : { 'retry-after': retryAfter }),
          })
          .end(JSON.stringify({ status: 'error', error: { code, message: 'played by the test' } }));
      };
      if ('answer' in step && !step.forwardFirst) return refuse(step.answer, step.retryAfter);
      const headers = Object.fromEntries(
        Object.entries(request.headers).filter(
          (entry): entry is [string, string] =>
            typeof entry[1] === 'string' && !['host', 'connection'].includes(entry[0]),
        ),
      );
      void fetch(`${target}${path}`, { method, headers, ...(body === '' ? {} : { body }) }).then(
        async (reply) => {
          const text = await reply.text();
          if ('answer' in step) return refuse(step.answer, step.retryAfter);
          record.status = reply.status;
          const out: Record<string, string> = {};
          reply.headers.forEach((value, name) => {
            if (!['content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(name)) out[name] = value;
          });
          if ('link' in step && step.link !== undefined) out.link = step.link;
          response.writeHead(reply.status, out).end(text);
        },
        () => response.destroy(),
      );
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return { api: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, seen };
}
