/**
 * The memory store's search against a naive model, with writes between searches: the results it keeps
 * per needle (kept-matches.ts: KeptMatches) must follow every insert, update and removal, for every
 * role, order and page. Tiny index chunks and tiny limits on what is kept exercise chunk boundaries,
 * eviction and results too large to keep.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
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
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('search' as const),
      search: fc.constantFrom(...NEEDLES),
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

test('property: the same with nothing kept (every search scans)', () =>
  interleaved({ indexChunkSize: 4, keptSearches: { needles: 0, users: 0 } }));

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
