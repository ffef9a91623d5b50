/** OrderedIndex against a model: a plain array kept sorted by the same comparison. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { OrderedIndex } from '../../../../src/users/stores/memory/ordered-index.js';

interface Item {
  key: number;
  seq: number;
}

const compare = (a: Item, b: Item): number => a.key - b.key || a.seq - b.seq;
const numRuns = Number(process.env.FUZZ_RUNS ?? 200);

test('property: insert, remove, at, slice, sliceDown and firstRank agree with a sorted array', () => {
  const operation = fc.oneof(
    { weight: 3, arbitrary: fc.record({ op: fc.constant('insert' as const), key: fc.integer({ min: 0, max: 20 }) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }) },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant('removeAbsent' as const), key: fc.integer({ min: 0, max: 20 }) }),
    },
  );
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 8 }), fc.array(operation, { maxLength: 300 }), (chunkSize, operations) => {
      const index = new OrderedIndex<Item>(compare, { maxChunk: chunkSize });
      // The same, finding chunks by a key kept per chunk: keys tie often, so `compare` decides ties.
      const keyed = new OrderedIndex<Item>(compare, {
        maxChunk: chunkSize,
        key: (item) => String(item.key).padStart(2, '0'),
      });
      const model: Item[] = [];
      let seq = 0;
      for (const operation of operations) {
        if (operation.op === 'insert') {
          const item = { key: operation.key, seq: seq++ };
          index.insert(item);
          keyed.insert(item);
          model.push(item);
          model.sort(compare);
        } else if (operation.op === 'remove' && model.length > 0) {
          const [item] = model.splice(operation.pick % model.length, 1);
          assert.equal(index.remove(item!), true);
          assert.equal(keyed.remove(item!), true);
        } else if (operation.op === 'removeAbsent') {
          assert.equal(index.remove({ key: operation.key, seq: -1 }), false);
          assert.equal(keyed.remove({ key: operation.key, seq: -1 }), false);
        }
        assert.equal(index.size, model.length);
        assert.deepEqual([...keyed], model);
        // Reads between writes, so stale rank bookkeeping cannot hide behind a later write.
        const rank = seq % (model.length + 1);
        assert.equal(index.at(rank), model[rank]);
        assert.equal(
          index.firstRank((item) => item.key >= 10),
          model.filter((item) => item.key < 10).length,
        );
      }
      assert.deepEqual([...index], model);
      assert.deepEqual(index.chunks().flat(), model);
      for (let rank = -1; rank <= model.length; rank++) {
        assert.equal(index.at(rank), model[rank]);
        assert.deepEqual(index.slice(rank, 5), rank < 0 ? [] : model.slice(rank, rank + 5));
        assert.deepEqual(
          index.sliceDown(rank, 5),
          rank < 0 || rank >= model.length ? [] : model.slice(Math.max(0, rank - 4), rank + 1).reverse(),
        );
      }
      for (let key = -1; key <= 21; key++) {
        const expected = model.findIndex((item) => item.key >= key);
        assert.equal(
          index.firstRank((item) => item.key >= key),
          expected === -1 ? model.length : expected,
        );
      }
    }),
    { numRuns },
  );
});

test('property: with tags, skipTagged up and down starts a walk at the right place, through retags', () => {
  interface Tagged extends Item {
    tag: number;
  }
  const operation = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        op: fc.constant('insert' as const),
        key: fc.integer({ min: 0, max: 20 }),
        tag: fc.nat(2),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('remove' as const), pick: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('retag' as const), pick: fc.nat(), tag: fc.nat(2) }) },
  );
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 6 }),
      fc.array(operation, { maxLength: 200, size: 'max' }),
      fc.nat(2),
      fc.nat(60),
      (chunkSize, operations, tag, skip) => {
        // The tag is read from the item, as the store reads the role from its column.
        const index = new OrderedIndex<Tagged>(compare, { maxChunk: chunkSize, tag: (item) => item.tag });
        const model: Tagged[] = [];
        let seq = 0;
        for (const operation of operations) {
          if (operation.op === 'insert') {
            const item = { key: operation.key, seq: seq++, tag: operation.tag };
            index.insert(item);
            model.push(item);
            model.sort(compare);
          } else if (model.length > 0) {
            const item = model[operation.pick % model.length]!;
            if (operation.op === 'remove') {
              assert.equal(index.remove(item), true);
              model.splice(model.indexOf(item), 1);
            } else {
              const from = item.tag;
              item.tag = operation.tag;
              assert.equal(index.retag(item, from, item.tag), true);
            }
          }
        }
        const tagged = (items: Tagged[]) => items.filter((item) => item.tag === tag).length;
        // Forwards: `skipped` tagged items lie before `rank`, no more than asked, and the walk from
        // there meets the same tagged item at position `skip` as the model does.
        const up = index.skipTagged(tag, skip);
        assert.equal(up.skipped, tagged(model.slice(0, up.rank)));
        assert.ok(up.skipped <= skip);
        assert.deepEqual(
          model.slice(up.rank).filter((item) => item.tag === tag)[skip - up.skipped],
          model.filter((item) => item.tag === tag)[skip],
        );
        // Backwards: the items from `rank` on hold `skipped` tagged ones.
        const down = index.skipTagged(tag, skip, true);
        assert.equal(down.skipped, tagged(model.slice(down.rank)));
        assert.ok(down.skipped <= skip);
        const reversed = model.filter((item) => item.tag === tag).reverse();
        assert.deepEqual(
          model
            .slice(0, down.rank)
            .filter((item) => item.tag === tag)
            .reverse()[skip - down.skipped],
          reversed[skip],
        );
      },
    ),
    { numRuns },
  );
});

test('tag counts hold more tags than their first allocation has room for', () => {
  interface Tagged extends Item {
    tag: number;
  }
  const index = new OrderedIndex<Tagged>(compare, { maxChunk: 4, tag: (item) => item.tag });
  const items = Array.from({ length: 3_000 }, (_, seq) => ({ key: (seq * 7_919) % 1_000, seq, tag: seq % 97 }));
  for (const item of items) index.insert(item);
  const model = [...index];
  for (const tag of [0, 50, 96])
    for (const skip of [0, 5, 29]) {
      const { rank, skipped } = index.skipTagged(tag, skip);
      assert.equal(skipped, model.slice(0, rank).filter((item) => item.tag === tag).length);
      assert.equal(
        model.slice(rank).filter((item) => item.tag === tag)[skip - skipped],
        items.filter((item) => item.tag === tag).sort(compare)[skip],
      );
    }
});
