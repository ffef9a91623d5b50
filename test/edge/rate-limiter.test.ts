/**
 * The one rate limiter of both doors (edge/rate-limiter.ts), with a window far longer than a test, so
 * nothing depends on time: what `count`, `spent` (a peek) and `refusal` say as a key uses up its budget,
 * that keys do not share it, and the 429 it builds.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RateLimiter, rateLimited } from '../../src/edge/rate-limiter.js';
import { RosterError } from '../../src/errors.js';

const HOUR = 3_600_000;

function assertRateLimited(error: RosterError | undefined, max: number, what: string): void {
  assert.ok(error instanceof RosterError, `${what}: a RosterError`);
  assert.equal(error.code, 'RATE_LIMITED', what);
  assert.equal(error.status, 429, what);
  assert.equal(error.headers?.['RateLimit-Limit'], String(max), what);
  assert.equal(error.headers?.['RateLimit-Remaining'], '0', what);
  assert.equal(error.headers?.['retry-after'], error.headers?.['RateLimit-Reset'], what);
  const seconds = Number(error.headers?.['retry-after']);
  assert.ok(Number.isInteger(seconds) && seconds >= 1 && seconds <= HOUR / 1000, `${what}: Retry-After ${seconds}`);
}

describe('RateLimiter', () => {
  for (const max of [1, 2, 5]) {
    test(`count: a limit of ${max} allows ${max} requests, each with what remains, then refuses`, async () => {
      const limiter = new RateLimiter({ max, windowMs: HOUR });
      assert.equal(limiter.limit, max);
      for (let i = 1; i <= max; i++) {
        const verdict = await limiter.count('k');
        assert.equal(verdict.allowed, true, `request ${i}`);
        assert.equal(verdict.limit, max);
        assert.equal(verdict.remaining, max - i, `request ${i}`);
        assert.ok(
          Number.isInteger(verdict.resetSeconds) && verdict.resetSeconds >= 1 && verdict.resetSeconds <= HOUR / 1000,
        );
      }
      for (const extra of [1, 2]) {
        const verdict = await limiter.count('k');
        assert.equal(verdict.allowed, false, `request ${max + extra}`);
        assert.equal(verdict.remaining, 0, 'never negative');
      }
    });
  }

  test('spent: a peek that counts nothing, undefined until the budget is used up, then the 429', async () => {
    const limiter = new RateLimiter({ max: 2, windowMs: HOUR });
    for (let i = 0; i < 10; i++)
      assert.equal(await limiter.spent('k'), undefined, 'an unknown key has everything left');
    assert.equal((await limiter.count('k')).allowed, true);
    for (let i = 0; i < 10; i++) assert.equal(await limiter.spent('k'), undefined, 'one left');
    assert.equal((await limiter.count('k')).remaining, 0, 'peeking took nothing');
    assertRateLimited(await limiter.spent('k'), 2, 'spent once used up');
  });

  test('refusal: counts, and answers the 429 past the limit', async () => {
    const limiter = new RateLimiter({ max: 3, windowMs: HOUR });
    const outcomes = [];
    for (let i = 0; i < 5; i++) outcomes.push(await limiter.refusal('k'));
    assert.deepEqual(outcomes.slice(0, 3), [undefined, undefined, undefined]);
    assertRateLimited(outcomes[3], 3, 'the fourth');
    assertRateLimited(outcomes[4], 3, 'the fifth');
  });

  test('keys have budgets of their own', async () => {
    const limiter = new RateLimiter({ max: 1, windowMs: HOUR });
    const keys = ['address:203.0.113.7', 'address:203.0.113.8', 'principal:basic:ada', 'chat:address:203.0.113.7'];
    for (const key of keys) assert.equal((await limiter.count(key)).allowed, true, key);
    for (const key of keys) assert.equal((await limiter.count(key)).allowed, false, key);
    assert.equal(
      (await new RateLimiter({ max: 1, windowMs: HOUR }).count(keys[0]!)).allowed,
      true,
      'limiters do not share counts',
    );
  });
});

describe('rateLimited', () => {
  const cases: [ttlMs: number, seconds: string][] = [
    [0, '1'],
    [1, '1'],
    [999, '1'],
    [1000, '1'],
    [1001, '2'],
    [59_500, '60'],
    [HOUR, '3600'],
  ];
  for (const [ttlMs, seconds] of cases) {
    test(`${ttlMs} ms left: try again in ${seconds} s`, () => {
      const error = rateLimited(10, ttlMs);
      assert.equal(error.status, 429);
      assert.equal(error.code, 'RATE_LIMITED');
      assert.deepEqual(error.headers, {
        'retry-after': seconds,
        'RateLimit-Limit': '10',
        'RateLimit-Remaining': '0',
        'RateLimit-Reset': seconds,
      });
      assert.match(error.message, new RegExp(`in ${seconds} s`));
    });
  }
});
