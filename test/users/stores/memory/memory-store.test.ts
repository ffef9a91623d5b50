/**
 * The in-memory store against the shared store contract at small index sizes; at its own sizes it
 * runs in the loop over every backend (test/users/store-contract.test.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { queryUsers, type ListParams } from '../../../../src/users/query.js';
import type { User } from '../../../../src/users/schema.js';
import { MemoryUserStore } from '../../../../src/users/stores/memory/memory-store.js';
import { userStoreContract } from '../../store-contract.js';

userStoreContract(
  'MemoryUserStore with index chunks of 3 (chunk splits, appends and search texts at small sizes)',
  async () => new MemoryUserStore({ indexChunkSize: 3 }),
);

describe('the memory store’s idempotency keys', () => {
  test('keep at most IDEMPOTENCY_MAX_KEYS: the oldest goes first, expired ones before it', async () => {
    const store = new MemoryUserStore({ keyBounds: { maxKeys: 2, perPrincipal: 10, maxBytes: 1 << 20 } });
    const claim = (key: string, now = 0) => ({
      principal: 'p',
      key,
      fingerprint: 'f',
      token: key,
      now,
      expiresAt: now + 100,
      leaseUntil: now + 50,
    });
    for (const key of ['a', 'b', 'c']) assert.equal((await store.keys.claim(claim(key))).state, 'claimed');
    assert.equal(store.keys.size, 2);
    assert.equal((await store.keys.claim({ ...claim('c'), token: 'again' })).state, 'in_flight');
    assert.equal((await store.keys.claim({ ...claim('a'), token: 'again' })).state, 'claimed', 'a was forgotten');
    // Past their expiry, keys are swept when a new one comes.
    assert.equal((await store.keys.claim(claim('d', 1_000))).state, 'claimed');
    assert.equal(store.keys.size, 1);
  });
});

describe('the memory store’s runs of new users', () => {
  test('users created in runs longer than the field indexes take at once, some changed or gone, list in every order', async () => {
    // New users go into the field indexes in runs (memory-store.ts: SETTLE_AT, 256): 700 creates
    // cross it twice, and users still waiting are renamed, given a new email, moved to another role
    // or removed before any list reads them.
    const store = new MemoryUserStore({ indexChunkSize: 8 });
    const model: User[] = [];
    for (let i = 0; i < 700; i++) {
      const user = await store.insert({
        id: randomUUID(),
        name: `${['Nia', 'Bo', 'Ann'][i % 3]} ${(i * 7919) % 701}`,
        email: `u${(i * 31) % 997}.${i}@x.io`,
        role: i % 4 === 0 ? 'admin' : 'user',
      });
      assert.notEqual(user, 'email_taken');
      model.push(user as User);
      if (i % 97 === 96) {
        const at = model.length - 5;
        const changes = { name: `Zed ${i}`, email: `a${i}@x.io`, role: 'guest' };
        model[at] = (await store.update(model[at]!.id, changes, { uniqueEmail: false })) as User;
        const gone = model.splice(model.length - 11, 1)[0]!;
        assert.equal(await store.remove(gone.id), true);
      }
    }
    for (const sort of ['id', 'name', 'email', 'role', 'created_at', 'updated_at'])
      for (const descending of [false, true])
        for (const role of [undefined, 'admin', 'guest'])
          for (const offset of [0, 250, 680]) {
            const asked: ListParams = { sort, descending, role, offset, limit: 20 };
            const { users, total } = await store.list(asked);
            const expected = queryUsers(model, asked);
            assert.deepEqual(
              { users, total },
              { users: expected.users, total: expected.total },
              `${sort} ${descending} ${role} ${offset}`,
            );
          }
  });
});
