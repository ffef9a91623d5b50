/**
 * `optional` means something: a PUT replaces every writable field, so an optional field it leaves out is
 * cleared (the service sends `null`, and every store clears the column), while a PATCH that leaves it
 * out keeps it; and users and their JSON keep the field table's order, an optional field included.
 *
 * The shipped table (src/users/fields.ts) has no optional field, and every module reads it when it
 * loads. So this test builds the service and the stores from a copy of the compiled modules whose table
 * is its own: the shipped one with an optional `phone` before the stamps, as a deployment adding the
 * field would write it, and a `phone` column added to each SQL store after its migrations.
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

const PHONE: FieldSpec = {
  name: 'phone',
  title: 'Phone number',
  optional: true,
  writable: true,
  sortable: false,
  searchable: false,
  maxLength: 40,
};
const SHIPPED = FIELDS as readonly FieldSpec[];
const STAMPS = SHIPPED.findIndex((field) => field.stamp !== undefined);
const TABLE: readonly FieldSpec[] = [...SHIPPED.slice(0, STAMPS), PHONE, ...SHIPPED.slice(STAMPS)];
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

/** The `phone` column the field needs, added as its migration would: after the store's own migrations. */
async function addPhoneColumn(backend: string, storage: StorageConfig): Promise<void> {
  if (backend === 'sqlite') {
    const db = new Database(storage.url!.slice('sqlite:'.length));
    try {
      db.exec('ALTER TABLE users ADD COLUMN phone BLOB');
    } finally {
      db.close();
    }
  } else if (backend === 'postgres') {
    const client = new pg.Client({ connectionString: storage.url });
    await client.connect();
    try {
      await client.query('ALTER TABLE users ADD COLUMN phone text');
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
  });
}
