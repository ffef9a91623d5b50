/**
 * The one check every hardening test ends with: after whatever hostile input it sent, Roster is still
 * healthy and correct. Health answers 200 (over a fresh TCP connection), a chat round trip works (a new
 * `ws` client sends a chat and receives its own broadcast), and the users created before the attack are
 * still there, unchanged.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { User } from '../../src/protocol/index.js';
import { ChatClient } from './chat-client.js';
import { plainRequest } from './http.js';
import { startRoster, type Running } from './roster.js';
import { eventually, within } from './wait.js';

/** A user as the API returns it: the typed client's `User`, generated from the OpenAPI document. */
export type UserRecord = User;

export const USER_KEYS = ['created_at', 'email', 'id', 'name', 'role', 'updated_at'];

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

/** Waits until the room holds `expected` members (white-box: the server's own bookkeeping settles). */
export async function roomSettles(running: Running, expected: number, ms = 5000): Promise<void> {
  let size: number | undefined;
  await eventually(
    async () => (size = await running.server.chat.size()) === expected,
    `the room to hold ${expected} members`,
    ms,
    5,
  ).catch(() => assert.fail(`the room holds ${size} members, expected ${expected}`));
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

/** Every own property of Object.prototype, to prove later that nothing was added to it. */
export function prototypeSnapshot(): string[] {
  return Object.getOwnPropertyNames(Object.prototype).sort();
}
