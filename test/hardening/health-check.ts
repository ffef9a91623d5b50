/**
 * The one check every hardening test ends with: after whatever hostile input it sent, Roster is still
 * healthy and correct. Health answers 200 (over a fresh TCP connection), a chat round trip works (a new
 * `ws` client sends a chat and receives its own broadcast), and the users created before the attack are
 * still there, unchanged. Plus the envelope and header checks the hardening tests share.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { ChatClient, startRoster, type Running } from '../helpers.js';
import { within } from '../chat/support.js';

/** A user as the API returns it. */
export interface UserRecord {
  id: string;
  name: string;
  email: string;
  role: string;
  created_at: string;
  updated_at: string;
}

export const USER_KEYS = ['created_at', 'email', 'id', 'name', 'role', 'updated_at'];

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

/** Creates `count` users through the API: the data that must survive every attack. */
export async function plantUsers(running: Running, count = 3, label = 'baseline'): Promise<UserRecord[]> {
  const users: UserRecord[] = [];
  for (let i = 0; i < count; i++) {
    const response = await plainRequest(`${running.api}/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        name: `${label} ${i} Ünïcødé 😀`,
        email: `${label}.${i}.${randomUUID()}@example.com`,
        role: i === 0 ? 'admin' : 'user',
      }),
    });
    assert.equal(response.status, 201, response.text);
    users.push(response.body.data as UserRecord);
  }
  return users;
}

/**
 * Roster is still healthy and correct: health 200 on a fresh connection, a chat round trip, and every
 * user of `intact` readable and identical to what it was. Bounded in time, so a dead or wedged server
 * fails here with a message rather than hanging the test.
 */
export async function assertHealthy(
  running: Running,
  intact: readonly UserRecord[] = [],
  what = 'after the attack',
): Promise<void> {
  const health = await plainRequest(`${running.api}/health`);
  assert.equal(health.status, 200, `health ${what}: ${health.text}`);
  assert.equal(health.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(health.body?.status, 'success');
  assert.equal(health.body?.data?.status, 'healthy');

  await chatRoundTrip(running, what);

  for (const user of intact) {
    const stored = await plainRequest(`${running.api}/users/${user.id}`);
    assert.equal(stored.status, 200, `user ${user.id} ${what}: ${stored.text}`);
    assert.deepEqual(stored.body.data, user, `user ${user.id} unchanged ${what}`);
  }
}

/** A new chat client sends a chat and receives its own broadcast, from its own id. */
export async function chatRoundTrip(running: Running, what = 'after the attack'): Promise<void> {
  const client = new ChatClient(running.wsUrl);
  client.ws.on('error', () => {});
  try {
    const welcome = await within(
      client.next((m) => m.type === 'system'),
      5000,
      `the chat welcome ${what}`,
    );
    assert.equal(typeof welcome.message, 'string');
    const text = `round-trip ${randomUUID()}`;
    client.send({ type: 'chat', message: text });
    const echo = await within(
      client.next((m) => m.type === 'chat' && m.message === text),
      5000,
      `the chat broadcast ${what}`,
    );
    assert.equal(typeof echo.from, 'string');
    assert.ok(echo.from.length > 0);
  } finally {
    client.ws.terminate();
  }
}

/** A Roster for one hardening file or test, with users planted before the attack. */
export interface Hardened {
  running: Running;
  baseline: UserRecord[];
  /** assertHealthy with the baseline. */
  check(what?: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startHardened(env: Record<string, string> = {}): Promise<Hardened> {
  // The attacks come from many sockets of one address, standing in for many clients: the per-address
  // cap (test/protection/connections.test.ts) would stop them before what they test.
  const running = await startRoster({ SHUTDOWN_TIMEOUT_MS: '2000', MAX_CONNECTIONS_PER_ADDRESS: '0', ...env });
  const baseline = await plantUsers(running);
  return {
    running,
    baseline,
    check: (what) => assertHealthy(running, baseline, what),
    stop: () => running.stop(),
  };
}

/** Headers every reply of Roster carries (docs/decisions.md). */
export function assertCommonHeaders(headers: Record<string, string | string[] | undefined>, what: string): void {
  assert.equal(headers['x-powered-by'], undefined, `no X-Powered-By on ${what}`);
  assert.equal(headers['x-content-type-options'], 'nosniff', `nosniff on ${what}`);
}

/**
 * The error envelope with JSON content type, the common headers, and (when given) the status and code.
 * Accepts the headers of node:http, of fetch, or of the raw parser in `../chat/frames.ts`.
 */
export function assertErrorEnvelope(
  response: {
    status: number;
    headers: Headers | Record<string, string | string[] | undefined>;
    text?: string;
    body?: unknown;
  },
  expected: { status?: number | number[]; code?: string | string[] } = {},
  what = 'the reply',
): { code: string; message: string; details?: { field: string; message: string }[] } {
  const headers = response.headers instanceof Headers ? Object.fromEntries(response.headers) : response.headers;
  const text = response.text ?? (typeof response.body === 'string' ? response.body : JSON.stringify(response.body));
  const statuses = expected.status === undefined ? undefined : [expected.status].flat();
  if (statuses)
    assert.ok(
      statuses.includes(response.status),
      `${what}: status ${response.status}, expected ${statuses.join(' or ')}; ${text}`,
    );
  assert.ok(response.status >= 400 && response.status < 500, `${what}: a 4xx, got ${response.status}; ${text}`);
  assert.equal(headers['content-type'], 'application/json; charset=utf-8', `${what}: JSON content type`);
  assertCommonHeaders(headers, what);
  let body: { status?: unknown; error?: { code?: unknown; message?: unknown; details?: unknown } };
  try {
    body = JSON.parse(text);
  } catch {
    assert.fail(`${what}: the body is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
  }
  assert.equal(body.status, 'error', `${what}: ${text}`);
  assert.deepEqual(Object.keys(body).sort(), ['error', 'status'], `${what}: nothing beside status and error`);
  assert.equal(typeof body.error?.code, 'string', `${what}: error.code`);
  assert.equal(typeof body.error?.message, 'string', `${what}: error.message`);
  if (body.error?.details !== undefined) {
    assert.ok(Array.isArray(body.error.details), `${what}: details is an array`);
    for (const detail of body.error.details as unknown[]) {
      assert.equal(typeof (detail as { field?: unknown }).field, 'string');
      assert.equal(typeof (detail as { message?: unknown }).message, 'string');
    }
  }
  const codes = expected.code === undefined ? undefined : [expected.code].flat();
  if (codes)
    assert.ok(
      codes.includes(body.error!.code as string),
      `${what}: code ${String(body.error!.code)}, expected ${codes.join(' or ')}`,
    );
  return body.error as { code: string; message: string; details?: { field: string; message: string }[] };
}

/** 422 VALIDATION_ERROR whose details name exactly these fields, in this order. */
export function assertValidationError(
  response: PlainResponse | { status: number; headers: Headers; text: string },
  fields: string[],
  what = 'the reply',
): void {
  const error = assertErrorEnvelope(response, { status: 422, code: 'VALIDATION_ERROR' }, what);
  assert.deepEqual(
    (error.details ?? []).map((detail) => detail.field),
    fields,
    `${what}: details name ${fields.join(', ')}`,
  );
}

/** Every own property of Object.prototype, to prove later that nothing was added to it. */
export function prototypeSnapshot(): string[] {
  return Object.getOwnPropertyNames(Object.prototype).sort();
}
