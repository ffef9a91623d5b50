/**
 * The real PostgreSQL and the real Redis restarted under load, as an operator would restart them: the
 * Roster process survives both, every reply meanwhile is a 2xx, a 4xx or a 503 envelope, and health
 * comes back up with both engines; and creates through the typed client across a PostgreSQL restart:
 * each one that got a 503 is retried with its Idempotency-Key, and in the end every email is there
 * once. Runs only where this machine can restart them (the commands `.ci/run`
 * uses, as root); elsewhere it skips saying why.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { createRosterClient, IDEMPOTENCY_KEY } from '../src/protocol/index.js';
import {
  engineRestartsSkip,
  freshSchema,
  Instance,
  pgReady,
  request,
  restartPostgres,
  restartPostgresBlocking,
  restartRedis,
  roomUrl,
  until,
  type JsonResponse,
} from './support/index.js';

function assertAcceptable(response: JsonResponse, what: string): void {
  if (response.status < 300) return;
  assert.ok(
    response.status === 503 || (response.status >= 400 && response.status < 500),
    `${what}: ${response.status} ${response.text}`,
  );
  assert.equal(response.body?.status, 'error', `${what}: ${response.text}`);
}

describe('PostgreSQL and Redis restarted under load', { skip: engineRestartsSkip() }, () => {
  test('the process survives both restarts and recovers', { timeout: 120_000 }, async (t) => {
    // A schema of this test's own, made and dropped on short-lived connections (the restart ends any
    // connection this test would hold).
    const schema = await freshSchema();
    t.after(async () => {
      await until('PostgreSQL back for the clean-up', pgReady);
      await schema.drop();
    });
    const roster = await Instance.start(t, { DATABASE_URL: schema.url, REDIS_URL: roomUrl() });
    const { client: talker } = await roster.join();
    const { client: listener } = await roster.join();

    let stop = false;
    let replies = 0;
    const load = async (n: number) => {
      for (let i = 0; !stop; i++) {
        const created = await request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: `Load ${n} ${i}`, email: `load${n}.${randomUUID()}@example.com` },
        });
        assertAcceptable(created, 'create');
        if (created.status === 201) {
          assertAcceptable(
            await request(`${roster.api}/users/${created.body.data.id}`, {
              method: 'PATCH',
              body: { email: `p.${randomUUID()}@example.com` },
            }),
            'patch',
          );
        }
        assertAcceptable(await request(`${roster.api}/users?limit=5`), 'list');
        talker.send({ type: 'chat', message: `tick ${n} ${i}` });
        replies += 3;
        await delay(5);
      }
    };
    const running = Promise.all([load(0), load(1)]);
    try {
      await until('load under way before the restarts', () => replies >= 30);
      restartPostgresBlocking();
      await until('PostgreSQL accepting connections again', pgReady);
      await until(
        'health up again after the PostgreSQL restart',
        async () => (await request(`${roster.api}/health`)).status === 200,
      );

      await restartRedis();
      await until(
        'the chat bus up again',
        async () => (await request(`${roster.api}/health`)).body?.data?.checks?.chat_bus === 'up',
      );
    } finally {
      stop = true;
      await running;
    }

    assert.equal(roster.child.exitCode, null, 'the Roster process exited');
    assert.equal(roster.child.signalCode, null, 'the Roster process was killed');
    const health = await request(`${roster.api}/health`);
    assert.equal(health.status, 200, health.text);
    assert.deepEqual(health.body.data.checks, { database: 'up', chat_bus: 'up' });
    // Local chat went on throughout.
    talker.send({ type: 'chat', message: 'after both restarts' });
    await listener.next((m) => m.type === 'chat' && m.message === 'after both restarts');
    assert.ok(replies >= 30, `only ${replies} replies under load`);
  });
  test(
    'creates through the typed client across a PostgreSQL restart: each 503 retried with its key, every email there once',
    { timeout: 120_000 },
    async (t) => {
      const schema = await freshSchema();
      t.after(async () => {
        await until('PostgreSQL back for the clean-up', pgReady);
        await schema.drop();
      });
      const roster = await Instance.start(t, { DATABASE_URL: schema.url });
      // Every attempt on the wire: the create's email, its key, and the status it got.
      const attempts: { email: string; key: string | null; status: number }[] = [];
      const client = createRosterClient({ url: roster.api });
      const run = randomUUID().slice(0, 8);
      const creates: { email: string; key: string; status?: number; code?: string }[] = [];

      /** One create, sent (and retried by the client) with its key; its last status kept. */
      const create = async (entry: (typeof creates)[number]) => {
        const reply = await client
          .createUser(
            { name: `Chaos ${entry.email}`, email: entry.email },
            {
              idempotencyKey: entry.key,
              fetch: async (req) => {
                const response = await fetch(req).catch(() => Response.json({}, { status: 599 }));
                attempts.push({ email: entry.email, key: req.headers.get(IDEMPOTENCY_KEY), status: response.status });
                return response;
              },
            },
          )
          .catch(() => ({ response: { status: 599 }, error: undefined }));
        entry.status = reply.response.status;
        entry.code = (reply.error as { error?: { code?: string } } | undefined)?.error?.code;
      };

      let stop = false;
      const load = async (n: number) => {
        for (let i = 0; !stop; i++) {
          const entry = { email: `chaos.${run}.${n}.${i}@example.com`, key: randomUUID() };
          creates.push(entry);
          await create(entry);
          await delay(5);
        }
      };
      const running = Promise.all([load(0), load(1)]);
      try {
        await until('creates under way before the restart', () => creates.length >= 20);
        // Not execFileSync: the creates go on while PostgreSQL stops and starts.
        await restartPostgres();
        await until('PostgreSQL accepting connections again', pgReady);
        await until('health up again', async () => (await request(`${roster.api}/health`)).status === 200);
        const before = creates.length;
        await until('twenty creates more after the restart', () => creates.length >= before + 20);
      } finally {
        stop = true;
        await running;
      }

      const statusesOf = (email: string) => attempts.filter((a) => a.email === email).map((a) => a.status);
      // A create the client gave up on (still 503 after its retries, its connection lost, or its key still
      // in use: a claim, or a claim's release, that met the restart is released on a retry every 500 ms
      // once the database is back, src/http/idempotency.ts) is sent again with its key, once: by now the
      // database has been back for twenty creates, so a key still held (a claim no one releases, held
      // for its 60 s lease) fails here.
      const unfinished = (c: (typeof creates)[number]) =>
        c.status === 503 || c.status === 599 || c.code === 'IDEMPOTENCY_KEY_IN_USE';
      for (const entry of creates.filter(unfinished)) await create(entry);
      // Every create ends in its 201: one whose insert the server could not confirm (the connection went
      // with the restart) stored its key's reply with the user, or nothing at all (docs/decisions.md,
      // Idempotency-Key), so its retry is the 201 replayed or a create afresh, never 409 EMAIL_EXISTS.
      assert.deepEqual(
        creates
          .filter((c) => c.status !== 201)
          .map((c) => `${c.email}: ${statusesOf(c.email).join(', ')} ${c.code ?? ''}`),
        [],
        'every create ends in its 201 (a retry of one that went through is replayed)',
      );
      const refused = attempts.filter((a) => a.status === 503);
      assert.ok(refused.length > 0, 'the restart answered some create 503: else this test showed nothing');
      for (const entry of creates) {
        const keys = new Set(attempts.filter((a) => a.email === entry.email).map((a) => a.key));
        assert.deepEqual([...keys], [`"${entry.key}"`], `${entry.email}: one key on every attempt`);
      }
      const stored: string[] = [];
      for (let page = 1; ; page++) {
        const list = await request(`${roster.api}/users?search=chaos.${run}.&limit=100&page=${page}`);
        assert.equal(list.status, 200, list.text);
        stored.push(...(list.body.data.users as { email: string }[]).map((user) => user.email));
        if (page >= list.body.data.pagination.pages) break;
      }
      assert.deepEqual(
        stored.sort(),
        creates.map((c) => c.email).sort(),
        'every email there, none missing, none twice',
      );
    },
  );
});
