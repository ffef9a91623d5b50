/**
 * ETags and conditional requests of users (src/http/conditional.ts), on every store backend over real
 * sockets: a new ETag per write, 304, If-Match checked atomically (50 concurrent PATCHes, one wins; also
 * across two instances on one PostgreSQL), 412 on a stale DELETE, 428 under REQUIRE_IF_MATCH.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DATABASE_URL,
  NO_DATABASE,
  request,
  startOn,
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
