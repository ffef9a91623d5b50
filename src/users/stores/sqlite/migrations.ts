/** The SQLite schema, created and changed only by the numbered SQL files of `migrations/sqlite/`. */
import type Database from 'better-sqlite3';
import { MIGRATIONS_ROOT, readMigrations, type Migrated, type Migration } from '../sql/migrations.js';
import { connect, SqliteLock, type SqliteFile } from './connection.js';

const MIGRATIONS = new URL('sqlite/', MIGRATIONS_ROOT);

/** Applies the SQLite migrations not yet recorded, in one transaction; returns the versions applied now. */
export function migrateSqlite(db: Database.Database, migrations: readonly Migration[]): string[] {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY, applied_at TEXT NOT NULL)');
  const apply = db.transaction(() => {
    const done = new Set(db.prepare('SELECT version FROM schema_migrations').pluck().all() as string[]);
    const applied: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.version)) continue;
      db.exec(migration.sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(
        migration.version,
        new Date().toISOString(),
      );
      applied.push(migration.version);
    }
    return applied;
  });
  return apply.immediate();
}

export const readSqliteMigrations = (): Promise<Migration[]> => readMigrations(MIGRATIONS);

/**
 * Opens (and locks) the database of `config` and applies the pending migrations; for `roster migrate`.
 * Resolves with the versions applied and the last one known.
 */
export async function migrateSqliteFile(config: SqliteFile): Promise<Migrated> {
  const migrations = await readSqliteMigrations();
  const lock = config.path === ':memory:' ? undefined : new SqliteLock(config.path);
  try {
    const db = connect(config);
    try {
      return { applied: migrateSqlite(db, migrations), latest: migrations.at(-1)?.version };
    } finally {
      db.close();
    }
  } finally {
    lock?.release();
  }
}
