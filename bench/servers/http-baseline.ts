/**
 * Benchmark child: the REST ceiling, a minimal `node:http` server over a Map with JSON.stringify. It
 * answers the endpoints the benchmark drives (health, get, list, create, patch) with Roster's JSON
 * shapes and the contract's list semantics, computed naively on every request: filter by role, filter
 * by search, stable sort, slice. No validation beyond what the shapes need, no logging, no hooks.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { User } from '../../src/users/schema.js';
import { answerParent, measureFill, memoryNow } from '../ipc.js';
import { benchUser } from '../users.js';
import type { RosterStarted } from './roster.js';

export type HttpBaselineCommand = { cmd: 'start'; users: number } | { cmd: 'memory' };
export type HttpBaselineStarted = Omit<RosterStarted, 'wsPort'>;

const USERS_PATH = '/api/v1/users';
const HEALTH_PATH = '/api/v1/health';
const MAX_PAGE_SIZE = 100;

const users = new Map<string, User>();
const emails = new Set<string>();

type Reply = [status: number, body: unknown];

const success = (message: string, data: unknown): unknown => ({ status: 'success', message, data });
const failure = (code: string, message: string): unknown => ({ status: 'error', error: { code, message } });
const notFound: Reply = [404, failure('USER_NOT_FOUND', 'User not found')];

const emailKey = (email: string): string => email.trim().toLowerCase();

/** Timestamps as Roster writes them: UTC microseconds, strictly increasing. */
let lastMicros = 0;
function nextTimestamp(): string {
  lastMicros = Math.max(Math.floor((performance.timeOrigin + performance.now()) * 1000), lastMicros + 1);
  const millis = Math.floor(lastMicros / 1000);
  return `${new Date(millis).toISOString().slice(0, 23)}${String(lastMicros - millis * 1000).padStart(3, '0')}`;
}

function positive(text: string | null, fallback: number): number | undefined {
  if (text === null) return fallback;
  return /^0*[1-9]\d{0,14}$/.test(text) ? Number(text) : undefined;
}

function sortValue(user: User, field: string): string {
  return Object.hasOwn(user, field) ? String((user as unknown as Record<string, unknown>)[field]) : '';
}

function list(query: URLSearchParams): Reply {
  const page = positive(query.get('page'), 1);
  const limit = positive(query.get('limit'), 20);
  if (page === undefined || limit === undefined)
    return [422, failure('VALIDATION_ERROR', 'page and limit must be positive integers')];
  const size = Math.min(limit, MAX_PAGE_SIZE);
  const role = query.get('role');
  const search = query.get('search')?.toLowerCase();
  const sort = query.get('sort') ?? 'created_at';
  const direction = (query.get('order') ?? 'desc') === 'desc' ? -1 : 1;

  let kept = [...users.values()];
  if (role !== null) kept = kept.filter((user) => user.role === role);
  if (search !== undefined) {
    kept = kept.filter((user) => user.name.toLowerCase().includes(search) || user.email.toLowerCase().includes(search));
  }
  // Array.prototype.sort is stable: ties keep creation order, as the contract's list does.
  kept.sort((a, b) => {
    const x = sortValue(a, sort);
    const y = sortValue(b, sort);
    return x < y ? -direction : x > y ? direction : 0;
  });
  const pagination = { total: kept.length, page, limit: size, pages: Math.ceil(kept.length / size) };
  return [200, success('Users retrieved', { users: kept.slice((page - 1) * size, page * size), pagination })];
}

function create(body: Record<string, unknown>): Reply {
  const { name, email, role } = body;
  if (typeof name !== 'string' || typeof email !== 'string')
    return [422, failure('VALIDATION_ERROR', 'name and email are required')];
  if (emails.has(emailKey(email))) return [409, failure('EMAIL_EXISTS', 'Email already exists')];
  const now = nextTimestamp();
  const user: User = {
    id: randomUUID(),
    name,
    email,
    role: typeof role === 'string' ? role : 'user',
    created_at: now,
    updated_at: now,
  };
  users.set(user.id, user);
  emails.add(emailKey(email));
  return [201, success('User created', user)];
}

function patch(id: string, body: Record<string, unknown>): Reply {
  const current = users.get(id);
  if (!current) return notFound;
  const changes: Partial<User> = {};
  for (const field of ['name', 'email', 'role'] as const) {
    const value = body[field];
    if (typeof value === 'string') changes[field] = value;
  }
  const next: User = { ...current, ...changes, updated_at: nextTimestamp() };
  users.set(id, next);
  if (emailKey(next.email) !== emailKey(current.email)) {
    emails.delete(emailKey(current.email));
    emails.add(emailKey(next.email));
  }
  return [200, success('User updated', next)];
}

function readJson(request: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('error', reject);
    request.on('end', () => {
      try {
        const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve(
          typeof value === 'object' && value !== null && !Array.isArray(value)
            ? (value as Record<string, unknown>)
            : undefined,
        );
      } catch {
        resolve(undefined);
      }
    });
  });
}

/** Reads are answered synchronously; only writes wait for their body. */
function route(request: IncomingMessage): Reply | Promise<Reply> {
  const url = request.url ?? '/';
  const mark = url.indexOf('?');
  const path = mark === -1 ? url : url.slice(0, mark);
  const id = path.startsWith(`${USERS_PATH}/`) ? decodeURIComponent(path.slice(USERS_PATH.length + 1)) : undefined;
  switch (request.method) {
    case 'GET':
      if (path === HEALTH_PATH)
        return [200, success('Service is healthy', { status: 'healthy', timestamp: new Date().toISOString() })];
      if (path === USERS_PATH) return list(new URLSearchParams(mark === -1 ? '' : url.slice(mark + 1)));
      if (id !== undefined) {
        const user = users.get(id);
        return user ? [200, success('User retrieved', user)] : notFound;
      }
      break;
    case 'POST':
      if (path === USERS_PATH) return withBody(request, create);
      break;
    case 'PATCH':
      if (id !== undefined) return withBody(request, (body) => patch(id, body));
      break;
  }
  return [404, failure('NOT_FOUND', 'No such endpoint')];
}

async function withBody(request: IncomingMessage, handle: (body: Record<string, unknown>) => Reply): Promise<Reply> {
  const body = await readJson(request);
  return body ? handle(body) : [400, failure('INVALID_JSON', 'The body must be a JSON object')];
}

function answer(response: ServerResponse, [status, body]: Reply): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

answerParent<HttpBaselineCommand>(async (command) => {
  if (command.cmd === 'memory') return memoryNow();
  const fill = await measureFill(() => {
    for (let index = 0; index < command.users; index++) {
      const user = benchUser(index);
      users.set(user.id, user);
      emails.add(emailKey(user.email));
    }
  });
  const server = createServer({ keepAliveTimeout: 72_000 }, (request, response) => {
    const reply = route(request);
    if (Array.isArray(reply)) answer(response, reply);
    else
      reply.then(
        (value) => answer(response, value),
        () => answer(response, [500, failure('INTERNAL_ERROR', 'Internal error')]),
      );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const result: HttpBaselineStarted = { port: (server.address() as AddressInfo).port, ...fill };
  return result;
});
