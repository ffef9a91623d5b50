/** The in-memory store against the shared store contract. */
import { MemoryUserStore } from '../../src/users/memory-store.js';
import { userStoreContract } from './store-contract.js';

userStoreContract('MemoryUserStore', async () => new MemoryUserStore());
