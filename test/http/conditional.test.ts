/**
 * ETags and conditional requests of users (src/http/conditional.ts), on every store backend over real
 * sockets: a new ETag per write, 304, If-Match checked atomically (50 concurrent PATCHes, one wins; also
 * across two instances on one PostgreSQL), 412 on a stale DELETE, 428 under REQUIRE_IF_MATCH.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { createClock, formatMicros } from '../../src/clock.js';
import type { UserStore } from '../../src/users/store.js';
import { MemoryUserStore } from '../../src/users/stores/memory/memory-store.js';
import { SqliteUserStore } from '../../src/users/stores/sqlite/sqlite-store.js';
import {
  DATABASE_URL,
  NO_DATABASE,
  request,
  startOn,
  startRoster,
  TEST_STORES,
  twoInstancesOnFreshSchema,
  type JsonResponse,
  type Running,
} from '../support/index.js';

const TEST_MS = 120_000;
const CONCURRENT = 50;

const json = (method: string, body: unknown, headers: Record<string, string> = {}) => ({ method, body, headers });

async function newUser(roster: Running, n: number): Promise<JsonResponse> {
  const created = await request(
    `${roster.api}/users`,
    json('POST', { name: `Cond ${n}`, email: `cond${n}@example.com` }),
  );
  assert.equal(created.status, 201, created.text);
  return created;
}

/** `CONCURRENT` PATCHes of one user, all with the same If-Match, spread over `rosters`: their statuses. */
async function racingPatches(rosters: Running[], id: string, etag: string): Promise<number[]> {
  const replies = await Promise.all(
    Array.from({ length: CONCURRENT }, (_, n) =>
      request(
        `${rosters[n % rosters.length]!.api}/users/${id}`,
        json('PATCH', { name: `Racer ${n}` }, { 'if-match': etag }),
      ),
    ),
  );
  for (const reply of replies) if (reply.status === 412) assert.equal(reply.body.error.code, 'PRECONDITION_FAILED');
  return replies.map((reply) => reply.status).sort();
}

const oneWinner = [200, ...Array<number>(CONCURRENT - 1).fill(412)];

for (const kit of TEST_STORES) {
  describe(`ETags and If-Match on ${kit.name}`, { skip: kit.skip, timeout: TEST_MS }, () => {
    test('every write gives a new strong ETag, the one reads give; If-None-Match gives 304', async (t) => {
      const roster = await startOn(kit);
      t.after(() => roster.stop());
      const created = await newUser(roster, 1);
      const id = created.body.data.id as string;
      const etags = [created.headers.get('etag')!];
      assert.match(etags[0]!, /^"[^"]+"$/);
      const url = `${roster.api}/users/${id}`;
      const read = await request(url);
      assert.equal(read.headers.get('etag'), etags[0]);
      const put = await request(url, json('PUT', { name: 'Cond Put', email: 'cond1@example.com' }));
      etags.push(put.headers.get('etag')!);
      const patch = await request(url, json('PATCH', { role: 'admin' }));
      etags.push(patch.headers.get('etag')!);
      const same = await request(url, json('PATCH', { role: 'admin' }));
      etags.push(same.headers.get('etag')!);
      assert.equal(new Set(etags).size, 4, `one ETag per write, even one that changes nothing: ${etags.join(' ')}`);
      assert.equal((await request(url)).headers.get('etag'), etags.at(-1));

      const current = etags.at(-1)!;
      for (const header of [current, `W/${current}`, `"other", ${current}`, '*']) {
        const cached = await request(url, { headers: { 'if-none-match': header } });
        assert.equal(cached.status, 304, header);
        assert.equal(cached.text, '');
        assert.equal(cached.headers.get('etag'), current);
      }
      const head = await fetch(url, { method: 'HEAD', headers: { 'if-none-match': etags[0]! } });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('etag'), current);
      assert.equal((await request(url, { headers: { 'if-none-match': etags[0]! } })).status, 200);
      // Lists and health carry none.
      assert.equal((await request(`${roster.api}/users`)).headers.get('etag'), null);
      assert.equal((await request(`${roster.api}/health`)).headers.get('etag'), null);
    });

    test('If-Match: a stale ETag is 412 and writes nothing; a weak one never matches; * needs the user', async (t) => {
      const roster = await startOn(kit);
      t.after(() => roster.stop());
      const created = await newUser(roster, 2);
      const stale = created.headers.get('etag')!;
      const url = `${roster.api}/users/${created.body.data.id}`;
      const changed = await request(url, json('PATCH', { name: 'Changed' }, { 'if-match': stale }));
      assert.equal(changed.status, 200);
      const current = changed.headers.get('etag')!;
      for (const method of ['PUT', 'PATCH']) {
        const refused = await request(
          url,
          json(method, { name: 'Lost update', email: 'cond2@example.com' }, { 'if-match': stale }),
        );
        assert.equal(refused.status, 412, method);
        assert.equal(refused.body.error.code, 'PRECONDITION_FAILED');
      }
      assert.equal((await request(url, json('PATCH', { name: 'x' }, { 'if-match': `W/${current}` }))).status, 412);
      const deleted = await request(url, { method: 'DELETE', headers: { 'if-match': stale } });
      assert.equal(deleted.status, 412);
      const still = await request(url);
      assert.equal(still.status, 200);
      assert.equal(still.body.data.name, 'Changed');
      assert.equal(still.headers.get('etag'), current);
      // A missing user: 404 with an ETag list, 412 with `*`.
      const missing = `${roster.api}/users/00000000-0000-4000-8000-000000000000`;
      assert.equal((await request(missing, json('PATCH', { name: 'x' }, { 'if-match': current }))).status, 404);
      assert.equal((await request(missing, json('PATCH', { name: 'x' }, { 'if-match': '*' }))).status, 412);
      assert.equal((await request(missing, { method: 'DELETE', headers: { 'if-match': '*' } })).status, 412);
      assert.equal((await request(url, json('PATCH', { name: 'Star' }, { 'if-match': '*' }))).status, 200);
      const gone = await request(url, {
        method: 'DELETE',
        headers: { 'if-match': `"x", ${(await request(url)).headers.get('etag')}` },
      });
      assert.equal(gone.status, 204);
    });

    test(`${CONCURRENT} concurrent PATCHes with one If-Match: exactly one 200, the others 412`, async (t) => {
      const roster = await startOn(kit);
      t.after(() => roster.stop());
      const created = await newUser(roster, 3);
      assert.deepEqual(await racingPatches([roster], created.body.data.id, created.headers.get('etag')!), oneWinner);
      // The email-changing path (a transaction on PostgreSQL) holds too.
      const now = (await request(`${roster.api}/users/${created.body.data.id}`)).headers.get('etag')!;
      const replies = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          request(
            `${roster.api}/users/${created.body.data.id}`,
            json('PATCH', { email: `moved${n}@example.com` }, { 'if-match': now }),
          ),
        ),
      );
      assert.deepEqual(replies.map((reply) => reply.status).sort(), [200, ...Array<number>(9).fill(412)]);
    });

    test('If-Unmodified-Since (without If-Match): 412 when the user changed after the date', async (t) => {
      const roster = await startOn(kit);
      t.after(() => roster.stop());
      const created = await newUser(roster, 6);
      const url = `${roster.api}/users/${created.body.data.id}`;
      const changedAt = Date.parse(`${created.body.data.updated_at}Z`);
      const before = new Date(changedAt - 2000).toUTCString();
      const after = new Date(changedAt + 2000).toUTCString();
      const refused = await request(url, json('PATCH', { name: 'Old news' }, { 'if-unmodified-since': before }));
      assert.equal(refused.status, 412);
      assert.equal(refused.body.error.code, 'PRECONDITION_FAILED');
      assert.equal((await request(url, { method: 'DELETE', headers: { 'if-unmodified-since': before } })).status, 412);
      assert.equal((await request(url)).body.data.name, 'Cond 6');
      const since = await request(url, json('PATCH', { name: 'Fresh' }, { 'if-unmodified-since': after }));
      assert.equal(since.status, 200);
      // Not a date: ignored (RFC 9110); If-Match, when present, decides instead.
      assert.equal((await request(url, json('PATCH', { name: 'Any' }, { 'if-unmodified-since': 'soon' }))).status, 200);
      const current = (await request(url)).headers.get('etag')!;
      assert.equal(
        (await request(url, json('PATCH', { name: 'M' }, { 'if-match': current, 'if-unmodified-since': before })))
          .status,
        200,
      );
    });

    test('REQUIRE_IF_MATCH: PUT, PATCH and DELETE without If-Match, or with `*`, get 428', async (t) => {
      const roster = await startOn(kit, { REQUIRE_IF_MATCH: 'true' });
      t.after(() => roster.stop());
      const created = await newUser(roster, 4);
      const url = `${roster.api}/users/${created.body.data.id}`;
      for (const write of [
        json('PUT', { name: 'N', email: 'cond4@example.com' }),
        json('PATCH', { name: 'N' }),
        { method: 'DELETE' },
      ]) {
        const refused = await request(url, write);
        assert.equal(refused.status, 428, write.method);
        assert.equal(refused.body.error.code, 'PRECONDITION_REQUIRED');
      }
      // `*` asks only that the user exists: still a blind write, refused alike (issue 40).
      for (const write of [
        json('PUT', { name: 'N', email: 'cond4@example.com' }, { 'if-match': '*' }),
        json('PATCH', { name: 'N' }, { 'if-match': '*' }),
        { method: 'DELETE', headers: { 'if-match': '*' } },
      ]) {
        const refused = await request(url, write);
        assert.equal(refused.status, 428, `${write.method} with If-Match: *`);
        assert.equal(refused.body.error.code, 'PRECONDITION_REQUIRED');
      }
      const etag = created.headers.get('etag')!;
      assert.equal((await request(url, json('PATCH', { name: 'N' }, { 'if-match': etag }))).status, 200);
      assert.equal((await request(url)).body.data.name, 'N');
    });
  });
}

describe(
  'If-Match across two instances on one PostgreSQL',
  { skip: DATABASE_URL ? undefined : NO_DATABASE, timeout: TEST_MS },
  () => {
    test(`${CONCURRENT} PATCHes with one If-Match, half through each instance: one 200`, async (t) => {
      const { one, two } = await twoInstancesOnFreshSchema(t);
      const created = await newUser(one, 5);
      const etag = created.headers.get('etag')!;
      assert.equal((await request(`${two.api}/users/${created.body.data.id}`)).headers.get('etag'), etag);
      assert.deepEqual(await racingPatches([one, two], created.body.data.id, etag), oneWinner);
    });
  },
);

describe('the headers of retries and conditional writes in CORS and the OpenAPI document', () => {
  test('CORS allows the request headers and exposes ETag and Idempotent-Replayed', async (t) => {
    const origin = 'https://app.example.com';
    const roster = await startOn(TEST_STORES[0]!, { CORS_ORIGINS: origin });
    t.after(() => roster.stop());
    const preflight = await fetch(`${roster.api}/users/x`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'if-match' },
    });
    const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const name of ['idempotency-key', 'if-match', 'if-none-match', 'if-unmodified-since'])
      assert.ok(allowed.includes(name), allowed);
    const read = await fetch(`${roster.api}/users`, { headers: { origin } });
    const exposed = (read.headers.get('access-control-expose-headers') ?? '').toLowerCase();
    for (const name of ['etag', 'idempotent-replayed']) assert.ok(exposed.includes(name), exposed);
  });

  test('the document names the request headers, ETag, 304, 412 and (with REQUIRE_IF_MATCH) 428', async (t) => {
    const roster = await startOn(TEST_STORES[0]!, { REQUIRE_IF_MATCH: 'true' });
    t.after(() => roster.stop());
    const doc = (await request(`${roster.api}/openapi.json`)).body;
    const one = doc.paths['/api/v1/users/{id}'];
    const create = doc.paths['/api/v1/users'].post;
    const headerParameters = (operation: { parameters: { in: string; name: string }[] }) =>
      operation.parameters.filter((parameter) => parameter.in === 'header').map((parameter) => parameter.name);
    assert.deepEqual(headerParameters(one.get), ['if-none-match']);
    assert.deepEqual(headerParameters(create), ['idempotency-key']);
    assert.ok(one.get.responses['304'].headers.ETag);
    assert.ok(create.responses['201'].headers['Idempotent-Replayed']);
    for (const method of ['put', 'patch', 'delete']) {
      assert.deepEqual(headerParameters(one[method]), ['if-match', 'if-unmodified-since'], method);
      for (const status of ['412', '428']) assert.ok(one[method].responses[status], `${method} ${status}`);
    }
    for (const method of ['put', 'patch']) assert.ok(one[method].responses['200'].headers.ETag, method);
  });
});

/**
 * The memory and SQLite stores stamp every write from the clock they are given (clock.ts): each version
 * of a user is a later stamp than the one before, whatever the wall clock does. Here the clock is the
 * test's, frozen or stepped back at will, so a store that stamped by the wall clock (new Date()) or
 * kept a stamp would serve the wrong versions: the clock's own unit test cannot see that.
 */
describe("the memory and SQLite stores stamp each version from the server's clock", () => {
  const silent = pino({ level: 'silent' });
  /** A served stamp (`2100-01-01T00:00:00.000003`) in microseconds since the epoch. */
  const micros = (stamp: string) => Date.parse(`${stamp.slice(0, 19)}Z`) * 1000 + Number(stamp.slice(20));
  const stores: [string, (clock: ReturnType<typeof createClock>) => Promise<UserStore>][] = [
    ['memory', async (clock) => new MemoryUserStore({ clock })],
    ['sqlite', (clock) => SqliteUserStore.open({ path: ':memory:', synchronous: 'NORMAL' }, silent, { clock })],
  ];
  for (const [name, open] of stores) {
    test(`${name}: frozen, stepped back or forward, the clock names every version; each write a new ETag`, async (t) => {
      // Microseconds since the epoch, as the clock reads them: far from the wall clock, so that a stamp
      // not taken from this clock shows.
      let now = Date.UTC(2100, 0, 1) * 1000;
      const roster = await startRoster({}, { store: await open(createClock(() => now)) });
      t.after(() => roster.stop());
      const created = await newUser(roster, 1);
      const url = `${roster.api}/users/${created.body.data.id}`;
      // The clock's time (the seed users, stamped at start, took the first few microseconds).
      const createdAt = micros(created.body.data.created_at);
      assert.ok(
        createdAt >= now && createdAt < now + 10,
        `created at the clock's time: ${created.body.data.created_at}`,
      );
      assert.equal(created.body.data.updated_at, created.body.data.created_at);
      const versions = [{ etag: created.headers.get('etag')!, updated_at: created.body.data.updated_at as string }];
      /** PATCHes the user with the newest ETag: 200, a new ETag and a later updated_at, each time. */
      const write = async (what: string) => {
        const last = versions.at(-1)!;
        const reply = await request(
          url,
          json('PATCH', { name: `Stamped ${versions.length}` }, { 'if-match': last.etag }),
        );
        assert.equal(reply.status, 200, `${what}: ${reply.text}`);
        const version = { etag: reply.headers.get('etag')!, updated_at: reply.body.data.updated_at as string };
        assert.ok(version.updated_at > last.updated_at, `${what}: ${version.updated_at} after ${last.updated_at}`);
        assert.notEqual(version.etag, last.etag, `${what}: a new ETag`);
        versions.push(version);
        return version;
      };
      // Frozen: writes in quick succession, one microsecond apart, however fast they come.
      for (let n = 1; n <= 3; n++) assert.equal(micros((await write(`frozen write ${n}`)).updated_at), createdAt + n);
      // Stepped back an hour: still later than every version before.
      now -= 3_600_000_000;
      assert.equal(micros((await write('after a step back')).updated_at), createdAt + 4);
      // And forward: the clock's time again.
      now += 7_200_000_000;
      assert.equal((await write('after a step forward')).updated_at, formatMicros(now));
      // Every version but the last is refused now, on PATCH and DELETE alike.
      for (const { etag } of versions.slice(0, -1)) {
        const stale = await request(url, json('PATCH', { name: 'Lost' }, { 'if-match': etag }));
        assert.equal(stale.status, 412, etag);
        assert.equal((await request(url, { method: 'DELETE', headers: { 'if-match': etag } })).status, 412, etag);
      }
      assert.equal((await request(url)).body.data.updated_at, versions.at(-1)!.updated_at);
    });
  }
});
