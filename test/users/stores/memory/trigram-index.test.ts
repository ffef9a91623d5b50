/**
 * The trigram index against a naive model: after any mix of inserts, updates and removals, every
 * needle (one, two, three and more characters, case-changing and multi-unit characters) finds exactly
 * the users whose lower-cased name or email holds it, as query.ts defines it. Long runs of updates to
 * old users exercise the side lists and the lists coded afresh.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import type { User } from '../../../../src/users/schema.js';
import { TrigramIndex } from '../../../../src/users/stores/memory/trigram-index.js';

const numRuns = Number(process.env.FUZZ_RUNS ?? 100);

const userOf = (name: string, email: string): User => ({
  id: `${name}|${email}`,
  name,
  email,
  role: 'user',
  created_at: '2024-01-01T00:00:00.000000',
  updated_at: '2024-01-01T00:00:00.000000',
});

/** What query.ts finds: the users (by sequence number, ascending) whose lower-cased fields hold `needle`. */
function naive(users: readonly (User | undefined)[], needle: string): number[] {
  const out: number[] = [];
  users.forEach((user, seq) => {
    if (user && [user.name, user.email].some((field) => field.toLowerCase().includes(needle))) out.push(seq);
  });
  return out;
}

const NAMES = ['Ada', 'ADA', 'Anna', 'Hannah', 'İpek', 'ΟΔΟΣ', 'Straße', 'STRASSE', 'x\u0000y', '😀a', 'a', '', 'ab'];
const EMAILS = ['a@x.io', 'ada@corp.io', 'ann@y.io', 'é@😀.io', 'σ@x.io', 'i̇@x.io', 'ss@x.io'];
const NEEDLES = [
  'a',
  'n',
  'an',
  'ada',
  'anna',
  'nna',
  'i̇',
  'i̇p',
  'i̇pek',
  'σ',
  'ς',
  'οσ',
  'ss',
  'ß',
  'straße',
  '😀',
  '😀a',
  '\u0000',
  'x\u0000y',
  '@x.io',
  '.io',
  'o$',
  'zzz',
];

test('property: every needle finds what the naive filter finds, through inserts, updates and removals', () => {
  const operation = fc.oneof(
    fc.record({
      op: fc.constant('insert' as const),
      name: fc.constantFrom(...NAMES),
      email: fc.constantFrom(...EMAILS),
    }),
    fc.record({
      op: fc.constant('update' as const),
      pick: fc.nat(),
      name: fc.constantFrom(...NAMES),
      email: fc.option(fc.constantFrom(...EMAILS), { nil: undefined }),
    }),
    fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }),
  );
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 300 }), (operations) => {
      const index = new TrigramIndex();
      const users: (User | undefined)[] = [];
      for (const operation of operations) {
        const live = users.flatMap((user, seq) => (user ? [seq] : []));
        if (operation.op === 'insert') {
          const user = userOf(operation.name, operation.email);
          index.inserted(users.push(user) - 1, user);
        } else if (live.length > 0) {
          const seq = live[operation.pick % live.length]!;
          const before = users[seq]!;
          if (operation.op === 'remove') {
            index.removed(seq, before);
            users[seq] = undefined;
          } else {
            const after = { ...before, name: operation.name, email: operation.email ?? before.email };
            index.updated(seq, before, after);
            users[seq] = after;
          }
        }
      }
      for (const needle of NEEDLES) assert.deepEqual([...index.find(needle, users)], naive(users, needle), needle);
    }),
    { numRuns },
  );
});

test('a list coded afresh after many changes to old users still finds exactly them', () => {
  const index = new TrigramIndex();
  const users: (User | undefined)[] = [];
  for (let seq = 0; seq < 2000; seq++) {
    const user = userOf(seq % 3 === 0 ? 'Hansen' : 'Olsen', `u${seq}@x.io`);
    users.push(user);
    index.inserted(seq, user);
  }
  // Renames of old users in a scattered order: many more than a quarter of the lists change.
  for (let k = 0; k < 1500; k++) {
    const seq = (k * 7919) % 2000;
    const before = users[seq]!;
    const after = { ...before, name: before.name === 'Hansen' ? 'Olsen' : 'Hansen' };
    index.updated(seq, before, after);
    users[seq] = after;
    if (k % 5 === 0) {
      index.removed(seq, after);
      users[seq] = undefined;
    }
  }
  for (const needle of ['han', 'hansen', 'olsen', 'sen', 'en', 'h', 'u19', '@x.io'])
    assert.deepEqual([...index.find(needle, users)], naive(users, needle), needle);
  // Without coding lists afresh the side lists would hold over 10 000 entries here.
  const { sideEntries } = index.stats();
  assert.ok(sideEntries < 5000, `side lists are folded into their lists (${sideEntries} entries left)`);
});

test('a unit met first as the second or third of a trigram is coded alike wherever it is met', () => {
  const index = new TrigramIndex();
  const users = [userOf('aé', 'x@y.io'), userOf('éa', 'z@y.io'), userOf('bae', 'w@y.io')];
  users.forEach((user, seq) => index.inserted(seq, user));
  assert.deepEqual([...index.find('aé', users)], [0]);
  assert.deepEqual([...index.find('é', users)], [0, 1]);
  assert.deepEqual([...index.find('éa', users)], [1]);
});
