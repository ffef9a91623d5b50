/**
 * Hostile searches (docs/decisions.md, *Request limits*: search text): a search longer than any field gets
 * 422 in every store; the escaped-text path of the PostgreSQL store answers long needles that start with
 * an escape's own characters correctly; and a statement that runs out of time is a 503 with Retry-After
 * that leaves health alone, never a 500.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import pg from 'pg';
import {
  DATABASE_URL,
  freshSchema,
  NO_DATABASE,
  request,
  startRoster,
  type Running,
  type TestSchema,
} from '../support/index.js';

const stores: [string, () => Promise<{ roster: Running; schema?: TestSchema }>][] = [
  ['memory', async () => ({ roster: await startRoster() })],
];
if (DATABASE_URL) {
  stores.push([
    'PostgreSQL',
    async () => {
      const schema = await freshSchema();
      return { roster: await startRoster({ DATABASE_URL: schema.url }), schema };
    },
  ]);
} else {
  test('search abuse on PostgreSQL', { skip: NO_DATABASE }, () => {});
}

for (const [name, start] of stores) {
  describe(`search limits: ${name} store`, () => {
    let roster: Running;
    let schema: TestSchema | undefined;
    before(async () => ({ roster, schema } = await start()));
    after(async () => {
      await roster.stop();
      await schema?.drop();
    });

    test('a search of 257 characters is 422 naming search; 256 (astral ones too) is served', async () => {
      const long = await request(`${roster.api}/users?search=${'a'.repeat(257)}`);
      assert.equal(long.status, 422, long.text);
      assert.deepEqual(long.body.error.details, [
        { field: 'search', message: 'search must be at most 256 characters' },
      ]);
      const attack = await request(`${roster.api}/users?search=${encodeURIComponent('\u0001'.repeat(4_000))}`);
      assert.equal(attack.status, 422);
      assert.equal((await request(`${roster.api}/users?search=${encodeURIComponent('😀'.repeat(256))}`)).status, 200);
    });

    test('needles that start with an escape character find exactly the users that contain them', async () => {
      const names = ['a\u0000\u0002b', 'c\u0001\u0002d', '\u0002plain', 'x\ue001y', 'lone\ud800z', 'none of those'];
      const ids = new Map<string, string>();
      for (const [i, userName] of names.entries()) {
        const created = await request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: userName, email: `esc${i}.${Date.now()}@example.com` },
        });
        assert.equal(created.status, 201, created.text);
        ids.set(userName, created.body.data.id);
      }
      const found = async (needle: string) => {
        const reply = await request(`${roster.api}/users?limit=100&search=${encodeURIComponent(needle)}`);
        assert.equal(reply.status, 200, reply.text);
        return (reply.body.data.users as { name: string }[])
          .map((u) => u.name)
          .filter((n) => names.includes(n))
          .sort();
      };
      assert.deepEqual(await found('\u0002'), ['\u0002plain', 'a\u0000\u0002b', 'c\u0001\u0002d'].sort());
      assert.deepEqual(await found('\u0001'), ['c\u0001\u0002d']);
      assert.deepEqual(await found('\u0000'), ['a\u0000\u0002b']);
      assert.deepEqual(await found('\ue001'), ['x\ue001y']);
      assert.deepEqual(await found('\u0002'.repeat(256)), []);
      assert.deepEqual(await found('\u0001\u0002'), ['c\u0001\u0002d']);
    });
  });
}

/**
 * Roster on a fresh PostgreSQL schema whose users table another session holds (ACCESS EXCLUSIVE) until
 * `release`; the session, Roster and the schema end with the test.
 */
async function heldRoster(t: TestContext, env: Record<string, string> = {}) {
  const schema = await freshSchema();
  const roster = await startRoster({ DATABASE_URL: schema.url, ...env });
  t.after(async () => {
    await roster.stop();
    await schema.drop();
  });
  const holder = new pg.Client({ connectionString: schema.url });
  await holder.connect();
  t.after(() => holder.end());
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
  return { roster, release: () => holder.query('ROLLBACK') };
}

describe('a statement that runs out of time on PostgreSQL', { skip: DATABASE_URL ? false : NO_DATABASE }, () => {
  test('is 503 SERVICE_UNAVAILABLE with Retry-After, not 500, and health stays up', { timeout: 30_000 }, async (t) => {
    // Another session holds the table, so the list waits until statement_timeout (5 s) cancels it.
    const { roster, release } = await heldRoster(t);
    const list = await request(`${roster.api}/users`);
    await release();
    assert.equal(list.status, 503, list.text);
    assert.equal(list.body.error.code, 'SERVICE_UNAVAILABLE');
    assert.equal(list.headers.get('retry-after'), '1');
    const health = await request(`${roster.api}/health`);
    assert.equal(health.status, 200, health.text);
  });

  test(
    'a request that waits past its bound for a free connection (all in use) is 503 busy, and health stays up',
    { timeout: 30_000 },
    async (t) => {
      const { roster, release } = await heldRoster(t, { DATABASE_POOL_SIZE: '1' });
      // The first list holds the pool's one connection, waiting on the lock; the second waits for that
      // connection, and gives up after 2 s: the database answered all along.
      const first = request(`${roster.api}/users`);
      try {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const second = await request(`${roster.api}/users?limit=1`);
        assert.equal(second.status, 503, second.text);
        assert.equal(second.body.error.message, 'Every database connection is in use; try again shortly');
        assert.equal(second.headers.get('retry-after'), '1');
        const health = await request(`${roster.api}/health`);
        assert.equal(health.status, 200, `a busy pool is not a database down: ${health.text}`);
      } finally {
        await release(); // whatever happened: the first request, and the stop, wait on it
      }
      assert.equal((await first).status, 200, 'the first is served once the lock is gone');
    },
  );
});
