/**
 * The in-memory store against the shared store contract at small index sizes; at its own sizes it
 * runs in the loop over every backend (test/users/store-contract.test.ts).
 */
import { MemoryUserStore } from '../../../../src/users/stores/memory/memory-store.js';
import { userStoreContract } from '../../store-contract.js';

userStoreContract(
  'MemoryUserStore with index chunks of 3 (chunk splits, appends and search texts at small sizes)',
  async () => new MemoryUserStore({ indexChunkSize: 3 }),
);
