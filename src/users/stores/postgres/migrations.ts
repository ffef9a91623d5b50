/**
 * The PostgreSQL schema, created and changed only by the numbered SQL files in `migrations/` at the
 * package root. All pending ones are applied in one transaction under an advisory lock, so instances
 * starting together apply them once, and a failing file leaves the schema as it was.
 */
import type pg from 'pg';
import { readMigrations, type Migration } from '../sql/migrations.js';
import { inTransaction } from './connection.js';

/** The advisory lock of migrating, per schema: two databases or schemas do not wait for each other. */
const LOCK = "pg_advisory_xact_lock(hashtextextended('roster.migrate:' || current_schema(), 0))";

/** Applies the migrations not yet recorded; resolves with the versions applied now (none when up to date). */
export async function migrate(pool: pg.Pool, migrations?: readonly Migration[]): Promise<string[]> {
  const all = migrations ?? (await readMigrations());
  return inTransaction(await pool.connect(), async (client) => {
    await client.query(`SELECT ${LOCK}`);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const { rows } = await client.query<{ version: string }>('SELECT version FROM schema_migrations');
    const done = new Set(rows.map((row) => row.version));
    const applied: string[] = [];
    for (const migration of all) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version) VALUES ($1)', [migration.version]);
      applied.push(migration.version);
    }
    return applied;
  });
}
