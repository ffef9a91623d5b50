/**
 * Forged cursors (issue 40): a cursor's digest is no secret, so anyone can mint one holding any
 * position. Whatever a well-formed cursor holds, no store answers 5xx: a stamp or seq that no store can
 * hold (year 0000, a seq past `bigint`) is refused alike on every store, 422 naming `after`, and a
 * value PostgreSQL refuses all the same (SQLSTATE class 22) is a 422 too, never a 500.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { encodeCursor, type CursorList } from '../../src/users/cursor.js';
import { FIELD_NAMES } from '../../src/users/fields.js';
import { RosterError } from '../../src/errors.js';
import { emptyStores, request, startOn, TEST_STORES } from '../support/index.js';

const pad = (value: number, width: number) => String(value).padStart(width, '0');

/** A stamp as users' stamps are written, of any year 0000–9999 (the day within every month's length). */
const stamp = fc
  .record({
    year: fc.integer({ min: 0, max: 9999 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 28 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    micros: fc.integer({ min: 0, max: 999_999 }),
  })
  .map(
    (t) =>
      `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}T${pad(t.hour, 2)}:${pad(t.minute, 2)}:${pad(t.second, 2)}.${pad(t.micros, 6)}`,
  );

/** Any decimal seq a cursor's shape admits, from 0 to 19 nines (past `bigint`). */
const seq = fc.oneof(
  fc.bigInt({ min: 0n, max: 10n ** 19n - 1n }).map(String),
  fc.constantFrom('0', '9223372036854775807', '9223372036854775808', '9999999999999999999'),
);

/** A list, and a position of its shape: a stamp for the stamp sorts, any string (NUL and lone surrogates too) else. */
const forged = fc
  .record({
    sort: fc.constantFrom(...FIELD_NAMES, 'nickname'),
    descending: fc.boolean(),
    role: fc.option(fc.constantFrom('admin', 'user'), { nil: undefined }),
    text: fc.string({ unit: 'binary', maxLength: 40 }),
    keyStamp: stamp,
    createdAt: stamp,
    seq: fc.option(seq, { nil: undefined }),
  })
  .map(({ sort, descending, role, text, keyStamp, createdAt, seq }) => {
    const list: CursorList = { sort, descending, role };
    const key = sort === 'created_at' || sort === 'updated_at' ? keyStamp : text;
    const position = { key, created_at: createdAt, ...(seq !== undefined && { seq }) };
    const query = new URLSearchParams({ sort, order: descending ? 'desc' : 'asc', limit: '2', ...(role && { role }) });
    query.set('after', encodeCursor(list, position));
    return { query: query.toString(), position };
  });

for (const store of TEST_STORES) {
  describe(`forged cursors on the ${store.name} store`, { skip: store.skip }, () => {
    test('year 0000 and a seq past bigint: 422 naming after, as on every store', async (t) => {
      const running = await startOn(store, { LOG_LEVEL: 'silent' });
      t.after(() => running.stop());
      const list: CursorList = { sort: 'created_at', descending: false };
      for (const position of [
        { key: '0000-01-01T00:00:00.000000', created_at: '0000-01-01T00:00:00.000000' },
        { key: '2026-01-01T00:00:00.000000', created_at: '0000-12-31T23:59:59.999999' },
        { key: '2026-01-01T00:00:00.000000', created_at: '2026-01-01T00:00:00.000000', seq: '9223372036854775808' },
      ]) {
        const after = encodeURIComponent(encodeCursor(list, position));
        const reply = await request(`${running.api}/users?sort=created_at&order=asc&after=${after}`);
        assert.equal(reply.status, 422, JSON.stringify(position));
        assert.equal(reply.body.error.code, 'VALIDATION_ERROR');
        assert.deepEqual(
          reply.body.error.details.map((d: { field: string }) => d.field),
          ['after'],
        );
      }
      // The year after, and the largest bigint, are positions like any other.
      const fine = encodeURIComponent(
        encodeCursor(list, {
          key: '0001-01-01T00:00:00.000000',
          created_at: '0001-01-01T00:00:00.000000',
          seq: '9223372036854775807',
        }),
      );
      const ok = await request(`${running.api}/users?sort=created_at&order=asc&after=${fine}`);
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
    });

    test('random well-formed cursors (any year, any key, any seq) never get 5xx', async (t) => {
      const running = await startOn(store, { LOG_LEVEL: 'silent' });
      t.after(() => running.stop());
      await fc.assert(
        fc.asyncProperty(forged, async ({ query, position }) => {
          const reply = await request(`${running.api}/users?${query}`);
          assert.ok(
            reply.status < 500,
            `${reply.status} for ${JSON.stringify(position)}: ${JSON.stringify(reply.body)}`,
          );
          if (reply.status !== 200) assert.equal(reply.status, 422);
        }),
        { numRuns: store.numRuns * 5 },
      );
    });
  });
}

describe('a value PostgreSQL refuses (SQLSTATE class 22) past the API’s checks', () => {
  const postgres = TEST_STORES.find((store) => store.name === 'postgres')!;
  test('is a 422 VALIDATION_ERROR, not the engine’s error', { skip: postgres.skip }, async () => {
    const store = await emptyStores(postgres)();
    try {
      // Straight to the store, past cursor.ts: year 0 (22008), a seq past bigint (22003).
      for (const after of [
        { key: '', created_at: '0000-01-01T00:00:00.000000' },
        { key: '', created_at: '2026-01-01T00:00:00.000000', seq: '99999999999999999999' },
      ]) {
        await assert.rejects(
          store.list({ sort: 'created_at', descending: false, offset: 0, limit: 2, after }),
          (error: unknown) => error instanceof RosterError && error.status === 422 && error.code === 'VALIDATION_ERROR',
          JSON.stringify(after),
        );
      }
    } finally {
      await store.close();
    }
  });
});
