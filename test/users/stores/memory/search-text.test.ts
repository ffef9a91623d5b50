/**
 * The memory store's search against a naive model, with writes between searches: the search index
 * (gram-index.ts) and the results it keeps per needle (kept-matches.ts: KeptMatches) must follow every
 * insert, update and removal, for every role, order and page, and needles never seen before (random
 * ones of one to four characters, around case folding and outside ASCII). Tiny limits on what is kept
 * and on each step of search (search-text.ts: SearchTuning) drive every step: the walk, the
 * postings, the sorted matches and the scan in slices, also with writes landing between its slices.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { queryUsers, type ListParams, type ListResult } from '../../../../src/users/query.js';
import type { User } from '../../../../src/users/schema.js';
import { MemoryUserStore, type MemoryStoreOptions } from '../../../../src/users/stores/memory/memory-store.js';
import { foundOf, KeptMatches, type Found } from '../../../../src/users/stores/memory/kept-matches.js';

/** A list's page and total (the cursor to the next page is the cursor tests' business). */
const listed = ({ users, total }: ListResult) => ({ users, total });

const numRuns = Number(process.env.FUZZ_RUNS ?? 100);

// Needles of one, two, three and more characters; letters whose lower case differs outside ASCII (Σ
// has two lower cases, İ lower-cases to two units); U+0000; an astral character.
const NEEDLES = [
  'a',
  'A',
  'é',
  'ab',
  'σ',
  'ς',
  'i̇',
  '\u0000',
  'x\u0000',
  'ada',
  'ADA',
  'bob@',
  'io',
  '😀',
  '.io',
  'zz',
];
const names = fc.constantFrom(
  'Ada',
  'ADA',
  'Émile',
  'bob',
  'Bob Ab',
  'ΟΔΟΣ',
  'ὈΔΥΣΣΕΎΣ',
  'İpek',
  'x\u0000y',
  '😀',
  '',
  'ab',
);
const emails = fc.constantFrom('a@x.io', 'ADA@corp.io', 'bob@y.io', 'é@😀.io', 'zz@ab.io', 'σ@x.io');
const roles = fc.constantFrom('admin', 'user', 'guest');
/** Needles never seen: one to four characters of an alphabet that the names above hold, in both cases. */
const freshNeedles = fc.string({
  unit: fc.constantFrom(
    'a',
    'A',
    'b',
    'd',
    'o',
    'é',
    'É',
    'σ',
    'Σ',
    'ς',
    'İ',
    'i',
    '\u0307',
    'x',
    '\u0000',
    '😀',
    '@',
    '.',
  ),
  minLength: 1,
  maxLength: 4,
});

const operation = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('insert' as const), name: names, email: emails, role: roles }) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('update' as const),
      pick: fc.nat(),
      name: fc.option(names, { nil: undefined }),
      email: fc.option(emails, { nil: undefined }),
      role: fc.option(roles, { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }) },
  {
    // A search, and while it may be under way (a scan in slices), a rename and a removal.
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('racing' as const),
      search: freshNeedles,
      pick: fc.nat(),
      name: names,
      limit: fc.integer({ min: 1, max: 6 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('search' as const),
      search: fc.oneof(fc.constantFrom(...NEEDLES), freshNeedles),
      role: fc.option(roles, { nil: undefined }),
      sort: fc.constantFrom('created_at', 'name', 'email', 'role', 'updated_at', 'id', 'nope'),
      descending: fc.boolean(),
      offset: fc.nat(12),
      limit: fc.integer({ min: 1, max: 6 }),
    }),
  },
);

async function interleaved(options: MemoryStoreOptions): Promise<void> {
  await fc.assert(
    fc.asyncProperty(fc.array(operation, { maxLength: 200, size: 'max' }), async (operations) => {
      const store = new MemoryUserStore(options);
      const model: User[] = []; // every stored user, in creation order
      let inserts = 0;
      for (const operation of operations) {
        if (operation.op === 'insert') {
          const user = await store.insert({
            id: randomUUID(),
            ...operation,
            email: `${inserts++}${operation.email}`,
          });
          assert.notEqual(user, 'email_taken');
          model.push(user as User);
        } else if (operation.op === 'racing') {
          if (model.length < 2) continue;
          const asked: ListParams = {
            search: operation.search,
            sort: 'created_at',
            descending: false,
            offset: 0,
            limit: operation.limit,
          };
          const states = [listed(queryUsers(model, asked))];
          const listing = store.list(asked);
          const at = operation.pick % model.length;
          model[at] = (await store.update(model[at]!.id, { name: operation.name }, { uniqueEmail: false })) as User;
          states.push(listed(queryUsers(model, asked)));
          const gone = model.splice((at + 1) % model.length, 1)[0]!;
          assert.equal(await store.remove(gone.id), true);
          states.push(listed(queryUsers(model, asked)));
          // Found before the writes (a walk, the postings), between them or after them (a scan): never a mix.
          const got = listed(await listing);
          if (!states.slice(0, 2).some((state) => isDeepStrictEqual(got, state)))
            assert.deepEqual(got, states[2], JSON.stringify(asked));
        } else if (operation.op === 'search') {
          const { op: _, ...params } = operation;
          const asked: ListParams = params;
          assert.deepEqual(listed(await store.list(asked)), listed(queryUsers(model, asked)), JSON.stringify(asked));
        } else if (model.length > 0) {
          const at = operation.pick % model.length;
          if (operation.op === 'remove') {
            assert.equal(await store.remove(model[at]!.id), true);
            model.splice(at, 1);
          } else {
            const { op: _, pick: __, ...given } = operation;
            const changes = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined));
            model[at] = (await store.update(model[at]!.id, changes, { uniqueEmail: false })) as User;
          }
        }
      }
    }),
    { numRuns },
  );
}

test('property: searches between writes equal the pure query, with results kept per needle', () =>
  interleaved({ indexChunkSize: 3 }));

test('property: the same when few results are kept: eviction, and results too large to keep', () =>
  interleaved({ indexChunkSize: 2, keptSearches: { needles: 2, users: 12 } }));

test('property: the same with nothing kept, every page walked when it can be', () =>
  interleaved({ indexChunkSize: 4, keptSearches: { needles: 0, users: 0 }, searchTuning: { walkBudget: 1e9 } }));

test('property: the same with no walk: pages off the postings, sorted matches', () =>
  interleaved({ keptSearches: { needles: 0, users: 0 }, searchTuning: { walkBudget: 0 } }));

test('property: the same with no walk and no postings: every search scans, a user per slice', () =>
  interleaved({
    indexChunkSize: 3,
    keptSearches: { needles: 0, users: 0 },
    searchTuning: { walkBudget: 0, postingsMax: -1, scanSlice: 1 },
  }));

test('property: the same with every result kept once scanned, a few users per slice', () =>
  interleaved({ searchTuning: { walkBudget: 0, postingsMax: -1, scanSlice: 3, sortBudget: 2 } }));

test('a kept result follows a user whose name stops and starts matching, and a removal', async () => {
  const store = new MemoryUserStore({ indexChunkSize: 2 });
  const search = (needle: string, role?: string) =>
    store.list({ search: needle, role, sort: 'created_at', descending: false, offset: 0, limit: 10 });
  const ada = (await store.insert({ id: 'a', name: 'Ada', email: 'a@x.io', role: 'user' })) as User;
  await store.insert({ id: 'b', name: 'Bob', email: 'b@x.io', role: 'admin' });
  assert.equal((await search('ADA')).total, 1);
  await store.update('a', { name: 'Grace' }, { uniqueEmail: false });
  assert.deepEqual(await search('ada'), { users: [], total: 0 });
  await store.update('b', { name: 'Ada B' }, { uniqueEmail: false });
  assert.deepEqual(
    (await search('ada')).users.map((user) => user.id),
    ['b'],
  );
  assert.equal((await search('ada', 'admin')).total, 1);
  await store.update('b', { role: 'user' }, { uniqueEmail: false });
  assert.equal((await search('ada', 'admin')).total, 0);
  assert.equal((await search('ada', 'user')).total, 1);
  await store.remove('b');
  assert.equal((await search('ada')).total, 0);
  assert.ok(ada);
});

test('a kept sorted copy of a result follows an update that changes only updated_at', async () => {
  const store = new MemoryUserStore({ indexChunkSize: 2 });
  const newest = async () =>
    (await store.list({ search: 'ada', sort: 'updated_at', descending: true, offset: 0, limit: 1 })).users[0]!.id;
  for (const id of ['a', 'b', 'c']) await store.insert({ id, name: `Ada ${id}`, email: `${id}@x.io`, role: 'user' });
  assert.equal(await newest(), 'c');
  await store.update('a', { role: 'user' }, { uniqueEmail: false });
  assert.equal(await newest(), 'a');
});

/** `count` users with the name `name`, as a scan of them would find them. */
function scanned(count: number, name: string, role = 'user'): { users: User[]; found: Found } {
  const users = Array.from({ length: count }, (_, seq) => ({
    id: `u${seq}`,
    name,
    email: `u${seq}@x.io`,
    role,
    created_at: '2024-01-01T00:00:00.000000',
    updated_at: '2024-01-01T00:00:00.000000',
  }));
  return { users, found: foundOf([...users.keys()], users) };
}

test('a kept result may hold up to half of what all results may: a two-letter needle’s is kept', () => {
  const kept = new KeptMatches(4, 100);
  kept.keep('an', scanned(50, 'Ann').found);
  assert.equal(kept.get('an')?.length, 50);
  kept.keep('a', scanned(51, 'Ann').found);
  assert.equal(kept.get('a'), undefined, 'over half is scanned again each time');
  // Another half evicts the least recently used result to stay within 100 users.
  kept.keep('n', scanned(50, 'Ann').found);
  kept.keep('nn', scanned(1, 'Ann').found);
  assert.equal(kept.get('an'), undefined);
  assert.equal(kept.get('n')?.length, 50);
  assert.equal(kept.get('nn')?.length, 1);
});

test('a user that stays found through an update keeps its place; its role’s count moves', () => {
  const kept = new KeptMatches(4, 100);
  const { users, found } = scanned(5, 'Ann');
  kept.keep('an', found);
  kept.updated(2, users[2]!, { ...users[2]!, name: 'Hannah', role: 'admin' });
  assert.deepEqual([...found.seqs.subarray(0, found.length)], [0, 1, 2, 3, 4]);
  assert.deepEqual(Object.fromEntries(found.roles), { user: 4, admin: 1 });
  kept.updated(3, users[3]!, { ...users[3]!, name: 'Bob' });
  assert.deepEqual([...found.seqs.subarray(0, found.length)], [0, 1, 2, 4]);
  assert.deepEqual(Object.fromEntries(found.roles), { user: 3, admin: 1 });
});

test('a rare two-letter needle is found off the trigram postings, no scan; a field that is the pair alone is scanned for', async () => {
  // A scan reads a user per turn of the event loop here: a search that resolves before the next turn did not scan.
  const store = new MemoryUserStore({ searchTuning: { walkBudget: 0, scanSlice: 1 } });
  const add = (name: string, role = 'user') =>
    store.insert({ id: randomUUID(), name, email: `${randomUUID()}@example.com`, role });
  for (let i = 0; i < 40; i++) await add(`Plain ${i}`);
  await add('Aqzb', 'admin');
  await add('QZ top');
  await add('Bob Tqz');
  const searched = async (search: string) => {
    let turned = false;
    setImmediate(() => (turned = true));
    const result = await store.list({ search, sort: 'created_at', descending: false, offset: 0, limit: 10 });
    return { names: result.users.map((user) => user.name), total: result.total, scanned: turned };
  };
  assert.deepEqual(await searched('qz'), { names: ['Aqzb', 'QZ top', 'Bob Tqz'], total: 3, scanned: false });
  assert.deepEqual(await searched('zb'), { names: ['Aqzb'], total: 1, scanned: false });
  // Held by a name that is the pair alone, it is in no trigram: the postings fall short of its count.
  await add('xq');
  await add('Axqa');
  assert.deepEqual(await searched('xq'), { names: ['xq', 'Axqa'], total: 2, scanned: true });
  // Beside a unit outside ASCII, likewise.
  await add('éwk');
  assert.deepEqual(await searched('wk'), { names: ['éwk'], total: 1, scanned: true });
});

test('users created in runs longer than the index takes at once, some changed or gone before a search, are all found', async () => {
  // The index takes new users in runs (search-text.ts: SETTLE_AT, 256): 700 creates cross it twice and
  // leave some pending, of which some are renamed, moved to another role or removed before any search.
  const store = new MemoryUserStore({ keptSearches: { needles: 0, users: 0 } });
  const model: User[] = [];
  for (let i = 0; i < 700; i++) {
    const user = await store.insert({
      id: randomUUID(),
      name: `${['Ann', 'Bob', 'Cyd'][i % 3]} ${i}`,
      email: `u${i}@x.io`,
      role: 'user',
    });
    assert.notEqual(user, 'email_taken');
    model.push(user as User);
    if (i % 97 === 96) {
      const at = model.length - 5;
      model[at] = (await store.update(
        model[at]!.id,
        { name: `Zed ${at}`, role: 'admin' },
        { uniqueEmail: false },
      )) as User;
      const gone = model.splice(model.length - 11, 1)[0]!;
      assert.equal(await store.remove(gone.id), true);
    }
  }
  for (const search of ['a', 'an', 'ann', 'zed', 'ze', 'z', 'bob 6', '69', '@x.io', 'u69']) {
    for (const role of [undefined, 'admin', 'user']) {
      const asked: ListParams = { search, role, sort: 'name', descending: false, offset: 0, limit: 5 };
      assert.deepEqual(listed(await store.list(asked)), listed(queryUsers(model, asked)), `${search} ${role}`);
    }
  }
});
