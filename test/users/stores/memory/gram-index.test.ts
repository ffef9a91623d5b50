/**
 * The memory store's search index on its own: a posting list (postings.ts) against a model through
 * appends, removals, additions in the middle and the compactions they bring; and the gram index
 * (gram-index.ts) against a brute-force count and search of its users' lower-cased text, through
 * creates, updates (name, email, role) and deletes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { findsIn, searchedParts } from '../../../../src/users/query.js';
import type { User } from '../../../../src/users/schema.js';
import { GramIndex } from '../../../../src/users/stores/memory/gram-index.js';
import { Postings } from '../../../../src/users/stores/memory/postings.js';

const numRuns = Number(process.env.FUZZ_RUNS ?? 100);

/** A list's pairs as [seq, place] in order. */
function pairsOf(postings: Postings, id: number, until?: number): [number, number][] {
  const { seqs, places, length } = postings.decode(id, until);
  return Array.from({ length }, (_, i) => [seqs[i]!, places[i]!]);
}

test('property: a posting list reads as its model through appends, removals, additions and compactions', () => {
  const step = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('append' as const),
        places: fc.uniqueArray(fc.nat(300), { minLength: 1, maxLength: 3 }),
      }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }) },
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant('replace' as const),
        pick: fc.nat(),
        places: fc.uniqueArray(fc.nat(300), { minLength: 1, maxLength: 3 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('read' as const), until: fc.nat(400) }) },
  );
  fc.assert(
    fc.property(fc.array(step, { maxLength: 400, size: 'max' }), fc.integer({ min: 1, max: 100 }), (steps, gap) => {
      const postings = new Postings();
      const model = new Map<number, number[]>();
      let next = 0;
      const expected = (until = Infinity) =>
        [...model]
          .sort(([a], [b]) => a - b)
          .filter(([seq]) => seq <= until)
          .flatMap(([seq, places]) => places.map((place): [number, number] => [seq, place]));
      for (const s of steps) {
        const seqs = [...model.keys()];
        if (s.op === 'append') {
          // Seqs far apart take varints of several bytes.
          next += 1 + ((next * gap) % 5000);
          const places = [...s.places].sort((a, b) => a - b);
          postings.append(7, next, places, 0, places.length);
          model.set(next, places);
        } else if (s.op === 'read') {
          assert.deepEqual(pairsOf(postings, 7, s.until), expected(s.until));
        } else if (seqs.length > 0) {
          const seq = seqs[s.pick % seqs.length]!;
          postings.remove(7, seq);
          model.delete(seq);
          if (s.op === 'replace') {
            const places = [...s.places].sort((a, b) => a - b);
            postings.add(7, seq, places, 0, places.length);
            model.set(seq, places);
          }
        }
        assert.deepEqual(pairsOf(postings, 7), expected());
      }
      // Another list beside it stays empty.
      assert.deepEqual(pairsOf(postings, 3), []);
    }),
    { numRuns },
  );
});

const texts = fc.constantFrom(
  'Ada',
  'ADA ada',
  'Hansen',
  'sen',
  'İpek',
  'ΟΔΟΣ σς',
  'x\u0000y',
  '😀a😀',
  'ab',
  'a',
  'Straße',
  'aaaa',
);
const roles = fc.constantFrom('admin', 'user', 'guest', 'r3', 'r4', 'r5');

test('property: the gram index counts and finds what a brute-force search of the current users does', () => {
  const step = fc.oneof(
    { weight: 3, arbitrary: fc.record({ op: fc.constant('insert' as const), name: texts, email: texts, role: roles }) },
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('update' as const),
        pick: fc.nat(),
        name: fc.option(texts, { nil: undefined }),
        email: fc.option(texts, { nil: undefined }),
        role: fc.option(roles, { nil: undefined }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }) },
  );
  fc.assert(
    fc.property(fc.array(step, { maxLength: 120, size: 'max' }), (steps) => {
      const index = new GramIndex();
      const users = new Map<number, User>();
      let seq = 0;
      const user = (fields: { name: string; email: string; role: string }) =>
        ({ id: `u${seq}`, ...fields, created_at: '', updated_at: '' }) as User;
      for (const s of steps) {
        const seqs = [...users.keys()];
        if (s.op === 'insert') {
          users.set(seq, user(s));
          index.inserted(seq, users.get(seq)!);
          seq++;
        } else if (seqs.length > 0) {
          const at = seqs[s.pick % seqs.length]!;
          const before = users.get(at)!;
          if (s.op === 'remove') {
            index.removed(at, before);
            users.delete(at);
          } else {
            const after = {
              ...before,
              ...Object.fromEntries(
                Object.entries(s).filter(([k, v]) => k !== 'op' && k !== 'pick' && v !== undefined),
              ),
            };
            index.updated(at, before, after);
            users.set(at, after);
          }
        }
      }
      // Every piece of one to five units of every text, and a few absent ones.
      const needles = new Set(['zz', 'q', 'zzz', 'adaq']);
      for (const u of users.values())
        for (const part of searchedParts(u))
          for (let length = 1; length <= 5; length++)
            for (let at = 0; at + length <= part.length; at++) needles.add(part.slice(at, at + length));
      for (const needle of needles) {
        const holders = [...users].filter(([, u]) => findsIn(searchedParts(u), needle));
        if (needle.length <= 3) {
          assert.equal(index.count(needle), holders.length, `count of ${JSON.stringify(needle)}`);
          for (const role of ['admin', 'user', 'r5', 'none'])
            assert.equal(
              index.count(needle, role),
              holders.filter(([, u]) => u.role === role).length,
              `${needle} ${role}`,
            );
        }
        if (needle.length >= 3) {
          const found = index.find(needle);
          assert.deepEqual(
            [...found],
            holders.map(([at]) => at).sort((a, b) => a - b),
            `find ${JSON.stringify(needle)}`,
          );
          assert.ok(index.rarest(needle) >= found.length);
          assert.deepEqual(
            index.roleCounts(found, found.length),
            new Map(
              [...new Set(holders.map(([, u]) => u.role))].map((role) => [
                role,
                holders.filter(([, u]) => u.role === role).length,
              ]),
            ),
          );
        }
      }
    }),
    { numRuns },
  );
});

test('a renamed user leaves the postings of its old name and joins those of its new one; a deleted user leaves all', () => {
  const index = new GramIndex();
  const ada = { id: 'a', name: 'Ada Hansen', email: 'ada@x.io', role: 'user', created_at: '', updated_at: '' };
  const bob = { id: 'b', name: 'Bob', email: 'bob@x.io', role: 'admin', created_at: '', updated_at: '' };
  index.inserted(0, ada);
  index.inserted(1, bob);
  assert.deepEqual([...index.find('hansen')], [0]);
  index.updated(0, ada, { ...ada, name: 'Ada Eriksen' });
  assert.deepEqual([...index.find('hansen')], []);
  assert.deepEqual([...index.find('eriksen')], [0]);
  assert.deepEqual([...index.find('sen')], [0]);
  assert.equal(index.count('sen', 'user'), 1);
  index.updated(1, bob, { ...bob, name: 'Bob Sen' });
  assert.deepEqual([...index.find('sen')], [0, 1]);
  assert.equal(index.count('sen'), 2);
  assert.equal(index.count('sen', 'admin'), 1);
  index.removed(0, { ...ada, name: 'Ada Eriksen' });
  assert.deepEqual([...index.find('sen')], [1]);
  assert.deepEqual([...index.find('@x.io')], [1]);
  assert.equal(index.count('a'), 0);
  assert.equal(index.count('b'), 1);
  // A needle whose trigrams all occur, but not in a row, is not found.
  index.inserted(2, { ...ada, id: 'c', name: 'senx xbo', email: 'c@y.io' });
  assert.deepEqual([...index.find('senxbo')], []);
  assert.deepEqual([...index.find('sen')], [1, 2]);
});
