/**
 * Roster as a deployment runs it beyond one process: two real Roster processes on one PostgreSQL (a
 * schema of this test's own) and one Redis. Users written on one are read on the other, an email raced
 * from both is created exactly once, timestamps keep one order across both, the chat spans both with
 * room-wide counts, and an instance killed with SIGKILL leaves the other serving everything it wrote.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import {
  DATABASE_URL,
  freshSchema,
  Instance,
  NO_DATABASE,
  request,
  roomUrl,
  WITHOUT_REDIS,
  type TestSchema,
  until,
} from './support/index.js';

const SKIP = !DATABASE_URL ? NO_DATABASE : WITHOUT_REDIS;

describe('two Roster processes on one PostgreSQL and one Redis', { skip: SKIP }, () => {
  let schema: TestSchema;
  before(async () => {
    schema = await freshSchema();
  });
  after(() => schema?.drop());

  test(
    'behave as one service: shared users, one email winner, one timestamp order, one chat room, survival of a SIGKILL',
    { timeout: 90_000 },
    async (t) => {
      const env = { DATABASE_URL: schema.url, REDIS_URL: roomUrl() };
      const [a, b] = await Promise.all([Instance.start(t, env), Instance.start(t, env)]);

      // Started together, seeded once.
      for (const instance of [a, b]) {
        const list = await request(`${instance.api}/users`);
        assert.equal(list.status, 200);
        assert.equal(list.body.data.pagination.total, 3, 'three seed users, not six');
      }

      // Written on A, read, changed and listed on B.
      const created = await request(`${a.api}/users`, {
        method: 'POST',
        body: { name: 'Written On A', email: 'written.on.a@example.com' },
      });
      assert.equal(created.status, 201);
      const id = created.body.data.id as string;
      assert.deepEqual((await request(`${b.api}/users/${id}`)).body.data, created.body.data);
      const patched = await request(`${b.api}/users/${id}`, { method: 'PATCH', body: { role: 'admin' } });
      assert.equal(patched.status, 200);
      assert.equal((await request(`${a.api}/users/${id}`)).body.data.role, 'admin');
      assert.equal((await request(`${a.api}/users?role=admin&search=written`)).body.data.pagination.total, 1);

      // The same email raced from both processes, spelt differently: exactly one 201 and one 409.
      for (let round = 0; round < 10; round++) {
        const replies = await Promise.all([
          request(`${a.api}/users`, { method: 'POST', body: { name: 'Racer A', email: `racer.${round}@example.com` } }),
          request(`${b.api}/users`, {
            method: 'POST',
            body: { name: 'Racer B', email: ` RACER.${round}@Example.COM ` },
          }),
        ]);
        assert.deepEqual(replies.map((r) => r.status).sort(), [201, 409], `round ${round}`);
        assert.equal(replies.find((r) => r.status === 409)!.body.error.code, 'EMAIL_EXISTS');
      }

      // Created one after the other, alternating instances: created_at strictly increasing in that order.
      const stamps: string[] = [];
      for (let i = 0; i < 10; i++) {
        const on = i % 2 === 0 ? a : b;
        const reply = await request(`${on.api}/users`, {
          method: 'POST',
          body: { name: `Ordered ${i}`, email: `ordered.${i}@example.com` },
        });
        stamps.push(reply.body.data.created_at as string);
      }
      assert.deepEqual([...stamps].sort(), stamps);
      assert.equal(new Set(stamps).size, stamps.length);
      const newest = (await request(`${b.api}/users?limit=10`)).body.data.users.map((u: { name: string }) => u.name);
      assert.deepEqual(
        newest,
        Array.from({ length: 10 }, (_, i) => `Ordered ${9 - i}`),
        'newest first, in creation order across both',
      );

      // One chat room across both, with the room-wide count.
      const { client: onA } = await a.join();
      // A's member reaches B through Redis a moment after A's welcome: until then a newcomer on B is
      // counted alone. So first a newcomer on B that is counted with it (each such probe leaves again).
      let probes = 0;
      await until("A's member counted on B", async () => (probes++, (await b.welcomeCount()) === 2), 10_000, 50);
      const { client: onB, welcome } = await b.join();
      assert.match(welcome.message as string, /\b2 users online/);
      // A hears of each probe's join, then of B's member's, each with the room-wide count.
      for (let probe = 0; probe < probes; probe++) await onA.next((m) => m.type === 'user_join');
      assert.equal((await onA.next((m) => m.type === 'user_join')).online_count, 2);
      onB.send({ type: 'chat', message: 'from B to everyone' });
      const [seenOnA, seenOnB] = await Promise.all(
        [onA, onB].map((c) => c.next((m) => m.type === 'chat' && m.message === 'from B to everyone')),
      );
      assert.deepEqual(seenOnA, seenOnB);

      // A killed without a goodbye: B serves everything A wrote, and stops counting A's member within seconds.
      const killed = Date.now();
      await a.exit('SIGKILL');
      assert.equal((await request(`${b.api}/users/${id}`)).body.data.name, 'Written On A');
      assert.equal((await request(`${b.api}/health`)).status, 200);
      let count = await b.welcomeCount();
      while (count !== 2) {
        assert.ok(Date.now() - killed < 10_000, `the killed instance still counts after 10 s (count ${count})`);
        await delay(250); // expiry has no event to wait for: look again shortly
        count = await b.welcomeCount();
      }
    },
  );
});
