/**
 * A PostgreSQL schema of one run's own, for the tests and the benchmark alike: the connection URL
 * carries its `search_path`, so runs on one database never see each other's users, and the schema is
 * dropped afterwards. Without DATABASE_URL the tests skip, saying why.
 *
 * Connections are short-lived unless `query` is used: creating and dropping each take one of their own,
 * so a schema outlives a restart of PostgreSQL (the engine-restart test) and holds nothing open while a
 * benchmark measures.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { NewUser } from '../../src/users/store.js';
import { migrate, readPostgresMigrations } from '../../src/users/stores/postgres/postgres-migrations.js';
import { INSERT_COLUMNS, toRow } from '../../src/users/stores/postgres/postgres-rows.js';

export const DATABASE_URL = process.env.DATABASE_URL;
export const NO_DATABASE =
  'DATABASE_URL not set: these tests need a PostgreSQL, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test';

export interface TestSchema {
  name: string;
  /** The database URL with this schema as the search path. */
  url: string;
  /** Runs SQL as an administrator of the database, in this schema (on one connection, kept until `drop`). */
  query(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  drop(): Promise<void>;
}

/** A database URL with `schema` as the whole search path and optional query settings. */
export function urlWithSchema(url: string, schema: string, settings: Record<string, string> = {}): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  for (const [key, value] of Object.entries(settings)) parsed.searchParams.set(key, value);
  return parsed.toString();
}

/** Runs `work` on a connection of its own to `url`, closed afterwards. */
async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // a connection the server ends (a restart): the query at hand fails instead
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** Once per database and process: concurrent CREATE EXTENSION IF NOT EXISTS can still collide. */
const trgmInPublic = new Map<string, Promise<void>>();

/**
 * A fresh schema `<prefix><random>` in the database of `databaseUrl` (DATABASE_URL unless given), with
 * pg_trgm made available in public where this role may create it.
 */
export async function freshSchema(options: { databaseUrl?: string; prefix?: string } = {}): Promise<TestSchema> {
  const databaseUrl = options.databaseUrl ?? DATABASE_URL;
  if (!databaseUrl) throw new Error(NO_DATABASE);
  const name = `${options.prefix ?? 'roster_test_'}${randomBytes(6).toString('hex')}`;
  await withClient(databaseUrl, async (client) => {
    // pg_trgm lives in public, not in a run's schema, whose drop would take it (and other runs' indexes)
    // along. Without the right to create it, the migration does without trigram indexes.
    let trgm = trgmInPublic.get(databaseUrl);
    if (!trgm) {
      trgm = client.query('CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public').then(
        () => undefined,
        () => undefined,
      );
      trgmInPublic.set(databaseUrl, trgm);
    }
    await trgm;
    await client.query(`CREATE SCHEMA ${name}`);
  });
  const url = urlWithSchema(databaseUrl, name);
  let admin: Promise<pg.Client> | undefined;
  return {
    name,
    url,
    query(text, values) {
      admin ??= (async () => {
        const client = new pg.Client({ connectionString: url });
        client.on('error', () => {});
        await client.connect();
        return client;
      })();
      return admin.then((client) => client.query(text, values));
    },
    async drop() {
      const held = admin;
      admin = undefined;
      await held?.then((client) => client.end()).catch(() => {});
      await withClient(databaseUrl, (client) => client.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`));
    },
  };
}

/**
 * The schema of `url` as the build before migration `version` left it: only the migrations before it
 * applied, and `users` stored by SQL (each created and updated at its `at`). Resolves with the last
 * migration applied; a store opened on the schema then applies the rest.
 */
export async function filledBefore(
  url: string,
  version: string,
  users: readonly { user: NewUser; at: string }[],
): Promise<string | undefined> {
  const pool = new pg.Pool({ connectionString: url, max: 1 });
  try {
    const previous = (await readPostgresMigrations()).filter((migration) => migration.version < version);
    await migrate(pool, previous);
    const stamp = `$${INSERT_COLUMNS.length + 1}`;
    const insert = `INSERT INTO users (${INSERT_COLUMNS.join(', ')}, created_at, updated_at, claims_email)
      VALUES (${INSERT_COLUMNS.map((_, at) => `$${at + 1}`).join(', ')}, ${stamp}, ${stamp}, true)`;
    for (const { user, at } of users) await pool.query(insert, [...toRow(user), at]);
    return previous.at(-1)?.version;
  } finally {
    await pool.end();
  }
}
