/**
 * Test helpers for the real PostgreSQL named by DATABASE_URL: each test run gets a schema of its own
 * (the connection URL carries `search_path`), so runs never see each other's users, and the schema is
 * dropped afterwards. Without DATABASE_URL the tests skip, saying why.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const DATABASE_URL = process.env.DATABASE_URL;
export const NO_DATABASE = 'DATABASE_URL not set: these tests need a PostgreSQL, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test';

export interface TestSchema {
  name: string;
  /** DATABASE_URL with this schema as the search path. */
  url: string;
  /** Runs SQL as an administrator of the database, in this schema. */
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  drop(): Promise<void>;
}

/** DATABASE_URL, or another URL, with `schema` as the whole search path and optional query settings. */
export function urlWithSchema(url: string, schema: string, settings: Record<string, string> = {}): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  for (const [key, value] of Object.entries(settings)) parsed.searchParams.set(key, value);
  return parsed.toString();
}

let trgmInPublic: Promise<void> | undefined;

export async function freshSchema(): Promise<TestSchema> {
  if (!DATABASE_URL) throw new Error(NO_DATABASE);
  const name = `roster_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  // pg_trgm lives in public, not in a test schema whose drop would take it (and other runs' indexes) along.
  trgmInPublic ??= admin.query('CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public').then(
    () => undefined,
    () => undefined, // not allowed here: the migration then does without trigram indexes
  );
  await trgmInPublic;
  await admin.query(`CREATE SCHEMA ${name}`);
  await admin.query(`SET search_path = ${name}`);
  return {
    name,
    url: urlWithSchema(DATABASE_URL, name),
    query: (text, values) => admin.query(text, values),
    async drop() {
      try {
        await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
      } finally {
        await admin.end();
      }
    },
  };
}
