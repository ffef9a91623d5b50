/**
 * The list reply written from cached per-user JSON (http/routes/user-json.ts) must be byte for byte what Fastify's
 * serializer makes of the same page, and must never serve a user's JSON from before a change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import fastJson from 'fast-json-stringify';
import { changeFrame, changeJson } from '../../src/http/change-json.js';
import { successSchema } from '../../src/http/envelope.js';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { JsonCache, listReplyJson, replyCache, userJson, userReplyJson } from '../../src/http/routes/user-json.js';
import type { Change } from '../../src/users/changes.js';
import { User, UserList } from '../../src/users/schema.js';
import { request, startRoster, type Running } from '../support/index.js';

const viaSchema = fastJson(successSchema(UserList));

// A full garbage collection on demand, for the tests of what the cache keeps alive.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

const oneViaSchema = fastJson(successSchema(User));

// Any text at all in the string fields: quotes, backslashes, control characters, lone surrogates, astral.
const text = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.string(),
  fc.constantFrom('"', '\\', '\u2028', '\ud800', '\u0000', '😀'),
);
const user: fc.Arbitrary<User> = fc.record({
  id: text,
  name: text,
  email: text,
  role: text,
  created_at: text,
  updated_at: text,
});

describe('list reply JSON', () => {
  test('equals the schema serializer for any page', () => {
    fc.assert(
      fc.property(
        fc.array(user, { maxLength: 25 }),
        fc.record({
          total: fc.nat(),
          page: fc.integer({ min: 1 }),
          limit: fc.integer({ min: 1, max: 100 }),
          pages: fc.nat(),
        }),
        text,
        (users, pagination, message) => {
          const list = { users, pagination };
          const ours = listReplyJson(message, list);
          assert.equal(ours, viaSchema({ status: 'success', message, data: list }));
          // And it is JSON that reads back as the same value.
          assert.deepEqual(JSON.parse(ours), JSON.parse(JSON.stringify({ status: 'success', message, data: list })));
        },
      ),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
    );
  });

  test('equals the schema serializer for one user', () => {
    fc.assert(
      fc.property(user, text, (one, message) => {
        assert.equal(userReplyJson(message, one), oneViaSchema({ status: 'success', message, data: one }));
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 300) },
    );
  });

  test('a user object is serialised once; another object with the same id is serialised anew', () => {
    const first: User = {
      id: 'a',
      name: 'Before',
      email: 'a@example.com',
      role: 'user',
      created_at: 't',
      updated_at: 't',
    };
    assert.equal(userJson(first), userJson(first));
    const changed = { ...first, name: 'After' };
    assert.match(userJson(changed), /"name":"After"/);
    assert.match(userJson(first), /"name":"Before"/);
  });
});

describe('which users the reply cache keeps', () => {
  const fresh = (name: string): User => ({
    id: name,
    name,
    email: `${name}@example.com`,
    role: 'user',
    created_at: 't',
    updated_at: 't',
  });

  test('the JSON of a frozen user (it cannot change) is kept; of any other, made anew each time', () => {
    const before = replyCache.bytes;
    const mutable = fresh('mutable-user');
    assert.equal(
      userJson(mutable),
      oneViaSchema({ status: 'success', message: '', data: mutable }).match(/"data":(.*)}$/)![1],
    );
    assert.equal(replyCache.bytes, before, 'the JSON of a user that may still change was kept');
    mutable.name = 'Changed';
    assert.match(userJson(mutable), /"name":"Changed"/);
    const frozen = Object.freeze(fresh('frozen-user'));
    assert.match(userJson(frozen), /"name":"frozen-user"/);
    assert.ok(replyCache.bytes > before, 'the JSON of a frozen user was not kept');
  });

  test("a write's reply (its user just made) is the same text, and keeps nothing: reads fill the cache", () => {
    const before = replyCache.bytes;
    const written = Object.freeze(fresh('written-user'));
    const reply = userReplyJson('User created', written, false);
    assert.equal(replyCache.bytes, before, "the JSON of a write's reply was kept");
    assert.equal(reply, userReplyJson('User created', written));
    assert.ok(replyCache.bytes > before, 'a read of the same user keeps its JSON');
  });

  test("a change of the feed carries the reads' JSON of its user, and keeps nothing in the cache", () => {
    const before = replyCache.bytes;
    const written = Object.freeze(fresh('changed-user'));
    const change: Change = { seq: 7, type: 'created', id: written.id, user: written, roleBefore: null, at: 't' };
    const frame = changeFrame('e1', change).toString();
    assert.equal(replyCache.bytes, before, "the JSON of a change's user was kept");
    assert.equal(JSON.parse(changeJson('e1', change)).user.name, 'changed-user');
    assert.equal(replyCache.bytes, before, "the JSON of a change's user was kept");
    assert.ok(frame.includes(`"user":${userJson(written)},`), frame);
    assert.ok(replyCache.bytes > before, 'a read of the same user keeps its JSON');
  });
});

describe('list replies over HTTP after changes', () => {
  let roster: Running;
  before(async () => {
    roster = await startRoster();
  });
  after(() => roster.stop());

  test('PUT, PATCH and DELETE show in the next list at once', async () => {
    const created = await request(`${roster.api}/users`, {
      method: 'POST',
      body: { name: 'Cache Probe', email: 'cache.probe@example.com' },
    });
    assert.equal(created.status, 201);
    const id = created.body.data.id as string;
    const listed = async () =>
      (await request(`${roster.api}/users?limit=100`)).body.data.users.find((u: User) => u.id === id) as
        User | undefined;
    assert.equal((await listed())?.name, 'Cache Probe');

    await request(`${roster.api}/users/${id}`, { method: 'PATCH', body: { name: 'Patched Probe' } });
    assert.equal((await listed())?.name, 'Patched Probe');

    const put = await request(`${roster.api}/users/${id}`, {
      method: 'PUT',
      body: { name: 'Put Probe', email: 'put.probe@example.com', role: 'admin' },
    });
    assert.deepEqual(await listed(), put.body.data);

    await request(`${roster.api}/users/${id}`, { method: 'DELETE' });
    assert.equal(await listed(), undefined);
  });

  test('the reply has the JSON content type and the length of its bytes', async () => {
    await request(`${roster.api}/users`, {
      method: 'POST',
      body: { name: 'Zoë Ünïcode 😀', email: 'zoe.unicode@example.com' },
    });
    const response = await fetch(`${roster.api}/users?search=unicode`);
    assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
    const bytes = Buffer.from(await response.arrayBuffer());
    assert.equal(Number(response.headers.get('content-length')), bytes.length);
    assert.equal(JSON.parse(bytes.toString('utf8')).data.users[0].name, 'Zoë Ünïcode 😀');
  });
});

describe('the reply cache', () => {
  test('is bounded in bytes, a 32nd of the heap limit', () => {
    assert.equal(replyCache.maxBytes, Math.floor(getHeapStatistics().heap_size_limit / 32));
    assert.ok(replyCache.bytes <= replyCache.maxBytes);
  });

  test('stays within its bound in bytes whatever the users hold, and serves each user as it is', () => {
    const bound = 256 * 1024;
    const cache = new JsonCache(bound);
    const serialize = fastJson(User);
    const users: User[] = Array.from({ length: 80 }, (_, i) => ({
      id: String(i),
      name: '\u00e9'.repeat(1000 * (1 + (i % 13))),
      email: `u${i}@example.com`,
      role: 'user',
      created_at: '2026-01-01T00:00:00.000000',
      updated_at: '2026-01-01T00:00:00.000000',
    }));
    for (const round of [1, 2]) {
      for (const one of users) {
        assert.equal(cache.json(one), serialize(one));
        assert.ok(cache.bytes > 0);
        assert.ok(cache.bytes <= bound, `${cache.bytes} B cached in round ${round}`);
      }
    }
    // A user whose JSON alone passes the bound is serialised, never kept.
    const huge = { ...users[0]!, name: 'h'.repeat(bound) };
    assert.equal(cache.json(huge), serialize(huge));
    assert.ok(cache.bytes <= bound);
  });
  test('keeps no former version of a user: its JSON goes when the store lets go of it', async () => {
    const cache = new JsonCache(64 * 1024 * 1024);
    let former: User | undefined = {
      id: 'f',
      name: 'Former',
      email: 'former@example.com',
      role: 'user',
      created_at: 't',
      updated_at: 't',
    };
    const watched = new WeakRef(former);
    assert.match(cache.json(former), /"name":"Former"/);
    const current = { ...former, name: 'Current' };
    former = undefined; // the store swaps in the new object and drops the old one
    assert.match(cache.json(current), /"name":"Current"/);
    // WeakRef targets stay alive until the end of the task that made them.
    await new Promise((done) => setImmediate(done));
    collect();
    assert.equal(watched.deref(), undefined, 'the cache kept a former version of the user alive');
  });

  test('holds no more heap than it counts against its bound', () => {
    const count = 20_000;
    const users: User[] = Array.from({ length: count }, (_, i) => ({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      name: `Grace Hopper ${i}`,
      email: `grace.${i}@example.com`,
      role: 'user',
      created_at: '2026-11-25T08:02:46.475163Z',
      updated_at: '2026-11-25T08:02:46.475163Z',
    }));
    const cache = new JsonCache(1024 * 1024 * 1024);
    collect();
    const before = process.memoryUsage().heapUsed;
    for (const one of users) cache.json(one);
    collect();
    const held = process.memoryUsage().heapUsed - before;
    assert.equal(users.length, count); // the users themselves stay alive, outside what is measured
    assert.ok(held <= cache.bytes, `the cache holds ${held} B of heap but counts ${cache.bytes} B`);
  });
});
