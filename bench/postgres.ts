/**
 * The PostgreSQL of the benchmark's rows on Roster's PostgreSQL store: a schema of the run's own (the
 * tests' schema helper, test/support/postgres.ts, with a `bench_` prefix), filled with the benchmark's
 * users in bulk and dropped afterwards.
 */
import pg from 'pg';
import { migrate } from '../src/users/stores/postgres/postgres-migrations.js';
import { INSERT_COLUMNS, toRow } from '../src/users/stores/postgres/postgres-rows.js';
import { benchUser } from './users.js';

/** Users per INSERT: each column goes as one array parameter, so a batch is one short statement. */
const BATCH = 5_000;
/** Users whose grams one statement folds after the fill (about 0.22 ms of the database each). */
const FOLD_BATCH = 20_000;

/**
 * Applies Roster's migrations to the schema of `url` and, when its users table is empty, stores the
 * first `count` benchmark users in it, rows written by the store's own encoding
 * (src/users/stores/postgres/postgres-rows.ts); then has the planner's statistics taken. A table
 * that holds users already (a server restarted by the benchmark) is left as it is.
 */
export async function fillUsers(url: string, count: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await migrate(pool);
    const { rows } = await pool.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM users) AS any');
    if (rows[0]?.any) return;
    for (let start = 0; start < count; start += BATCH) {
      const columns: (string | null)[][] = INSERT_COLUMNS.map(() => []);
      const stamps: string[] = [];
      for (let index = start; index < Math.min(start + BATCH, count); index++) {
        const user = benchUser(index);
        toRow(user).forEach((value, column) => columns[column]!.push(value));
        stamps.push(user.created_at);
      }
      const names = INSERT_COLUMNS.join(', ');
      await pool.query(
        `INSERT INTO users (${names}, created_at, updated_at, claims_email)
         SELECT ${names}, created_at, created_at, true
         FROM unnest(${INSERT_COLUMNS.map((_, at) => `$${at + 1}::text[]`).join(', ')}, $${INSERT_COLUMNS.length + 1}::timestamp[])
           AS u(${names}, created_at)`,
        [...columns, stamps],
      );
    }
    // Each user stored left a row for the gram counts (migration 010) to fold, which a server would do
    // beside the bench's requests: folded here, as a deployment's folds would have over time.
    while ((await pool.query<{ n: number }>('SELECT roster_fold_grams($1) AS n', [FOLD_BATCH])).rows[0]!.n > 0);
    // Each user stored also left its change in the change log (migration 011), unnumbered: a server
    // would number them beside the bench's requests, a thousand per run of about 25 ms (a million
    // kept one backend busy for minutes, and the search rows measured that), and trim all but the
    // last CHANGES_MAX. The bench's users stand for users stored long before the run, of which the log
    // keeps nothing: it is emptied, as that trimming would have left it, and its head stays 0.
    await pool.query('TRUNCATE change_log');
    await pool.query('ANALYZE users');
    // The count triggers updated a row of user_role_counts per user stored, thousands of times per
    // statement, where no version could be pruned: hundreds of pages for a few rows, which every list
    // would read. Users created one per transaction, as a deployment creates them, leave no such table.
    await pool.query('VACUUM FULL ANALYZE user_role_counts');
  } finally {
    await pool.end();
  }
}

/** `url` with `application_name` set, which takes precedence over a pool's own: how the bench tells its servers' backends apart. */
export function withApplicationName(url: string, name: string): string {
  const named = new URL(url);
  named.searchParams.set('application_name', name);
  return named.toString();
}

/**
 * The process ids of PostgreSQL's backends that serve the connections named `applicationName`, and of
 * its background processes (WAL writer, checkpointer, …) which work for every writer; not those of
 * other clients of the same server (tests running meanwhile). Empty when the server cannot be asked.
 */
export async function postgresPids(databaseUrl: string, applicationName: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => {});
  try {
    await client.connect();
    const { rows } = await client.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE application_name = $1 OR backend_type <> 'client backend'`,
      [applicationName],
    );
    return rows.map((row) => row.pid);
  } catch {
    return [];
  } finally {
    await client.end().catch(() => undefined);
  }
}
