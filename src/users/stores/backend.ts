/**
 * What a store backend offers the rest of Roster: a folder of stores/ exporting one `StoreBackend`,
 * listed once in registry.ts. Nothing outside the folder names the backend's files: the server, the
 * CLI and the tests ask the registry.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../clock.js';
import type { StorageConfig } from '../../config/index.js';
import type { EngineFaults } from '../../ops/engine-faults.js';
import type { Dependency } from '../../ops/health.js';
import type { UserStore } from '../store.js';
import type { Migrated } from './sql/sql-migrations.js';

export interface StoreDeps {
  logger: Logger;
  /** Where the engine's client errors go (engine-faults.ts); one of its own by default. */
  faults?: EngineFaults;
  /** What stamps `created_at` and `updated_at`, where the store stamps them itself. */
  clock?: Clock;
}

/** A copy of the store taken while it serves (`roster backup`). */
export interface BackedUp {
  users: number;
  pages: number;
  /** What was copied, for people: the database file. */
  source: string;
}

export interface StoreBackend {
  /** How tests and logs call it: `memory`, `sqlite`, `postgres`. */
  readonly name: string;
  /** Whether DATABASE_URL (undefined when unset) names a store of this backend. */
  accepts(url: string | undefined): boolean;
  /** The start-up line saying where users are kept. */
  note(storage: StorageConfig): string;
  /** The store, migrated and ready, and the health entry of its engine if it has one. */
  open(storage: StorageConfig, deps: StoreDeps): Promise<{ store: UserStore; health?: Dependency }>;
  /** Applies the pending migrations without serving (`roster migrate`); absent without a schema. */
  migrate?(storage: StorageConfig): Promise<Migrated>;
  /** How to copy the store to a new file while it serves (`roster backup`); absent where there is none. */
  backupOf?(storage: StorageConfig): ((target: string) => Promise<BackedUp>) | undefined;
}
