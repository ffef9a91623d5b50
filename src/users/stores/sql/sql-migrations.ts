/**
 * The numbered SQL files that create and change a SQL store's schema (`001_users.sql`, …), read in
 * order: `migrations/postgres/` for PostgreSQL, `migrations/sqlite/` for SQLite, one folder per backend. Each store
 * records the files it applied in `schema_migrations` and applies the others, all in one transaction.
 */
import { readdir, readFile } from 'node:fs/promises';

/** `migrations/` at the package root, beside `src/` and `dist/` (dist/src/users/stores/sql/ → ../../../../../). */
export const MIGRATIONS_ROOT = new URL('../../../../../migrations/', import.meta.url);

export interface Migration {
  /** The file name without `.sql`, e.g. `001_users`: what `schema_migrations` records. */
  version: string;
  sql: string;
}

/** What `roster migrate` reports: the versions applied now, and the last one known. */
export interface Migrated {
  applied: string[];
  latest: string | undefined;
}

export async function readMigrations(directory: URL): Promise<Migration[]> {
  const files = (await readdir(directory)).filter((file) => /^\d+_[\w-]+\.sql$/.test(file)).sort();
  return Promise.all(
    files.map(async (file) => ({
      version: file.slice(0, -'.sql'.length),
      sql: await readFile(new URL(file, directory), 'utf8'),
    })),
  );
}
