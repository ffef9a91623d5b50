/**
 * Password guessing against AUTH=basic with RATE_LIMIT (docs/decisions.md, "Protection": *Rate limiting
 * before credentials*), over real sockets: while an address is over its limit every request gets 429
 * before any credential is looked at, so the right password is not told from a wrong one; a burst of
 * guesses cannot outrun the limit; a flood of bad credentials costs at most the limit's worth of
 * hashing, and a legitimate login in the middle of it stays within a few times its usual latency;
 * without RATE_LIMIT, hashing in flight is bounded and the excess gets 503 with Retry-After at once.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { HASHING_CONCURRENCY, HASHING_QUEUE } from '../../src/edge/authenticator.js';
import { hashPassword } from '../../src/edge/password.js';
import { assertRefused, basic, handshake, request, startRoster, type JsonResponse } from '../support/index.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Cheap hashes (N = 2^10) where the test is about the order of checks, not the cost of scrypt. */
const CHEAP = { N: 2 ** 10, r: 8, p: 1 };
/** Hashes of a real cost (the earlier default, N = 2^15: tens of ms) where the test is about that cost. */
const REAL = { N: 2 ** 15, r: 8, p: 1 };

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** Roster with one Basic user, ada (an admin), whose guesses from behind the trusted proxy share `rateLimit`. */
async function guessedRoster(t: TestContext, rateLimit: string) {
  const running = await startRoster({
    AUTH: 'basic',
    BASIC_USERS: `ada:${await hashPassword('lovelace-1815', CHEAP)}:admin`,
    RATE_LIMIT: rateLimit,
    TRUST_PROXY: '127.0.0.1',
  });
  t.after(() => running.stop());
  return running;
}

describe('RATE_LIMIT with AUTH=basic: no password guessing past the limit (REST)', () => {
  test('once the guesses have used up the budget, the right password gets the same 429 as a wrong one until the window has passed', async (t) => {
    const running = await guessedRoster(t, '3/second');
    const as = (password: string, from = '203.0.113.7') =>
      request(`${running.api}/users`, { headers: { authorization: basic('ada', password), 'x-forwarded-for': from } });

    for (let i = 0; i < 3; i++) assertRefused(await as(`guess-${i}`), 401, 'UNAUTHORIZED', /^Basic /);
    const wrong = await as('guess-3');
    const right = await as('lovelace-1815');
    assertRefused(wrong, 429, 'RATE_LIMITED');
    assertRefused(right, 429, 'RATE_LIMITED', undefined, 'the right password while over the limit');
    // Nothing in the reply tells them apart: same status, headers of the same names, same body.
    assert.equal(right.text, wrong.text);
    assert.equal(right.headers.get('www-authenticate'), null);
    assert.equal(right.headers.get('ratelimit-remaining'), '0');
    assert.match(right.headers.get('retry-after') ?? '', /^[1-9]\d*$/);

    // Another address is not affected, and the address is served again once the window has passed.
    assert.equal((await as('lovelace-1815', '203.0.113.8')).status, 200, 'another client');
    await sleep(Number(right.headers.get('retry-after')) * 1000 + 100);
    assert.equal((await as('lovelace-1815')).status, 200, 'after the window');
  });

  test('a burst of concurrent guesses is counted before the hashing: at most the limit get an answer other than 429', async (t) => {
    const running = await startRoster({
      AUTH: 'basic',
      BASIC_USERS: `ada:${await hashPassword('lovelace-1815', CHEAP)}:admin`,
      RATE_LIMIT: '3/minute',
    });
    t.after(() => running.stop());
    const guesses = Array.from({ length: 30 }, (_, i) => (i === 15 ? 'lovelace-1815' : `guess-${i}`));
    const replies = await Promise.all(
      guesses.map((password) =>
        request(`${running.api}/users`, { headers: { authorization: basic('ada', password) } }),
      ),
    );
    const answered = replies.filter((reply) => reply.status !== 429);
    assert.ok(
      answered.length <= 3,
      `at most 3 credentials checked, got ${answered.map((reply) => reply.status).join(' ')}`,
    );
    for (const reply of replies) if (reply.status === 429) assertRefused(reply, 429, 'RATE_LIMITED');
    // And from now on, the right password gets 429 like any other.
    assertRefused(
      await request(`${running.api}/users`, { headers: { authorization: basic('ada', 'lovelace-1815') } }),
      429,
      'RATE_LIMITED',
    );
  });

  test('API keys: an address over its limit gets 429 even with a valid key', async (t) => {
    const key = 'admin-key-0123456789abcdef';
    const running = await startRoster({ AUTH: 'apikey', API_KEYS: `${key}:admin`, RATE_LIMIT: '3/minute' });
    t.after(() => running.stop());
    const as = (apiKey: string) => request(`${running.api}/users`, { headers: { 'x-api-key': apiKey } });
    for (let i = 0; i < 3; i++) assertRefused(await as(`wrong-key-0123456789abcde${i}`), 401, 'UNAUTHORIZED');
    assertRefused(await as(key), 429, 'RATE_LIMITED', undefined, 'the valid key from an address over its limit');
  });
});

describe('RATE_LIMIT with AUTH=basic: no password guessing past the limit (chat handshakes)', () => {
  test('once the guesses have used up the budget, the right password gets 429 before the upgrade, like a wrong one', async (t) => {
    const running = await guessedRoster(t, '3/minute');
    const as = (password: string, from = '203.0.113.7') =>
      handshake(running.wsUrl, { headers: { authorization: basic('ada', password), 'x-forwarded-for': from } });

    for (let i = 0; i < 3; i++) assertRefused(await as(`guess-${i}`), 401, 'UNAUTHORIZED', /^Basic /);
    const wrong = await as('guess-3');
    const right = await as('lovelace-1815');
    assertRefused(wrong, 429, 'RATE_LIMITED');
    assertRefused(right, 429, 'RATE_LIMITED', undefined, 'the right password while over the limit');
    assert.equal(right.text, wrong.text);
    assert.equal(await running.server.chat.size(), 0);

    const other = await as('lovelace-1815', '203.0.113.8');
    assert.equal(other.status, 101, 'another client');
    other.ws!.terminate();
  });
});

describe('password hashing is bounded (AUTH=basic)', () => {
  test('a flood of bad credentials from one address costs at most the limit of hashing; a login from elsewhere stays quick', async (t) => {
    // A real cost here: the point is the CPU a flood can make Roster spend.
    const running = await startRoster({
      AUTH: 'basic',
      BASIC_USERS: `ada:${await hashPassword('lovelace-1815', REAL)}:admin,bob:${await hashPassword('builder-pw', REAL)}:admin`,
      RATE_LIMIT: '3/minute',
      TRUST_PROXY: '127.0.0.1',
    });
    t.after(() => running.stop());
    const login = (user: string, password: string, from: string) =>
      request(`${running.api}/users`, { headers: { authorization: basic(user, password), 'x-forwarded-for': from } });

    // The usual time of a login that needs a hash (a wrong password costs the same scrypt).
    const usual: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { value, ms } = await timed(() => login('bob', `not-it-${i}`, '198.51.100.1'));
      assert.equal(value.status, 401);
      usual.push(ms);
    }
    const baseline = median(usual);

    const flood = timed(() =>
      Promise.all(Array.from({ length: 300 }, (_, i) => login('ada', `guess-${i}`, '203.0.113.66'))),
    );
    await sleep(150); // the flood is in
    const legit = await timed(() => login('ada', 'lovelace-1815', '198.51.100.2'));
    const { value: replies, ms: floodMs } = await flood;

    assert.equal(legit.value.status, 200);
    assert.ok(
      legit.ms < Math.max(8 * baseline, baseline + 500),
      `the login during the flood took ${legit.ms.toFixed(0)} ms, usually ${baseline.toFixed(0)} ms`,
    );
    const checked = replies.filter((reply) => reply.status !== 429).length;
    assert.ok(checked <= 3, `${checked} of the flood's credentials were checked`);
    // 300 hashes take seconds of CPU (tens of ms each); 3 and 297 refusals, a fraction of that.
    assert.ok(floodMs < 30 * baseline, `the flood took ${floodMs.toFixed(0)} ms (${baseline.toFixed(0)} ms per hash)`);
  });

  test('without RATE_LIMIT, hashes in flight are bounded: the excess gets 503 with Retry-After at once; a known credential is not held up', async (t) => {
    const running = await startRoster({
      AUTH: 'basic',
      BASIC_USERS: `ada:${await hashPassword('lovelace-1815', REAL)}:admin`,
    });
    t.after(() => running.stop());
    const login = (user: string, password: string) =>
      request(`${running.api}/users`, { headers: { authorization: basic(user, password) } });

    assert.equal((await login('ada', 'lovelace-1815')).status, 200); // now verified recently: no hash
    const known: number[] = [];
    for (let i = 0; i < 3; i++) known.push((await timed(() => login('ada', 'lovelace-1815'))).ms);
    const baseline = median(known);

    const size = 60;
    const flood = Promise.all(
      Array.from({ length: size }, (_, i) => timed(() => login(`intruder-${i}`, `guess-${i}`))),
    );
    await sleep(20);
    const legit = await timed(() => login('ada', 'lovelace-1815'));
    const replies = await flood;

    assert.equal(legit.value.status, 200);
    assert.ok(
      legit.ms < Math.max(5 * baseline, 100),
      `a known credential took ${legit.ms.toFixed(0)} ms during the flood, usually ${baseline.toFixed(0)} ms`,
    );
    const busy: JsonResponse[] = replies.filter(({ value }) => value.status === 503).map(({ value }) => value);
    const refused = replies.filter(({ value }) => value.status === 401);
    assert.equal(busy.length + refused.length, size, `statuses: ${replies.map(({ value }) => value.status).join(' ')}`);
    assert.ok(busy.length > 0, 'some of the flood is turned away');
    assert.ok(
      refused.length < size / 2,
      `${refused.length} of ${size} hashed (at most ${HASHING_CONCURRENCY} at once, ${HASHING_QUEUE} waiting)`,
    );
    for (const reply of busy) {
      assert.match(reply.headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(reply.body, {
        status: 'error',
        error: { code: 'SERVICE_UNAVAILABLE', message: 'Too many logins are being checked; try again shortly' },
      });
      assert.equal(reply.headers.get('retry-after'), '1');
    }
  });
});
