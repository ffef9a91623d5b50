/**
 * The cursor's digest (users/cursor.ts) is made by a one-shot SHA-256 and kept for the next request:
 * the cursors stay those that earlier builds handed out (a client's saved `after` still reads back),
 * a digest kept for one list is never taken for another list's, and the cursor made last is handed out
 * again only for the same list and position.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { decodeCursor, encodeCursor, type CursorList } from '../../src/users/cursor.js';
import type { Position } from '../../src/users/query.js';

const LIST: CursorList = { sort: 'created_at', descending: true };
const POSITION = { key: '2026-01-02T03:04:05.123456', created_at: '2026-01-02T03:04:05.123456', seq: '42' };

/** A cursor as builds before the kept digests made it: createHash, the first 12 bytes in base64url. */
function earlierCursor(list: CursorList, position: Position): string {
  const fields = [position.key, position.created_at, ...(position.seq === undefined ? [] : [position.seq])];
  const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
  const of = JSON.stringify([list.role ?? null, list.search ?? null, list.sort, list.descending, payload]);
  const digest = createHash('sha256').update(of).digest().subarray(0, 12).toString('base64url');
  return `${payload}.${digest}`;
}

test('a cursor is the one earlier builds made, and reads back', () => {
  assert.equal(encodeCursor(LIST, POSITION), earlierCursor(LIST, POSITION));
  assert.deepEqual(decodeCursor(LIST, earlierCursor(LIST, POSITION)), POSITION);
});

test('a digest kept for one list does not pass for another', () => {
  const cursor = encodeCursor(LIST, POSITION);
  assert.deepEqual(decodeCursor(LIST, cursor), POSITION);
  for (const other of [
    { ...LIST, descending: false },
    { ...LIST, role: 'admin' },
    { ...LIST, search: 'ann' },
    { ...LIST, sort: 'name' },
  ])
    assert.equal(decodeCursor(other, cursor), undefined, JSON.stringify(other));
});

test('more lists than the digests kept: each cursor still reads back', () => {
  const cursors = Array.from({ length: 3000 }, (_, index) => {
    const list = { ...LIST, search: `term${index}` };
    return [list, encodeCursor(list, POSITION)] as const;
  });
  for (const [list, cursor] of cursors) assert.deepEqual(decodeCursor(list, cursor), POSITION);
});

test('the cursor made last comes back only for the same list and position', () => {
  const lists: CursorList[] = [
    LIST,
    { ...LIST, descending: false },
    { ...LIST, role: 'admin' },
    { ...LIST, search: 'ann' },
    { ...LIST, sort: 'name' },
  ];
  const positions: Position[] = [
    POSITION,
    { ...POSITION, key: '2026-01-02T03:04:05.123457' },
    { ...POSITION, created_at: '2026-01-02T03:04:05.123457' },
    { ...POSITION, seq: '43' },
    { key: POSITION.key, created_at: POSITION.created_at },
  ];
  // Each pair twice in a row (the kept one answers the second), then after every other pair.
  for (const list of lists)
    for (const position of positions)
      for (const [otherList, otherPosition] of [
        [list, position],
        [list, position],
        [LIST, POSITION],
        [list, position],
      ] as const)
        assert.equal(encodeCursor(otherList, otherPosition), earlierCursor(otherList, otherPosition));
});
