/**
 * The indexes that serve deep pages and role-filtered sorts, added to a database the previous version
 * filled: SQLite (migrations/sqlite/003) and PostgreSQL (migration 008, built concurrently). Each test
 * migrates a database up to the previous version, stores users through that schema, then opens the
 * store the normal way, and checks the migration, the indexes and the lists against the pure query.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { createClock } from '../../../src/clock.js';
import { queryUsers, type ListParams } from '../../../src/users/query.js';
import type { User } from '../../../src/users/schema.js';
import type { UserStore } from '../../../src/users/store.js';
import { EngineFaults } from '../../../src/ops/engine-faults.js';
import { createPool } from '../../../src/users/stores/postgres/postgres-connection.js';
import { migrate, readPostgresMigrations } from '../../../src/users/stores/postgres/postgres-migrations.js';
import { PostgresUserStore } from '../../../src/users/stores/postgres/postgres-store.js';
import { INSERT_COLUMNS, toRow as toPostgresRow } from '../../../src/users/stores/postgres/postgres-rows.js';
import { connect, SQLITE_CACHE_KIB } from '../../../src/users/stores/sqlite/sqlite-connection.js';
import { migrateSqlite, readSqliteMigrations } from '../../../src/users/stores/sqlite/sqlite-migrations.js';
import { microsOf, toRow as toSqliteRow } from '../../../src/users/stores/sqlite/sqlite-rows.js';
import { ROW_COLUMNS } from '../../../src/users/stores/sql/columns.js';
import { SqliteUserStore } from '../../../src/users/stores/sqlite/sqlite-store.js';
import { DATABASE_URL, freshSchema, NO_DATABASE } from '../../support/index.js';

/** node-postgres's warnings of two statements at once on one client, from this file's start. */
const overlapWarnings: Error[] = [];
process.on('warning', (warning) => {
  if (warning.message.includes('already executing a query')) overlapWarnings.push(warning);
});

const silent = pino({ level: 'silent' });
const clock = createClock();

/** Users with tying names, three roles, and stamps in creation order, as the previous version stored them. */
function oldUsers(count: number): User[] {
  return Array.from({ length: count }, (_, i) => {
    const now = clock.next();
    return {
      id: randomUUID(),
      name: ['Ada', 'bob', 'Zoë', 'ada'][i % 4]!,
      email: `u${i}@${i % 3 ? 'corp' : 'home'}.example`,
      role: ['user', 'admin', 'user', 'guest'][i % 4]!,
      created_at: now,
      updated_at: now,
    };
  });
}

/** Every list of every order, both directions, with and without a role, at pages from both ends. */
async function assertListsEqualNaive(store: UserStore, users: readonly User[]): Promise<void> {
  for (const role of [undefined, 'user', 'admin', 'guest']) {
    const total = users.filter((user) => role === undefined || user.role === role).length;
    for (const sort of ['created_at', 'updated_at', 'id', 'name', 'email', 'role']) {
      for (const descending of [false, true]) {
        for (const offset of [0, Math.floor(total / 2) - 3, Math.floor(total / 2) + 2, total - 10, total - 1]) {
          const params: ListParams = { role, sort, descending, offset, limit: 10 };
          const { users: page, total: counted } = await store.list(params);
          const expected = queryUsers(users, params);
          assert.deepEqual(
            { users: page, total: counted },
            { users: expected.users, total: expected.total },
            JSON.stringify(params),
          );
        }
      }
    }
  }
}

/**
 * Today's columns and a row's values for them (`columns`, `row`), cut to those that `held` (the old
 * schema's columns): a field added since the previous version has no column there, and the previous
 * version stored no value for it.
 */
function oldColumns(columns: readonly string[], held: ReadonlySet<string>): number[] {
  const kept = columns.flatMap((column, at) => (held.has(column) ? [at] : []));
  for (const field of ['id', 'name', 'email', 'role'])
    assert.ok(kept.includes(columns.indexOf(field)), `${field} among the old columns: ${[...held].join(', ')}`);
  return kept;
}

const PAGE_INDEXES_SQLITE = {
  users_created: '(created_at)',
  users_role_id: '(role, id)',
  users_name: '(name, created_at, role)',
  users_name_desc: '(name DESC, created_at, role)',
  users_email: '(email, created_at, role)',
  users_email_desc: '(email DESC, created_at, role)',
  users_updated_at: '(updated_at, role)',
};

describe('SQLite: a file the previous version filled', () => {
  const folder = mkdtempSync(join(tmpdir(), 'roster-page-indexes-'));
  after(() => rmSync(folder, { recursive: true, force: true }));

  test('gets the page indexes at start-up, and its lists equal the naive ones', async () => {
    const path = join(folder, 'roster.db');
    const all = await readSqliteMigrations();
    const previous = all.filter((migration) => migration.version < '003');
    const users = oldUsers(120);
    const db = connect({ path, synchronous: 'NORMAL' });
    try {
      assert.deepEqual(migrateSqlite(db, previous), ['001_users', '002_idempotency_keys']);
      const held = new Set(db.prepare("SELECT name FROM pragma_table_info('users')").pluck().all() as string[]);
      const kept = oldColumns(ROW_COLUMNS, held);
      const insert = db.prepare(
        `INSERT INTO users (${kept.map((at) => ROW_COLUMNS[at]).join(', ')}) VALUES (${kept.map(() => '?').join(', ')})`,
      );
      db.transaction(() => {
        for (const user of users) {
          const row = toSqliteRow(user, microsOf(user.created_at));
          insert.run(...kept.map((at) => row[at]));
        }
      })();
      // Statistics for the old indexes only, as a file analyzed before has: the planner would now
      // prefer the new indexes it knows nothing about, whatever their order.
      db.exec('ANALYZE');
    } finally {
      db.close();
    }
    const store = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, silent);
    try {
      const versions = store.database.prepare('SELECT version FROM schema_migrations').pluck().all();
      assert.ok(versions.includes('003_page_indexes'), JSON.stringify(versions));
      const indexes = new Map(
        (
          store.database
            .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'users'")
            .all() as { name: string; sql: string | null }[]
        ).map((index) => [index.name, index.sql]),
      );
      for (const [name, columns] of Object.entries(PAGE_INDEXES_SQLITE)) {
        assert.equal(indexes.get(name), `CREATE INDEX ${name} ON users ${columns}`);
      }
      // Pages of the indexes stay in memory between walks, up to the bound.
      assert.equal(store.database.pragma('cache_size', { simple: true }), -SQLITE_CACHE_KIB);
      // Every page statement the lists prepare walks one covering index in the page's order: no sort.
      const db = store.database;
      const prepare = db.prepare.bind(db);
      const pages = new Set<string>();
      db.prepare = ((sql: string) => {
        if (/ LIMIT \? OFFSET \?$/.test(sql)) pages.add(sql);
        return prepare(sql);
      }) as typeof db.prepare;
      await assertListsEqualNaive(store, users);
      db.prepare = prepare;
      assert.ok(pages.size >= 20, `${pages.size} page statements`);
      for (const sql of pages) {
        const values = sql
          .split('?')
          .slice(1)
          .map(() => 1); // the plan does not depend on them
        const plan = (prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...values) as { detail: string }[]).map(
          (row) => row.detail,
        );
        assert.equal(plan.length, 1, `${sql}: ${plan.join('; ')}`);
        assert.match(plan[0]!, /^(SCAN|SEARCH) users USING COVERING INDEX /, sql);
      }
    } finally {
      await store.close();
    }
  });
});

const PAGE_INDEXES_POSTGRES = [
  'users_name_desc',
  'users_email_desc',
  'users_updated_at_desc',
  'users_role_id',
  'users_role_name',
  'users_role_name_desc',
  'users_role_email',
  'users_role_email_desc',
  'users_role_updated_at',
  'users_role_updated_at_desc',
];

describe('PostgreSQL: a database the previous version filled', { skip: DATABASE_URL ? undefined : NO_DATABASE }, () => {
  /** A schema migrated up to 007 and holding `users`, stored through that schema's columns. */
  async function previousVersion(users: readonly User[]) {
    const schema = await freshSchema();
    const pool = new pg.Pool({ connectionString: schema.url, max: 1 });
    try {
      const previous = (await readPostgresMigrations()).filter((migration) => migration.version < '008');
      assert.equal(previous.at(-1)?.version, '007_idempotency_keys');
      await migrate(pool, previous);
      const { rows } = await pool.query<{ name: string }>(
        `SELECT column_name AS name FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name = 'users'`,
      );
      const kept = oldColumns(INSERT_COLUMNS, new Set(rows.map((row) => row.name)));
      const stamp = `$${kept.length + 1}`;
      for (const user of users) {
        // One statement per user, as the previous version wrote them: the count triggers keep the totals.
        const row = toPostgresRow(user);
        await pool.query(
          `INSERT INTO users (${kept.map((at) => INSERT_COLUMNS[at]).join(', ')}, created_at, updated_at, claims_email)
           VALUES (${kept.map((_, i) => `$${i + 1}`).join(', ')}, ${stamp}, ${stamp}, true)`,
          [...kept.map((at) => row[at]), user.created_at],
        );
      }
    } finally {
      await pool.end();
    }
    return schema;
  }

  /** The page indexes of the schema, by name: whether PostgreSQL may read each (not INVALID). */
  async function pageIndexes(schema: Awaited<ReturnType<typeof freshSchema>>): Promise<Map<string, boolean>> {
    const { rows } = await schema.query(
      `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
       WHERE c.relnamespace = $1::regnamespace`,
      [schema.name],
    );
    return new Map(rows.map((row) => [row.name, row.valid]));
  }

  test('gets the page indexes, built concurrently and valid, and its lists equal the naive ones', async () => {
    const users = oldUsers(150);
    const schema = await previousVersion(users);
    try {
      assert.equal((await pageIndexes(schema)).has('users_name_desc'), false);
      const store = await PostgresUserStore.open({ url: schema.url, poolSize: 2 }, silent);
      try {
        const { rows } = await schema.query("SELECT 1 FROM schema_migrations WHERE version = '008_page_indexes'");
        assert.equal(rows.length, 1);
        const indexes = await pageIndexes(schema);
        for (const name of PAGE_INDEXES_POSTGRES) assert.equal(indexes.get(name), true, name);
        await assertListsEqualNaive(store, users);
      } finally {
        await store.close();
      }
    } finally {
      await schema.drop();
    }
  });

  test("the store's connections run without JIT compilation, which a page's generic plan would pay each time", async () => {
    const pool = createPool({ url: DATABASE_URL!, poolSize: 2 }, new EngineFaults(silent));
    try {
      const clients = await Promise.all([pool.connect(), pool.connect()]);
      for (const client of clients) assert.equal((await client.query('SHOW jit')).rows[0].jit, 'off');
      for (const client of clients) client.release();
    } finally {
      await pool.end();
    }
  });

  test('a new connection is set up before its first statement, not beside it (which pg@9 refuses)', async () => {
    // node-postgres warns once a process of a statement sent while another runs on the same client:
    // the listener, set when this file loaded, has heard every one its tests caused so far.
    const pool = createPool({ url: DATABASE_URL!, poolSize: 2 }, new EngineFaults(silent));
    try {
      const answers = await Promise.all([1, 2, 3, 4].map(() => pool.query('SHOW jit')));
      assert.deepEqual(
        answers.map(({ rows }) => rows[0].jit),
        ['off', 'off', 'off', 'off'],
      );
    } finally {
      await pool.end();
    }
    assert.deepEqual(
      overlapWarnings.map((warning) => warning.message),
      [],
    );
  });

  test('a build that was interrupted (an INVALID index) is dropped and built again at the next start', async () => {
    const users = oldUsers(40);
    const schema = await previousVersion(users);
    try {
      // A concurrent build that fails leaves its index behind, INVALID, as a killed one does: here a
      // unique index over values that repeat, under the name migration 008 builds.
      await assert.rejects(schema.query('CREATE UNIQUE INDEX CONCURRENTLY users_role_name ON users (role)'));
      assert.equal((await pageIndexes(schema)).get('users_role_name'), false);
      const store = await PostgresUserStore.open({ url: schema.url, poolSize: 2 }, silent);
      try {
        const indexes = await pageIndexes(schema);
        for (const name of PAGE_INDEXES_POSTGRES) assert.equal(indexes.get(name), true, name);
        const { rows } = await schema.query(
          "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'users_role_name'",
          [schema.name],
        );
        assert.match(
          rows[0].indexdef,
          /^CREATE INDEX users_role_name ON \S+ USING btree \(role, name, created_at, seq\)$/,
        );
        await assertListsEqualNaive(store, users);
      } finally {
        await store.close();
      }
    } finally {
      await schema.drop();
    }
  });
});
