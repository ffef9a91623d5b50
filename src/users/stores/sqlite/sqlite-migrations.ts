/** The SQLite schema, created and changed only by the numbered SQL files of `migrations/sqlite/`. */
import type Database from 'better-sqlite3';
import { MIGRATIONS_ROOT, readMigrations, type Migrated, type Migration } from '../sql/sql-migrations.js';
import { connect, SqliteLock, type SqliteFile } from './sqlite-connection.js';

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
 * Locks the database of `config` against other Roster processes (DatabaseInUse if one holds it), opens
 * it and applies the pending migrations; on a failure, nothing stays open or locked. Resolves with the
 * versions applied and the last one known.
 */
export async function openSqlite(
  config: SqliteFile,
): Promise<Migrated & { db: Database.Database; lock: SqliteLock | undefined }> {
  const migrations = await readSqliteMigrations();
  const lock = config.path === ':memory:' ? undefined : new SqliteLock(config.path);
  let db: Database.Database | undefined;
  try {
    db = connect(config);
    return { db, lock, applied: migrateSqlite(db, migrations), latest: migrations.at(-1)?.version };
  } catch (error) {
    db?.close();
    lock?.release();
    throw error;
  }
}

/** `roster migrate`: the database of `config` migrated (openSqlite), then closed. */
export async function migrateSqliteFile(config: SqliteFile): Promise<Migrated> {
  const { db, lock, applied, latest } = await openSqlite(config);
  try {
    db.close();
  } finally {
    lock?.release();
  }
  return { applied, latest };
}
