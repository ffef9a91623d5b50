/**
 * The HTTP side the two baselines share (http-baseline.ts over a Map, pg-baseline.ts over PostgreSQL):
 * plain `node:http`, Roster's paths and JSON shapes, JSON.stringify, no validation beyond what the
 * shapes need, no logging, no hooks. Each baseline brings only its four handlers.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Reply = [status: number, body: unknown];
type Body = Record<string, unknown>;

const USERS_PATH = '/api/v1/users';
const HEALTH_PATH = '/api/v1/health';
const MAX_PAGE_SIZE = 100;

export const success = (message: string, data: unknown): unknown => ({ status: 'success', message, data });
export const failure = (code: string, message: string): unknown => ({ status: 'error', error: { code, message } });
export const notFound: Reply = [404, failure('USER_NOT_FOUND', 'User not found')];

/** A baseline's answers to the bench's scenarios. Reads may answer synchronously; only writes wait for a body. */
export interface BaselineHandlers {
  get(id: string): Reply | Promise<Reply>;
  list(query: URLSearchParams): Reply | Promise<Reply>;
  create(body: Body): Reply | Promise<Reply>;
  patch(id: string, body: Body): Reply | Promise<Reply>;
}

function positive(text: string | null, fallback: number): number | undefined {
  if (text === null) return fallback;
  return /^0*[1-9]\d{0,14}$/.test(text) ? Number(text) : undefined;
}

/** The page asked for and its size (`limit`, at most the maximum page size), or the 422 to answer. */
export function pageOf(query: URLSearchParams): { page: number; size: number } | Reply {
  const page = positive(query.get('page'), 1);
  const limit = positive(query.get('limit'), 20);
  if (page === undefined || limit === undefined)
    return [422, failure('VALIDATION_ERROR', 'page and limit must be positive integers')];
  return { page, size: Math.min(limit, MAX_PAGE_SIZE) };
}

function readJson(request: IncomingMessage): Promise<Body | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('error', reject);
    request.on('end', () => {
      try {
        const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve(typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Body) : undefined);
      } catch {
        resolve(undefined);
      }
    });
  });
}

async function withBody(request: IncomingMessage, handle: (body: Body) => Reply | Promise<Reply>): Promise<Reply> {
  const body = await readJson(request);
  return body ? handle(body) : [400, failure('INVALID_JSON', 'The body must be a JSON object')];
}

function route(request: IncomingMessage, handlers: BaselineHandlers): Reply | Promise<Reply> {
  const url = request.url ?? '/';
  const mark = url.indexOf('?');
  const path = mark === -1 ? url : url.slice(0, mark);
  const id = path.startsWith(`${USERS_PATH}/`) ? decodeURIComponent(path.slice(USERS_PATH.length + 1)) : undefined;
  switch (request.method) {
    case 'GET':
      if (path === HEALTH_PATH)
        return [200, success('Service is healthy', { status: 'healthy', timestamp: new Date().toISOString() })];
      if (path === USERS_PATH) return handlers.list(new URLSearchParams(mark === -1 ? '' : url.slice(mark + 1)));
      if (id !== undefined) return handlers.get(id);
      break;
    case 'POST':
      if (path === USERS_PATH) return withBody(request, (body) => handlers.create(body));
      break;
    case 'PATCH':
      if (id !== undefined) return withBody(request, (body) => handlers.patch(id, body));
      break;
  }
  return [404, failure('NOT_FOUND', 'No such endpoint')];
}

function answer(response: ServerResponse, [status, body]: Reply): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

/** Listens on an ephemeral loopback port and resolves to it. */
export async function serveBaseline(handlers: BaselineHandlers): Promise<number> {
  const server = createServer({ keepAliveTimeout: 72_000 }, (request, response) => {
    const reply = route(request, handlers);
    if (Array.isArray(reply)) answer(response, reply);
    else
      reply.then(
        (value) => answer(response, value),
        () => answer(response, [500, failure('INTERNAL_ERROR', 'Internal error')]),
      );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}
