/**
 * Search totals on PostgreSQL stay exact while instances keep the totals they counted (migration 005):
 * two instances on one schema, each searching again after every kind of change made through the other
 * instance or straight in SQL, must report what a count of the table says at that moment.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { DATABASE_URL, NO_DATABASE, request, twoInstancesOnFreshSchema } from '../support/index.js';

test(
  'search totals follow every change, from either instance and from SQL',
  { skip: DATABASE_URL ? false : NO_DATABASE, timeout: 60_000 },
  async (t) => {
    const { schema, one, two } = await twoInstancesOnFreshSchema(t);
    const counted = async (filter: string) => {
      const role = filter.includes('role=admin') ? " AND role = 'admin'" : '';
      const { rows } = await schema.query(
        `SELECT count(*)::int AS n FROM users WHERE (name_lower LIKE '%quixote%' OR email_lower LIKE '%quixote%')${role}`,
      );
      return rows[0].n as number;
    };
    /** Both instances, each twice (the second time from what it kept), against a count of the table. */
    const expectTotals = async (step: string, expected: number) => {
      for (const filter of ['search=QUIXOTE', 'search=quixote&role=admin&sort=name&order=asc']) {
        const truth = await counted(filter);
        if (!filter.includes('role')) assert.equal(truth, expected, `${step}: the table itself`);
        for (const api of [one.api, two.api, one.api, two.api]) {
          const response = await request(`${api}/users?${filter}&limit=1`);
          assert.equal(response.status, 200, response.text);
          assert.equal(response.body.data.pagination.total, truth, `${step}: ${filter} on ${api}`);
          assert.equal(response.body.data.users.length, Math.min(1, truth), `${step}: ${filter} page`);
        }
      }
    };
    const create = async (api: string, name: string, role = 'user') => {
      const response = await request(`${api}/users`, {
        method: 'POST',
        body: { name, email: `${randomUUID()}@example.com`, role },
      });
      assert.equal(response.status, 201, response.text);
      return response.body.data.id as string;
    };

    await expectTotals('empty', 0);
    const first = await create(two.api, 'Don Quixote');
    await expectTotals('created on two', 1);
    const second = await create(one.api, 'Alonso Quixote', 'admin');
    await expectTotals('created on one', 2);
    const renamed = await request(`${two.api}/users/${first}`, { method: 'PATCH', body: { name: 'Sancho Panza' } });
    assert.equal(renamed.status, 200, renamed.text);
    await expectTotals('renamed away on two', 1);
    const moved = await request(`${two.api}/users/${first}`, {
      method: 'PATCH',
      body: { email: `quixote.${randomUUID()}@example.com` },
    });
    assert.equal(moved.status, 200, moved.text);
    await expectTotals('email moved onto the term on two', 2);
    const demoted = await request(`${one.api}/users/${second}`, { method: 'PATCH', body: { role: 'user' } });
    assert.equal(demoted.status, 200, demoted.text);
    await expectTotals('role changed on one', 2);
    await schema.query(`UPDATE users SET name_lower = 'rocinante' WHERE id = $1`, [second]);
    await expectTotals('renamed in SQL', 1);
    const removed = await request(`${two.api}/users/${first}`, { method: 'DELETE' });
    assert.equal(removed.status, 204, removed.text);
    await expectTotals('deleted on two', 0);
  },
);
