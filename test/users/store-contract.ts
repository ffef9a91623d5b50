/**
 * The contract every UserStore must meet, as one suite that each implementation runs against itself
 * (one shared contract suite per interface). `list` is checked against the pure query
 * functions, which are the definition of the list semantics.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { createClock } from '../../src/clock.js';
import { nextPosition, queryUsers, type ListParams, type ListResult } from '../../src/users/query.js';
import type { User } from '../../src/users/schema.js';
import { CHANGED, type NewUser, type UserStore } from '../../src/users/store.js';
import { TIMESTAMP } from '../support/index.js';

/** A claim of an idempotency key as the key tests start from (times in ms since the epoch). */
const CLAIM = {
  principal: 'p',
  key: 'k',
  fingerprint: 'f',
  token: 't1',
  now: 1_000,
  expiresAt: 9_000,
  leaseUntil: 5_000,
};

/** A list's page and total, without the position of its next page (which a store may leave out, query.ts). */
const listed = ({ users, total }: ListResult) => ({ users, total });

/** The generated writes and list queries of the property tests. */
// Few distinct values, so that sort keys tie often; astral and accented letters test code-point order.
const names = fc.constantFrom(
  'Ada',
  'ada',
  'ADA',
  'Émile',
  'Zoë',
  'bob',
  '😀',
  '\uffff',
  'ab',
  'a',
  '',
  'ΟΔΟΣ',
  'x\u0000y',
);
const emails = fc.constantFrom('a@x.io', 'A@x.io', 'b@y.io', 'ada@corp.io', 'zed@corp.io', 'e@😀.io');
const roles = fc.constantFrom('admin', 'user', 'guest');
// Inserts outweigh removals so that stores grow to dozens of users, past several index chunks.
const operation = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('insert' as const),
      name: names,
      email: emails,
      role: roles,
      n: fc.nat(999_999),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('update' as const),
      pick: fc.nat(),
      name: fc.option(names),
      email: fc.option(emails),
      role: fc.option(roles),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }) },
);
const query = fc.record({
  role: fc.option(roles, { nil: undefined }),
  search: fc.option(
    fc.constantFrom('a', 'A', 'ad', 'corp', '😀', 'x.io', 'zz', '', 'io', '\u0000', 'ς', 'σ', 'a.a', '.', '@'),
    { nil: undefined },
  ),
  sort: fc.constantFrom('created_at', 'updated_at', 'id', 'name', 'email', 'role', 'nope', '__proto__'),
  descending: fc.boolean(),
  offset: fc.oneof(fc.constant(0), fc.nat(20), fc.nat(120)),
  limit: fc.integer({ min: 1, max: 30 }),
});
type Operation = typeof operation extends fc.Arbitrary<infer T> ? T : never;

/**
 * How long fast-check may go on shrinking a property's counterexample once it has failed. Each run
 * costs a fresh store and up to 150 writes: with a keyset off-by-one, shrinking PostgreSQL's cursor
 * walk ran past 13 minutes. Past the budget every candidate passes unrun, which ends the shrinking,
 * and the smallest failure found so far is the one reported.
 */
const SHRINK_MS = 15_000;

/** `predicate`, shrunk for at most SHRINK_MS after its first failure. */
function shrinkWithin<Args extends unknown[]>(
  predicate: (...args: Args) => Promise<void>,
): (...args: Args) => Promise<void> {
  let failedAt: number | undefined;
  return async (...args) => {
    if (failedAt !== undefined && Date.now() - failedAt > SHRINK_MS) return;
    try {
      await predicate(...args);
    } catch (error) {
      failedAt ??= Date.now();
      throw error;
    }
  };
}

/** `numRuns` of the property tests; a database-backed store may ask for fewer. */
export function userStoreContract(
  name: string,
  makeStore: () => Promise<UserStore>,
  options: { numRuns?: number } = {},
): void {
  const numRuns = Number(process.env.FUZZ_RUNS ?? options.numRuns ?? 60);
  describe(`UserStore contract: ${name}`, () => {
    const clock = createClock();
    const newUser = (fields: Partial<User> = {}): User => {
      const now = clock.next();
      return {
        id: randomUUID(),
        name: 'Store Test',
        email: `${randomUUID()}@example.com`,
        role: 'user',
        created_at: now,
        updated_at: now,
        ...fields,
      };
    };
    /**
     * Inserts a user that must be accepted; returns it as stored. A store may stamp created_at and
     * updated_at itself (store.ts), so only those may differ from what was given, and they must keep
     * the contract's format.
     */
    const insertOk = async (store: UserStore, user: User): Promise<User> => {
      const stored = await store.insert(user);
      assert.notEqual(stored, 'email_taken', user.email);
      const record = stored as User;
      assert.deepEqual({ ...record, created_at: user.created_at, updated_at: user.updated_at }, user);
      assert.match(record.created_at, TIMESTAMP);
      assert.equal(record.updated_at, record.created_at);
      return record;
    };
    const withStore = (body: (store: UserStore) => Promise<void>) => async () => {
      const store = await makeStore();
      try {
        await body(store);
      } finally {
        await store.close();
      }
    };

    test(
      'get of an unknown id is undefined',
      withStore(async (store) => {
        assert.equal(await store.get('nope'), undefined);
      }),
    );

    test(
      'insert then get returns an equal record',
      withStore(async (store) => {
        const stored = await insertOk(store, newUser());
        assert.deepEqual(await store.get(stored.id), stored);
      }),
    );

    test(
      'timestamps of successive writes are strictly increasing',
      withStore(async (store) => {
        const first = await insertOk(store, newUser());
        const second = await insertOk(store, newUser());
        const updated = (await store.update(first.id, { name: 'Later' }, { uniqueEmail: false })) as User;
        const moved = (await store.update(second.id, { email: 'moved@example.com' }, { uniqueEmail: false })) as User;
        const third = await insertOk(store, newUser());
        const stamps = [first.created_at, second.created_at, updated.updated_at, moved.updated_at, third.created_at];
        for (const stamp of stamps) assert.match(stamp, TIMESTAMP);
        assert.deepEqual([...new Set(stamps)].sort(), stamps, 'each later than the one before');
        assert.equal(updated.created_at, first.created_at);
      }),
    );

    test(
      'insert refuses an email held by another user, by letter case and surrounding spaces',
      withStore(async (store) => {
        const user = newUser({ email: 'Taken@Example.com' });
        await store.insert(user);
        for (const email of ['Taken@Example.com', 'taken@example.com', '  TAKEN@EXAMPLE.COM ']) {
          assert.equal(await store.insert(newUser({ email })), 'email_taken', email);
        }
        const { total } = await store.list({ sort: 'created_at', descending: true, offset: 0, limit: 100 });
        assert.equal(total, 1);
      }),
    );

    test(
      'update applies the changes, keeps the rest, and reports unknown ids',
      withStore(async (store) => {
        const user = await insertOk(store, newUser({ role: 'admin' }));
        const result = (await store.update(user.id, { name: 'Renamed' }, { uniqueEmail: false })) as User;
        assert.deepEqual(result, { ...user, name: 'Renamed', updated_at: result.updated_at });
        assert.ok(result.updated_at > user.updated_at, 'updated_at moves forward');
        assert.deepEqual(await store.get(user.id), result);
        assert.equal(await store.update('nope', {}, { uniqueEmail: false }), 'not_found');
      }),
    );

    test(
      "update with uniqueEmail refuses another user's email but allows one's own",
      withStore(async (store) => {
        const first = await insertOk(store, newUser());
        const second = await insertOk(store, newUser());
        assert.equal(
          await store.update(second.id, { email: ` ${first.email.toUpperCase()}` }, { uniqueEmail: true }),
          'email_taken',
        );
        assert.deepEqual(await store.get(second.id), second);
        const own = await store.update(second.id, { email: second.email.toUpperCase() }, { uniqueEmail: true });
        assert.equal((own as User).email, second.email.toUpperCase());
      }),
    );

    test(
      'update without uniqueEmail may share an email; insert then still refuses it',
      withStore(async (store) => {
        const first = await insertOk(store, newUser());
        const second = await insertOk(store, newUser());
        const shared = await store.update(second.id, { email: first.email }, { uniqueEmail: false });
        assert.equal((shared as User).email, first.email);
        assert.equal(await store.insert(newUser({ email: first.email })), 'email_taken');
        // Moving one of the two away keeps the email held by the other.
        await store.update(first.id, { email: 'moved@example.com' }, { uniqueEmail: false });
        assert.equal(await store.insert(newUser({ email: first.email })), 'email_taken');
      }),
    );

    test(
      'an email given up by update or remove can be taken again',
      withStore(async (store) => {
        const user = newUser({ email: 'old@example.com' });
        await store.insert(user);
        await store.update(user.id, { email: 'new@example.com' }, { uniqueEmail: false });
        await insertOk(store, newUser({ email: 'OLD@example.com' }));
        assert.equal(await store.insert(newUser({ email: 'new@example.com' })), 'email_taken');
        assert.equal(await store.remove(user.id), true);
        await insertOk(store, newUser({ email: 'new@example.com' }));
      }),
    );

    test(
      'remove reports whether there was a user, and the user is gone',
      withStore(async (store) => {
        const user = newUser();
        await store.insert(user);
        assert.equal(await store.remove(user.id), true);
        assert.equal(await store.get(user.id), undefined);
        assert.equal(await store.remove(user.id), false);
      }),
    );

    test(
      'list equals the pure query over the same users, for every kind of query',
      withStore(async (store) => {
        const names = ['Ada', 'ada', 'Émile', 'Zoë', 'bob', '😀 Smile', 'Bob', 'carol', 'Dave', 'eve'];
        const users: User[] = [];
        for (let i = 0; i < 40; i++) {
          const user = newUser({
            name: `${names[i % names.length]} ${i % 7}`,
            email: `u${i}@${i % 3 ? 'corp' : 'home'}.example`,
            role: i % 4 ? 'user' : 'admin',
          });
          users.push(await insertOk(store, user));
        }
        // Some updates, so updated_at and the stored order of fields differ from creation.
        for (const user of users.slice(0, 10)) {
          const changed = await store.update(user.id, { role: 'admin' }, { uniqueEmail: false });
          users[users.indexOf(user)] = changed as User;
        }
        const queries: Partial<ListParams>[] = [
          {},
          { descending: false },
          { role: 'admin' },
          { role: 'nobody' },
          { search: 'ADA' },
          { search: 'corp' },
          { search: '😀' },
          { role: 'user', search: 'b' },
          { sort: 'name', descending: false },
          { sort: 'name' },
          { sort: 'email', descending: false },
          { sort: 'updated_at' },
          { sort: 'role', descending: false },
          { sort: 'no_such_field' },
          { offset: 5, limit: 7 },
          { offset: 35, limit: 10 },
          { offset: 100, limit: 10 },
          { role: 'admin', sort: 'name', descending: false, offset: 2, limit: 3 },
        ];
        for (const query of queries) {
          const params: ListParams = { sort: 'created_at', descending: true, offset: 0, limit: 100, ...query };
          assert.deepEqual(listed(await store.list(params)), listed(queryUsers(users, params)), JSON.stringify(query));
        }
      }),
    );

    test(
      'pages in the far half, and pages of one role, in every order and both directions, equal the naive ones',
      withStore(async (store) => {
        // Names and emails that tie, so that creation order decides within a sort key, both ways.
        const users: User[] = [];
        for (let i = 0; i < 31; i++) {
          const user = newUser({
            name: ['Ada', 'bob', 'Ada', 'Zoë'][i % 4]!,
            email: `u${i % 5}.${i}@example.com`,
            role: i % 3 ? 'user' : 'admin',
          });
          users.push(await insertOk(store, user));
        }
        for (const user of users.filter((_, at) => at % 4 === 1)) {
          const changed = (await store.update(user.id, { name: 'Ada' }, { uniqueEmail: false })) as User;
          users[users.indexOf(user)] = changed;
        }
        const sorts = ['created_at', 'updated_at', 'id', 'name', 'email', 'role', 'nope'];
        for (const role of [undefined, 'admin', 'user', 'nobody']) {
          const total = users.filter((user) => role === undefined || user.role === role).length;
          const half = Math.floor(total / 2);
          const offsets = [0, 1, half - 1, half, half + 1, total - 7, total - 2, total - 1, total, total + 3];
          for (const sort of sorts) {
            for (const descending of [false, true]) {
              for (const offset of offsets.filter((at) => at >= 0)) {
                for (const limit of [1, 2, 7, 50]) {
                  const params: ListParams = { role, sort, descending, offset, limit };
                  assert.deepEqual(
                    listed(await store.list(params)),
                    listed(queryUsers(users, params)),
                    JSON.stringify(params),
                  );
                }
              }
            }
          }
        }
      }),
    );

    /** Applies one generated write to the store and to the model (every stored user, in creation order). */
    const apply = async (store: UserStore, users: User[], operation: Operation): Promise<void> => {
      if (operation.op === 'insert') {
        // Emails mostly unique per insert; a taken one (by case or through an update) is refused.
        const user = newUser({
          name: operation.name,
          email: `${operation.n}.${operation.email}`,
          role: operation.role,
        });
        const taken = users.some((other) => other.email.toLowerCase() === user.email.toLowerCase());
        if (taken) assert.equal(await store.insert(user), 'email_taken');
        else users.push(await insertOk(store, user));
      } else if (users.length > 0) {
        const at = operation.pick % users.length;
        const target = users[at]!;
        if (operation.op === 'remove') {
          assert.equal(await store.remove(target.id), true);
          users.splice(at, 1);
        } else {
          const changes = {
            ...(operation.name === null ? {} : { name: operation.name }),
            ...(operation.email === null ? {} : { email: operation.email }),
            ...(operation.role === null ? {} : { role: operation.role }),
          };
          const changed = (await store.update(target.id, changes, { uniqueEmail: false })) as User;
          assert.deepEqual(changed, { ...target, ...changes, updated_at: changed.updated_at });
          users[at] = changed as User;
        }
      }
    };

    test('property: after any sequence of writes, every list query equals the naive filter-sort-slice', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(operation, { maxLength: 150, size: 'max' }),
          fc.array(query, { minLength: 1, maxLength: 15 }),
          shrinkWithin(async (operations, queries) => {
            const store = await makeStore();
            try {
              const users: User[] = []; // the model: every stored user, in creation order
              for (const operation of operations) await apply(store, users, operation);
              for (const params of queries) {
                assert.deepEqual(
                  listed(await store.list(params)),
                  listed(queryUsers(users, params)),
                  JSON.stringify(params),
                );
              }
            } finally {
              await store.close();
            }
          }),
        ),
        { numRuns },
      );
    });

    /**
     * The whole list of `params` walked by cursor from its page-number page at `params.offset`, page by
     * page. A walk that does not move on (a page naming its own cursor again) would never end: one
     * with more pages than `most()` fails at once, naming the cursor it was at.
     */
    const walk = async (
      store: UserStore,
      params: ListParams,
      most: () => number,
      between?: () => Promise<void>,
    ): Promise<User[][]> => {
      const pages: User[][] = [];
      let asked: ListParams = params;
      let page = await store.list(asked);
      pages.push(page.users);
      for (let after = nextPosition(asked, page); after !== undefined; after = nextPosition(asked, page)) {
        assert.ok(
          pages.length < most(),
          `the walk of ${JSON.stringify(params)} does not end: ${pages.length} pages, at ${JSON.stringify(after)}`,
        );
        await between?.();
        asked = { ...params, offset: 0, after };
        page = await store.list(asked);
        pages.push(page.users);
      }
      return pages;
    };

    test('property: a cursor walk from any page of any list query equals the naive list, page by page', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(operation, { maxLength: 120, size: 'max' }),
          fc.array(query, { minLength: 1, maxLength: 6 }),
          shrinkWithin(async (operations, queries) => {
            const store = await makeStore();
            try {
              const users: User[] = [];
              for (const operation of operations) await apply(store, users, operation);
              for (const params of queries) {
                const label = JSON.stringify(params);
                const whole = queryUsers(users, { ...params, offset: 0, limit: users.length + 1 });
                let expected = queryUsers(users, params);
                let asked: ListParams = params;
                let page = await store.list(asked);
                const walked = [...page.users];
                // Each cursor page equals the naive one after the same position, total and cursor included.
                // No walk has more pages than users + 2: one that does (a cursor that does not move on)
                // fails here rather than run on forever.
                for (let pages = 1; ; pages++) {
                  assert.ok(pages <= users.length + 2, `${label}: the walk does not end (${pages} pages)`);
                  assert.deepEqual(
                    { users: page.users, total: page.total },
                    { users: expected.users, total: expected.total },
                    label,
                  );
                  const next = nextPosition(asked, page);
                  assert.equal(next !== undefined, expected.next !== undefined, `${label}: more follow`);
                  if (next === undefined) break;
                  assert.deepEqual({ key: next.key, created_at: next.created_at }, expected.next, label);
                  asked = { ...params, offset: 0, after: next };
                  page = await store.list(asked);
                  expected = queryUsers(users, { ...params, offset: 0, after: expected.next });
                  walked.push(...page.users);
                }
                assert.deepEqual(walked, whole.users.slice(params.offset), label);
              }
            } finally {
              await store.close();
            }
          }),
        ),
        { numRuns },
      );
    });

    test('property: writes between the pages of a cursor walk never make it repeat a user or skip one that stayed', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(operation, { minLength: 10, maxLength: 80, size: 'max' }),
          query,
          fc.array(fc.array(operation, { maxLength: 4 }), { maxLength: 40 }),
          shrinkWithin(async (operations, params, interleaved) => {
            const store = await makeStore();
            try {
              const users: User[] = [];
              for (const operation of operations) await apply(store, users, operation);
              const start = { ...params, offset: 0, limit: Math.max(1, params.limit % 7) };
              const before = new Set(users.map((user) => user.id));
              // What the list looks at of a user: its filters and its sort key.
              const seenBy = (user: User) =>
                JSON.stringify([user.role, user.name, user.email, start.sort === 'updated_at' && user.updated_at]);
              const moved = new Set<string>();
              let turn = 0;
              let written = 0;
              // Each batch of writes once, between one page and the next: writes repeated between every
              // page could move users ahead of the cursor faster than it walks (every update moves a user
              // to the end of an updated_at order), and the walk would rightly never end.
              // Each page lists a user not listed before, or one a write moved ahead of the cursor, or is
              // the last: every write adds at most one user and moves at most one, so no walk has more
              // pages than the users before it, twice the writes, and 2.
              const most = () => before.size + 2 * written + 2;
              const pages = await walk(store, start, most, async () => {
                for (const operation of interleaved[turn++] ?? []) {
                  const was = new Map(users.map((user) => [user.id, seenBy(user)]));
                  written++;
                  await apply(store, users, operation);
                  for (const user of users)
                    if (was.has(user.id) && was.get(user.id) !== seenBy(user)) moved.add(user.id);
                }
              });
              const label = JSON.stringify(start);
              // Users listed before the walk and still there, never changed in what the list looks at
              // (so never moved in its order): each must be walked exactly once, in order.
              const stayed = (user: User) => before.has(user.id) && !moved.has(user.id);
              const expected = queryUsers(users, { ...start, limit: users.length + 1 }).users.filter(stayed);
              const walked = pages.flat();
              const ids = walked.map((user) => user.id);
              const seen = new Set<string>();
              for (const user of walked) {
                // A user seen twice must have moved ahead of the cursor (a write changed its sort key).
                if (seen.has(user.id)) assert.ok(moved.has(user.id), `${label}: ${user.id} repeated`);
                seen.add(user.id);
              }
              const stayedIds = new Set(expected.map((user) => user.id));
              assert.deepEqual(
                ids.filter((id, at) => stayedIds.has(id) && ids.indexOf(id) === at),
                expected.map((user) => user.id),
                `${label}: every user that stayed, once, in order`,
              );
            } finally {
              await store.close();
            }
          }),
        ),
        { numRuns },
      );
    });

    /**
     * Names and emails whose lower-cased text is hard to search: characters that toLowerCase() turns
     * into two ('İ'), that it leaves alone though other foldings do not ('ß', 'ſ'), a final sigma,
     * the escapes of the SQL stores (U+0000, U+0001, lone surrogates, the private-use characters that
     * escapes carry), and the metacharacters of FTS5, LIKE, GLOB and SQL quoting.
     */
    const HARD_NAMES = [
      'İstanbul İİ',
      'STRASSE Straße ß',
      'ſtadt Long S',
      'ΟΔΟΣ Σίσυφος σς',
      'x\u0000y\u0001z \u0000\u0000',
      'lone \ud800 high \udc00 low',
      '\ue000 private \ue7ff',
      '😀😀 smile 😀',
      '"quoted" and ""doubled""',
      "O'Brien '' it's",
      'percent 100% under_score \\back',
      'glob *star* ?q [ab] [^c]',
      'fts NEAR(a b) AND OR NOT col:x ^head * + -',
      'Ada ADA ada',
      'ab',
      'a',
    ];
    const HARD_EMAILS = ['ada@corp.io', 'O.Brien@x.io', 'İ@x.io', 'ß@straße.de', 'sen.hansen@example.com'];
    /** Needles of one, two, three and more characters, with every kind of difficulty above. */
    const HARD_NEEDLES = [
      'a',
      'A',
      'İ',
      'i̇',
      'i',
      'ß',
      'ss',
      'SS',
      'ſ',
      's',
      'Σ',
      'σ',
      'ς',
      'ος',
      'ΟΣ',
      'σς',
      '\u0000',
      '\u0001',
      '\u0000y',
      'x\u0000y',
      '\u0000\u0000',
      '\u0000\u0000\u0000',
      '\ud800',
      '\udc00',
      ' \ud800 ',
      '\ue000',
      '\ue000 p',
      '\u0002',
      '\u0003',
      '\u0001\u0003',
      '😀',
      '😀😀',
      '😀 s',
      '"',
      '""',
      '"quoted"',
      "'",
      "''",
      "o'brien",
      '%',
      '100%',
      '_',
      'r_s',
      '\\',
      '\\back',
      '*',
      '*star*',
      '?',
      '[ab]',
      '[^c]',
      'near(',
      'near(a b)',
      ' and ',
      'or not',
      'col:x',
      '^head',
      '* + -',
      'sen',
      'hansen',
      'ada',
      'corp.io',
      '@',
      'no such text anywhere',
    ];

    test(
      'search equals the pure query for needles of one, two and three or more characters, metacharacters, escapes and case',
      withStore(async (store) => {
        const users: User[] = [];
        for (const [i, name] of HARD_NAMES.entries()) {
          const email = `${i}.${HARD_EMAILS[i % HARD_EMAILS.length]!}`;
          users.push(await insertOk(store, newUser({ name, email, role: i % 3 ? 'user' : 'admin' })));
        }
        // Every piece of one to four characters (code points) of every name, as written and upper-cased.
        const pieces = new Set(HARD_NEEDLES);
        for (const { name } of users) {
          const characters = [...name];
          for (let length = 1; length <= 4; length++) {
            for (let at = 0; at + length <= characters.length; at++) {
              const piece = characters.slice(at, at + length).join('');
              pieces.add(piece);
              pieces.add(piece.toUpperCase());
            }
          }
        }
        for (const search of pieces) {
          for (const params of [
            { sort: 'created_at', descending: true, offset: 0, limit: 100, search },
            { sort: 'name', descending: false, offset: 1, limit: 3, search, role: 'user' },
          ]) {
            assert.deepEqual(
              listed(await store.list(params)),
              listed(queryUsers(users, params)),
              JSON.stringify(params),
            );
          }
        }
      }),
    );

    test('model: writes and searches interleaved, every search’s total and page equal the model’s', async () => {
      const texts = fc.constantFrom(...HARD_NAMES, 'Hansen', 'Eriksen', 'sen', 'SEN', 'Ada');
      const roles = fc.constantFrom('admin', 'user');
      const needles = fc.oneof(
        fc.constantFrom(...HARD_NEEDLES),
        // Short runs of a small alphabet, so that random needles hit often.
        fc.string({
          unit: fc.constantFrom('a', 'd', 'A', 's', 'e', 'n', 'ß', 'İ', '"', '*', '\u0000', '😀'),
          minLength: 1,
          maxLength: 4,
        }),
      );
      const step = fc.oneof(
        {
          weight: 4,
          arbitrary: fc.record({ op: fc.constant('insert' as const), name: texts, email: texts, role: roles }),
        },
        {
          weight: 3,
          arbitrary: fc.record({
            op: fc.constant('update' as const),
            pick: fc.nat(),
            name: fc.option(texts),
            email: fc.option(texts),
            role: fc.option(roles),
          }),
        },
        { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }) },
        {
          weight: 4,
          arbitrary: fc.record({
            op: fc.constant('search' as const),
            search: needles,
            role: fc.option(roles, { nil: undefined }),
            sort: fc.constantFrom('created_at', 'name', 'email', 'nope'),
            descending: fc.boolean(),
            offset: fc.oneof(fc.constant(0), fc.nat(12)),
            limit: fc.integer({ min: 1, max: 8 }),
          }),
        },
      );
      await fc.assert(
        fc.asyncProperty(
          fc.array(step, { maxLength: 80, size: 'max' }),
          shrinkWithin(async (steps) => {
            const store = await makeStore();
            try {
              const users: User[] = []; // the model, in creation order
              let serial = 0;
              for (const next of steps) {
                if (next.op === 'search') {
                  const { op: _, ...params } = next;
                  assert.deepEqual(
                    listed(await store.list(params)),
                    listed(queryUsers(users, params)),
                    JSON.stringify(params),
                  );
                } else if (next.op === 'insert') {
                  // The text as a name, and inside a unique email (the email rule is the service's, not the store's).
                  const email = `${serial++}${next.email}@x.io`;
                  users.push(await insertOk(store, newUser({ name: next.name, email, role: next.role })));
                } else if (users.length > 0) {
                  const at = next.pick % users.length;
                  const target = users[at]!;
                  if (next.op === 'remove') {
                    assert.equal(await store.remove(target.id), true);
                    users.splice(at, 1);
                  } else {
                    const changes = {
                      ...(next.name === null ? {} : { name: next.name }),
                      ...(next.email === null ? {} : { email: `${serial++}${next.email}@y.io` }),
                      ...(next.role === null ? {} : { role: next.role }),
                    };
                    users[at] = (await store.update(target.id, changes, { uniqueEmail: false })) as User;
                  }
                }
              }
            } finally {
              await store.close();
            }
          }),
        ),
        { numRuns },
      );
    });

    test(
      'the store stamps created_at itself: timestamps given with a new user are not kept',
      withStore(async (store) => {
        const users: User[] = [];
        for (const stamp of ['2999-01-01T00:00:00.000000', '2001-01-01T00:00:00.000000']) {
          const stored = await store.insert({ ...newUser(), created_at: stamp, updated_at: stamp } as NewUser);
          assert.notEqual(stored, 'email_taken');
          users.push(stored as User);
        }
        assert.ok(users[1]!.created_at > users[0]!.created_at, 'strictly increasing in creation order');
        for (const descending of [true, false]) {
          const params: ListParams = { sort: 'created_at', descending, offset: 0, limit: 10 };
          assert.deepEqual(await store.list(params), queryUsers(users, params));
        }
      }),
    );

    test(
      'update and remove with expected versions: applied only while updated_at is one of them, else changed',
      withStore(async (store) => {
        const user = await insertOk(store, newUser());
        for (const uniqueEmail of [false, true]) {
          const email = uniqueEmail ? { email: `${randomUUID()}@example.com` } : {};
          const stale = ['2000-01-01T00:00:00.000000'];
          const before = (await store.get(user.id))!;
          assert.equal(
            await store.update(user.id, { name: 'No', ...email }, { uniqueEmail, expected: stale }),
            CHANGED,
          );
          assert.deepEqual(await store.get(user.id), before, 'nothing written');
          const current = before.updated_at;
          const done = (await store.update(
            user.id,
            { name: `Yes ${uniqueEmail}`, ...email },
            {
              uniqueEmail,
              expected: [...stale, current],
            },
          )) as User;
          assert.equal(done.name, `Yes ${uniqueEmail}`);
          assert.ok(done.updated_at > current, 'a new version');
          assert.equal(await store.update(user.id, { name: 'Late' }, { uniqueEmail, expected: [current] }), CHANGED);
        }
        assert.equal(await store.update('nope', { name: 'x' }, { uniqueEmail: false, expected: [] }), 'not_found');
        assert.equal(await store.remove(user.id, { expected: [] }), CHANGED);
        assert.ok(await store.get(user.id));
        assert.equal(await store.remove('nope', { expected: [] }), false);
        assert.equal(await store.remove(user.id, { expected: [(await store.get(user.id))!.updated_at] }), true);
        assert.equal(await store.get(user.id), undefined);
      }),
    );

    test(
      'idempotency keys: one claim at a time, the reply kept until expiry, released keys free',
      withStore(async (store) => {
        const claim = CLAIM;
        assert.deepEqual(await store.keys.claim(claim), { state: 'claimed' });
        assert.deepEqual(await store.keys.claim({ ...claim, token: 't2' }), { state: 'in_flight', fingerprint: 'f' });
        assert.deepEqual(await store.keys.claim({ ...claim, principal: 'q', token: 't3' }), { state: 'claimed' });
        const reply = { status: 201, headers: { etag: '"v"' }, body: '{"status":"success"}' };
        await store.keys.complete({ ...claim, token: 'other' }, reply); // not this claim's token: ignored
        assert.equal((await store.keys.claim({ ...claim, token: 't4', now: 2_000 })).state, 'in_flight');
        await store.keys.complete(claim, reply);
        assert.deepEqual(await store.keys.claim({ ...claim, token: 't5', now: 8_999 }), {
          state: 'done',
          fingerprint: 'f',
          reply,
        });
        assert.deepEqual(await store.keys.claim({ ...claim, token: 't6', now: 9_000, expiresAt: 20_000 }), {
          state: 'claimed',
        });
        await store.keys.release({ ...claim, token: 't6' });
        assert.deepEqual(await store.keys.claim({ ...claim, token: 't7', now: 9_001 }), { state: 'claimed' });
      }),
    );

    test(
      'a keyed insert stores the user and its key’s reply together; a release then deletes nothing',
      withStore(async (store) => {
        const claim = CLAIM;
        const replyOf = (user: User) => ({ status: 201, headers: { etag: `"${user.updated_at}"` }, body: user.id });
        const user = newUser();
        assert.deepEqual(await store.keys.claim(claim), { state: 'claimed' });
        const stored = await store.insert(user, { claim, replyOf });
        assert.notEqual(stored, 'email_taken');
        const reply = replyOf(stored as User);
        const repeat = { ...claim, token: 't2', now: 2_000 };
        assert.deepEqual(await store.keys.claim(repeat), { state: 'done', fingerprint: 'f', reply });
        // A release that finds the reply stored (the create committed, unseen by its request) deletes nothing.
        await store.keys.release(claim);
        assert.deepEqual(await store.keys.claim(repeat), { state: 'done', fingerprint: 'f', reply });

        // The email taken: nothing stored, the claim left in flight, and a release then frees it.
        const other = { ...claim, key: 'k2', token: 't3' };
        assert.deepEqual(await store.keys.claim(other), { state: 'claimed' });
        const twin = newUser({ email: user.email });
        assert.equal(await store.insert(twin, { claim: other, replyOf }), 'email_taken');
        assert.equal(await store.get(twin.id), undefined);
        assert.equal((await store.keys.claim({ ...other, token: 't4' })).state, 'in_flight');
        await store.keys.release(other);
        assert.deepEqual(await store.keys.claim({ ...other, token: 't5' }), { state: 'claimed' });

        // A claim no longer the request's own (released, or taken over past its lease): 503, nothing stored.
        const late = newUser();
        await assert.rejects(store.insert(late, { claim: other, replyOf }), { status: 503 });
        assert.equal(await store.get(late.id), undefined);
        assert.equal((await store.keys.claim({ ...other, token: 't6' })).state, 'in_flight');
        assert.equal(await store.count(), 1);
      }),
    );

    test(
      'seed stores the users in order into an empty store, and nothing into one that holds users',
      withStore(async (store) => {
        const seeds = [newUser({ name: 'First' }), newUser({ name: 'Second' })];
        assert.equal(await store.seed(seeds), true);
        const listed = await store.list({ sort: 'created_at', descending: false, offset: 0, limit: 10 });
        assert.deepEqual(
          listed.users.map((user) => user.name),
          ['First', 'Second'],
        );
        assert.equal(await store.seed([newUser({ name: 'Third' })]), false);
        assert.equal(await store.count(), 2);
      }),
    );
  });
}
