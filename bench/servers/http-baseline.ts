/**
 * Benchmark child: the REST ceiling, a minimal `node:http` server over a Map with JSON.stringify. It
 * answers the endpoints the benchmark drives (health, get, list, create, patch) with Roster's JSON
 * shapes and the contract's list semantics, computed naively on every request: filter by role, filter
 * by search, stable sort, slice. No validation beyond what the shapes need, no logging, no hooks.
 */
import { randomUUID } from 'node:crypto';
import type { User } from '../../src/users/schema.js';
import { answerParent, measureFill, memoryNow } from '../ipc.js';
import { benchUser } from '../users.js';
import { failure, notFound, pageOf, serveBaseline, success, type Reply } from './baseline-http.js';
import type { RosterStarted } from './roster.js';

export type HttpBaselineCommand = { cmd: 'start'; users: number } | { cmd: 'memory' };
export type HttpBaselineStarted = Omit<RosterStarted, 'wsPort'>;

const users = new Map<string, User>();
const emails = new Set<string>();

const emailKey = (email: string): string => email.trim().toLowerCase();

/** Timestamps as Roster writes them: UTC microseconds, strictly increasing. */
let lastMicros = 0;
function nextTimestamp(): string {
  lastMicros = Math.max(Math.floor((performance.timeOrigin + performance.now()) * 1000), lastMicros + 1);
  const millis = Math.floor(lastMicros / 1000);
  return `${new Date(millis).toISOString().slice(0, 23)}${String(lastMicros - millis * 1000).padStart(3, '0')}`;
}

function sortValue(user: User, field: string): string {
  return Object.hasOwn(user, field) ? String((user as unknown as Record<string, unknown>)[field]) : '';
}

function list(query: URLSearchParams): Reply {
  const asked = pageOf(query);
  if (Array.isArray(asked)) return asked;
  const { page, size } = asked;
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

function get(id: string): Reply {
  const user = users.get(id);
  return user ? [200, success('User retrieved', user)] : notFound;
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
  const port = await serveBaseline({ get, list, create, patch });
  const result: HttpBaselineStarted = { port, ...fill };
  return result;
});
