/**
 * PostgreSQL going away under a running Roster: requests get 503 SERVICE_UNAVAILABLE in the envelope
 * within a bounded time, health reports the database down with 503, and Roster recovers by itself when
 * the database returns, with every write it acknowledged still there.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import {
  DATABASE_URL,
  freshSchema,
  NO_DATABASE,
  request,
  startRoster,
  targetOf,
  TcpProxy,
  urlWithSchema,
  within,
  type JsonResponse,
  type Running,
  type TestSchema,
} from '../support/index.js';

/** connectionTimeoutMillis and query_timeout are 2 s and 6 s; a reply must come well before a client gives up. */
const REPLY_WITHIN_MS = 8_000;
/** A silent database is noticed only by those timeouts: up to 6 s for a query, plus waiting for a pooled connection. */
const STALL_REPLY_WITHIN_MS = 15_000;

function assertUnavailable(response: JsonResponse, what: string): void {
  assert.equal(response.status, 503, `${what}: ${response.text}`);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(response.body.status, 'error', what);
  assert.equal(response.body.error.code, 'SERVICE_UNAVAILABLE', what);
}

/** Asks until `ready` holds; recovery has no event to await from outside, so this polls, bounded. */
async function eventually(
  what: string,
  ask: () => Promise<JsonResponse>,
  ready: (response: JsonResponse) => boolean,
  timeoutMs = 10_000,
): Promise<JsonResponse> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await ask();
    if (ready(response)) return response;
    if (Date.now() > deadline)
      assert.fail(`${what} within ${timeoutMs} ms; last reply ${response.status} ${response.text}`);
    await delay(100);
  }
}

if (!DATABASE_URL) {
  test('Roster when PostgreSQL goes away', { skip: NO_DATABASE }, () => {});
} else {
  const databaseUrl: string = DATABASE_URL;
  describe('the connection to PostgreSQL is cut and restored', () => {
    let schema: TestSchema;
    let proxy: TcpProxy;
    let roster: Running;
    before(async () => {
      schema = await freshSchema();
      proxy = await TcpProxy.start(targetOf(databaseUrl, 5432));
      const target = new URL(databaseUrl);
      target.host = `127.0.0.1:${proxy.port}`;
      roster = await startRoster({
        DATABASE_URL: urlWithSchema(target.toString(), schema.name),
        DATABASE_POOL_SIZE: '3',
      });
    });
    after(async () => {
      await roster.stop();
      await proxy.close();
      await schema.drop();
    });

    test('503 in the envelope while down, health 503 with database down, then recovery with every acknowledged write kept', async () => {
      const acknowledged = [];
      for (let i = 0; i < 5; i++) {
        const response = await request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: `Kept ${i}`, email: `kept${i}.${randomUUID()}@example.com` },
        });
        assert.equal(response.status, 201, response.text);
        acknowledged.push(response.body.data);
      }
      const healthy = await request(`${roster.api}/health`);
      assert.equal(healthy.status, 200, healthy.text);
      assert.deepEqual(healthy.body.data.checks, { database: 'up' });

      proxy.cut();

      const list = await within(request(`${roster.api}/users`), REPLY_WITHIN_MS, 'a list while the database is down');
      assertUnavailable(list, 'list');
      assertUnavailable(
        await within(request(`${roster.api}/users/${acknowledged[0].id}`), REPLY_WITHIN_MS, 'a get'),
        'get',
      );
      const post = await within(
        request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: 'Lost', email: `lost.${randomUUID()}@example.com` },
        }),
        REPLY_WITHIN_MS,
        'a create',
      );
      assertUnavailable(post, 'create');
      const health = await request(`${roster.api}/health`);
      assertUnavailable(health, 'health');
      assert.deepEqual(
        health.body.error.details.map((detail: { field: string }) => detail.field),
        ['database'],
      );

      proxy.restore();

      // No request needed: the probe notices the database is back.
      await eventually(
        'health back to 200',
        () => request(`${roster.api}/health`),
        (response) => response.status === 200,
      );
      for (const user of acknowledged) {
        const response = await request(`${roster.api}/users/${user.id}`);
        assert.equal(response.status, 200, response.text);
        assert.deepEqual(response.body.data, user);
      }
      const created = await request(`${roster.api}/users`, {
        method: 'POST',
        body: { name: 'After', email: `after.${randomUUID()}@example.com` },
      });
      assert.equal(created.status, 201, created.text);
      assert.ok(created.body.data.created_at > acknowledged.at(-1).created_at);
    });

    test('a database that stops answering (no reset, no refusal): 503 after the timeouts, not a hang, for many requests at once', async () => {
      // Warm connections in the pool, so both paths are taken: queries on open connections (query
      // timeout) and new connections (connect timeout).
      assert.equal((await request(`${roster.api}/users`)).status, 200);
      proxy.stall();
      try {
        const replies = await within(
          Promise.all(Array.from({ length: 6 }, (_, i) => request(`${roster.api}/users${i % 2 ? '?search=x' : ''}`))),
          STALL_REPLY_WITHIN_MS,
          'six lists while the database is silent',
        );
        for (const reply of replies) assertUnavailable(reply, 'list');
        assertUnavailable(await request(`${roster.api}/health`), 'health');
      } finally {
        proxy.restore();
      }
      await eventually(
        'lists answered again',
        () => request(`${roster.api}/users`),
        (response) => response.status === 200,
      );
    });
  });

  describe("PostgreSQL terminates Roster's connections", () => {
    test('no crash; requests are answered again without a restart', async () => {
      const schema = await freshSchema();
      const application = `roster_test_${randomUUID().slice(0, 8)}`;
      const roster = await startRoster({
        DATABASE_URL: urlWithSchema(databaseUrl, schema.name, { application_name: application }),
      });
      try {
        const created = await request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: 'Survivor', email: `survivor.${randomUUID()}@example.com` },
        });
        assert.equal(created.status, 201);
        const { rows } = await schema.query(
          'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1',
          [application],
        );
        assert.ok(rows[0].n > 0, 'Roster had connections to terminate');
        // A request may still meet a connection whose end it learns of only then (503); later ones get new ones.
        const after = await eventually(
          'the user readable again',
          () => request(`${roster.api}/users/${created.body.data.id}`),
          (response) => {
            if (response.status !== 200) assertUnavailable(response, 'get after termination');
            return response.status === 200;
          },
        );
        assert.deepEqual(after.body.data, created.body.data);
        await eventually(
          'health 200',
          () => request(`${roster.api}/health`),
          (response) => response.status === 200,
        );
      } finally {
        await roster.stop();
        await schema.drop();
      }
    });
  });
}
