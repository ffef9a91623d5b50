/**
 * The typed client's retries (src/protocol/client/retry.ts) over real sockets: a real Roster behind a
 * real HTTP front that answers 503 or 429 as each test plans. A create is sent with one Idempotency-Key
 * and retried with the same one; Retry-After is honoured (a fake sleep records the waits); the retries
 * stop at the cap; a request that is not safe to repeat is sent once.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import {
  backoffDelay,
  createRosterClient,
  DEFAULT_RETRY,
  retrying,
  type RetryPolicy,
} from '../../src/protocol/index.js';
import { flakyApi, request, rosterFor, TEST_MS, type FlakyStep, type Json } from '../support/index.js';

/** A client of `api` whose sleeps are recorded, not waited. */
function clientOf(api: string, policy: Partial<RetryPolicy> = {}) {
  const sleeps: number[] = [];
  const client = createRosterClient({
    url: api,
    retry: { random: () => 0, ...policy, sleep: async (ms) => void sleeps.push(ms) },
  });
  return { client, sleeps };
}

/** The plan: the first `refusals` requests answered as given, the rest forwarded. */
function first(...refusals: FlakyStep[]): (request: unknown, n: number) => FlakyStep {
  return (_request, n) => refusals[n] ?? { forward: true };
}

async function usersWithEmail(api: string, email: string): Promise<Json[]> {
  return (await request(`${api}/users?search=${encodeURIComponent(email)}`)).body.data.users as Json[];
}

async function setUp(t: TestContext, plan: (request: unknown, n: number) => FlakyStep) {
  const roster = await rosterFor(t);
  return { roster, front: await flakyApi(t, roster.origin, plan) };
}

describe('typed client retries', () => {
  test(
    'a create answered 503 twice is retried with the same key, after Retry-After, and gets the 201',
    { timeout: TEST_MS },
    async (t) => {
      const { roster, front } = await setUp(
        t,
        first({ answer: 503, retryAfter: '1' }, { answer: 503, retryAfter: '2' }),
      );
      const { client, sleeps } = clientOf(front.api);
      const reply = await client.createUser({ name: 'Ada', email: 'ada@example.com' });
      assert.equal(reply.response.status, 201);
      assert.equal(reply.data?.data.email, 'ada@example.com');
      assert.deepEqual(sleeps, [1000, 2000], 'the waits Retry-After asked for');
      assert.deepEqual(
        front.seen.map((seen) => seen.status),
        [503, 503, 201],
      );
      const keys = front.seen.map((seen) => String(seen.headers['idempotency-key']));
      assert.match(keys[0] ?? '', /^"[0-9a-f-]{36}"$/, 'a UUID, as a Structured Field String');
      assert.deepEqual(keys, [keys[0], keys[0], keys[0]], 'the same key on each attempt');
      assert.deepEqual(new Set(front.seen.map((seen) => seen.body)).size, 1, 'the same body on each attempt');
      assert.equal((await usersWithEmail(roster.api, 'ada@example.com')).length, 1);

      // Another create is another logical create: another key.
      await client.createUser({ name: 'Bea', email: 'bea@example.com' });
      assert.notEqual(String(front.seen.at(-1)?.headers['idempotency-key']), keys[0]);
    },
  );

  test(
    'a create whose 201 was lost (the front answered 503 after Roster created it) is retried and gets that same 201, replayed',
    { timeout: TEST_MS },
    async (t) => {
      const { roster, front } = await setUp(t, first({ answer: 503, retryAfter: '0', forwardFirst: true }));
      const { client, sleeps } = clientOf(front.api);
      const reply = await client.createUser({ name: 'Lost Reply', email: 'lost.reply@example.com' });
      assert.equal(reply.response.status, 201, JSON.stringify(reply.error));
      assert.equal(reply.replayed, true, 'Idempotent-Replayed: true');
      assert.deepEqual(sleeps, [0]);
      const [only, ...more] = await usersWithEmail(roster.api, 'lost.reply@example.com');
      assert.deepEqual(more, [], 'created once');
      assert.equal(reply.data?.data.id, only?.id, "the first create's user");
      assert.equal(reply.etag, `"${only?.updated_at as string}"`, 'its ETag');
    },
  );

  test(
    'a create answered 409 IDEMPOTENCY_KEY_IN_USE is asked again after Retry-After; a 409 EMAIL_EXISTS is not',
    { timeout: TEST_MS },
    async (t) => {
      const { roster, front } = await setUp(t, first({ answer: 409, retryAfter: '1' }));
      const { client, sleeps } = clientOf(front.api);
      const reply = await client.createUser({ name: 'Busy Key', email: 'busy.key@example.com' });
      assert.equal(reply.response.status, 201);
      assert.deepEqual(sleeps, [1000]);
      const taken = await client.createUser({ name: 'Busy Key', email: 'busy.key@example.com' });
      assert.equal(taken.response.status, 409);
      assert.equal((taken.error as Json).error.code, 'EMAIL_EXISTS');
      assert.deepEqual(sleeps, [1000], 'an email taken is an answer, not a wait');
      assert.deepEqual(
        front.seen.map((seen) => seen.status),
        [409, 201, 409],
      );
      assert.equal((await usersWithEmail(roster.api, 'busy.key@example.com')).length, 1);
    },
  );

  test(
    'a 429 is retried too; without Retry-After the waits are the jittered backoff',
    { timeout: TEST_MS },
    async (t) => {
      const { front } = await setUp(t, first({ answer: 429 }, { answer: 503 }, { answer: 429, retryAfter: 'soon' }));
      const { client, sleeps } = clientOf(front.api);
      const reply = await client.listUsers();
      assert.equal(reply.response.status, 200);
      const backoff = [0, 1, 2].map((n) => backoffDelay(n, DEFAULT_RETRY.backoff, () => 0));
      assert.deepEqual(sleeps, backoff, 'no (or an unreadable) Retry-After: the backoff');
      assert.deepEqual(backoff, [500, 1000, 2000]);
    },
  );

  test('an HTTP-date Retry-After is waited from the clock given', { timeout: TEST_MS }, async (t) => {
    const now = Date.parse('2026-11-27T05:00:00Z');
    const { front } = await setUp(t, first({ answer: 503, retryAfter: 'Fri, 27 Nov 2026 05:00:07 GMT' }));
    const { client, sleeps } = clientOf(front.api, { now: () => now });
    assert.equal((await client.getUser('00000000-0000-4000-8000-000000000000')).response.status, 404);
    assert.deepEqual(sleeps, [7000]);
  });

  test('the client gives up after the cap of retries, and hands over the last 503', { timeout: TEST_MS }, async (t) => {
    const { roster, front } = await setUp(t, () => ({ answer: 503, retryAfter: '1' }));
    const { client, sleeps } = clientOf(front.api);
    const reply = await client.createUser({ name: 'Cy', email: 'cy@example.com' });
    assert.equal(reply.response.status, 503);
    assert.equal((reply.error as Json).error.code, 'SERVICE_UNAVAILABLE');
    assert.equal(front.seen.length, 1 + DEFAULT_RETRY.retries, 'the first attempt and three retries');
    assert.deepEqual(sleeps, [1000, 1000, 1000]);
    assert.equal((await usersWithEmail(roster.api, 'cy@example.com')).length, 0);

    // A smaller cap is the caller's to set; 0 retries sends once.
    const none = clientOf(front.api, { retries: 0 });
    await none.client.listUsers();
    assert.equal(front.seen.length, 5);
    assert.deepEqual(none.sleeps, []);
  });

  test(
    'a Retry-After longer than the longest wait is not cut short: the reply is handed over',
    { timeout: TEST_MS },
    async (t) => {
      const { front } = await setUp(t, first({ answer: 503, retryAfter: '120' }));
      const { client, sleeps } = clientOf(front.api);
      const reply = await client.listUsers();
      assert.equal(reply.response.status, 503);
      assert.equal(reply.response.headers.get('retry-after'), '120', 'the caller sees when to come back');
      assert.deepEqual(sleeps, []);
      assert.equal(front.seen.length, 1);
    },
  );

  test(
    'a POST without a key and a PATCH without If-Match are sent once; with If-Match the PATCH is retried',
    { timeout: TEST_MS },
    async (t) => {
      const { roster, front } = await setUp(t, (_request, n) =>
        n < 2 || n === 3 ? { answer: 503, retryAfter: '0' } : { forward: true },
      );
      const sleeps: number[] = [];
      const policy = { ...DEFAULT_RETRY, sleep: async (ms: number) => void sleeps.push(ms) };
      // The retrying fetch itself, with a POST that carries no key (the typed client always sends one).
      const send = retrying((r) => fetch(r), policy);
      const post = await send(
        new Request(`${front.api}/users`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'Dee', email: 'dee@example.com' }),
        }),
      );
      assert.equal(post.status, 503);
      assert.equal(front.seen.length, 1, 'a POST without a key is not repeated');

      const [seed] = (await request(`${roster.api}/users?limit=1`)).body.data.users as Json[];
      const { client } = clientOf(front.api);
      const patched = await client.updateUser(seed.id as string, { name: 'Renamed' });
      assert.equal(patched.response.status, 503);
      assert.equal(front.seen.length, 2, 'a PATCH without If-Match is not repeated');
      assert.deepEqual(sleeps, []);

      // With the ETag the client read: retried (n = 3 is refused, n = 4 forwarded).
      const read = await client.getUser(seed.id as string);
      assert.equal(read.response.status, 200);
      const again = await client.updateUser(seed.id as string, { name: 'Renamed' }, { ifMatch: read.etag ?? '*' });
      assert.equal(front.seen[3]?.headers['if-match'], read.etag ?? '*');
      assert.equal(again.response.status, 200, JSON.stringify(again.error));
      assert.equal(front.seen.length, 5);
    },
  );
});
