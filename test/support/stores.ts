/**
 * The store backends of the registry (src/users/stores/registry.ts), as the suites that run against
 * each store loop over them: `for (const store of TEST_STORES) describe(..., { skip: store.skip }, ...)`.
 * A backend whose engine is missing here (PostgreSQL without DATABASE_URL) skips, saying why; a
 * backend the registry lists but this kit cannot make fresh stores of fails at once, naming it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/index.js';
import type { UserStore } from '../../src/users/store.js';
import { openStore, STORE_BACKENDS } from '../../src/users/stores/registry.js';
import { startRoster, type Running } from './roster.js';
import type { ServerParts } from '../../src/server.js';
import { DATABASE_URL, freshSchema, NO_DATABASE, type TestSchema } from './postgres.js';

interface Fresh {
  /** The environment that names the store (DATABASE_URL and its settings); empty for the memory store. */
  env: Record<string, string>;
  drop(): Promise<void>;
}

interface Kit {
  /** Why the backend cannot be tested here, if it cannot. */
  skip?: string | undefined;
  /** `numRuns` of the store contract's property tests (a database-backed store may ask for fewer). */
  numRuns: number;
  /** A store of its own, empty, not shared with any other. */
  fresh(): Promise<Fresh>;
}

const noDrop = async () => {};

/** How to make fresh stores of each backend, by its registry name. */
const KITS: Record<string, Kit> = {
  memory: { numRuns: 60, fresh: async () => ({ env: {}, drop: noDrop }) },
  sqlite: {
    numRuns: 20,
    fresh: async () => {
      // A file of its own, synchronous=FULL: every write reaches the disk as a deployment's would.
      const folder = mkdtempSync(join(tmpdir(), 'roster-sqlite-'));
      return {
        env: { DATABASE_URL: `sqlite:${join(folder, 'roster.db')}`, SQLITE_SYNCHRONOUS: 'FULL' },
        drop: async () => rmSync(folder, { recursive: true, force: true }),
      };
    },
  },
  postgres: {
    skip: DATABASE_URL ? undefined : NO_DATABASE,
    numRuns: 15,
    fresh: async () => {
      const schema: TestSchema = await freshSchema();
      return { env: { DATABASE_URL: schema.url }, drop: () => schema.drop() };
    },
  },
};

export interface TestStore extends Kit {
  readonly name: string;
}

export const TEST_STORES: readonly TestStore[] = STORE_BACKENDS.map((backend) => {
  const kit = KITS[backend.name];
  if (!kit) throw new Error(`test/support/stores.ts has no way to make a fresh ${backend.name} store`);
  return { name: backend.name, ...kit };
});

/**
 * Starts Roster (test/support) on a fresh store of `store`, dropped when it stops, unless `env` or
 * `options` name a store of their own.
 */
export async function startOn(
  store: TestStore,
  env: Record<string, string> = {},
  options: Parameters<typeof startRoster>[1] & ServerParts = {},
): Promise<Running> {
  if (options.store || env.DATABASE_URL !== undefined) return startRoster(env, options);
  const fresh = await store.fresh();
  try {
    const running = await startRoster({ ...fresh.env, ...env }, options);
    return {
      ...running,
      stop: async () => {
        try {
          await running.stop();
        } finally {
          await fresh.drop();
        }
      },
    };
  } catch (error) {
    await fresh.drop();
    throw error;
  }
}

/**
 * Opens an empty store of `store` through the registry, as the server does, for the store contract:
 * each call a store of its own; what it leaves behind is dropped when the test file ends.
 */
export function emptyStores(store: TestStore): () => Promise<UserStore> {
  const dropped: Fresh[] = [];
  after(async () => {
    for (const fresh of dropped.splice(0)) await fresh.drop();
  });
  return async () => {
    const fresh = await store.fresh();
    dropped.push(fresh);
    const storage = loadConfig({ ...fresh.env }).storage;
    return (await openStore(storage, { logger: pino({ level: 'silent' }) })).store;
  };
}
