/** The clock of docs/decisions.md: UTC, no offset, microseconds, strictly increasing. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createClock, formatMicros, timestamp } from '../src/clock.js';
import { TIMESTAMP as FORMAT } from './support/index.js';

test('formats microseconds since the epoch as UTC without offset', () => {
  assert.equal(formatMicros(Date.UTC(2026, 10, 22, 10, 15, 30, 123) * 1000 + 456), '2026-11-22T10:15:30.123456');
  assert.equal(formatMicros(0), '1970-01-01T00:00:00.000000');
  assert.equal(formatMicros(1), '1970-01-01T00:00:00.000001');
  assert.equal(formatMicros(999_999), '1970-01-01T00:00:00.999999');
});

test('two readings in the same microsecond still move forward', () => {
  const clock = createClock(() => 5_000_000);
  assert.deepEqual(
    [clock.next(), clock.next(), clock.next()],
    ['1970-01-01T00:00:05.000000', '1970-01-01T00:00:05.000001', '1970-01-01T00:00:05.000002'],
  );
});

test('a wall clock stepped backwards does not make time go back', () => {
  const readings = [10_000_000, 9_000_000, 9_500_000, 12_000_000];
  const clock = createClock(() => readings.shift()!);
  assert.deepEqual(
    [clock.next(), clock.next(), clock.next(), clock.next()],
    [
      '1970-01-01T00:00:10.000000',
      '1970-01-01T00:00:10.000001',
      '1970-01-01T00:00:10.000002',
      '1970-01-01T00:00:12.000000',
    ],
  );
});

test('the real clock: the format, strictly increasing over many calls, and close to now', () => {
  const clock = createClock();
  const stamps = Array.from({ length: 10_000 }, () => clock.next());
  for (const stamp of stamps) assert.match(stamp, FORMAT);
  for (let i = 1; i < stamps.length; i++) assert.ok(stamps[i]! > stamps[i - 1]!);
  assert.ok(Math.abs(Date.parse(`${stamps[0]}Z`) - Date.now()) < 5_000);
  assert.match(timestamp(), FORMAT);
});
