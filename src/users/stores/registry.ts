/**
 * The store backends (backend.ts), and the one that DATABASE_URL names. Each backend's module loads its
 * engine's driver only when opened, so the default process carries neither pg nor better-sqlite3.
 */
import type { StorageConfig } from '../../config/index.js';
import type { Dependency } from '../../ops/health.js';
import type { UserStore } from '../store.js';
import type { BackedUp, StoreBackend, StoreDeps } from './backend.js';
import { memoryBackend } from './memory/memory-backend.js';
import { postgresBackend } from './postgres/postgres-backend.js';
import { sqliteBackend } from './sqlite/sqlite-backend.js';
import type { Migrated } from './sql/sql-migrations.js';

/** Every backend, in the order they are asked whether DATABASE_URL is theirs. */
export const STORE_BACKENDS: readonly StoreBackend[] = [memoryBackend, sqliteBackend, postgresBackend];

/** The backend of `storage.url` (the configuration has checked that one accepts it). */
export function storeBackend(storage: StorageConfig): StoreBackend {
  const backend = STORE_BACKENDS.find((candidate) => candidate.accepts(storage.url));
  if (!backend) throw new Error(`no store backend accepts DATABASE_URL ${storage.url ?? '(unset)'}`);
  return backend;
}

/** A store opened, with what its backend tells of it (backend.ts: StoreBackend). */
export interface OpenStore {
  readonly store: UserStore;
  readonly health: Dependency | undefined;
  readonly note: string;
  /** Applies pending migrations (opening did already; none is left unless another process added files). */
  migrate(): Promise<Migrated>;
  /** A copy of the store to a new file, where the backend can take one. */
  readonly backup: ((target: string) => Promise<BackedUp>) | undefined;
}

/** Opens the store that `storage` names: migrated, ready to serve. */
export async function openStore(storage: StorageConfig, deps: StoreDeps): Promise<OpenStore> {
  const backend = storeBackend(storage);
  const { store, health } = await backend.open(storage, deps);
  return {
    store,
    health,
    note: backend.note(storage),
    migrate: async () => (backend.migrate ? backend.migrate(storage) : { applied: [], latest: undefined }),
    backup: backend.backupOf?.(storage),
  };
}
