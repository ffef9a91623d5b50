/**
 * The PostgreSQL of the benchmark's rows on Roster's PostgreSQL store: a schema of the run's own (the
 * URL carries its search path, as the store's tests do), filled with the benchmark's users in bulk and
 * dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrate } from '../src/users/postgres-migrations.js';
import { toStored } from '../src/users/postgres-text.js';
import { emailKey } from '../src/users/store.js';
import { benchUser } from './users.js';

export interface BenchSchema {
  name: string;
  /** The database URL with this schema as the whole search path. */
  url: string;
  drop(): Promise<void>;
}

/** A fresh schema `bench_<random>` in the database of `databaseUrl`. */
export async function benchSchema(databaseUrl: string): Promise<BenchSchema> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    // pg_trgm in public, not in the bench schema, whose drop would take it (and others' indexes) along.
    // Without the right to create it, the migration does without trigram indexes.
    await admin.query('CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public').catch(() => undefined);
    await admin.query(`CREATE SCHEMA ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(databaseUrl);
  url.searchParams.set('options', `-c search_path=${name}`);
  return {
    name,
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        await client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      } finally {
        await client.end();
      }
    },
  };
}

/** Users per INSERT: each column goes as one array parameter, so a batch is one short statement. */
const BATCH = 5_000;

/**
 * Applies Roster's migrations to the schema of `url` and, when its users table is empty, stores the
 * first `count` benchmark users in it, with the columns the migration defines written as the store
 * writes them; then has the planner's statistics taken. A table
 * that holds users already (a server restarted by the benchmark) is left as it is.
 */
export async function fillUsers(url: string, count: number): Promise<void> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    await migrate(pool);
    const { rows } = await pool.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM users) AS any');
    if (rows[0]?.any) return;
    for (let start = 0; start < count; start += BATCH) {
      const columns: string[][] = Array.from({ length: 8 }, () => []);
      for (let index = start; index < Math.min(start + BATCH, count); index++) {
        const user = benchUser(index);
        const values = [user.id, user.name, user.email, user.role, user.created_at, user.name.toLowerCase(), user.email.toLowerCase(), emailKey(user.email)];
        values.forEach((value, column) => columns[column]!.push(toStored(value)));
      }
      await pool.query(
        `INSERT INTO users (id, name, email, role, created_at, updated_at, name_lower, email_lower, email_key, claims_email)
         SELECT id, name, email, role, created_at, created_at, name_lower, email_lower, email_key, true
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamp[], $6::text[], $7::text[], $8::text[])
           AS u(id, name, email, role, created_at, name_lower, email_lower, email_key)`,
        columns,
      );
    }
    await pool.query('ANALYZE users');
  } finally {
    await pool.end();
  }
}
