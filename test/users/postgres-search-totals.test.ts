/**
 * Search totals on PostgreSQL stay exact while the database keeps a count per needle searched lately
 * (migration 009): two instances on one schema, each searching again after every kind of change made
 * through the other instance or straight in SQL, must report what a count of the table says at that
 * moment; and the kept counts, by role, must equal that count after writers on two instances raced
 * the needle's registration, eviction, compaction and TRUNCATE.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import type { User } from '../../src/users/schema.js';
import type { NewUser, UserStore } from '../../src/users/store.js';
import { PostgresUserStore } from '../../src/users/stores/postgres/postgres-store.js';
import {
  DATABASE_URL,
  filledBefore,
  freshSchema,
  NO_DATABASE,
  request,
  twoInstancesOnFreshSchema,
  type TestSchema,
} from '../support/index.js';

test(
  'search totals follow every change, from either instance and from SQL',
  { skip: DATABASE_URL ? false : NO_DATABASE, timeout: 60_000 },
  async (t) => {
    const { schema, one, two } = await twoInstancesOnFreshSchema(t);
    const counted = async (filter: string) => {
      const role = filter.includes('role=admin') ? " AND role = 'admin'" : '';
      const { rows } = await schema.query(
        `SELECT count(*)::int AS n FROM users WHERE (name_lower LIKE '%quixote%' OR email_lower LIKE '%quixote%')${role}`,
      );
      return rows[0].n as number;
    };
    /** Both instances, each twice (the second time from what it kept), against a count of the table. */
    const expectTotals = async (step: string, expected: number) => {
      for (const filter of ['search=QUIXOTE', 'search=quixote&role=admin&sort=name&order=asc']) {
        const truth = await counted(filter);
        if (!filter.includes('role')) assert.equal(truth, expected, `${step}: the table itself`);
        for (const api of [one.api, two.api, one.api, two.api]) {
          const response = await request(`${api}/users?${filter}&limit=1`);
          assert.equal(response.status, 200, response.text);
          assert.equal(response.body.data.pagination.total, truth, `${step}: ${filter} on ${api}`);
          assert.equal(response.body.data.users.length, Math.min(1, truth), `${step}: ${filter} page`);
        }
      }
    };
    const create = async (api: string, name: string, role = 'user') => {
      const response = await request(`${api}/users`, {
        method: 'POST',
        body: { name, email: `${randomUUID()}@example.com`, role },
      });
      assert.equal(response.status, 201, response.text);
      return response.body.data.id as string;
    };

    await expectTotals('empty', 0);
    const first = await create(two.api, 'Don Quixote');
    await expectTotals('created on two', 1);
    const second = await create(one.api, 'Alonso Quixote', 'admin');
    await expectTotals('created on one', 2);
    const renamed = await request(`${two.api}/users/${first}`, { method: 'PATCH', body: { name: 'Sancho Panza' } });
    assert.equal(renamed.status, 200, renamed.text);
    await expectTotals('renamed away on two', 1);
    const moved = await request(`${two.api}/users/${first}`, {
      method: 'PATCH',
      body: { email: `quixote.${randomUUID()}@example.com` },
    });
    assert.equal(moved.status, 200, moved.text);
    await expectTotals('email moved onto the term on two', 2);
    const demoted = await request(`${one.api}/users/${second}`, { method: 'PATCH', body: { role: 'user' } });
    assert.equal(demoted.status, 200, demoted.text);
    await expectTotals('role changed on one', 2);
    await schema.query(`UPDATE users SET name_lower = 'rocinante' WHERE id = $1`, [second]);
    await expectTotals('renamed in SQL', 1);
    const removed = await request(`${two.api}/users/${first}`, { method: 'DELETE' });
    assert.equal(removed.status, 204, removed.text);
    await expectTotals('deleted on two', 0);
  },
);

// ---- The counts kept per needle (migration 009), through the store itself, two pools on one schema. ----

const silent = pino({ level: 'silent' });
const ROLES = ['user', 'admin', 'guest'];
/** The needle of the tests below, as a client sends it, and its LIKE pattern (the key of its kept rows). */
const TERM = 'QuiXo';
const PATTERN = '%quixo%';

/** What a count of the table gives for TERM, by role (the list's expression, for a needle needing no alignment). */
async function countedByRole(schema: TestSchema): Promise<Map<string, number>> {
  const { rows } = await schema.query(
    `SELECT role, count(*)::int AS n FROM users WHERE name_lower LIKE $1 OR email_lower LIKE $1 GROUP BY role`,
    [PATTERN],
  );
  return new Map(rows.map((row) => [row.role as string, row.n as number]));
}

/** The needle's kept rows summed by role, and whether it is ready (undefined: not kept). */
async function keptByRole(schema: TestSchema, pattern = PATTERN) {
  const { rows: needle } = await schema.query('SELECT ready FROM search_needles WHERE pattern = $1', [pattern]);
  const { rows } = await schema.query(
    'SELECT role, sum(users)::int AS n FROM search_needle_counts WHERE pattern = $1 GROUP BY role HAVING sum(users) <> 0',
    [pattern],
  );
  return {
    ready: needle[0]?.ready as boolean | undefined,
    counts: new Map(rows.map((row) => [row.role as string, row.n as number])),
  };
}

const list = (store: UserStore, search: string, role?: string) =>
  store.list({ search, role, sort: 'name', descending: false, offset: 0, limit: 5 });

/** Both stores' totals for TERM, with every role filter and none, against a count of the table. */
async function assertTotals(schema: TestSchema, stores: UserStore[], step: string): Promise<void> {
  const truth = await countedByRole(schema);
  for (const store of stores) {
    for (const role of [undefined, ...ROLES]) {
      const expected = role === undefined ? [...truth.values()].reduce((a, b) => a + b, 0) : (truth.get(role) ?? 0);
      const { total, users } = await list(store, TERM, role);
      assert.equal(total, expected, `${step}: role ${role ?? 'any'}`);
      assert.equal(users.length, Math.min(5, expected), `${step}: page, role ${role ?? 'any'}`);
    }
  }
  const kept = await keptByRole(schema);
  assert.equal(kept.ready, true, `${step}: the needle is kept`);
  assert.deepEqual(kept.counts, truth, `${step}: the kept counts by role`);
}

function newUser(name: string, role = 'user'): NewUser {
  return { id: randomUUID(), name, email: `${randomUUID()}@example.com`, role };
}

async function twoStores(t: TestContext, url: string): Promise<[PostgresUserStore, PostgresUserStore]> {
  const stores = [
    await PostgresUserStore.open({ url, poolSize: 4 }, silent),
    await PostgresUserStore.open({ url, poolSize: 4 }, silent),
  ] as const;
  t.after(() => Promise.all(stores.map((store) => store.close())));
  return [...stores];
}

test(
  'kept search counts stay exact while two instances write concurrently and the needle is registered again and again',
  { skip: DATABASE_URL ? false : NO_DATABASE, timeout: 120_000 },
  async (t) => {
    const schema = await freshSchema();
    t.after(() => schema.drop());
    const stores = await twoStores(t, schema.url);
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      const stored = await stores[i % 2]!.insert(
        newUser(i % 3 === 0 ? `Don Quixote ${i}` : `Sancho ${i}`, ROLES[i % 3]),
      );
      assert.notEqual(stored, 'email_taken');
      ids.push((stored as { id: string }).id);
    }
    await assertTotals(schema, stores, 'registered on a quiet table');

    // Writers on both instances: creates, renames into and out of the matches, role and email changes,
    // removals. Meanwhile the needle is evicted (registering another with room for one) and searched
    // again on either instance, so registrations run amid the writes.
    let random = 7;
    const next = (n: number) => (random = (random * 1103515245 + 12345) % 2 ** 31) % n;
    const writer = async (store: UserStore, rounds: number) => {
      for (let i = 0; i < rounds; i++) {
        const id = ids[next(ids.length)]!;
        switch (next(6)) {
          case 0: {
            const stored = await store.insert(newUser(next(2) ? 'Quixotic' : 'Panza', ROLES[next(3)]));
            if (stored !== 'email_taken') ids.push(stored.id);
            break;
          }
          case 1:
            await store.update(id, { name: next(2) ? `quixo ${i}` : `dulcinea ${i}` }, { uniqueEmail: false });
            break;
          case 2:
            await store.update(id, { role: ROLES[next(3)]! }, { uniqueEmail: false });
            break;
          case 3:
            await store.update(
              id,
              { email: `${next(2) ? 'quixo' : 'rocinante'}.${randomUUID()}@example.com` },
              { uniqueEmail: true },
            );
            break;
          case 4:
            await store.update(id, { name: `Quixo ${i}`, role: ROLES[next(3)]! }, { uniqueEmail: false });
            break;
          default:
            await store.remove(id);
        }
        written++;
      }
    };
    // Registrations stop before the writers do, so that the needle kept at the end was registered
    // amid writes and then counted on through more of them.
    let written = 0;
    const registrations = async () => {
      let times = 0;
      while (written < 400) {
        await schema.query(`SELECT roster_keep_needle('%other%', 'other', false, 1, '5s')`);
        assert.equal((await keptByRole(schema)).ready, undefined, 'evicted');
        await list(stores[times++ % 2]!, TERM, times % 4 === 0 ? 'admin' : undefined);
      }
      return times;
    };
    const writers = Promise.all([
      writer(stores[0], 150),
      writer(stores[1], 150),
      writer(stores[0], 150),
      writer(stores[1], 150),
    ]);
    const registering = registrations();
    await writers;
    assert.ok((await registering) >= 2, 'registered during the writes');
    await assertTotals(schema, stores, 'after concurrent writes and registrations');

    // Writes once the needle is kept change its counts, in both directions and across roles.
    await writer(stores[1], 60);
    await assertTotals(schema, stores, 'after writes to a kept needle');

    // The total comes from the kept rows, not from a count: a row added by hand shows in it.
    await schema.query(`INSERT INTO search_needle_counts (pattern, role, users) VALUES ($1, 'admin', 1000)`, [PATTERN]);
    const truth = await countedByRole(schema);
    assert.equal((await list(stores[0], TERM, 'admin')).total, (truth.get('admin') ?? 0) + 1000);
    await schema.query(`INSERT INTO search_needle_counts (pattern, role, users) VALUES ($1, 'admin', -1000)`, [
      PATTERN,
    ]);

    // Many writes fold into one row per role once a search finds more rows than COMPACT_AT.
    for (let i = 0; i < 120; i++) await stores[i % 2]!.insert(newUser(`Quixote the ${i}`, ROLES[i % 3]));
    await list(stores[0], TERM);
    const { rows } = await schema.query('SELECT count(*)::int AS n FROM search_needle_counts WHERE pattern = $1', [
      PATTERN,
    ]);
    assert.ok(rows[0].n <= ROLES.length, `${rows[0].n} rows after compaction`);
    await assertTotals(schema, stores, 'after compaction');

    // TRUNCATE drops every needle; the next search registers again, on the empty table, and counts on.
    await schema.query('TRUNCATE users');
    assert.equal((await keptByRole(schema)).ready, undefined, 'dropped by TRUNCATE');
    await assertTotals(schema, stores, 'after TRUNCATE');
    await stores[0].insert(newUser('Quixote again', 'admin'));
    await stores[1].insert(newUser('Sancho again', 'admin'));
    await assertTotals(schema, stores, 'created after TRUNCATE');
  },
);

test(
  'the least recently searched needle is evicted past the cap, its rows with it, and counted again when searched',
  { skip: DATABASE_URL ? false : NO_DATABASE, timeout: 60_000 },
  async (t) => {
    const schema = await freshSchema();
    t.after(() => schema.drop());
    const [one, two] = await twoStores(t, schema.url);
    for (let i = 0; i < 30; i++) await one.insert(newUser(`Quixote ${i} note${i % 7}`, ROLES[i % 3]));
    await assertTotals(schema, [one, two], 'first');
    // Marked used long ago: the first to go.
    await schema.query(`UPDATE search_needles SET used_at = now() - interval '1 hour' WHERE pattern = $1`, [PATTERN]);
    // Each asked twice: a needle is kept from its second ask on.
    for (let i = 0; i < 128; i++)
      await two.list({ search: `note${i >> 1}`, sort: 'created_at', descending: false, offset: 0, limit: 1 });
    const { rows } = await schema.query('SELECT count(*)::int AS n FROM search_needles');
    assert.equal(rows[0].n, 64);
    assert.deepEqual(await keptByRole(schema), { ready: undefined, counts: new Map() });
    await one.insert(newUser('Quixote, evicted', 'guest'));
    await assertTotals(schema, [one, two], 'registered again after eviction');
    // A needle searched lately is marked so (at most every few seconds), and outlives older ones.
    const { rows: used } = await schema.query(
      `SELECT used_at > now() - interval '1 minute' AS lately FROM search_needles WHERE pattern = $1`,
      [PATTERN],
    );
    assert.equal(used[0].lately, true);

    // Upkeep when a search marks its needle: a needle no one searched for an hour goes, and one that
    // writes filled with rows is folded though no one searched it.
    const n3 = (await two.list({ search: 'note3', sort: 'created_at', descending: false, offset: 0, limit: 1 })).total;
    await schema.query(
      `INSERT INTO search_needle_counts (pattern, role, users) SELECT '%note3%', 'admin', (-1) ^ i FROM generate_series(1, 150) i`,
    );
    await schema.query(`UPDATE search_needles SET used_at = now() - interval '2 hours' WHERE pattern = '%note5%'`);
    await schema.query(`UPDATE search_needles SET used_at = now() - interval '1 minute' WHERE pattern = $1`, [PATTERN]);
    await list(one, TERM);
    const { rows: left } = await schema.query(
      `SELECT pattern, count(*)::int AS n FROM search_needle_counts WHERE pattern IN ('%note3%', '%note5%') GROUP BY pattern`,
    );
    assert.deepEqual(left, [{ pattern: '%note3%', n: 3 }]);
    const { rows: n5 } = await schema.query(`SELECT 1 FROM search_needles WHERE pattern = '%note5%'`);
    assert.equal(n5.length, 0, 'the idle needle is gone');
    assert.equal(
      (await one.list({ search: 'note3', sort: 'created_at', descending: false, offset: 0, limit: 1 })).total,
      n3,
    );
  },
);

test(
  'a needle that must start at a whole character keeps the same matches as its search: escapes never match inside',
  { skip: DATABASE_URL ? false : NO_DATABASE, timeout: 60_000 },
  async (t) => {
    const schema = await freshSchema();
    t.after(() => schema.drop());
    const [one, two] = await twoStores(t, schema.url);
    // U+E005 is also the last character of a lone surrogate's escape (stored-text.ts). The needle
    // is longer than a gram (migration 010), so that it is kept; the gram alone is read from the grams.
    const needle = '\ue005 sur';
    const expected = async (needle: string) => {
      const users: User[] = [];
      for (let offset = 0; ; offset += 100) {
        const page = await one.list({ sort: 'created_at', descending: false, offset, limit: 100 });
        users.push(...page.users);
        if (page.users.length < 100) break;
      }
      return users.filter(
        (user) => user.name.toLowerCase().includes(needle) || user.email.toLowerCase().includes(needle),
      ).length;
    };
    const check = async (step: string) => {
      const want = await expected(needle);
      for (const store of [one, two, one]) assert.equal((await list(store, needle)).total, want, step);
      const gram = await expected('\ue005');
      for (const store of [one, two]) assert.equal((await list(store, '\ue005')).total, gram, `${step}: the gram`);
      const { rows } = await schema.query(
        'SELECT n.aligned, n.ready, (SELECT sum(users)::int FROM search_needle_counts c WHERE c.pattern = n.pattern) AS kept FROM search_needles n WHERE n.needle = $1',
        [needle],
      );
      assert.deepEqual(rows[0], { aligned: true, ready: true, kept: want === 0 ? null : want }, step);
    };
    const lone = (await one.insert(newUser('lone \ud805 surrogate'))) as User;
    const real = (await one.insert(newUser('private \ue005 surrogate'))) as User;
    await check('registered');
    await two.update(lone.id, { name: 'still lone \ud805' }, { uniqueEmail: false });
    await two.insert(newUser('another \ue005 sure'));
    await check('a lone surrogate renamed, a match created');
    await two.update(real.id, { name: 'nothing private' }, { uniqueEmail: false });
    await two.update(lone.id, { name: 'now \ue005 surely' }, { uniqueEmail: false });
    await check('renamed out and in');
    await one.remove(lone.id);
    await check('removed');
  },
);

test(
  'a database the previous version filled gets the kept counts, and its searches stay exact',
  { skip: DATABASE_URL ? false : NO_DATABASE, timeout: 60_000 },
  async (t) => {
    const schema = await freshSchema();
    t.after(() => schema.drop());
    const users = Array.from({ length: 40 }, (_, i) => ({
      user: newUser(i % 4 === 0 ? `Quixote ${i}` : `Panza ${i}`, ROLES[i % 3]),
      at: new Date(Date.UTC(2020, 0, 1, 0, 0, i)).toISOString(),
    }));
    assert.equal(await filledBefore(schema.url, '009', users), '008_page_indexes');
    const stores = await twoStores(t, schema.url);
    const { rows } = await schema.query("SELECT 1 FROM schema_migrations WHERE version = '009_search_needle_counts'");
    assert.equal(rows.length, 1);
    await assertTotals(schema, stores, 'after the migration');
    // The previous version's number of changes still moves, for its instances still running.
    const before = await schema.query('SELECT sum(changes)::int AS n FROM user_changes');
    await stores[1].insert(newUser('Quixote the new', 'guest'));
    const after = await schema.query('SELECT sum(changes)::int AS n FROM user_changes');
    assert.equal(after.rows[0].n, before.rows[0].n + 1);
    await assertTotals(schema, stores, 'created after the migration');
  },
);

test(
  'a write still in its transaction when the needle registers is counted once: registration waits for it, or counts',
  { skip: DATABASE_URL ? false : NO_DATABASE, timeout: 60_000 },
  async (t) => {
    const schema = await freshSchema();
    t.after(() => schema.drop());
    const [one, two] = await twoStores(t, schema.url);
    const users: User[] = [];
    for (let i = 0; i < 12; i++) users.push((await one.insert(newUser(`Quixote ${i}`, ROLES[i % 3]))) as User);
    const writer = new pg.Client({ connectionString: schema.url });
    await writer.connect();
    t.after(() => writer.end());
    const write = async (sql: string, id: string) => {
      await writer.query('BEGIN');
      await writer.query(sql, [id]);
    };

    // A rename out of the matches, its trigger run before the needle exists, committed while the
    // registration (the needle's second ask) waits for it: the registration's count sees it, and no
    // delta row is left over.
    await list(two, TERM);
    await write(`UPDATE users SET name_lower = 'panza' WHERE id = $1`, users[0]!.id);
    const searching = list(two, TERM);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await writer.query('COMMIT');
    await searching;
    await assertTotals(schema, [one, two], 'a write committed while the needle registered');

    // A write held longer than the registration waits: the search counts instead (the write not yet
    // committed is not in its snapshot), keeps nothing, and registers at a later search.
    await schema.query('DELETE FROM search_needles');
    await schema.query('DELETE FROM search_needle_counts');
    await list(one, TERM);
    await write(`DELETE FROM users WHERE id = $1`, users[1]!.id);
    const { total } = await list(one, TERM);
    assert.equal(total, 11);
    assert.equal((await keptByRole(schema)).ready, undefined, 'not kept while the write holds the lock');
    await writer.query('COMMIT');
    // The instance that gave up counts for a while rather than hold writes back again; another registers.
    for (let ask = 0; ask < 2; ask++) assert.equal((await list(one, TERM)).total, 10);
    assert.equal((await keptByRole(schema)).ready, undefined, 'no second try at once');
    await assertTotals(schema, [two, one], 'registered after the write committed');

    // Writes between the two steps (here: an instance stopped after step 1) leave delta rows that the
    // count includes already: the next search's step 2 drops them as it counts.
    await schema.query('DELETE FROM search_needles');
    await schema.query('DELETE FROM search_needle_counts');
    await schema.query(`SELECT roster_keep_needle($1, 'quixo', false, 64, '5s')`, [PATTERN]);
    await two.update(users[2]!.id, { name: 'Dulcinea' }, { uniqueEmail: false });
    await two.insert(newUser('Quixote, between the steps', 'admin'));
    assert.deepEqual((await keptByRole(schema)).ready, false);
    await assertTotals(schema, [one, two], 'written between the two steps');
  },
);
