/**
 * Idempotency keys are bounded on every store (issue 40): per principal (IDEMPOTENCY_MAX_KEYS_PER_PRINCIPAL)
 * and in all (IDEMPOTENCY_MAX_KEYS), the oldest key concerned forgotten first; in memory also in bytes
 * (IDEMPOTENCY_MAX_BYTES); and a keyed create answered 409 EMAIL_EXISTS stores no key at all.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/index.js';
import type { KeyClaim } from '../../src/users/idempotency-keys.js';
import type { UserStore } from '../../src/users/store.js';
import { MemoryIdempotencyKeys } from '../../src/users/stores/memory/memory-idempotency-keys.js';
import { openStore } from '../../src/users/stores/registry.js';
import { request, startRoster, TEST_STORES, type TestStore } from '../support/index.js';

const BOUNDS = { IDEMPOTENCY_MAX_KEYS: '5', IDEMPOTENCY_MAX_KEYS_PER_PRINCIPAL: '3' };

/**
 * A fresh store of `kind` with the bounds above (or `env`'s), dropped when the test ends, and closed
 * then unless a server serves it (which closes it as it stops).
 */
async function storeOf(t: TestContext, kind: TestStore, env: Record<string, string> = BOUNDS, served = false) {
  const fresh = await kind.fresh();
  const config = loadConfig({ ...fresh.env, ...env, LOG_LEVEL: 'silent' });
  const { store } = await openStore(config.storage, { logger: pino({ level: 'silent' }) });
  t.after(async () => {
    if (!served) await store.close();
    await fresh.drop();
  });
  return { store, env: { ...fresh.env, ...env } };
}

let clock = 1_000_000;
/** A claim of `key` by `principal`, each a millisecond after the last (so the order of age is clear). */
const claim = (principal: string, key: string): KeyClaim => {
  const now = ++clock;
  return {
    principal,
    key,
    fingerprint: 'f',
    token: `${principal}/${key}/${now}`,
    now,
    expiresAt: now + 86_400_000,
    leaseUntil: now + 60_000,
  };
};

const state = async (store: UserStore, principal: string, key: string) =>
  (await store.keys.claim(claim(principal, key))).state;

for (const kind of TEST_STORES) {
  describe(`idempotency key bounds on the ${kind.name} store`, { skip: kind.skip }, () => {
    test('a principal keeps at most IDEMPOTENCY_MAX_KEYS_PER_PRINCIPAL: its own oldest go, no one else’s', async (t) => {
      const { store } = await storeOf(t, kind);
      assert.equal(await state(store, 'other', 'kept'), 'claimed');
      for (const key of ['k1', 'k2', 'k3', 'k4', 'k5']) assert.equal(await state(store, 'flood', key), 'claimed');
      assert.equal(await store.keys.count('flood'), 3);
      assert.equal(await store.keys.count('other'), 1);
      // The newest three are held (in flight); the oldest two were forgotten, and are claimed afresh.
      assert.equal(await state(store, 'flood', 'k5'), 'in_flight');
      assert.equal(await state(store, 'flood', 'k3'), 'in_flight');
      assert.equal(await state(store, 'other', 'kept'), 'in_flight', 'the other principal’s key is still held');
      assert.equal(await state(store, 'flood', 'k1'), 'claimed', 'k1 was forgotten');
      assert.equal(await store.keys.count('flood'), 3);
    });

    test('the store keeps at most IDEMPOTENCY_MAX_KEYS in all: the oldest go', async (t) => {
      const { store } = await storeOf(t, kind);
      for (const principal of ['a', 'b', 'c', 'd', 'e', 'f', 'g'])
        assert.equal(await state(store, principal, 'k'), 'claimed');
      assert.equal(await store.keys.count(), 5);
      assert.equal(await state(store, 'g', 'k'), 'in_flight');
      assert.equal(await state(store, 'c', 'k'), 'in_flight');
      assert.equal(await state(store, 'a', 'k'), 'claimed', 'the oldest was forgotten');
      assert.equal(await store.keys.count(), 5);
    });

    test('a keyed create answered 409 EMAIL_EXISTS stores no key; its key is free for a create that succeeds', async (t) => {
      const { store, env } = await storeOf(t, kind, {}, true);
      const running = await startRoster({ ...env, LOG_LEVEL: 'silent' }, { store });
      // Stopped here, before the after hooks drop the store's database.
      try {
        const post = (key: string, email: string) =>
          request(`${running.api}/users`, {
            method: 'POST',
            headers: { 'idempotency-key': `"${key}"` },
            body: { name: 'Keyed', email },
          });
        assert.equal((await post('first', 'keyed@example.com')).status, 201);
        const before = await store.keys.count();
        for (let i = 0; i < 20; i++) {
          const refused = await post(`fresh-${i}`, 'KEYED@example.com');
          assert.equal(refused.status, 409);
          assert.equal(refused.body.error.code, 'EMAIL_EXISTS');
        }
        assert.equal(await store.keys.count(), before, 'twenty 409s stored no key');
        // Not kept, so not replayed: the same key with another body is a create of its own.
        const later = await post('fresh-0', 'other@example.com');
        assert.equal(later.status, 201);
        assert.equal(later.headers.get('idempotent-replayed'), null);
        // A 201 is kept and replayed as before.
        const replay = await post('fresh-0', 'other@example.com');
        assert.equal(replay.status, 201);
        assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      } finally {
        await running.stop();
      }
    });
  });
}

describe('the memory store’s keys in bytes (IDEMPOTENCY_MAX_BYTES)', () => {
  test('keys and their replies take at most maxBytes: the oldest go', async () => {
    const keys = new MemoryIdempotencyKeys({ maxKeys: 1000, perPrincipal: 1000, maxBytes: 64 * 1024 });
    const body = 'x'.repeat(5000); // 10 000 bytes counted, two a character
    for (let i = 0; i < 20; i++) {
      const held = claim('p', `k${i}`);
      assert.equal((await keys.claim(held)).state, 'claimed');
      keys.keep(held, { status: 201, headers: { etag: '"v"' }, body });
      assert.ok(keys.bytes <= 64 * 1024, `${keys.bytes} bytes after ${i + 1} keys`);
    }
    assert.ok(keys.size >= 5 && keys.size <= 6, `${keys.size} keys of 10 KB in 64 KiB`);
    assert.equal((await keys.claim(claim('p', 'k19'))).state, 'done', 'the newest is kept');
    assert.equal((await keys.claim(claim('p', 'k0'))).state, 'claimed', 'the oldest was forgotten');
  });

  test('IDEMPOTENCY_MAX_BYTES comes off the heap the default MAX_USERS is derived from', () => {
    const small = loadConfig({ IDEMPOTENCY_MAX_BYTES: '1024MiB' }).maxUsers;
    const large = loadConfig({ IDEMPOTENCY_MAX_BYTES: '1MiB' }).maxUsers;
    assert.ok(small < large, `${small} users with 1024 MiB of keys, ${large} with 1 MiB`);
    // With users in a database, keys are not in the heap: no cap either way.
    assert.equal(loadConfig({ DATABASE_URL: 'sqlite::memory:', IDEMPOTENCY_MAX_BYTES: '1024MiB' }).maxUsers, 0);
  });
});
