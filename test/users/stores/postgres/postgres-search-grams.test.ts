/**
 * Search on PostgreSQL answers a term it has never seen without keeping anything for it (issue 43):
 * the first search of a term writes nothing to the kept totals, and a term of one to four characters
 * reads its total from the gram counts (migration 010), which two instances' concurrent writes, folds
 * and TRUNCATE keep equal to the grams of the users there are.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import type { NewUser, UserStore } from '../../../../src/users/store.js';
import { anywherePattern, likePattern, toStored } from '../../../../src/users/stores/sql/stored-text.js';
import { migrate } from '../../../../src/users/stores/postgres/postgres-migrations.js';
import { PostgresUserStore } from '../../../../src/users/stores/postgres/postgres-store.js';
import {
  DATABASE_URL,
  filledBefore,
  freshSchema,
  NO_DATABASE,
  type TestSchema,
  until,
} from '../../../support/index.js';

const silent = pino({ level: 'silent' });
const ROLES = ['user', 'admin', 'guest'];
const skip = DATABASE_URL ? false : NO_DATABASE;

function newUser(name: string, role = 'user', email = `${randomUUID()}@example.com`): NewUser {
  return { id: randomUUID(), name, email, role };
}

async function twoStores(t: TestContext, url: string): Promise<[PostgresUserStore, PostgresUserStore]> {
  const stores = [
    await PostgresUserStore.open({ url, poolSize: 4 }, silent),
    await PostgresUserStore.open({ url, poolSize: 4 }, silent),
  ] as const;
  t.after(() => Promise.all(stores.map((store) => store.close())));
  return [...stores];
}

const list = (store: UserStore, search: string, role?: string) =>
  store.list({ search, role, sort: 'created_at', descending: false, offset: 0, limit: 3 });

/** What every table that keeps totals holds, to compare before and after a search. */
async function keptTables(schema: TestSchema) {
  const tables = ['search_needles', 'search_needle_counts', 'search_gram_counts', 'search_gram_changes'];
  const held: Record<string, unknown[]> = {};
  for (const table of tables) held[table] = (await schema.query(`SELECT * FROM ${table} ORDER BY 1, 2`)).rows;
  return held;
}

/**
 * The gram counts, with the changes not folded yet, against the grams of the users there are (the
 * same function the trigger uses, over the whole table): every (gram, role) whose numbers differ.
 */
async function gramDrift(schema: TestSchema): Promise<unknown[]> {
  const { rows } = await schema.query(`
    WITH kept AS (
      SELECT gram, role, sum(users)::int AS n FROM (
        SELECT gram, role, users FROM search_gram_counts
        UNION ALL SELECT g.gram, c.role, c.delta FROM search_gram_changes c, roster_user_grams(c.name_lower, c.email_lower) g
      ) k GROUP BY gram, role
    ), truth AS (
      SELECT g.gram, u.role, count(*)::int AS n FROM users u, roster_user_grams(u.name_lower, u.email_lower) g
      GROUP BY g.gram, u.role
    )
    SELECT coalesce(k.gram, t.gram) AS gram, coalesce(k.role, t.role) AS role, k.n AS kept, t.n AS truth
    FROM kept k FULL JOIN truth t ON k.gram = t.gram AND k.role = t.role
    WHERE coalesce(k.n, 0) <> coalesce(t.n, 0)
    LIMIT 5`);
  return rows;
}

/** `term`'s total with each role filter and none, on each store, against a count of the table. */
async function assertTotals(schema: TestSchema, stores: UserStore[], term: string, step: string) {
  // The stored needle, tested as the list's statement tests it (migration 009: roster_search_matches).
  const needle = toStored(term.toLowerCase());
  const { rows } = await schema.query(
    `SELECT role, count(*)::int AS n FROM users
     WHERE roster_search_matches(name_lower, $1, $2, $3) OR roster_search_matches(email_lower, $1, $2, $3) GROUP BY role`,
    [anywherePattern(needle), needle, likePattern(needle) === undefined],
  );
  const truth = new Map(rows.map((row) => [row.role as string, row.n as number]));
  for (const store of stores) {
    for (const role of [undefined, ...ROLES]) {
      const expected = role === undefined ? [...truth.values()].reduce((a, b) => a + b, 0) : (truth.get(role) ?? 0);
      const { total, users } = await list(store, term, role);
      assert.equal(total, expected, `${step}: ${term}, role ${role ?? 'any'}`);
      assert.equal(users.length, Math.min(3, expected), `${step}: ${term} page, role ${role ?? 'any'}`);
    }
  }
}

test(
  'the first search of a term writes nothing to the kept totals; the second of a long one keeps it',
  { skip },
  async (t) => {
    const schema = await freshSchema();
    t.after(() => schema.drop());
    const [one, two] = await twoStores(t, schema.url);
    for (let i = 0; i < 20; i++) await one.insert(newUser(`Quixote ${i}`, ROLES[i % 3]));
    await one.list({ sort: 'created_at', descending: false, offset: 0, limit: 1 });
    const before = await keptTables(schema);
    for (const term of ['q', 'Qu', 'qui', 'quix', 'Quixote', 'te 1', 'ote 1']) {
      const { total } = await list(two, term);
      assert.ok(total > 0, term);
    }
    assert.deepEqual(await keptTables(schema), before, 'nothing written by first searches');
    // Asked again on the same instance, a term of five characters or more is kept; a shorter one never.
    await list(two, 'quix');
    await list(two, 'Quixote');
    const { rows } = await schema.query('SELECT pattern, ready FROM search_needles');
    assert.deepEqual(rows, [{ pattern: '%quixote%', ready: true }]);
    // Asked once on each of two instances, a term is not kept.
    await list(one, 'ixote');
    await list(two, 'ixote');
    const { rows: after } = await schema.query(`SELECT 1 FROM search_needles WHERE pattern = '%ixote%'`);
    assert.equal(after.length, 0);
  },
);

test(
  'gram counts stay exact while two instances write concurrently, fold, and the table is truncated',
  { skip, timeout: 120_000 },
  async (t) => {
    const schema = await freshSchema();
    t.after(() => schema.drop());
    const stores = await twoStores(t, schema.url);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const stored = await stores[i % 2]!.insert(newUser(`Ann ${i} Sen`, ROLES[i % 3]));
      ids.push((stored as { id: string }).id);
    }
    assert.deepEqual(await gramDrift(schema), [], 'after creates');
    let random = 11;
    const next = (n: number) => (random = (random * 1103515245 + 12345) % 2 ** 31) % n;
    const names = ['Anna', 'Sen', 'ab', 'Ångström', 'x\u0000y', 'lone \ud805', '\ue005 e', 'AN AN', ''];
    const writer = async (store: UserStore, rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const id = ids[next(ids.length)]!;
        switch (next(5)) {
          case 0: {
            const stored = await store.insert(newUser(names[next(names.length)]!, ROLES[next(3)]));
            if (stored !== 'email_taken') ids.push(stored.id);
            break;
          }
          case 1:
            await store.update(id, { name: names[next(names.length)]! }, { uniqueEmail: false });
            break;
          case 2:
            await store.update(
              id,
              { role: ROLES[next(3)]!, name: `${names[next(names.length)]!} ${i}` },
              { uniqueEmail: false },
            );
            break;
          case 3:
            await store.update(
              id,
              { email: `${next(2) ? 'an' : 'zz'}.${randomUUID()}@example.com` },
              { uniqueEmail: true },
            );
            break;
          default:
            await store.remove(id);
        }
      }
    };
    // More writes than a fold waits for (postgres-grams.ts: FOLD_EVERY), searches among them.
    let searching = true;
    const searches = (async () => {
      while (searching) for (const term of ['a', 'AN', 'sen', 'é']) await list(stores[next(2)]!, term);
    })();
    await Promise.all([writer(stores[0], 200), writer(stores[1], 200), writer(stores[0], 150), writer(stores[1], 150)]);
    searching = false;
    await searches;
    assert.deepEqual(await gramDrift(schema), [], 'after concurrent writes');
    for (const term of ['a', 'An', 'sen', 'n 1', '\u0000', '\ue005', 'ö', '@', 'ab'])
      await assertTotals(schema, stores, term, 'written');

    // Folds move the changes into the counts and leave every total as it was.
    const { rows: folded } = await schema.query('SELECT roster_fold_grams(100000) AS n');
    assert.ok(folded[0].n >= 0);
    const { rows: left } = await schema.query('SELECT count(*)::int AS n FROM search_gram_changes');
    assert.equal(left[0].n, 0, 'every change folded');
    assert.deepEqual(await gramDrift(schema), [], 'after the fold');
    await assertTotals(schema, stores, 'an', 'folded');

    // The total is read from the counts, not counted: a row added by hand shows in it.
    await schema.query(
      `INSERT INTO search_gram_changes (role, name_lower, email_lower, delta) VALUES ('admin', 'zq', '', 1000)`,
    );
    assert.equal((await list(stores[1], 'ZQ', 'admin')).total, 1000);
    assert.equal((await list(stores[0], 'zq')).total, 1000);
    await schema.query(
      `INSERT INTO search_gram_changes (role, name_lower, email_lower, delta) VALUES ('admin', 'zq', '', -1000)`,
    );

    await schema.query('TRUNCATE users');
    assert.deepEqual(await keptTables(schema).then((held) => held.search_gram_counts), []);
    await assertTotals(schema, stores, 'a', 'truncated');
    await stores[0].insert(newUser('Anna again', 'admin'));
    await writer(stores[1], 20);
    assert.deepEqual(await gramDrift(schema), [], 'after TRUNCATE');
    await assertTotals(schema, stores, 'a', 'created after TRUNCATE');
  },
);

test(
  'a database the previous version filled: migration 010 leaves its users among the changes, and a store folds them as it starts',
  { skip, timeout: 60_000 },
  async (t) => {
    const schema = await freshSchema();
    t.after(() => schema.drop());
    const names = ['Anna Sen', 'Ångström', 'x\u0000y', 'lone \ud805', '\ue005 e', 'AN AN', ''];
    const users = Array.from({ length: 35 }, (_, i) => ({
      user: newUser(`${names[i % names.length]!} ${i}`, ROLES[i % 3]),
      at: new Date(Date.UTC(2020, 0, 1, 0, 0, i)).toISOString(),
    }));
    assert.equal(await filledBefore(schema.url, '010', users), '009_search_needle_counts');
    // Nothing is taken apart under the migration's lock: each user waits as one row of changes.
    const pool = new pg.Pool({ connectionString: schema.url, max: 1 });
    try {
      await migrate(pool);
    } finally {
      await pool.end();
    }
    const { rows: counts } = await schema.query('SELECT count(*)::int AS n FROM search_gram_counts');
    assert.equal(counts[0].n, 0, 'no gram counted by the migration');
    const { rows: waiting } = await schema.query(
      'SELECT count(*)::int AS n, min(delta), max(delta) FROM search_gram_changes',
    );
    assert.deepEqual(waiting[0], { n: 35, min: 1, max: 1 });
    assert.deepEqual(await gramDrift(schema), [], 'right after the migration');
    // A store opened folds them without a write or a search asking.
    const store = await PostgresUserStore.open({ url: schema.url, poolSize: 2 }, silent);
    t.after(() => store.close());
    const unfolded = 'SELECT count(*)::int AS n FROM search_gram_changes';
    await until(
      'every change folded by the store opened',
      async () => (await schema.query(unfolded)).rows[0].n === 0,
      20_000,
      50,
    );
    assert.deepEqual(await gramDrift(schema), [], 'after the fold');
    for (const term of ['a', 'An', 'sen', '\u0000', '\ue005', 'ö', 'n 1'])
      await assertTotals(schema, [store], term, 'folded');
  },
);
