/**
 * The PostgreSQL schema, created and changed only by the numbered SQL files in `migrations/postgres/`
 * at the package root, under an advisory lock, so instances starting together apply them once. Consecutive
 * pending files are applied in one transaction, so a failing file leaves the schema as it was.
 *
 * A file whose first line is `-- migrate: concurrently` is applied outside any transaction, statement
 * by statement: it builds indexes with CREATE INDEX CONCURRENTLY, which PostgreSQL refuses inside a
 * transaction and which lets every instance read and write the table meanwhile. Such a file holds only
 * `CREATE [UNIQUE] INDEX CONCURRENTLY IF NOT EXISTS name …;` statements, one after the other. A build
 * that was interrupted (the process killed, the connection lost) leaves its index INVALID: PostgreSQL
 * keeps it up to date on writes but never reads it, and IF NOT EXISTS would skip it. So before each
 * statement an INVALID index of that name is dropped (concurrently too), and the file is recorded only
 * once all of it ran: the next start builds what is missing, and so heals.
 */
import type pg from 'pg';
import { MIGRATIONS_ROOT, readMigrations, type Migration } from '../sql/sql-migrations.js';

const MIGRATIONS = new URL('postgres/', MIGRATIONS_ROOT);

/** The PostgreSQL migrations, in order. */
export const readPostgresMigrations = (): Promise<Migration[]> => readMigrations(MIGRATIONS);

/** The advisory lock of migrating, per schema: two databases or schemas do not wait for each other. */
const LOCK = "hashtextextended('roster.migrate:' || current_schema(), 0)";
/** How long an instance waits between two tries for the lock while another one migrates. */
const LOCK_RETRY_MS = 100;
/** What marks a file to be applied outside a transaction (see above). */
const CONCURRENTLY = /^-- migrate: concurrently\s*$/m;
/** A statement of such a file, and the index it names. */
const INDEX_STATEMENT = /^CREATE (?:UNIQUE )?INDEX CONCURRENTLY IF NOT EXISTS (\w+) ON (\w+) /;
/**
 * The pool's clients give up on a statement after a few seconds (connection.ts); building an index on
 * a large table takes longer, so migrations lift both limits on their connection (the most a timer takes).
 */
const NO_TIMEOUT = { query_timeout: 2 ** 31 - 1 };

/** Whether `migration` is applied outside a transaction (see above). */
export const isConcurrent = (migration: Migration): boolean => CONCURRENTLY.test(migration.sql.split('\n', 1)[0]!);

/**
 * The statements of a concurrent migration: the file without its comment lines, split at the `;` that
 * ends a line. A hand-written split, no SQL parser: such files hold only the index statements above, so
 * a statement that is not one of them is refused rather than guessed at.
 */
export function concurrentStatements(migration: Migration): { index: string; table: string; sql: string }[] {
  const text = migration.sql
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n');
  return text
    .split(/;\s*$/m)
    .map((statement) => statement.trim().replace(/\s+/g, ' '))
    .filter((statement) => statement !== '')
    .map((sql) => {
      const [, index, table] = INDEX_STATEMENT.exec(sql) ?? [];
      if (index === undefined || table === undefined) {
        throw new Error(`${migration.version}: not an index built concurrently: ${sql}`);
      }
      return { index, table, sql };
    });
}

/** Applies the migrations not yet recorded; resolves with the versions applied now (none when up to date). */
export async function migrate(pool: pg.Pool, migrations?: readonly Migration[]): Promise<string[]> {
  const all = migrations ?? (await readPostgresMigrations());
  const client = await pool.connect();
  let failure: Error | undefined;
  const run = (text: string, values: unknown[] = []) => client.query({ text, values, ...NO_TIMEOUT });
  try {
    await run('SET statement_timeout = 0');
    // Waits by trying again rather than in a blocking call: a session that waits for a lock inside a
    // statement holds a snapshot, which CREATE INDEX CONCURRENTLY in the session holding the lock would
    // wait for in turn.
    while (!(await run(`SELECT pg_try_advisory_lock(${LOCK}) AS locked`)).rows[0].locked) {
      await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
    }
    try {
      await run(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      const { rows } = await run('SELECT version FROM schema_migrations');
      const done = new Set(rows.map((row: { version: string }) => row.version));
      const pending = all.filter((migration) => !done.has(migration.version));
      const record = (migration: Migration) =>
        run('INSERT INTO schema_migrations (version) VALUES ($1)', [migration.version]);
      for (let at = 0; at < pending.length;) {
        const migration = pending[at]!;
        if (isConcurrent(migration)) {
          for (const { index, table, sql } of concurrentStatements(migration)) {
            const { rows: invalid } = await run(
              `SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               WHERE c.relname = $1 AND c.relnamespace = current_schema()::regnamespace AND NOT i.indisvalid`,
              [index],
            );
            if (invalid.length > 0) await run(`DROP INDEX CONCURRENTLY IF EXISTS ${index}`);
            // On an empty table (a new database) a plain build takes an instant, while a concurrent
            // one waits for every older transaction in the database to end, however unrelated.
            const { rows: filled } = await run(`SELECT EXISTS (SELECT 1 FROM ${table}) AS filled`);
            await run(filled[0].filled ? sql : sql.replace(' CONCURRENTLY', ''));
          }
          await record(migration);
          at++;
          continue;
        }
        // The transactional files up to the next concurrent one (or the end), in one transaction.
        await run('BEGIN');
        try {
          for (; at < pending.length && !isConcurrent(pending[at]!); at++) {
            await run(pending[at]!.sql);
            await record(pending[at]!);
          }
          await run('COMMIT');
        } catch (error) {
          await run('ROLLBACK').catch(() => undefined);
          throw error;
        }
      }
      return pending.map((migration) => migration.version);
    } finally {
      await run(`SELECT pg_advisory_unlock(${LOCK})`).catch(() => undefined);
    }
  } catch (error) {
    failure = error as Error;
    throw error;
  } finally {
    // A client that failed may have lost its connection or kept the settings above: the pool discards it.
    if (failure === undefined) await run('RESET statement_timeout').catch((error: Error) => (failure = error));
    client.release(failure);
  }
}
