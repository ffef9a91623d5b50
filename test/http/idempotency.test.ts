/**
 * Idempotency-Key on creates (src/http/idempotency.ts), on every store backend over real sockets: the
 * replay byte for byte, another body, a key in flight, replies not kept, expiry, principals, a reply
 * lost on the way back, and the SQL stores' migration to the keys' table.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  API_KEY_ADMIN,
  DATABASE_URL,
  deferred,
  emptyStores,
  freshSchema,
  NO_DATABASE,
  request,
  startOn,
  TcpProxy,
  TEST_STORES,
  within,
  type JsonResponse,
  type Running,
} from '../support/index.js';
import { serviceUnavailable, tryAgainShortly } from '../../src/errors.js';
import type { UserStore } from '../../src/users/store.js';
import { migrate, readPostgresMigrations } from '../../src/users/stores/postgres/postgres-migrations.js';
import { PostgresUserStore } from '../../src/users/stores/postgres/postgres-store.js';
import { migrateSqlite, readSqliteMigrations } from '../../src/users/stores/sqlite/sqlite-migrations.js';
import { SqliteUserStore } from '../../src/users/stores/sqlite/sqlite-store.js';

const silent = pino({ level: 'silent' });
const TEST_MS = 60_000;

/**
 * The store, with its inserts held at a gate or failing while the test says so; `unseen`: the insert
 * is carried out, then fails as a client-side timeout after the server committed would (503).
 */
function controlled(inner: UserStore) {
  const control = {
    mode: 'pass' as 'pass' | 'hold' | 'fail' | 'unseen',
    entered: deferred<void>(),
    gate: deferred<void>(),
    /** How many releases of a claim fail next, as they do while the database is away. */
    failedReleases: 0,
    /** How many claims are stored, then fail next, as one does whose connection goes before its reply. */
    lostClaims: 0,
  };
  const keys = new Proxy(inner.keys, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (property === 'release')
        return async (...args: Parameters<UserStore['keys']['release']>) => {
          if (control.failedReleases > 0) {
            control.failedReleases--;
            throw serviceUnavailable('The database is unreachable; try again shortly');
          }
          return target.release(...args);
        };
      if (property === 'claim')
        return async (...args: Parameters<UserStore['keys']['claim']>) => {
          const claimed = await target.claim(...args);
          if (control.lostClaims === 0) return claimed;
          control.lostClaims--;
          throw serviceUnavailable('The database is unreachable; try again shortly');
        };
      return bound(value, target);
    },
  });
  const store = new Proxy(inner, {
    get(target, property) {
      if (property === 'keys') return keys;
      if (property === 'insert')
        return async (...args: Parameters<UserStore['insert']>) => {
          if (control.mode === 'fail') throw serviceUnavailable('The database is unreachable; try again shortly');
          if (control.mode === 'hold') {
            control.entered.resolve();
            await control.gate.promise;
          }
          const stored = await target.insert(...args);
          if (control.mode === 'unseen')
            throw tryAgainShortly('The database did not answer in time; try again shortly');
          return stored;
        };
      return bound(Reflect.get(target, property, target), target);
    },
  });
  return { store, control };
}

/** A property read through a proxy: a method stays bound to the object it belongs to. */
const bound = (value: unknown, target: object): unknown =>
  typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;

const create = (roster: Running, body: string, key?: string, headers: Record<string, string> = {}) =>
  request(`${roster.api}/users`, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
      ...headers,
    },
  });

const usersWith = async (roster: Running, email: string) =>
  ((await request(`${roster.api}/users?search=${encodeURIComponent(email)}`)).body.data.users as { id: string }[])
    .length;

const body = (n: number) => JSON.stringify({ name: `Idem ${n}`, email: `idem${n}@example.com` });

for (const kit of TEST_STORES) {
  describe(`Idempotency-Key on ${kit.name}`, { skip: kit.skip, timeout: TEST_MS }, () => {
    const opened = emptyStores(kit);
    let clock = Date.now();
    /** A Roster on a fresh store of this backend, its inserts under the test's control. */
    async function roster(env: Record<string, string> = {}) {
      const inner = await opened();
      const { store, control } = controlled(inner);
      const running = await startOn(kit, env, { store, now: () => clock });
      after(() => running.stop()); // which closes the store it was given
      return { running, control };
    }

    test('a repeat gets the first reply byte for byte, with Idempotent-Replayed; one user exists', async () => {
      const { running } = await roster();
      const first = await create(running, body(1), '"key-1"');
      assert.equal(first.status, 201, first.text);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      const again = await create(running, body(1), '"key-1"');
      assert.equal(again.status, 201);
      assert.equal(again.text, first.text);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.headers.get('etag'), first.headers.get('etag'));
      // A bare token is the same key as its quoted form.
      assert.equal((await create(running, body(1), 'key-1')).text, first.text);
      assert.equal(await usersWith(running, 'idem1@example.com'), 1);
      // Without a key, the same body is a new create: 409, as the contract says.
      assert.equal((await create(running, body(1))).status, 409);
    });

    test('409 EMAIL_EXISTS is not kept (its repeat meets the 409 afresh); a kept key with another body is 422; malformed keys 400', async () => {
      const { running } = await roster();
      assert.equal((await create(running, body(2))).status, 201);
      const taken = await create(running, body(2), '"key-2"');
      assert.equal(taken.status, 409);
      assert.equal(taken.body.error.code, 'EMAIL_EXISTS');
      const again = await create(running, body(2), '"key-2"');
      assert.equal(again.text, taken.text);
      assert.equal(again.headers.get('idempotent-replayed'), null, 'processed afresh, not replayed');
      const kept = await create(running, body(9), '"key-9"');
      assert.equal(kept.status, 201);
      const reused = await create(running, body(3), '"key-9"');
      assert.equal(reused.status, 422);
      assert.equal(reused.body.error.code, 'IDEMPOTENCY_KEY_REUSED');
      assert.equal(await usersWith(running, 'idem3@example.com'), 0);
      for (const key of ['""', 'two words', '"unterminated', `"${'k'.repeat(256)}"`, '"tab\there"']) {
        const refused = await create(running, body(3), key);
        assert.equal(refused.status, 400, key);
        assert.equal(refused.body.error.code, 'ERROR');
        assert.match(refused.body.error.message, /Idempotency-Key/);
      }
      assert.equal(await usersWith(running, 'idem3@example.com'), 0);
    });

    test('a repeat while the first is in flight is 409 IDEMPOTENCY_KEY_IN_USE with Retry-After', async () => {
      const { running, control } = await roster();
      control.mode = 'hold';
      const first = create(running, body(4), '"key-4"');
      await within(control.entered.promise, 10_000, 'the first create to reach the store');
      const during = await create(running, body(4), '"key-4"');
      assert.equal(during.status, 409);
      assert.equal(during.body.error.code, 'IDEMPOTENCY_KEY_IN_USE');
      assert.equal(during.headers.get('retry-after'), '1');
      // Another body while in flight is still a reuse.
      assert.equal((await create(running, body(5), '"key-4"')).status, 422);
      control.mode = 'pass';
      control.gate.resolve();
      const done = await first;
      assert.equal(done.status, 201);
      assert.equal((await create(running, body(4), '"key-4"')).text, done.text);
    });

    test('503 is not kept: the repeat is processed afresh', async () => {
      const { running, control } = await roster();
      control.mode = 'fail';
      const outage = await create(running, body(6), '"key-6"');
      assert.equal(outage.status, 503);
      control.mode = 'pass';
      const retried = await create(running, body(6), '"key-6"');
      assert.equal(retried.status, 201, retried.text);
      assert.equal(retried.headers.get('idempotent-replayed'), null);
      assert.equal(await usersWith(running, 'idem6@example.com'), 1);
      // 422 is not kept either: the key is free for the corrected body.
      const invalid = await create(running, JSON.stringify({ name: 'No email' }), '"key-7"');
      assert.equal(invalid.status, 422);
      assert.equal((await create(running, body(7), '"key-7"')).status, 201);
    });

    test('a create stored although its instance saw a 503: the retry gets the 201 replayed, one user exists', async () => {
      const { running, control } = await roster();
      control.mode = 'unseen';
      const unseen = await create(running, body(11), '"unseen"');
      assert.equal(unseen.status, 503, unseen.text);
      control.mode = 'pass';
      const retried = await create(running, body(11), '"unseen"');
      assert.equal(retried.status, 201, retried.text);
      assert.equal(retried.headers.get('idempotent-replayed'), 'true');
      const found = await request(`${running.api}/users?search=${encodeURIComponent('idem11@example.com')}`);
      assert.deepEqual(
        (found.body.data.users as { id: string }[]).map((user) => user.id),
        [retried.body.data.id],
        'exactly one user, the one the replayed 201 names',
      );
      const stored = await request(`${running.api}/users/${retried.body.data.id}`);
      assert.deepEqual(stored.body.data, retried.body.data);
      assert.equal(stored.headers.get('etag'), retried.headers.get('etag'));
      // And again: the same bytes.
      assert.equal((await create(running, body(11), '"unseen"')).text, retried.text);
    });

    test('a claim whose release failed with the database away does not hold the key: the retry creates', async () => {
      const { running, control } = await roster();
      for (const [mode, n, replayed] of [
        ['fail', 12, null],
        ['unseen', 13, 'true'],
      ] as const) {
        control.mode = mode;
        control.failedReleases = 1;
        const outage = await create(running, body(n), `"released-${n}"`);
        assert.equal(outage.status, 503, outage.text);
        control.mode = 'pass';
        // At once, well inside the lease: not 409 IDEMPOTENCY_KEY_IN_USE from the request that is over.
        const retried = await create(running, body(n), `"released-${n}"`);
        assert.equal(retried.status, 201, `${mode}: ${retried.text}`);
        assert.equal(retried.headers.get('idempotent-replayed'), replayed, mode);
        assert.equal(await usersWith(running, `idem${n}@example.com`), 1, mode);
      }
    });

    test('a claim stored but lost with its connection does not hold the key, its release failing or not', async () => {
      const { running, control } = await roster();
      for (const [n, failedReleases] of [
        [14, 0],
        [15, 1],
      ] as const) {
        control.lostClaims = 1;
        control.failedReleases = failedReleases;
        const outage = await create(running, body(n), `"lost-${n}"`);
        assert.equal(outage.status, 503, outage.text);
        const retried = await create(running, body(n), `"lost-${n}"`);
        assert.equal(retried.status, 201, `${failedReleases} failed releases: ${retried.text}`);
        assert.equal(retried.headers.get('idempotent-replayed'), null);
        assert.equal(await usersWith(running, `idem${n}@example.com`), 1);
      }
    });

    test('a key expires after IDEMPOTENCY_KEY_TTL_SECONDS', async () => {
      const { running } = await roster({ IDEMPOTENCY_KEY_TTL_SECONDS: '60' });
      const first = await create(running, body(8), '"key-8"');
      assert.equal(first.status, 201);
      clock += 59_000;
      assert.equal((await create(running, body(8), '"key-8"')).headers.get('idempotent-replayed'), 'true');
      clock += 2_000;
      const late = await create(running, body(8), '"key-8"');
      assert.equal(late.status, 409, 'processed afresh: the email is taken by the first create');
      assert.equal(late.headers.get('idempotent-replayed'), null);
    });

    test('keys are per principal under AUTH', async () => {
      const other = 'second-admin-key-0123456789ab';
      const { running } = await roster({ AUTH: 'apikey', API_KEYS: `${API_KEY_ADMIN}:admin,${other}:admin` });
      const first = await create(running, body(9), '"shared"', { 'x-api-key': API_KEY_ADMIN });
      assert.equal(first.status, 201);
      const theirs = await create(running, body(9), '"shared"', { 'x-api-key': other });
      assert.equal(theirs.status, 409, 'not the first principal’s reply');
      assert.equal(theirs.headers.get('idempotent-replayed'), null);
      const mine = await create(running, body(9), '"shared"', { 'x-api-key': API_KEY_ADMIN });
      assert.equal(mine.text, first.text);
    });

    test('a reply lost after the commit: the retry with the key gets the 201, and one user exists', async () => {
      const { running } = await roster();
      const proxy = await TcpProxy.start({ host: '127.0.0.1', port: running.port });
      after(() => proxy.close());
      proxy.loseReplies();
      await assert.rejects(
        fetch(`http://127.0.0.1:${proxy.port}/api/v1/users`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': '"lost"' },
          body: body(10),
        }),
      );
      assert.equal(proxy.lostReplies, 1);
      const retried: JsonResponse = await create(running, body(10), '"lost"');
      assert.equal(retried.status, 201, retried.text);
      assert.equal(retried.headers.get('idempotent-replayed'), 'true');
      assert.equal(retried.body.data.email, 'idem10@example.com');
      assert.equal(await usersWith(running, 'idem10@example.com'), 1);
      const stored = await request(`${running.api}/users/${retried.body.data.id}`);
      assert.deepEqual(stored.body.data, retried.body.data);
    });
  });
}

describe('the keys’ table comes by migration to a database of the previous version', { timeout: TEST_MS }, () => {
  test('SQLite: 001 only, then opened by this version', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'roster-idem-'));
    after(() => rmSync(folder, { recursive: true, force: true }));
    const path = join(folder, 'roster.db');
    const old = new Database(path);
    const migrations = await readSqliteMigrations();
    const keys = migrations.findIndex((migration) => migration.version === '002_idempotency_keys');
    assert.ok(keys > 0, JSON.stringify(migrations.map((migration) => migration.version)));
    migrateSqlite(old, migrations.slice(0, keys));
    old.close();
    const store = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, silent);
    try {
      const tables = store.database.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();
      assert.ok(tables.includes('idempotency_keys'), JSON.stringify(tables));
      const claim = { principal: 'p', key: 'k', fingerprint: 'f', token: 't', now: 1, expiresAt: 10, leaseUntil: 5 };
      assert.deepEqual(await store.keys.claim(claim), { state: 'claimed' });
      assert.equal((await store.keys.claim({ ...claim, token: 'u' })).state, 'in_flight');
    } finally {
      await store.close();
    }
  });

  test(
    'PostgreSQL: up to 006, a user in it, then opened by this version',
    { skip: DATABASE_URL ? undefined : NO_DATABASE },
    async () => {
      const schema = await freshSchema();
      after(() => schema.drop());
      const all = await readPostgresMigrations();
      // The migrations before the keys' one, whatever came after it.
      assert.ok(all.some((migration) => migration.version === '007_idempotency_keys'));
      const pool = new pg.Pool({ connectionString: schema.url, max: 1 });
      try {
        await migrate(
          pool,
          all.filter((migration) => migration.version < '007'),
        );
      } finally {
        await pool.end();
      }
      const exists = async () =>
        (await schema.query("SELECT to_regclass('idempotency_keys') IS NOT NULL AS there")).rows[0].there as boolean;
      assert.equal(await exists(), false);
      const store = await PostgresUserStore.open({ url: schema.url, poolSize: 2 }, silent);
      try {
        const { rows } = await schema.query('SELECT version FROM schema_migrations ORDER BY version');
        assert.ok(rows.some((row) => row.version === '007_idempotency_keys'));
        assert.equal(await exists(), true);
        const claim = { principal: 'p', key: 'k', fingerprint: 'f', token: 't', now: 1, expiresAt: 10, leaseUntil: 5 };
        assert.deepEqual(await store.keys.claim(claim), { state: 'claimed' });
        assert.equal((await store.keys.claim({ ...claim, token: 'u' })).state, 'in_flight');
        // Past the lease, a repeat takes an abandoned claim over; past the expiry, too.
        assert.deepEqual(await store.keys.claim({ ...claim, token: 'v', now: 6 }), { state: 'claimed' });
        await store.keys.complete({ ...claim, token: 'v' }, { status: 201, headers: { etag: '"x"' }, body: '{}' });
        assert.deepEqual(await store.keys.claim({ ...claim, token: 'w', now: 9 }), {
          state: 'done',
          fingerprint: 'f',
          reply: { status: 201, headers: { etag: '"x"' }, body: '{}' },
        });
        assert.deepEqual(await store.keys.claim({ ...claim, token: 'w', now: 10, expiresAt: 20 }), {
          state: 'claimed',
        });
      } finally {
        await store.close();
      }
    },
  );
});
