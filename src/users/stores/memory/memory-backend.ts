/** Users in this process's memory, for its life (contract): the store without DATABASE_URL. */
import { keyBoundsOf, type StoreBackend } from '../backend.js';
import { MemoryUserStore } from './memory-store.js';

export const memoryBackend: StoreBackend = {
  name: 'memory',
  accepts: (url) => url === undefined,
  note: () =>
    'Users live in memory and are lost when Roster stops; set DATABASE_URL to keep them in PostgreSQL or SQLite',
  open: async (storage, deps) => ({
    store: new MemoryUserStore({
      clock: deps.clock,
      keyBounds: keyBoundsOf(storage),
      changeBounds: storage.changeBounds,
    }),
  }),
};
