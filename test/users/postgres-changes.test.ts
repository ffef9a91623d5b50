/**
 * The change feed across instances on one PostgreSQL database: writes through both instances at once
 * (each its own pool), numbered without a gap or a repeat; a stream cut and resumed alternately on
 * either instance receives exactly the log; and with the LISTEN connection killed, streams still get
 * every change (the poll stands in, the connection comes back).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import {
  allChanges,
  cutAndResume,
  DATABASE_URL,
  epochOf,
  eventually,
  NO_DATABASE,
  request,
  SseClient,
  storm,
  twoInstancesOnFreshSchema,
} from '../support/index.js';

const FEED = '/users/changes';

describe('change feed across two instances on PostgreSQL', { skip: DATABASE_URL ? undefined : NO_DATABASE }, () => {
  test('writes through both at once: one log, numbered 1..n, each change once', async (t) => {
    const { one, two } = await twoInstancesOnFreshSchema(t);
    const epoch = await epochOf(one.api);
    assert.equal(await epochOf(two.api), epoch);
    await Promise.all([storm(one.api, 120, 4), storm(two.api, 120, 4, 't')]);
    const total = 3 + 240;
    await eventually(
      async () => Number((await request(`${two.api}${FEED}`)).body.next.split('.')[1]) >= total,
      'every change numbered',
    );
    const changes = await allChanges(one.api, `${epoch}.0`);
    assert.deepEqual(
      changes.map((change) => change.seq),
      Array.from({ length: total }, (_, index) => index + 1),
    );
    assert.deepEqual(await allChanges(two.api, `${epoch}.0`), changes);
  });

  test('a stream cut 100 times, resumed on either instance in turn, during writes through both', async (t) => {
    const { one, two } = await twoInstancesOnFreshSchema(t);
    const epoch = await epochOf(one.api);
    const writes = Promise.all([storm(one.api, 200, 3), storm(two.api, 200, 3, 't')]);
    const seen = await cutAndResume([one.api, two.api], writes, 100, `${epoch}.0`, 3 + 400);
    const log = await allChanges(one.api, `${epoch}.0`);
    assert.deepEqual(
      seen.map((change) => change.seq),
      log.map((change) => change.seq),
    );
  });

  test('a change made through one instance reaches a stream on the other, even with LISTEN killed', async (t) => {
    const { one, two, schema } = await twoInstancesOnFreshSchema(t);
    const head = (await request(`${two.api}${FEED}`)).body.next;
    const stream = await SseClient.open(`${two.api}${FEED}?since=${head}`);
    t.after(() => stream.cut());
    await request(`${one.api}/users`, { method: 'POST', body: { name: 'a', email: 'a@example.com' } });
    await stream.waitFor(1, 5_000);
    const admin = new pg.Client({ connectionString: schema.url });
    await admin.connect();
    t.after(() => admin.end());
    const { rowCount } = await admin.query(
      // This schema's listeners only: other runs share the database.
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'roster-changes' AND query = $1",
      [`LISTEN "roster_changes.${schema.name}"`],
    );
    assert.ok((rowCount ?? 0) >= 2, 'both instances listened');
    for (let n = 0; n < 20; n++)
      await request(`${one.api}/users`, { method: 'POST', body: { name: `b${n}`, email: `b${n}@example.com` } });
    await stream.waitFor(21, 10_000);
    assert.equal(new Set(stream.changes.map((change) => change.seq)).size, 21);
    // And LISTEN is back: both instances listen again.
    await eventually(async () => {
      const { rows } = await admin.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'roster-changes' AND query = $1",
        [`LISTEN "roster_changes.${schema.name}"`],
      );
      return rows[0].n >= 2;
    }, 'LISTEN connections back');
  });
});
