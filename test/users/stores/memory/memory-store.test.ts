/**
 * The in-memory store against the shared store contract at small index sizes; at its own sizes it
 * runs in the loop over every backend (test/users/store-contract.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
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
