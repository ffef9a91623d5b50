/**
 * The PostgreSQL store against the shared store contract, then what only a database shares:
 * migrations, races between instances (pools) for one email, and Unicode compared with the memory store.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { createClock } from '../../../../src/clock.js';
import { RosterError } from '../../../../src/errors.js';
import { MemoryUserStore } from '../../../../src/users/stores/memory/memory-store.js';
import { migrate, readPostgresMigrations } from '../../../../src/users/stores/postgres/postgres-migrations.js';
import { PostgresUserStore } from '../../../../src/users/stores/postgres/postgres-store.js';
import type { ListParams, ListResult } from '../../../../src/users/query.js';
import type { User } from '../../../../src/users/schema.js';
import { CHANGED, type UserStore } from '../../../../src/users/store.js';
import { DATABASE_URL, freshSchema, NO_DATABASE, type TestSchema } from '../../../support/index.js';

const silent = pino({ level: 'silent' });

if (!DATABASE_URL) {
  test('PostgresUserStore', { skip: NO_DATABASE }, () => {});
} else {
  let schema: TestSchema;
  before(async () => {
    schema = await freshSchema();
    // Migrated by a store, as a deployment's first instance does: the tests below read the schema.
    await (await PostgresUserStore.open({ url: schema.url, poolSize: 1 }, silent)).close();
  });
  after(() => schema.drop());

  /** A store on this run's schema, emptied: each test starts from no users. */
  const emptyStore = async (): Promise<PostgresUserStore> => {
    const store = await PostgresUserStore.open({ url: schema.url, poolSize: 4 }, silent);
    await schema.query('TRUNCATE users');
    return store;
  };

  // The store contract runs in the loop over every backend (store-contract.test.ts).

  describe('migrations', () => {
    test('are applied once, recorded, and do nothing the second time', async () => {
      const fresh = await freshSchema();
      const pool = new pg.Pool({ connectionString: fresh.url, max: 2 });
      try {
        const versions = (await readPostgresMigrations()).map((migration) => migration.version);
        assert.ok(versions.includes('001_users'), JSON.stringify(versions));
        assert.deepEqual(await migrate(pool), versions);
        assert.deepEqual(await migrate(pool), []);
        const { rows } = await fresh.query('SELECT version FROM schema_migrations ORDER BY version');
        assert.deepEqual(
          rows.map((row) => row.version),
          versions,
        );
        const { rows: tables } = await fresh.query(
          "SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1 AND tablename = 'users'",
          [fresh.name],
        );
        assert.equal(tables[0].n, 1);
      } finally {
        await pool.end();
        await fresh.drop();
      }
    });

    test('two instances migrating a fresh schema at once apply each migration once', async () => {
      const fresh = await freshSchema();
      const pools = [
        new pg.Pool({ connectionString: fresh.url, max: 1 }),
        new pg.Pool({ connectionString: fresh.url, max: 1 }),
      ];
      try {
        const results = await Promise.all(pools.map((pool) => migrate(pool)));
        const versions = (await readPostgresMigrations()).map((migration) => migration.version);
        assert.deepEqual(results.flat().sort(), versions, JSON.stringify(results));
      } finally {
        await Promise.all(pools.map((pool) => pool.end()));
        await fresh.drop();
      }
    });

    test('search has trigram indexes where pg_trgm is available', async (t) => {
      const { rows } = await schema.query("SELECT count(*)::int AS n FROM pg_extension WHERE extname = 'pg_trgm'");
      if (rows[0].n === 0) return t.skip('pg_trgm is not installed in this database');
      const { rows: indexes } = await schema.query(
        'SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname',
        [schema.name],
      );
      const names = indexes.map((row) => row.indexname);
      for (const name of [
        'users_name_search',
        'users_email_search',
        'users_email_claim',
        'users_created',
        'users_role',
      ])
        assert.ok(names.includes(name), name);
    });
  });

  describe('two instances on one database', () => {
    test('racing to insert the same email (by case and spaces): exactly one succeeds, every time', async () => {
      const [one, two] = [await emptyStore(), await PostgresUserStore.open({ url: schema.url, poolSize: 4 }, silent)];
      const clock = createClock();
      try {
        for (let round = 0; round < 25; round++) {
          const base = `race${round}.${randomUUID()}@example.com`;
          const make = (email: string): User => {
            const now = clock.next();
            return { id: randomUUID(), name: 'Racer', email, role: 'user', created_at: now, updated_at: now };
          };
          const results = await Promise.all([
            one.insert(make(base)),
            two.insert(make(`  ${base.toUpperCase()} `)),
            one.insert(make(base.replace('race', 'RACE'))),
          ]);
          assert.equal(results.filter((result) => result !== 'email_taken').length, 1, JSON.stringify(results));
        }
        const { total } = await one.list({ sort: 'created_at', descending: true, offset: 0, limit: 1 });
        assert.equal(total, 25);
      } finally {
        await Promise.all([one.close(), two.close()]);
      }
    });

    test('an email moved away by a default-mode update stays held by the user still sharing it, across instances', async () => {
      const [one, two] = [await emptyStore(), await PostgresUserStore.open({ url: schema.url, poolSize: 4 }, silent)];
      const clock = createClock();
      const make = (email: string): User => {
        const now = clock.next();
        return { id: randomUUID(), name: 'Sharer', email, role: 'user', created_at: now, updated_at: now };
      };
      try {
        const first = (await one.insert(make('shared@example.com'))) as User;
        const second = (await two.insert(make('other@example.com'))) as User;
        await two.update(second.id, { email: 'SHARED@example.com' }, { uniqueEmail: false });
        await one.remove(first.id);
        assert.equal(await two.insert(make('shared@example.com')), 'email_taken');
        await one.update(second.id, { email: 'elsewhere@example.com' }, { uniqueEmail: false });
        assert.notEqual(await two.insert(make('shared@example.com')), 'email_taken');
      } finally {
        await Promise.all([one.close(), two.close()]);
      }
    });

    test('one instance, many writes at once on every pooled connection: no two share a timestamp', async () => {
      // docs/decisions.md: within one process every new timestamp is strictly later than the one
      // before. Writes on several connections at once read the database clock in the same
      // microsecond unless roster_stamp (migrations/006) keeps them apart; the bare clock gave equal
      // created_at in about one run in five of 20 concurrent creates.
      const store = await PostgresUserStore.open({ url: schema.url, poolSize: 16 }, silent);
      await schema.query('TRUNCATE users');
      try {
        for (let round = 0; round < 20; round++) {
          const created = (await Promise.all(
            Array.from({ length: 40 }, (_, i) =>
              store.insert({
                id: randomUUID(),
                name: `s${round}.${i}`,
                email: `s${round}.${i}.${randomUUID()}@example.com`,
                role: 'user',
              }),
            ),
          )) as User[];
          const updated = await Promise.all(
            created.map((user, i) =>
              i % 2
                ? store.update(user.id, { name: 'renamed' }, { uniqueEmail: false })
                : store.update(user.id, { email: `moved.${randomUUID()}@example.com` }, { uniqueEmail: true }),
            ),
          );
          const stamps = [
            ...created.map((user) => user.created_at),
            ...(updated as User[]).map((user) => user.updated_at),
          ];
          assert.equal(new Set(stamps).size, stamps.length, `round ${round}: ${stamps.sort().join(' ')}`);
          for (const user of updated as User[]) assert.ok(user.updated_at > user.created_at);
        }
      } finally {
        await store.close();
      }
    });

    test('creates from two instances: one total, stable creation order, the same from either instance', async () => {
      // docs/decisions.md: across instances timestamps come from the database clock and need not be
      // strictly increasing; a database sequence breaks ties, so the order is total and stable.
      const [one, two] = [await emptyStore(), await PostgresUserStore.open({ url: schema.url, poolSize: 4 }, silent)];
      try {
        const inserts = Array.from({ length: 40 }, (_, i) => {
          return (i % 2 ? one : two).insert({
            id: randomUUID(),
            name: `n${i}`,
            email: `t${i}.${randomUUID()}@example.com`,
            role: 'user',
          });
        });
        const stored = (await Promise.all(inserts)) as User[];
        const params = { sort: 'created_at', descending: false, offset: 0, limit: 100 };
        const ascending = (await one.list(params)).users;
        assert.deepEqual(ascending.map((user) => user.id).sort(), stored.map((user) => user.id).sort());
        for (let i = 1; i < ascending.length; i++)
          assert.ok(ascending[i - 1]!.created_at <= ascending[i]!.created_at, 'ordered by created_at');
        assert.deepEqual((await two.list(params)).users, ascending, 'the same order from either instance');
        assert.deepEqual((await one.list(params)).users, ascending, 'stable');
        const descending = (await two.list({ ...params, descending: true })).users;
        assert.deepEqual(
          descending,
          [...ascending].reverse(),
          'descending is the exact reverse: ties broken the same way',
        );
      } finally {
        await Promise.all([one.close(), two.close()]);
      }
    });
  });

  describe('Unicode: the same answers as the memory store', () => {
    const NAMES = [
      'Ada',
      'ada',
      'ÀDA',
      'Émile',
      'émile',
      'Zoë',
      '😀 smile',
      '\u{10000} first astral',
      '\uE000 private',
      '\uFFFF last BMP',
      '\uFF5E tilde',
      'x\u0000y',
      '\u0000',
      '\u0001one',
      '\u0002two',
      'a\u0001\u0002b',
      '\u0003',
      'İstanbul',
      'straße',
      'STRASSE',
      'ΟΔΟΣ',
      'οδος',
      'ſam',
      'Ǆ',
      'e\u0301',
      'é',
      'tab\tnew\nline',
      'back\\slash',
      '100% _under_',
      '\uE7FF pua',
    ];
    const NEEDLES = [
      'a',
      'ada',
      'é',
      'e\u0301',
      '😀',
      '\u{10000}',
      '\uE000',
      '\uffff',
      '\u0000',
      '\u0000y',
      '\u0001',
      '\u0002',
      '\u0002two',
      '\u0003',
      'i̇',
      'ß',
      'ss',
      'σ',
      'ς',
      '%',
      '_',
      '\\',
      'tab\t',
      '\uE7FF',
      '.',
      '',
    ];
    const SORTS = ['name', 'email', 'role', 'created_at', 'updated_at', 'id', 'none'];

    test("lists: every sort and search equal the memory store's", async () => {
      const pgStore = await emptyStore();
      const memory = new MemoryUserStore();
      try {
        for (const [i, name] of NAMES.entries()) {
          const stored = (await pgStore.insert({
            id: randomUUID(),
            name,
            email: `${name.replace(/\s/g, '')}${i}@Ex.io`,
            role: NAMES[(i * 7) % NAMES.length]!,
          })) as User;
          assert.notEqual(stored, 'email_taken', name);
          await memory.insert(stored);
          assert.deepEqual(await pgStore.get(stored.id), stored, `round trip of ${JSON.stringify(name)}`);
        }
        const check = async (query: Partial<ListParams>) => {
          const params: ListParams = { sort: 'created_at', descending: true, offset: 0, limit: 100, ...query };
          // Each store stamps its own times; the users, their order and the totals must agree.
          const fields = ({ users, total }: ListResult) => ({
            total,
            users: users.map(({ id, name, email, role }) => ({ id, name, email, role })),
          });
          assert.deepEqual(
            fields(await pgStore.list(params)),
            fields(await memory.list(params)),
            JSON.stringify(query),
          );
        };
        for (const sort of SORTS) for (const descending of [true, false]) await check({ sort, descending });
        for (const search of NEEDLES) await check({ search, sort: 'name', descending: false });
        for (const role of ['\u0000', 'x\u0000y', '\u0001one', 'Ada', 'ada']) await check({ role });
      } finally {
        await pgStore.close();
      }
    });

    test('emails equal after case folding are one email; the stored email keeps its case', async () => {
      const store: UserStore = await emptyStore();
      const clock = createClock();
      const user = (email: string): User => {
        const now = clock.next();
        return { id: randomUUID(), name: 'Fold', email, role: 'user', created_at: now, updated_at: now };
      };
      try {
        for (const [held, variants] of [
          ['straße@example.com', ['STRASSE@example.com', 'strasse@EXAMPLE.com', 'STRAẞE@example.com']],
          ['ſam@example.com', ['sam@example.com', 'SAM@example.com']],
          ['οδος@example.com', ['ΟΔΟΣ@example.com', 'οδοσ@example.com']],
        ] as const) {
          const stored = (await store.insert(user(held))) as User;
          assert.equal(stored.email, held);
          for (const variant of variants)
            assert.equal(await store.insert(user(variant)), 'email_taken', `${variant} after ${held}`);
        }
      } finally {
        await store.close();
      }
    });

    test('lone surrogates and control characters round-trip and are found by search', async () => {
      const store = await emptyStore();
      try {
        const names = ['a\ud800b', '\udc00', 'x\ud83d', '\u0001\ud800\u0000', '\ud83d\ude00 whole'];
        const ids: string[] = [];
        for (const name of names) {
          const stored = (await store.insert({
            id: randomUUID(),
            name,
            email: `${randomUUID()}@x.io`,
            role: name,
          })) as User;
          assert.deepEqual(await store.get(stored.id), stored);
          assert.equal(stored.name, name);
          ids.push(stored.id);
        }
        const found = async (search: string) =>
          (await store.list({ search, sort: 'created_at', descending: false, offset: 0, limit: 10 })).users.map(
            (u) => u.name,
          );
        assert.deepEqual(await found('\ud800'), ['a\ud800b', '\u0001\ud800\u0000']);
        assert.deepEqual(await found('\u0000'), ['\u0001\ud800\u0000']);
        assert.deepEqual(await found('\ud83d\ude00'), ['\ud83d\ude00 whole']);
        const { users } = await store.list({
          role: '\udc00',
          sort: 'created_at',
          descending: false,
          offset: 0,
          limit: 10,
        });
        assert.deepEqual(
          users.map((u) => u.id),
          [ids[1]],
        );
      } finally {
        await store.close();
      }
    });
  });

  describe('a value too large for an index (SQLSTATE 54000, program_limit_exceeded)', () => {
    /** Text that does not compress, so that PostgreSQL's index takes it at its full size. */
    const incompressible = (length: number) => randomBytes(length).toString('base64url').slice(0, length);

    /** The store's error for `write`: a 422 VALIDATION_ERROR naming `field`, nothing stored, the database still up. */
    async function refusedAs(store: PostgresUserStore, field: string, write: () => Promise<unknown>) {
      const error = await write().then(
        () => assert.fail('PostgreSQL took an index row past its maximum'),
        (caught: unknown) => caught,
      );
      assert.ok(error instanceof RosterError, String(error));
      assert.equal(error.code, 'VALIDATION_ERROR');
      assert.equal(error.status, 422);
      assert.deepEqual(error.details, [{ field, message: `${field} is too large to store` }]);
      assert.deepEqual(store.health.state(), { up: true });
    }

    test('is a 422 naming the field, on create and on either kind of update; nothing is stored', async () => {
      const store = await emptyStore();
      try {
        await refusedAs(store, 'name', () =>
          store.insert({ id: randomUUID(), name: incompressible(3000), email: 'big@example.com', role: 'user' }),
        );
        await refusedAs(store, 'email', () =>
          store.insert({ id: randomUUID(), name: 'Big', email: `${incompressible(3000)}@example.com`, role: 'user' }),
        );
        assert.equal(await store.count(), 0);
        const kept = await store.insert({ id: randomUUID(), name: 'Kept', email: 'kept@example.com', role: 'user' });
        assert.ok(typeof kept === 'object');
        // The update that keeps the email (one statement) and the one that changes it (a transaction).
        await refusedAs(store, 'name', () =>
          store.update(kept.id, { name: incompressible(3000) }, { uniqueEmail: false }),
        );
        await refusedAs(store, 'email', () =>
          store.update(kept.id, { email: `${incompressible(3000)}@example.com` }, { uniqueEmail: false }),
        );
        await refusedAs(store, 'role', () =>
          store.update(kept.id, { role: incompressible(3000) }, { uniqueEmail: true }),
        );
        assert.deepEqual(await store.get(kept.id), kept);
      } finally {
        await store.close();
      }
    });
  });

  describe('a row stamped ahead of the clock (another instance, the same microsecond, or a clock stepped back)', () => {
    // restamp: an update's updated_at is later than the row's own even when the database clock is not,
    // so that each write is a new version (ETag) and a client holding the old one gets 412. A row whose
    // updated_at is ahead of the clock is what another instance's write in the same microsecond, or a
    // database clock stepped back since, leaves; both update statements must step past it.
    for (const [statement, changes, options] of [
      ['keeping the email (one statement)', { name: 'Renamed' }, { uniqueEmail: false }],
      ['changing the email (a transaction)', { email: 'moved@example.com' }, { uniqueEmail: true }],
    ] as const) {
      test(`an update ${statement} is stamped later than the row, and the old version is then refused`, async () => {
        const store = await emptyStore();
        try {
          const user = await store.insert({
            id: randomUUID(),
            name: 'Ahead',
            email: 'ahead@example.com',
            role: 'user',
          });
          assert.ok(typeof user === 'object');
          await schema.query(`UPDATE users SET updated_at = updated_at + interval '1 hour' WHERE id = $1`, [user.id]);
          const ahead = (await store.get(user.id))!.updated_at;
          assert.ok(ahead > user.updated_at, 'the row now stands ahead of the database clock');
          const updated = await store.update(user.id, changes, { ...options, expected: [ahead] });
          assert.ok(typeof updated === 'object', `the version held was current: ${String(updated)}`);
          assert.ok(
            updated.updated_at > ahead,
            `the new stamp ${updated.updated_at} must be later than the row's ${ahead}`,
          );
          assert.deepEqual(await store.get(user.id), updated);
          // The old version names the user no more: If-Match with it is 412 (CHANGED), on either update
          // and on delete, and nothing is written.
          assert.equal(
            await store.update(user.id, { name: 'Lost' }, { uniqueEmail: false, expected: [ahead] }),
            CHANGED,
          );
          assert.equal(
            await store.update(user.id, { email: 'lost@example.com' }, { uniqueEmail: true, expected: [ahead] }),
            CHANGED,
          );
          assert.equal(await store.remove(user.id, { expected: [ahead] }), CHANGED);
          assert.deepEqual(await store.get(user.id), updated);
          // The new version is the one that writes.
          const again = await store.update(user.id, changes, { ...options, expected: [updated.updated_at] });
          assert.ok(typeof again === 'object' && again.updated_at > updated.updated_at, String(again));
        } finally {
          await store.close();
        }
      });
    }
  });
}
