/**
 * docs/decisions.md: no write may wait on a row that every other write also takes. One session holds
 * every row of every small table of the schema (counts, migrations) and one user's row, in an open
 * transaction; meanwhile another instance creates, updates (name, email, PUT) and deletes other users,
 * and every one of those writes completes while the lock is still held. Had any of them needed a
 * locked row it would wait until the statement timeout and answer 503, failing the test.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import pg from 'pg';
import { DATABASE_URL, NO_DATABASE, request, twoInstancesOnFreshSchema } from '../support/index.js';

test(
  'writes of other users never wait for a transaction holding the small tables and one user',
  { skip: DATABASE_URL ? false : NO_DATABASE, timeout: 60_000 },
  async (t) => {
    const { schema, one, two } = await twoInstancesOnFreshSchema(t);
    const create = async (api: string, name: string) => {
      const response = await request(`${api}/users`, {
        method: 'POST',
        body: { name, email: `${randomUUID()}@example.com`, role: 'user' },
      });
      assert.equal(response.status, 201, response.text);
      return response.body.data.id as string;
    };
    const held = await create(one.api, 'Held');
    const other = await create(one.api, 'Other');
    const before = (await request(`${one.api}/users?limit=1`)).body.data.pagination.total as number;

    const holder = new pg.Client({ connectionString: schema.url });
    await holder.connect();
    t.after(() => holder.end());
    await holder.query('BEGIN');
    const { rows: tables } = await holder.query<{ name: string }>(
      "SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'users'",
    );
    assert.ok(
      tables.some((table) => table.name === 'user_role_counts'),
      'the counts table is among those held',
    );
    for (const { name } of tables) await holder.query(`SELECT * FROM ${name} FOR UPDATE`);
    await holder.query('SELECT * FROM users WHERE id = $1 FOR UPDATE', [held]);
    try {
      // From the other instance, while the transaction is open.
      const created = await Promise.all(Array.from({ length: 5 }, (_, i) => create(two.api, `Created ${i}`)));
      const renamed = await request(`${two.api}/users/${other}`, { method: 'PATCH', body: { name: 'Renamed' } });
      assert.equal(renamed.status, 200, renamed.text);
      const moved = await request(`${two.api}/users/${other}`, {
        method: 'PATCH',
        body: { email: `moved.${randomUUID()}@example.com` },
      });
      assert.equal(moved.status, 200, moved.text);
      const replaced = await request(`${two.api}/users/${other}`, {
        method: 'PUT',
        body: { name: 'Replaced', email: `put.${randomUUID()}@example.com`, role: 'admin' },
      });
      assert.equal(replaced.status, 200, replaced.text);
      const deleted = await request(`${two.api}/users/${created[0]}`, { method: 'DELETE' });
      assert.equal(deleted.status, 204, deleted.text);
    } finally {
      await holder.query('ROLLBACK');
    }
    // The totals add up, from either instance, whichever count rows the writes used.
    for (const roster of [one, two]) {
      const list = await request(`${roster.api}/users?limit=1`);
      assert.equal(list.body.data.pagination.total, before + 4);
      const admins = await request(`${roster.api}/users?role=admin&limit=100`);
      assert.ok(
        admins.body.data.users.some((user: { id: string }) => user.id === other),
        'the PUT changed the role',
      );
      assert.equal(admins.body.data.pagination.total, admins.body.data.users.length);
    }
  },
);
