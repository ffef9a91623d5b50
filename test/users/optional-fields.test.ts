/**
 * `optional` means something: a PUT replaces every writable field, so an optional field it leaves out is
 * cleared (the service sends `null`, and every store clears the column), while a PATCH that leaves it
 * out keeps it; and users and their JSON keep the field table's order, an optional field included. A
 * sortable optional field sorts users lacking it as the empty string (contract; docs/decisions.md
 * "Sorting by an optional field") on every store, by page number and by cursor, as query.ts does.
 *
 * The shipped table (src/users/fields.ts) may have no optional field, and every module reads it when it
 * loads. So this test builds the service and the stores from a copy of the compiled modules whose table
 * is its own: the shipped one with an optional `phone` before the stamps, as a deployment adding the
 * field would write it, and a `phone` column added to each SQL store after its migrations (with an
 * index on its sort value on PostgreSQL, and none on SQLite, so that both plans are walked).
 */
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { pino } from 'pino';
import { loadConfig, type StorageConfig } from '../../src/config/index.js';
import { FIELDS, type FieldSpec } from '../../src/users/fields.js';
import type { User } from '../../src/users/schema.js';
import type { UserStore } from '../../src/users/store.js';
import { TEST_STORES } from '../support/index.js';

type Registry = typeof import('../../src/users/stores/registry.js');
type Service = typeof import('../../src/users/service.js');
type Schemas = typeof import('../../src/users/schema.js');
type Validation = typeof import('../../src/users/validation.js');
type UserJson = typeof import('../../src/http/routes/user-json.js');
type Query = typeof import('../../src/users/query.js');

const PHONE: FieldSpec = {
  name: 'phone',
  title: 'Phone number',
  optional: true,
  writable: true,
  sortable: true,
  searchable: false,
  maxLength: 40,
};
const SHIPPED = FIELDS as readonly FieldSpec[];
// A shipped `phone` (a deployment that added one) gives way to the test's, whose rules the test knows.
const OTHERS = SHIPPED.filter((field) => field.name !== PHONE.name);
const STAMPS = OTHERS.findIndex((field) => field.stamp !== undefined);
const TABLE: readonly FieldSpec[] = [...OTHERS.slice(0, STAMPS), PHONE, ...OTHERS.slice(STAMPS)];
const NAMES = TABLE.map((field) => field.name);

const DIST = fileURLToPath(new URL('../../', import.meta.url));
const ROOT = join(DIST, '..');

/**
 * A folder holding dist/src as compiled, but with `table` as fields.js's FIELDS, beside the project's
 * package.json (ES modules), node_modules and migrations, which the modules find by relative paths.
 */
function compiledWith(table: readonly FieldSpec[]): string {
  const home = mkdtempSync(join(tmpdir(), 'roster-fields-'));
  for (const shared of ['package.json', 'node_modules', 'migrations'])
    symlinkSync(join(ROOT, shared), join(home, shared));
  cpSync(join(DIST, 'src'), join(home, 'dist', 'src'), { recursive: true });
  const file = join(home, 'dist', 'src', 'users', 'fields.js');
  const source = readFileSync(file, 'utf8');
  const literal = /^export const FIELDS = \[$[\s\S]*?^\];$/m;
  assert.match(source, literal, 'fields.js declares FIELDS as one array literal');
  writeFileSync(
    file,
    source.replace(literal, () => `export const FIELDS = ${JSON.stringify(table)};`),
  );
  return home;
}

let home: string;
const load = <T>(path: string): Promise<T> => import(pathToFileURL(join(home, 'dist', 'src', path)).href) as Promise<T>;
before(() => {
  home = compiledWith(TABLE);
});
after(() => rmSync(home, { recursive: true, force: true }));

/**
 * The `phone` column the field needs, added as its migration would: after the store's own migrations,
 * unless one of them added it already (a deployment whose table ships a `phone`).
 */
async function addPhoneColumn(backend: string, storage: StorageConfig): Promise<void> {
  if (backend === 'sqlite') {
    const db = new Database(storage.url!.slice('sqlite:'.length));
    try {
      const columns = db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('users');
      if (!columns.includes('phone')) db.exec('ALTER TABLE users ADD COLUMN phone BLOB');
    } finally {
      db.close();
    }
  } else if (backend === 'postgres') {
    const client = new pg.Client({ connectionString: storage.url });
    await client.connect();
    try {
      // No COLLATE "C": the sort must be by code point whatever the column's collation.
      await client.query('ALTER TABLE users ADD COLUMN IF NOT EXISTS phone text');
      await client.query(
        `CREATE INDEX IF NOT EXISTS users_phone ON users ((coalesce(phone, '' COLLATE "C")), created_at, seq)`,
      );
    } finally {
      await client.end();
    }
  }
}

const silent = { logger: pino({ level: 'silent' }) };

for (const kit of TEST_STORES) {
  describe(`an optional field, ${kit.name} store`, { skip: kit.skip }, () => {
    test('a PUT without it clears it, in the store too; a PATCH without it keeps it; the order is the table’s', async (t) => {
      const registry = await load<Registry>('users/stores/registry.js');
      const { UserService } = await load<Service>('users/service.js');
      const { userSchemas } = await load<Schemas>('users/schema.js');
      const { createUserValidator } = await load<Validation>('users/validation.js');
      const { userJson } = await load<UserJson>('http/routes/user-json.js');

      const fresh = await kit.fresh();
      t.after(() => fresh.drop());
      const config = loadConfig({ ...fresh.env });
      await registry.storeBackend(config.storage).migrate?.(config.storage);
      await addPhoneColumn(kit.name, config.storage);
      let store: UserStore = (await registry.openStore(config.storage, silent)).store;
      t.after(() => store.close());
      const serviceOf = (on: UserStore) =>
        new UserService(on, createUserValidator(userSchemas(config.roles, false)), { maxPageSize: 100, strict: false });
      let service = serviceOf(store);
      /** The user as the store holds it: read afresh after a reopen where the store keeps a file or a database. */
      const stored = async (id: string): Promise<User | undefined> => {
        if (kit.name !== 'memory') {
          await store.close();
          store = (await registry.openStore(config.storage, silent)).store;
          service = serviceOf(store);
        }
        return store.get(id);
      };
      const inOrder = (user: User, what: string) => {
        const names = NAMES.filter((name) => name in user);
        assert.deepEqual(Object.keys(user), names, `${what}: the table's order`);
        assert.deepEqual(Object.keys(JSON.parse(userJson(user))), names, `${what}: its JSON in the table's order`);
      };

      const created = await service.create({ name: 'Ada', email: 'ada@example.com', phone: '+44 20 7946 0000' });
      assert.equal((created as Record<string, unknown>).phone, '+44 20 7946 0000');
      inOrder(created, 'created');
      assert.deepEqual(Object.keys(created), NAMES, 'phone among the others, before the stamps');
      inOrder((await stored(created.id))!, 'read back');

      // PATCH without it: kept.
      const patched = await service.update(created.id, { name: 'Ada L.' });
      assert.equal((patched as Record<string, unknown>).phone, '+44 20 7946 0000');
      assert.equal(((await stored(created.id)) as Record<string, unknown>).phone, '+44 20 7946 0000');

      // PUT without it, keeping the email: cleared in the reply and in the store.
      const replaced = await service.replace(created.id, { name: 'Ada Lovelace', email: 'ada@example.com' });
      assert.equal('phone' in replaced, false, JSON.stringify(replaced));
      inOrder(replaced, 'replaced');
      const cleared = (await stored(created.id))!;
      assert.equal('phone' in cleared, false, JSON.stringify(cleared));
      assert.equal(cleared.name, 'Ada Lovelace');

      // PUT with it sets it again; PUT without it and with a new email clears it again.
      const again = await service.replace(created.id, { name: 'Ada', email: 'ada@example.com', phone: '0' });
      assert.equal((again as Record<string, unknown>).phone, '0');
      assert.equal(((await stored(created.id)) as Record<string, unknown>).phone, '0');
      const moved = await service.replace(created.id, { name: 'Ada', email: 'lovelace@example.com' });
      assert.equal('phone' in moved, false, JSON.stringify(moved));
      const movedStored = (await stored(created.id))!;
      assert.deepEqual([movedStored.email, 'phone' in movedStored], ['lovelace@example.com', false]);
      inOrder(movedStored, 'moved');
    });

    test('sorted by it, users lacking it come first ascending and last descending, by page and by cursor', async (t) => {
      const registry = await load<Registry>('users/stores/registry.js');
      const { UserService } = await load<Service>('users/service.js');
      const { userSchemas } = await load<Schemas>('users/schema.js');
      const { createUserValidator } = await load<Validation>('users/validation.js');
      const { queryUsers } = await load<Query>('users/query.js');

      const fresh = await kit.fresh();
      t.after(() => fresh.drop());
      const config = loadConfig({ ...fresh.env });
      await registry.storeBackend(config.storage).migrate?.(config.storage);
      await addPhoneColumn(kit.name, config.storage);
      const { store } = await registry.openStore(config.storage, silent);
      t.after(() => store.close());
      const service = new UserService(store, createUserValidator(userSchemas(config.roles, false)), {
        maxPageSize: 100,
        strict: false,
      });

      // Absent, empty (which ties with absent), repeated, astral (after U+FFFF by code point, before it
      // in UTF-16) and plain phones, in a creation order that is none of the sorted ones.
      const phones = [undefined, '555', '', '\u{1F4DE} 1', undefined, '+1', '555', '\uFFFD', undefined, '0', '', '555'];
      const made: User[] = [];
      for (const [i, phone] of phones.entries()) {
        const body = { name: `User ${i}`, email: `u${i}@example.com`, ...(phone !== undefined && { phone }) };
        made.push(await service.create(body));
      }
      // One user loses its phone by a PUT, and one gains one by a PATCH: cleared and set columns sort too.
      made[1] = await service.replace(made[1]!.id, { name: 'User 1', email: 'u1@example.com' });
      made[4] = await service.update(made[4]!.id, { phone: '1' });
      const phoneOf = (user: User) => (user as Record<string, unknown>).phone;
      assert.equal(made.filter((user) => phoneOf(user) === undefined).length, 3, 'three users lack a phone');

      for (const order of ['asc', 'desc'] as const) {
        const descending = order === 'desc';
        const expected = queryUsers(made, { sort: 'phone', descending, offset: 0, limit: made.length }).users;
        const ids = expected.map((user) => user.id);
        // The ruling, held here and not only through query.ts: users without a phone tie with the empty
        // phones (users 0, 1 and 8; 2 and 10), in creation order, at the start ascending and the end
        // descending; then 555 × 3 in creation order, and the astral phone after U+FFFD.
        const low = descending ? made.length - 5 : 0;
        assert.deepEqual(
          expected.slice(low, low + 5).map((user) => made.indexOf(user)),
          [0, 1, 2, 8, 10],
          `${order}: the users without a phone`,
        );
        const rest = expected.filter((_, i) => i < low || i >= low + 5).map((user) => made.indexOf(user));
        const ascending = [5, 9, 4, 6, 11, 7, 3];
        assert.deepEqual(rest, descending ? [3, 7, 6, 11, 4, 9, 5] : ascending, `${order}: the phones`);

        const whole = await service.list({ sort: 'phone', order, limit: '100' });
        assert.deepEqual(
          whole.users.map((user) => user.id),
          ids,
          `${order}: one page`,
        );
        assert.equal(whole.pagination.total, made.length);

        for (const limit of [1, 2, 5]) {
          const walked: string[] = [];
          let page = await service.list({ sort: 'phone', order, limit: String(limit) });
          const numbered: string[] = [];
          for (let n = 1; n <= Math.ceil(made.length / limit); n++) {
            const byNumber = await service.list({ sort: 'phone', order, limit: String(limit), page: String(n) });
            assert.equal(byNumber.pagination.total, made.length);
            numbered.push(...byNumber.users.map((user) => user.id));
          }
          for (;;) {
            assert.equal(page.pagination.total, made.length, `${order}, limit ${limit}: the total`);
            walked.push(...page.users.map((user) => user.id));
            if (page.next === undefined) break;
            page = await service.list({ sort: 'phone', order, limit: String(limit), after: page.next });
          }
          assert.deepEqual(walked, ids, `${order}, limit ${limit}: walked by cursor`);
          assert.deepEqual(numbered, ids, `${order}, limit ${limit}: by page number`);
        }

        // A role filter keeps the order and the total: every user is a `user` here, none an `admin`.
        const admins = await service.list({ sort: 'phone', order, role: 'admin' });
        assert.deepEqual([admins.users.length, admins.pagination.total], [0, 0]);
        const users = await service.list({ sort: 'phone', order, role: 'user', limit: '100' });
        assert.deepEqual(
          users.users.map((user) => user.id),
          ids,
          `${order}: role=user`,
        );
        // A search (by name) keeps the order among its matches.
        const searched = await service.list({ sort: 'phone', order, search: 'user 1', limit: '100' });
        assert.deepEqual(
          searched.users.map((user) => user.id),
          ids.filter((id) =>
            made
              .find((user) => user.id === id)!
              .name.toLowerCase()
              .includes('user 1'),
          ),
          `${order}: search`,
        );
      }
    });
  });
}
