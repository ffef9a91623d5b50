/**
 * The SQLite store against the shared store contract, in memory and on a file, then what only a file
 * holds: strings of every kind round-trip and sort as in the memory store, users and the clock outlive
 * a reopen, migrations, and the lock against a second opener.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import fc from 'fast-check';
import { pino } from 'pino';
import { MemoryUserStore } from '../../../../src/users/stores/memory/memory-store.js';
import { queryUsers, type ListParams, type ListResult } from '../../../../src/users/query.js';
import type { User } from '../../../../src/users/schema.js';
import { fromBlob, toBlob } from '../../../../src/users/stores/sqlite/blob-text.js';
import { connect, DatabaseInUse, SQLITE_WAL_PAGES } from '../../../../src/users/stores/sqlite/sqlite-connection.js';
import {
  migrateSqlite,
  migrateSqliteFile,
  readSqliteMigrations,
} from '../../../../src/users/stores/sqlite/sqlite-migrations.js';
import { INSERT_USER, microsOf, toRow } from '../../../../src/users/stores/sqlite/sqlite-rows.js';
import { formatMicros } from '../../../../src/clock.js';
import { SqliteUserStore } from '../../../../src/users/stores/sqlite/sqlite-store.js';
import { userStoreContract } from '../../store-contract.js';
import { ROSTER } from '../../../support/index.js';
import { emailKey } from '../../../../src/users/store.js';
import { searchText } from '../../../../src/users/stores/sql/columns.js';
import { toStored } from '../../../../src/users/stores/sql/stored-text.js';

/**
 * A users row as the versions before migration 004 wrote it: the columns of 001_users.sql, named here
 * and not taken from today's row codec (rows.ts), which follows the field table and would name any
 * column added since. The values are encoded as 001_users.sql describes.
 */
const FIRST_COLUMNS = [
  'created_at',
  'id',
  'name',
  'email',
  'role',
  'updated_at',
  'name_lower',
  'email_lower',
  'email_key',
];
const INSERT_FIRST_USER = `INSERT INTO users (${FIRST_COLUMNS.join(', ')}) VALUES (${FIRST_COLUMNS.map(() => '?').join(', ')})`;
function firstRow(user: { id: string; name: string; email: string; role: string }, at: number): unknown[] {
  const { id, name, email, role } = user;
  return [
    at,
    ...[id, name, email, role].map(toBlob),
    at,
    searchText(name),
    searchText(email),
    toStored(emailKey(email)),
  ];
}

/** A list's page and total (the cursor to the next page is the cursor tests' business). */
const listed = ({ users, total }: ListResult) => ({ users, total });

const silent = pino({ level: 'silent' });
const folder = mkdtempSync(join(tmpdir(), 'roster-sqlite-'));
after(() => rmSync(folder, { recursive: true, force: true }));
const fileOf = () => join(folder, `${randomUUID()}.db`);

userStoreContract('SqliteUserStore (:memory:)', () =>
  SqliteUserStore.open({ path: ':memory:', synchronous: 'NORMAL' }, silent),
);
// And with no matches kept for any needle searched (sqlite/kept-searches.ts), so that every page of a
// search comes from the trigram index or a walk of the list's order, as at a large store.
userStoreContract('SqliteUserStore (:memory:, no matches kept)', () =>
  SqliteUserStore.open({ path: ':memory:', synchronous: 'NORMAL' }, silent, { keptMatches: 0 }),
);
// A file with synchronous=FULL runs the contract in the loop over every backend (store-contract.test.ts).

describe('SQLite text', () => {
  test('every string round-trips, and BLOB byte order is the code-point order of the memory store', () => {
    const text = fc.string({
      unit: fc.oneof(
        fc.constantFrom('\u0000', '\u0001', '\ud800', '\udfff', '\ue000', '\uffff', '😀', 'a', 'A', 'é'),
        fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
      ),
      maxLength: 8,
    });
    fc.assert(
      fc.property(text, text, (a, b) => {
        assert.equal(fromBlob(toBlob(a)), a);
        const memory = queryUsers(
          [a, b].map((name, i) => ({ id: String(i), name, email: '', role: '', created_at: '', updated_at: '' })),
          { sort: 'name', descending: false, offset: 0, limit: 2 },
        ).users.map((user) => user.name);
        const bytes = Buffer.compare(toBlob(a), toBlob(b));
        if (a !== b) assert.deepEqual(memory, bytes < 0 ? [a, b] : [b, a]);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('the cache of decoded users', () => {
  test('stays within its bound in bytes, whatever the users hold, and still answers every read', async () => {
    const bound = 256 * 1024;
    const store = await SqliteUserStore.open({ path: ':memory:', synchronous: 'NORMAL' }, silent, {
      cachedBytes: bound,
    });
    try {
      assert.equal(store.cachedBytes, 0);
      // Users of 8 000 to 40 000 characters (a store takes what it is given): a count bound alone
      // would keep 20 000 of them, some 1.6 GB.
      const ids: string[] = [];
      for (let i = 0; i < 60; i++) {
        const name = `${String(i).padStart(3, '0')} ${'😀'.repeat(4000 + 2000 * (i % 9))}`;
        const created = await store.insert({ id: randomUUID(), name, email: `u${i}@example.com`, role: 'user' });
        assert.ok(typeof created === 'object');
        ids.push(created.id);
        assert.ok(store.cachedBytes > 0);
        assert.ok(store.cachedBytes <= bound, `${store.cachedBytes} B cached after insert ${i}`);
      }
      for (const [i, id] of ids.entries()) {
        const updated = await store.update(id, { email: `v${i}@example.com` }, { uniqueEmail: false });
        assert.ok(typeof updated === 'object' && updated.email === `v${i}@example.com`);
        assert.ok(store.cachedBytes <= bound, `${store.cachedBytes} B cached after update ${i}`);
      }
      const page = await store.list({ sort: 'name', descending: false, offset: 0, limit: 60 });
      assert.equal(page.users.length, 60);
      assert.deepEqual(
        page.users.map((user) => user.email),
        ids.map((_, i) => `v${i}@example.com`),
      );
      assert.ok(store.cachedBytes <= bound, `${store.cachedBytes} B cached after a list`);
      // One user larger than the whole bound is served, never kept.
      const huge = await store.insert({
        id: randomUUID(),
        name: 'h'.repeat(bound),
        email: 'h@example.com',
        role: 'user',
      });
      assert.ok(typeof huge === 'object');
      assert.equal((await store.get(huge.id))?.name, 'h'.repeat(bound));
      assert.ok(store.cachedBytes <= bound, `${store.cachedBytes} B cached after a huge user`);
      for (const id of ids) assert.equal(await store.remove(id), true);
      assert.ok(store.cachedBytes <= bound);
    } finally {
      await store.close();
    }
  });
});

describe('SqliteUserStore on a file', () => {
  test('users, strings of every kind and the clock outlive closing and opening again', async () => {
    const path = fileOf();
    const names = [
      'x\u0000y',
      'lone \ud800 high',
      'lone \udc00 low',
      '😀 smile',
      '\uffff',
      'Zoë',
      'ada',
      'ADA',
      '\u0001',
    ];
    let store = await SqliteUserStore.open({ path, synchronous: 'FULL' }, silent);
    const memory = new MemoryUserStore();
    const users: User[] = [];
    try {
      for (const [i, name] of names.entries()) {
        const user = { id: randomUUID(), name, email: `${name}@x${i}.io`, role: i % 2 ? 'admin' : 'user\u0000' };
        users.push((await store.insert(user)) as User);
        await memory.insert(user);
      }
    } finally {
      await store.close();
    }
    store = await SqliteUserStore.open({ path, synchronous: 'FULL' }, silent);
    try {
      for (const user of users) assert.deepEqual(await store.get(user.id), user);
      assert.equal(await store.count(), names.length);
      const later = (await store.insert({
        id: randomUUID(),
        name: 'later',
        email: 'later@x.io',
        role: 'user',
      })) as User;
      assert.ok(later.created_at > users.at(-1)!.created_at, 'the clock starts past every stored stamp');
      users.push(later);
      await memory.insert(later);
      const searches = [undefined, '\u0000', '\ud800', 'a', 'ADA', '😀', '\u0001', 'X'];
      for (const sort of ['name', 'email', 'role', 'id', 'created_at', 'updated_at', 'other']) {
        for (const descending of [false, true]) {
          for (const search of searches) {
            for (const role of [undefined, 'user\u0000', 'admin']) {
              const params: ListParams = { sort, descending, offset: 0, limit: 100, search, role };
              assert.deepEqual(
                listed(await store.list(params)),
                listed(queryUsers(users, params)),
                JSON.stringify(params),
              );
            }
          }
        }
      }
    } finally {
      await store.close();
    }
  });

  test('a second opener of the same file is refused while the first holds it, and gets it once it is closed', async () => {
    const path = fileOf();
    const first = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, silent);
    try {
      await assert.rejects(SqliteUserStore.open({ path, synchronous: 'NORMAL' }, silent), DatabaseInUse);
      await assert.rejects(migrateSqliteFile({ path, synchronous: 'NORMAL' }), DatabaseInUse);
    } finally {
      await first.close();
    }
    const second = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, silent);
    await second.close();
  });

  test('a database in folders that do not exist yet: the store and roster migrate make them', async () => {
    const base = mkdtempSync(join(folder, 'folders-'));
    const opened = join(base, 'a', 'b', 'roster.db');
    const store = await SqliteUserStore.open({ path: opened, synchronous: 'FULL' }, silent);
    await store.close();
    assert.ok(statSync(opened).isFile(), 'the store made its folders, then the lock and the file');
    const migrated = join(base, 'c', 'd', 'roster.db');
    const cli = spawnSync(process.execPath, [ROSTER, 'migrate'], {
      env: { ...process.env, DATABASE_URL: `sqlite:${migrated}` },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(cli.status, 0, `${cli.stdout}${cli.stderr}`);
    assert.ok(statSync(migrated).isFile(), 'roster migrate made them too');
  });

  test('migrations are applied once and recorded', async () => {
    const path = fileOf();
    const versions = (await readSqliteMigrations()).map((migration) => migration.version);
    assert.ok(versions.includes('001_users'), JSON.stringify(versions));
    assert.deepEqual((await migrateSqliteFile({ path, synchronous: 'NORMAL' })).applied, versions);
    assert.deepEqual((await migrateSqliteFile({ path, synchronous: 'NORMAL' })).applied, []);
    const store = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, silent);
    try {
      const recorded = store.database.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
      assert.deepEqual(recorded, versions);
      assert.equal(store.database.pragma('journal_mode', { simple: true }), 'wal');
      // Copied back into the file every SQLITE_WAL_PAGES pages, not SQLite's default 1 000 (connection.ts).
      assert.equal(store.database.pragma('wal_autocheckpoint', { simple: true }), SQLITE_WAL_PAGES);
    } finally {
      await store.close();
    }
  });

  test('a file the previous version filled gets the search index at start-up, and search finds exactly what it should', async () => {
    const path = fileOf();
    const migrations = await readSqliteMigrations();
    const before = migrations.findIndex((migration) => migration.version === '004_search_index');
    assert.ok(before > 0, JSON.stringify(migrations.map((migration) => migration.version)));
    // The file as the version before the index leaves it: its migrations only, users written as its store writes them.
    const names = [
      'Ada Hansen',
      'ADA Eriksen',
      'İstanbul',
      'Straße',
      'ΟΔΟΣ',
      'x\u0000y\u0001z',
      'lone \ud800',
      '😀 "q" *',
    ];
    const users: User[] = [];
    const db = connect({ path, synchronous: 'NORMAL' });
    try {
      migrateSqlite(db, migrations.slice(0, before));
      const insert = db.prepare(INSERT_FIRST_USER);
      for (const [i, name] of names.entries()) {
        const at = microsOf('2025-01-01T00:00:00.000000') + i;
        const stamp = formatMicros(at);
        const user = { id: randomUUID(), name, email: `${i}.${name}@x.io`, role: i % 2 ? 'admin' : 'user' };
        insert.run(...firstRow(user, at));
        users.push({ ...user, created_at: stamp, updated_at: stamp });
      }
    } finally {
      db.close();
    }
    const store = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, silent);
    try {
      const applied = store.database.prepare('SELECT version FROM schema_migrations').pluck().all();
      assert.ok(applied.includes('004_search_index'), JSON.stringify(applied));
      // The index against the users table, row by row (FTS5 checks the external content with rank 1).
      store.database.exec(`INSERT INTO users_search (users_search, rank) VALUES ('integrity-check', 1)`);
      const hits = store.database.prepare(`SELECT count(*) FROM users_search WHERE users_search MATCH '"ada"'`);
      assert.equal(hits.pluck().get(), 2, 'the users already in the file are indexed');
      const searches = [
        'ada',
        'sen',
        'İst',
        'i̇st',
        'STRASSE',
        'straß',
        'οδος',
        'x\u0000y',
        '\u0000',
        '\ud800',
        '"q"',
        '*',
        'ha',
        'x',
      ];
      const check = async () => {
        for (const search of searches) {
          for (const role of [undefined, 'admin']) {
            const params: ListParams = { sort: 'created_at', descending: true, offset: 0, limit: 100, search, role };
            assert.deepEqual(
              listed(await store.list(params)),
              listed(queryUsers(users, params)),
              JSON.stringify(params),
            );
          }
        }
      };
      await check();
      // And the triggers keep it in step with every write from now on.
      const renamed = (await store.update(users[1]!.id, { name: 'Sen Sen' }, { uniqueEmail: false })) as User;
      users[1] = renamed;
      assert.equal(await store.remove(users[0]!.id), true);
      users.shift();
      users.push((await store.insert({ id: randomUUID(), name: 'Ada New', email: 'new@x.io', role: 'admin' })) as User);
      await check();
      store.database.exec(`INSERT INTO users_search (users_search, rank) VALUES ('integrity-check', 1)`);
    } finally {
      await store.close();
    }
  });

  test('a file the search index was built in gets migration 005: writes note their users, a search indexes them first, and finds exactly what it should', async () => {
    const path = fileOf();
    const migrations = await readSqliteMigrations();
    const before = migrations.findIndex((migration) => migration.version === '005_search_index_later');
    assert.ok(before > 0, JSON.stringify(migrations.map((migration) => migration.version)));
    // The file as the version before leaves it: indexed by migration 004's triggers at every write.
    const users: User[] = [];
    const db = connect({ path, synchronous: 'NORMAL' });
    try {
      migrateSqlite(db, migrations.slice(0, before));
      const insert = db.prepare(INSERT_FIRST_USER);
      for (const [i, name] of ['Ada Hansen', 'Bo Sen', 'Cy "Sen"', 'Straße'].entries()) {
        const at = microsOf('2025-01-01T00:00:00.000000') + i;
        const stamp = formatMicros(at);
        const user = { id: randomUUID(), name, email: `${i}@x.io`, role: i % 2 ? 'admin' : 'user' };
        insert.run(...firstRow(user, at));
        users.push({ ...user, created_at: stamp, updated_at: stamp });
      }
    } finally {
      db.close();
    }
    // No matches kept, so that every search with a trigram reads the index.
    const store = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, silent, { keptMatches: 0 });
    try {
      const database = store.database;
      const applied = database.prepare('SELECT version FROM schema_migrations').pluck().all();
      assert.ok(applied.includes('005_search_index_later'), JSON.stringify(applied));
      // What waits to be indexed: the users noted (changed or deleted since), and how many were created since.
      const notes = () => database.prepare('SELECT rowid FROM users_search_pending ORDER BY rowid').pluck().all();
      const createdSince = () =>
        database
          .prepare('SELECT count(*) FROM users WHERE created_at > (SELECT indexed_up_to FROM users_search_state)')
          .pluck()
          .get() as number;
      const rowid = (user: User) => microsOf(user.created_at);
      const check = async () => {
        for (const search of ['sen', 'SEN', 'ada', 'hansen', 'straß', 'new', 'x.io', '"sen"', 'en']) {
          for (const role of [undefined, 'admin']) {
            const params: ListParams = { sort: 'created_at', descending: false, offset: 0, limit: 100, search, role };
            assert.deepEqual(
              listed(await store.list(params)),
              listed(queryUsers(users, params)),
              JSON.stringify(params),
            );
          }
        }
      };
      await check();
      assert.deepEqual(notes(), [], 'nothing noted by the users already indexed');
      // Each write notes its user, once until the next indexing, with whether the index holds it.
      const created = (await store.insert({
        id: randomUUID(),
        name: 'Ada New',
        email: 'new@x.io',
        role: 'admin',
      })) as User;
      users.push(created);
      users[1] = (await store.update(users[1]!.id, { name: 'Bo Hansen' }, { uniqueEmail: false })) as User;
      users[1] = (await store.update(users[1]!.id, { email: 'sen@x.io' }, { uniqueEmail: true })) as User;
      users[2] = (await store.update(users[2]!.id, { role: 'admin' }, { uniqueEmail: false })) as User;
      assert.equal(await store.remove(users[0]!.id), true);
      const removed = users.shift()!;
      const renamedNew = (await store.update(created.id, { name: 'Ada Newer' }, { uniqueEmail: false })) as User;
      users[users.length - 1] = renamedNew;
      // Only the users the index holds are noted (a role change too, since migration 006 counts short
      // needles per role); the one created since is above the mark.
      assert.deepEqual(notes(), [rowid(removed), rowid(users[0]!), rowid(users[1]!)]);
      assert.equal(createdSince(), 1);
      // The first search after them indexes them; the index then holds exactly the users table.
      await check();
      assert.deepEqual([notes(), createdSince()], [[], 0]);
      database.exec(`INSERT INTO users_search (users_search, rank) VALUES ('integrity-check', 1)`);
      // Without a search, a timer indexes what writes noted.
      users.push((await store.insert({ id: randomUUID(), name: 'Sen Later', email: 'l@x.io', role: 'user' })) as User);
      assert.equal(createdSince(), 1);
      while (createdSince() > 0) await new Promise((resolve) => setTimeout(resolve, 10));
      database.exec(`INSERT INTO users_search (users_search, rank) VALUES ('integrity-check', 1)`);
      await check();
    } finally {
      await store.close();
    }
  });

  test('users noted but not indexed when the file was closed (a crash) are found by the next search', async () => {
    const path = fileOf();
    const db = connect({ path, synchronous: 'NORMAL' });
    const users: User[] = [];
    try {
      migrateSqlite(db, await readSqliteMigrations());
      const insert = db.prepare(INSERT_USER);
      for (const [i, name] of ['Ada Hansen', 'Bo Sen'].entries()) {
        const at = microsOf('2025-01-01T00:00:00.000000') + i;
        const stamp = formatMicros(at);
        const user = { id: randomUUID(), name, email: `${i}@x.io`, role: 'user' };
        insert.run(...toRow(user, at));
        users.push({ ...user, created_at: stamp, updated_at: stamp });
      }
      const waiting = 'SELECT count(*) FROM users WHERE created_at > (SELECT indexed_up_to FROM users_search_state)';
      assert.equal(db.prepare(waiting).pluck().get(), 2);
    } finally {
      db.close();
    }
    const store = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, silent, { keptMatches: 0 });
    try {
      const params: ListParams = { sort: 'created_at', descending: false, offset: 0, limit: 100, search: 'sen' };
      assert.deepEqual(listed(await store.list(params)), listed(queryUsers(users, params)));
      const waiting = 'SELECT count(*) FROM users WHERE created_at > (SELECT indexed_up_to FROM users_search_state)';
      assert.equal(store.database.prepare(waiting).pluck().get(), 0);
    } finally {
      await store.close();
    }
  });

  test('while the noted users cannot be indexed (writes refused), a search tests every user instead and stays exact', async () => {
    const store = await SqliteUserStore.open({ path: fileOf(), synchronous: 'NORMAL' }, silent, { keptMatches: 0 });
    try {
      const users: User[] = [];
      for (const name of ['Ada Hansen', 'Bo Sen', 'Cy Sen']) {
        users.push(
          (await store.insert({ id: randomUUID(), name, email: `${name.length}@x.io`, role: 'user' })) as User,
        );
      }
      const search: ListParams = { sort: 'name', descending: false, offset: 0, limit: 100, search: 'sen' };
      await store.list(search);
      const database = store.database;
      // A write noted, and at once (no timer runs in between) the file read-only: the note cannot be indexed.
      users[1] = (await store.update(users[1]!.id, { name: 'Bo Hansen' }, { uniqueEmail: false })) as User;
      assert.equal(database.prepare('SELECT count(*) FROM users_search_pending').pluck().get(), 1);
      database.pragma('query_only = 1');
      for (const needle of ['sen', 'hansen', 'ada']) {
        const params: ListParams = { ...search, search: needle };
        assert.deepEqual(listed(await store.list(params)), listed(queryUsers(users, params)), needle);
      }
      assert.equal(store.health.state().up, false, 'health tells that writes fail');
      database.pragma('query_only = 0');
      const params: ListParams = { ...search, search: 'hansen' };
      assert.deepEqual(listed(await store.list(params)), listed(queryUsers(users, params)));
      assert.equal(database.prepare('SELECT count(*) FROM users_search_pending').pluck().get(), 0);
    } finally {
      await store.close();
    }
  });

  test('an update SETs only the columns it changes: a patch of the name rewrites no index over the email or the role', async () => {
    const store = await SqliteUserStore.open({ path: ':memory:', synchronous: 'NORMAL' }, silent);
    try {
      const user = (await store.insert({ id: randomUUID(), name: 'Ada', email: 'a@x.io', role: 'user' })) as User;
      const database = store.database;
      database.exec(`CREATE TEMP TABLE touched (what TEXT);
        CREATE TEMP TRIGGER email_set AFTER UPDATE OF email, email_lower, email_key ON users BEGIN INSERT INTO touched VALUES ('email'); END;
        CREATE TEMP TRIGGER role_set AFTER UPDATE OF role ON users BEGIN INSERT INTO touched VALUES ('role'); END;
        CREATE TEMP TRIGGER name_set AFTER UPDATE OF name, name_lower ON users BEGIN INSERT INTO touched VALUES ('name'); END;`);
      const touched = () => database.prepare('SELECT what FROM touched').pluck().all();
      const renamed = (await store.update(user.id, { name: 'Bo' }, { uniqueEmail: true })) as User;
      assert.deepEqual(touched(), ['name']);
      assert.deepEqual(await store.get(user.id), renamed);
      await store.update(user.id, { email: 'b@x.io', role: 'admin' }, { uniqueEmail: true });
      assert.deepEqual(touched(), ['name', 'email', 'role']);
      assert.deepEqual(await store.get(user.id), {
        ...renamed,
        email: 'b@x.io',
        role: 'admin',
        updated_at: (await store.get(user.id))!.updated_at,
      });
    } finally {
      await store.close();
    }
  });

  test('a search page in another order walks that order when most users match, or sorts the matches when few do', async () => {
    // No matches kept, so that pages come from the index or the walk, as at a large store.
    const store = await SqliteUserStore.open({ path: ':memory:', synchronous: 'NORMAL' }, silent, { keptMatches: 0 });
    try {
      const users: User[] = [];
      for (let i = 0; i < 60; i++) {
        const name = i % 6 === 0 ? `Ada ${i}` : `Hansen ${60 - i} "Sen"`;
        const role = i % 3 ? 'user' : 'admin';
        users.push((await store.insert({ id: randomUUID(), name, email: `${i}@x.io`, role })) as User);
      }
      for (const search of ['sen', 'SEN', '"sen"', 'ada', 'en', 'a']) {
        for (const sort of ['name', 'email', 'created_at']) {
          for (const [offset, limit] of [
            [0, 1],
            [3, 2],
            [0, 100],
            [40, 30],
          ] as const) {
            for (const role of [undefined, 'admin']) {
              const params: ListParams = { sort, descending: offset === 3, offset, limit, search, role };
              assert.deepEqual(
                listed(await store.list(params)),
                listed(queryUsers(users, params)),
                JSON.stringify(params),
              );
            }
          }
        }
      }
    } finally {
      await store.close();
    }
  });

  test('the list runs on indexes: no sort of the whole table for a page in any field order', async () => {
    const store = await SqliteUserStore.open({ path: ':memory:', synchronous: 'NORMAL' }, silent);
    try {
      for (const field of ['name', 'email', 'role']) {
        for (const direction of ['ASC', 'DESC']) {
          const plan = store.database
            .prepare(`EXPLAIN QUERY PLAN SELECT * FROM users ORDER BY ${field} ${direction}, created_at LIMIT 20`)
            .all() as { detail: string }[];
          const details = plan.map((row) => row.detail).join('; ');
          assert.doesNotMatch(details, /TEMP B-TREE/, `${field} ${direction}: ${details}`);
        }
      }
    } finally {
      await store.close();
    }
  });
});

describe('SQLite files hold personal data: their owner’s only', () => {
  const modeOf = (file: string) => statSync(file).mode & 0o777;

  test('a new database, its -wal, -shm and .lock files, and a backup are created 0600, whatever the umask allows', async () => {
    const path = join(mkdtempSync(join(folder, 'modes-')), 'nested', 'roster.db');
    const umask = process.umask(0o022); // the usual umask, which lets SQLite's own default (0644) through
    try {
      const store = await SqliteUserStore.open({ path, synchronous: 'FULL' }, silent);
      try {
        await store.insert({ id: randomUUID(), name: 'Ada', email: 'ada@example.com', role: 'user' });
        for (const file of [path, `${path}-wal`, `${path}-shm`, `${path}.lock`])
          assert.equal(modeOf(file).toString(8), '600', file);
        const backup = join(dirname(path), 'backup.db');
        const cli = spawnSync(process.execPath, [ROSTER, 'backup', backup], {
          env: { ...process.env, DATABASE_URL: `sqlite:${path}` },
          encoding: 'utf8',
          timeout: 30_000,
        });
        assert.equal(cli.status, 0, `${cli.stdout}${cli.stderr}`);
        assert.equal(modeOf(backup).toString(8), '600', 'the backup');
      } finally {
        await store.close();
      }
    } finally {
      process.umask(umask);
    }
  });

  test('an existing database keeps the mode its operator gave it', async () => {
    const path = fileOf();
    writeFileSync(path, '');
    chmodSync(path, 0o640);
    const store = await SqliteUserStore.open({ path, synchronous: 'FULL' }, silent);
    await store.close();
    assert.equal(modeOf(path).toString(8), '640');
  });
});
