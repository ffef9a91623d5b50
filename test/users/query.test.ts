/** Table-driven tests of the list operation's pure query logic. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compareCodePoints, queryUsers, sortKey, type ListParams } from '../../src/users/query.js';
import type { User } from '../../src/users/schema.js';

function user(n: number, fields: Partial<User> = {}): User {
  const ts = `2026-01-01T00:00:00.${String(n).padStart(6, '0')}`;
  return {
    id: `id-${n}`,
    name: `User ${n}`,
    email: `u${n}@example.com`,
    role: 'user',
    created_at: ts,
    updated_at: ts,
    ...fields,
  };
}

const USERS: User[] = [
  user(1, { name: 'Ada Lovelace', email: 'ada@example.com', role: 'admin' }),
  user(2, { name: 'Grace Hopper', email: 'grace@navy.mil' }),
  user(3, { name: 'Alan Turing', email: 'alan@bletchley.uk' }),
  user(4, { name: 'ada byron', email: 'byron@example.com', role: 'admin' }),
  user(5, { name: 'Émile', email: 'EMILE@EXAMPLE.COM' }),
];

const base: ListParams = { sort: 'created_at', descending: true, offset: 0, limit: 20 };
const ids = (params: Partial<ListParams>) => queryUsers(USERS, { ...base, ...params }).users.map((u) => u.id);

describe('queryUsers', () => {
  const cases: { name: string; params: Partial<ListParams>; expected: string[]; total?: number }[] = [
    { name: 'default: created_at descending', params: {}, expected: ['id-5', 'id-4', 'id-3', 'id-2', 'id-1'] },
    {
      name: 'ascending when not "desc"',
      params: { descending: false },
      expected: ['id-1', 'id-2', 'id-3', 'id-4', 'id-5'],
    },
    { name: 'role filter is exact', params: { role: 'admin' }, expected: ['id-4', 'id-1'] },
    { name: 'role filter is case-sensitive', params: { role: 'Admin' }, expected: [] },
    { name: 'search matches name, case-insensitive', params: { search: 'ADA' }, expected: ['id-4', 'id-1'] },
    { name: 'search matches email, case-insensitive', params: { search: 'emile@' }, expected: ['id-5'] },
    { name: 'search with no match', params: { search: 'zzz' }, expected: [] },
    { name: 'role then search', params: { role: 'user', search: 'a' }, expected: ['id-5', 'id-3', 'id-2'] },
    {
      name: 'sort by name ascending (code points: upper case first)',
      params: { sort: 'name', descending: false },
      expected: ['id-1', 'id-3', 'id-2', 'id-4', 'id-5'],
    },
    { name: 'sort by name descending', params: { sort: 'name' }, expected: ['id-5', 'id-4', 'id-2', 'id-3', 'id-1'] },
    {
      name: 'unknown field sorts as "" and keeps creation order (asc)',
      params: { sort: 'nope', descending: false },
      expected: ['id-1', 'id-2', 'id-3', 'id-4', 'id-5'],
    },
    {
      name: 'unknown field keeps creation order (desc, stable)',
      params: { sort: 'nope' },
      expected: ['id-1', 'id-2', 'id-3', 'id-4', 'id-5'],
    },
    {
      name: 'sort=__proto__ does not reach the prototype',
      params: { sort: '__proto__' },
      expected: ['id-1', 'id-2', 'id-3', 'id-4', 'id-5'],
    },
    { name: 'page slice', params: { offset: 2, limit: 2 }, expected: ['id-3', 'id-2'], total: 5 },
    { name: 'slice past the end', params: { offset: 10, limit: 2 }, expected: [], total: 5 },
  ];
  for (const { name, params, expected, total } of cases) {
    test(name, () => {
      assert.deepEqual(ids(params), expected);
      if (total !== undefined) assert.equal(queryUsers(USERS, { ...base, ...params }).total, total);
    });
  }

  test('total counts users after filter and search, before the slice', () => {
    assert.equal(queryUsers(USERS, { ...base, role: 'user', limit: 1 }).total, 3);
  });

  test('ties keep creation order in both directions', () => {
    const tied = [user(1, { role: 'b' }), user(2, { role: 'a' }), user(3, { role: 'b' }), user(4, { role: 'a' })];
    const order = (descending: boolean) =>
      queryUsers(tied, { ...base, sort: 'role', descending }).users.map((u) => u.id);
    assert.deepEqual(order(false), ['id-2', 'id-4', 'id-1', 'id-3']);
    assert.deepEqual(order(true), ['id-1', 'id-3', 'id-2', 'id-4']);
  });

  test('a user lacking the sort field sorts as the empty string', () => {
    const partial = [user(1, { name: 'b' }), { ...user(2) } as User, user(3, { name: 'a' })];
    delete (partial[1] as Partial<User>).name;
    const asc = queryUsers(partial, { ...base, sort: 'name', descending: false }).users.map((u) => u.id);
    assert.deepEqual(asc, ['id-2', 'id-3', 'id-1']);
  });
});

describe('compareCodePoints', () => {
  const cases: [string, string, number][] = [
    ['a', 'b', -1],
    ['b', 'a', 1],
    ['a', 'a', 0],
    ['a', 'ab', -1],
    ['Z', 'a', -1],
    // U+FF5E (fullwidth tilde) is below U+1F600 (emoji) by code point, though not by UTF-16 code unit.
    ['\uFF5E', '\u{1F600}', -1],
    ['\u{1F600}', '\uFF5E', 1],
    ['\uE000', '\u{10000}', -1],
    ['\u{1F600}', '\u{1F601}', -1],
  ];
  for (const [a, b, sign] of cases) {
    test(`${JSON.stringify(a)} vs ${JSON.stringify(b)}`, () => assert.equal(Math.sign(compareCodePoints(a, b)), sign));
  }

  test('matches sorting by code point arrays on random strings', () => {
    const alphabet = ['a', 'Z', '\u00e9', '\uFF5E', '\uE000', '\u{1F600}', '\u{10000}', '\uD7FF'];
    const strings = Array.from({ length: 200 }, (_, i) =>
      Array.from({ length: 1 + (i % 4) }, (_, j) => alphabet[(i * 7 + j * 3) % alphabet.length]).join(''),
    );
    const byCodePoints = (a: string, b: string) => {
      const x = [...a].map((c) => c.codePointAt(0)!);
      const y = [...b].map((c) => c.codePointAt(0)!);
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i]! - y[i]!;
      return x.length - y.length;
    };
    assert.deepEqual([...strings].sort(compareCodePoints), [...strings].sort(byCodePoints));
  });
});

describe('sortKey', () => {
  test('own string fields are used; missing and inherited ones are ""', () => {
    const u = user(1);
    assert.equal(sortKey(u, 'name'), 'User 1');
    assert.equal(sortKey(u, 'missing'), '');
    assert.equal(sortKey(u, 'constructor'), '');
    assert.equal(sortKey(u, 'toString'), '');
  });
});
