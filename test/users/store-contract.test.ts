/** The store contract (store-contract.ts) against each backend of the registry, as the server opens it. */
import { test } from 'node:test';
import { userStoreContract } from './store-contract.js';
import { emptyStores, TEST_STORES } from '../support/index.js';

for (const store of TEST_STORES) {
  if (store.skip) test(`UserStore contract: ${store.name}`, { skip: store.skip }, () => {});
  else userStoreContract(store.name, emptyStores(store), { numRuns: store.numRuns });
}
