/** The in-memory store against the shared store contract. */
import { MemoryUserStore } from '../../src/users/stores/memory/memory-store.js';
import { userStoreContract } from './store-contract.js';

userStoreContract('MemoryUserStore', async () => new MemoryUserStore());
userStoreContract(
  'MemoryUserStore with index chunks of 3 (chunk splits, appends and search texts at small sizes)',
  async () => new MemoryUserStore({ indexChunkSize: 3 }),
);
