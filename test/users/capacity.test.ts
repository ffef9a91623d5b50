/**
 * MAX_USERS: a store filled to its cap refuses creates with 507 INSUFFICIENT_STORAGE in the envelope,
 * while reads, updates and deletes go on; health says so before the store is full, and /metrics shows
 * how full it is. The default cap, derived from the heap limit, is shown to hold in a real process with
 * a small heap filled with worst-case users: it refuses creates long before the heap runs out.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import {
  automaticMaxUsers,
  loadConfig,
  USERS_HEAP_SHARE,
  WORST_CASE_BYTES_PER_CHANGE,
  WORST_CASE_BYTES_PER_USER,
} from '../../src/config/index.js';
import { request, RosterProcess, startRoster } from '../support/index.js';

/** The memory store's change log at worst (CHANGES_MAX's default), off the users' share of the heap. */
const CHANGES_HEAP = 10_000 * WORST_CASE_BYTES_PER_CHANGE;

const MIB = 2 ** 20;

/** A user at the largest sizes the rules allow, and the most bytes per character: the worst case for memory. */
function worstCaseUser(n: number) {
  const tag = String(n).padStart(8, '0');
  return { name: '😀'.repeat(192) + tag, email: `${'ü'.repeat(234)}${tag}@exämple.com`, role: 'user' };
}

/** Creates users from `from` on, `concurrency` at a time, until one gets a reply that is not 201; returns it with the count. */
async function fillUntilRefused(api: string, concurrency: number, from = 0) {
  let next = from;
  let created = 0;
  let refusal: Awaited<ReturnType<typeof request>> | undefined;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (!refusal) {
        const response = await request(`${api}/users`, { method: 'POST', body: worstCaseUser(next++) });
        if (response.status === 201) created++;
        else refusal ??= response;
      }
    }),
  );
  return { created, refusal: refusal! };
}

describe('MAX_USERS', () => {
  test('past the cap: 507 in the envelope for creates; reads, updates and deletes go on; health and metrics tell', async (t) => {
    const roster = await startRoster({ MAX_USERS: '50' });
    t.after(() => roster.stop());
    const seeded = (await request(`${roster.api}/users`)).body.data.pagination.total as number;

    // 90 % of 50 is 45: healthy below, degraded (still 200) from there, before any create is refused.
    for (let i = seeded; i < 44; i++)
      assert.equal((await request(`${roster.api}/users`, { method: 'POST', body: worstCaseUser(i) })).status, 201);
    const below = await request(`${roster.api}/health`);
    assert.equal(below.status, 200);
    assert.equal(below.body.data.status, 'healthy');
    assert.deepEqual(below.body.data.storage, { users: 44, capacity: 50 });
    assert.equal((await request(`${roster.api}/users`, { method: 'POST', body: worstCaseUser(44) })).status, 201);
    const near = await request(`${roster.api}/health`);
    assert.equal(near.status, 200);
    assert.equal(near.body.data.status, 'degraded');
    assert.match(near.body.message, /user store nearly full \(45 of 50 users\)/);

    const { created, refusal } = await fillUntilRefused(roster.api, 1, 45);
    assert.equal(created, 5);
    assert.equal(refusal.status, 507, refusal.text);
    assert.match(refusal.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(refusal.body.status, 'error');
    assert.equal(refusal.body.error.code, 'INSUFFICIENT_STORAGE');
    assert.match(refusal.body.error.message, /MAX_USERS/);
    // An invalid create is still told what is wrong with it, first.
    assert.equal((await request(`${roster.api}/users`, { method: 'POST', body: { name: '' } })).status, 422);

    const list = await request(`${roster.api}/users?limit=100`);
    assert.equal(list.status, 200);
    assert.equal(list.body.data.pagination.total, 50);
    const [first, second] = list.body.data.users;
    assert.equal((await request(`${roster.api}/users/${first.id}`)).status, 200);
    assert.equal(
      (await request(`${roster.api}/users/${first.id}`, { method: 'PATCH', body: { name: 'Still editable' } })).status,
      200,
    );
    assert.equal(
      (
        await request(`${roster.api}/users/${first.id}`, {
          method: 'PUT',
          body: { name: 'Replaced', email: 'replaced@example.com' },
        })
      ).status,
      200,
    );
    assert.match((await request(`${roster.api}/health`)).body.message, /user store full \(50 of 50 users\)/);
    const metrics = await fetch(`${roster.origin}/metrics`).then((r) => r.text());
    assert.match(metrics, /^roster_users_stored 50$/m);
    assert.match(metrics, /^roster_users_capacity 50$/m);

    // A delete makes room for exactly one more.
    assert.equal((await request(`${roster.api}/users/${second.id}`, { method: 'DELETE' })).status, 204);
    assert.equal((await request(`${roster.api}/users`, { method: 'POST', body: worstCaseUser(1000) })).status, 201);
    assert.equal((await request(`${roster.api}/users`, { method: 'POST', body: worstCaseUser(1001) })).status, 507);
  });

  test('under AUTH, the public health reply shows no counts, even to a credential; the status still tells', async (t) => {
    const KEY = 'k3y-0123456789abcdef';
    const roster = await startRoster({ MAX_USERS: '4', AUTH: 'apikey', API_KEYS: `${KEY}:admin` });
    t.after(() => roster.stop());
    const headers = { 'x-api-key': KEY };
    assert.equal(
      (await request(`${roster.api}/users`, { method: 'POST', body: worstCaseUser(1), headers })).status,
      201,
    );
    for (const asked of [{}, headers]) {
      const health = await request(`${roster.api}/health`, { headers: asked });
      assert.equal(health.status, 200);
      assert.equal(health.body.data.status, 'degraded');
      assert.equal(health.body.data.storage, undefined, 'no users count on the public health reply');
      assert.equal(health.body.message, 'Service is degraded: user store full', 'nor in its message');
    }
    // The count is a reader's to see, through the API.
    assert.equal((await request(`${roster.api}/users`, { headers })).body.data.pagination.total, 4);
  });

  test('MAX_USERS=0 is no cap, and no storage entry in health', async (t) => {
    const roster = await startRoster({ MAX_USERS: '0' });
    t.after(() => roster.stop());
    const health = await request(`${roster.api}/health`);
    assert.equal(health.body.data.storage, undefined);
  });

  test('the default: 40 % of the heap limit over the measured worst case per user, only with users in memory', () => {
    assert.equal(automaticMaxUsers(4144 * MIB), 323_000);
    for (const heap of [64 * MIB, 2048 * MIB, 4144 * MIB, 8192 * MIB]) {
      assert.ok(
        automaticMaxUsers(heap) * WORST_CASE_BYTES_PER_USER <= heap * USERS_HEAP_SHARE ||
          automaticMaxUsers(heap) === 1000,
      );
    }
    // Less the chat history's byte bound when this process keeps it (none without history or with
    // Redis), and the idempotency keys' (IDEMPOTENCY_MAX_BYTES), kept beside the users in memory.
    const keys = 32 * MIB;
    assert.equal(loadConfig({}).maxUsers, automaticMaxUsers(undefined, 16 * MIB + keys + CHANGES_HEAP));
    assert.ok(automaticMaxUsers(4144 * MIB, 1024 * MIB) < automaticMaxUsers(4144 * MIB));
    assert.equal(loadConfig({ CHAT_HISTORY: '0' }).maxUsers, automaticMaxUsers(undefined, keys + CHANGES_HEAP));
    assert.equal(
      loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).maxUsers,
      automaticMaxUsers(undefined, keys + CHANGES_HEAP),
    );
    assert.equal(
      loadConfig({ CHAT_HISTORY: '0', IDEMPOTENCY_MAX_BYTES: '256MiB' }).maxUsers,
      automaticMaxUsers(undefined, 256 * MIB + CHANGES_HEAP),
    );
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://127.0.0.1/x' }).maxUsers, 0);
    assert.equal(loadConfig({ MAX_USERS: '1000' }).maxUsers, 1000);
    assert.throws(() => loadConfig({ MAX_USERS: '-1' }), /MAX_USERS/);
  });

  test(
    'a real process with a small heap, filled with worst-case users under the default cap: 507, and it stays up',
    { timeout: 120_000 },
    async (t) => {
      const roster = new RosterProcess(
        t,
        { PORT: '0', WS_PORT: '0', LOG_LEVEL: 'info', CONSOLE: 'false' },
        { nodeArgs: ['--max-old-space-size=256'] },
      );
      const { child } = roster;
      const listening = await roster.listening();
      const api = `http://127.0.0.1:${listening.port}/api/v1`;
      const { created, refusal } = await fillUntilRefused(api, 8);
      assert.equal(refusal.status, 507, refusal.text);
      const health = await request(`${api}/health`);
      assert.equal(health.body.data.storage.users, health.body.data.storage.capacity);
      assert.ok(created > 1000, `only ${created} users fitted`);
      // Reads of the full store still work (a search walks every user), and the process is alive.
      assert.equal((await request(`${api}/users?search=zzz`)).status, 200);
      assert.equal((await request(`${api}/users?sort=email&limit=100`)).status, 200);
      assert.equal(child.exitCode, null, 'the process exited');
      const { code } = await roster.stop('SIGTERM', 10_000);
      assert.equal(code, 0);
      t.diagnostic(
        `heap 256 MiB: ${created} worst-case users created before 507, capacity ${health.body.data.storage.capacity}`,
      );
    },
  );

  // Updates do not count against MAX_USERS, so the fields they store must be bounded: without that,
  // 234 PATCHes of a 1 MiB name to as many users ended this very process ("Reached heap limit"), with
  // users in memory as with SQLite (its cache of decoded users).
  for (const store of ['memory', 'sqlite'] as const) {
    test(
      `a real process with a small heap (${store}): 300 PATCHes of a 1 MiB name to 300 users are refused, and it stays up`,
      { timeout: 180_000 },
      async (t) => {
        const folder = mkdtempSync(join(tmpdir(), 'roster-capacity-'));
        t.after(() => rmSync(folder, { recursive: true, force: true }));
        const roster = new RosterProcess(
          t,
          {
            PORT: '0',
            WS_PORT: '0',
            LOG_LEVEL: 'info',
            CONSOLE: 'false',
            ...(store === 'sqlite' ? { DATABASE_URL: `sqlite:${join(folder, 'users.db')}` } : {}),
          },
          { nodeArgs: ['--max-old-space-size=256'] },
        );
        const { port } = await roster.listening();
        const origin = `http://127.0.0.1:${port}`;
        const api = `${origin}/api/v1`;
        const ids: string[] = [];
        for (let i = 0; i < 300; i++) {
          const created = await request(`${api}/users`, {
            method: 'POST',
            body: { name: `Person ${i}`, email: `person${i}@example.com` },
          });
          assert.equal(created.status, 201, created.text);
          ids.push(created.body.data.id);
        }
        // Each name as large as the default BODY_LIMIT lets through, and different, as a client would send.
        const huge = (i: number) => `${i} ${'n'.repeat(2 ** 20 - 1024)}`;
        const statuses = new Map<number, number>();
        let next = 0;
        await Promise.all(
          Array.from({ length: 4 }, async () => {
            while (next < ids.length) {
              const i = next++;
              const { status } = await request(`${api}/users/${ids[i]}`, { method: 'PATCH', body: { name: huge(i) } });
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
            }
          }),
        );
        assert.deepEqual([...statuses], [[422, 300]]);
        assert.equal((await request(`${origin}/livez`)).status, 200);
        assert.equal(roster.child.exitCode, null, 'the process exited');
        const page = await request(`${api}/users?limit=100&search=Person`);
        assert.equal(page.body.data.pagination.total, 300);
        assert.ok(page.body.data.users.every((user: { name: string }) => user.name.startsWith('Person ')));
        const { code } = await roster.stop('SIGTERM', 10_000);
        assert.equal(code, 0);
      },
    );
  }
});
