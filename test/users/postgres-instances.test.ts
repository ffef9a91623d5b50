/**
 * Two Roster instances on one PostgreSQL (here in one process; each has its own pool, clock and
 * service, as separate processes would): started together they seed once, they race for an email
 * fairly, and each sees the other's writes, with timestamps in one strict order.
 */
import { readPostgresMigrations } from '../../src/users/stores/postgres/postgres-migrations.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  DATABASE_URL,
  freshSchema,
  NO_DATABASE,
  request,
  startRoster,
  type Running,
  type TestSchema,
} from '../support/index.js';

if (!DATABASE_URL) {
  test('two Roster instances on one PostgreSQL', { skip: NO_DATABASE }, () => {});
} else {
  describe('two Roster instances on one PostgreSQL', () => {
    let schema: TestSchema;
    let one: Running;
    let two: Running;
    const running: Running[] = [];
    before(async () => {
      schema = await freshSchema();
      // Started at the same moment: both migrate and seed, under locks, so once.
      const started = await Promise.allSettled([
        startRoster({ DATABASE_URL: schema.url }),
        startRoster({ DATABASE_URL: schema.url }),
      ]);
      for (const outcome of started) if (outcome.status === 'fulfilled') running.push(outcome.value);
      const failed = started.find((outcome) => outcome.status === 'rejected');
      if (failed) throw failed.reason;
      [one, two] = running as [Running, Running];
    });
    after(async () => {
      // Whatever started is stopped and the schema dropped, also when start-up failed.
      await Promise.allSettled(running.map((roster) => roster.stop()));
      await schema.drop();
    });

    test('started together, they apply the migrations once and seed three users once', async () => {
      for (const roster of [one, two]) {
        const { body } = await request(`${roster.api}/users?sort=created_at&order=asc`);
        assert.equal(body.data.pagination.total, 3);
        assert.deepEqual(
          body.data.users.map((user: { role: string }) => user.role),
          ['admin', 'user', 'user'],
        );
      }
      const { rows } = await schema.query('SELECT count(*)::int AS n FROM schema_migrations');
      assert.equal(rows[0].n, (await readPostgresMigrations()).length);
    });

    test('racing to create the same email: exactly one 201 and one 409, every round', async () => {
      for (let round = 0; round < 15; round++) {
        const email = `race${round}.${randomUUID()}@example.com`;
        const replies = await Promise.all([
          request(`${one.api}/users`, { method: 'POST', body: { name: 'One', email } }),
          request(`${two.api}/users`, { method: 'POST', body: { name: 'Two', email: ` ${email.toUpperCase()}` } }),
        ]);
        assert.deepEqual(
          replies.map((reply) => reply.status).sort(),
          [201, 409],
          replies.map((reply) => reply.text).join('\n'),
        );
        const refused = replies.find((reply) => reply.status === 409)!;
        assert.equal(refused.body.error.code, 'EMAIL_EXISTS');
      }
    });

    test('a user created on one is read, changed and deleted on the other', async () => {
      const created = await request(`${one.api}/users`, {
        method: 'POST',
        body: { name: 'Shared', email: `shared.${randomUUID()}@example.com` },
      });
      assert.equal(created.status, 201);
      const user = created.body.data;
      const read = await request(`${two.api}/users/${user.id}`);
      assert.deepEqual(read.body.data, user);
      const patched = await request(`${two.api}/users/${user.id}`, { method: 'PATCH', body: { name: 'Renamed' } });
      assert.equal(patched.status, 200);
      assert.deepEqual((await request(`${one.api}/users/${user.id}`)).body.data, patched.body.data);
      assert.equal((await request(`${two.api}/users/${user.id}`, { method: 'DELETE' })).status, 204);
      assert.equal((await request(`${one.api}/users/${user.id}`)).status, 404);
    });

    test('created_at and updated_at strictly increase in the order of the writes, from either instance', async () => {
      const stamps: string[] = [];
      for (let i = 0; i < 20; i++) {
        const roster = i % 2 ? one : two;
        const created = await request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: `Order ${i}`, email: `order${i}.${randomUUID()}@example.com` },
        });
        assert.equal(created.status, 201);
        stamps.push(created.body.data.created_at);
        const patched = await request(`${(i % 2 ? two : one).api}/users/${created.body.data.id}`, {
          method: 'PATCH',
          body: { role: 'admin' },
        });
        stamps.push(patched.body.data.updated_at);
      }
      for (let i = 1; i < stamps.length; i++)
        assert.ok(stamps[i]! > stamps[i - 1]!, `${stamps[i]} after ${stamps[i - 1]}`);
      // Concurrent writes to both at once: within each instance no two share a stamp (across the
      // two, equal stamps are allowed, and (created_at, seq) orders them: postgres-store.test.ts).
      const burst = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          request(`${(i % 2 ? one : two).api}/users`, {
            method: 'POST',
            body: { name: `Burst ${i}`, email: `burst${i}.${randomUUID()}@example.com` },
          }),
        ),
      );
      for (const parity of [0, 1]) {
        const stamps = burst.filter((_, i) => i % 2 === parity).map((reply) => reply.body.data.created_at);
        assert.equal(new Set(stamps).size, 20, stamps.join(' '));
      }
    });
  });
}
