/**
 * RATE_LIMIT over real sockets: the RateLimit-* headers, 429 RATE_LIMITED with Retry-After and
 * recovery after the window, health exempt, keys per principal, TRUST_PROXY and X-Forwarded-For,
 * chat handshakes (429 before the upgrade) and chat messages (a notice, then 1008).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  API_KEY_ADMIN,
  API_KEY_READER,
  assertRefused,
  closeOf,
  handshake,
  request,
  startRoster,
} from '../support/index.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('RATE_LIMIT on the REST port', () => {
  test('headers on every limited reply; the 6th request in a second is 429 with Retry-After; served again after the window', async (t) => {
    const running = await startRoster({ RATE_LIMIT: '5/second' });
    t.after(() => running.stop());
    const remaining: string[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await request(`${running.api}/users`);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('ratelimit-limit'), '5');
      assert.match(response.headers.get('ratelimit-reset') ?? '', /^[01]$/);
      remaining.push(response.headers.get('ratelimit-remaining') ?? '');
    }
    assert.deepEqual(remaining, ['4', '3', '2', '1', '0']);
    const limited = await request(`${running.api}/users`);
    assertRefused(limited, 429, 'RATE_LIMITED');
    assert.match(limited.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    assert.equal(limited.headers.get('ratelimit-limit'), '5');
    assert.equal(limited.headers.get('ratelimit-remaining'), '0');
    assert.equal(limited.headers.get('ratelimit-reset'), limited.headers.get('retry-after'));
    // Every route but health counts, unknown ones too.
    assert.equal((await request(`${running.api}/nothing`)).status, 429);
    assert.equal((await request(`${running.api}/docs`)).status, 429);
    const health = await request(`${running.api}/health`);
    assert.equal(health.status, 200, 'health is never limited');
    assert.equal(health.headers.get('ratelimit-limit'), null);

    await sleep(Number(limited.headers.get('retry-after')) * 1000 + 50);
    const again = await request(`${running.api}/users`);
    assert.equal(again.status, 200, 'served again after the window');
    assert.equal(again.headers.get('ratelimit-remaining'), '4');
  });

  test('off by default: no RateLimit headers, no 429', async (t) => {
    const running = await startRoster();
    t.after(() => running.stop());
    for (let i = 0; i < 30; i++) {
      const response = await request(`${running.api}/users`);
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('ratelimit-limit'), null);
    }
  });

  test('authenticated: one budget per principal, whatever the address', async (t) => {
    const running = await startRoster({
      RATE_LIMIT: '3/second',
      AUTH: 'apikey',
      API_KEYS: `${API_KEY_ADMIN},${API_KEY_READER}:user`,
    });
    t.after(() => running.stop());
    const as = (key: string) => request(`${running.api}/users`, { headers: { 'x-api-key': key } });
    for (let i = 0; i < 3; i++) assert.equal((await as(API_KEY_ADMIN)).status, 200);
    assertRefused(await as(API_KEY_ADMIN), 429, 'RATE_LIMITED');
    // Same address, another principal: its own budget.
    const other = await as(API_KEY_READER);
    assert.equal(other.status, 200);
    assert.equal(other.headers.get('ratelimit-remaining'), '2');
    // Failed authentication counts against the address (guessing is limited too), and 429 comes first.
    for (let i = 0; i < 3; i++) assertRefused(await as('wrong-key-0123456789abcdef'), 401, 'UNAUTHORIZED');
    assertRefused(await as('wrong-key-0123456789abcdef'), 429, 'RATE_LIMITED');
  });

  test('TRUST_PROXY=false (default): X-Forwarded-For is ignored, the socket address counts', async (t) => {
    const running = await startRoster({ RATE_LIMIT: '2/second' });
    t.after(() => running.stop());
    const from = (address: string) => request(`${running.api}/users`, { headers: { 'x-forwarded-for': address } });
    assert.equal((await from('203.0.113.1')).status, 200);
    assert.equal((await from('203.0.113.2')).status, 200);
    assertRefused(await from('203.0.113.3'), 429, 'RATE_LIMITED', undefined, 'a forged X-Forwarded-For buys nothing');
  });

  test('TRUST_PROXY=127.0.0.1: X-Forwarded-For from the proxy is believed, one budget per client address', async (t) => {
    const running = await startRoster({ RATE_LIMIT: '2/second', TRUST_PROXY: '127.0.0.1' });
    t.after(() => running.stop());
    const from = (address: string) => request(`${running.api}/users`, { headers: { 'x-forwarded-for': address } });
    assert.equal((await from('203.0.113.1')).status, 200);
    assert.equal((await from('203.0.113.1')).status, 200);
    assertRefused(await from('203.0.113.1'), 429, 'RATE_LIMITED');
    assert.equal((await from('203.0.113.2')).status, 200, 'another client behind the proxy');
  });
});

describe('RATE_LIMIT on the chat port', () => {
  test('handshakes: past the limit, 429 with Retry-After before the upgrade; again after the window', async (t) => {
    const running = await startRoster({ RATE_LIMIT: '3/second' });
    t.after(() => running.stop());
    const open = [];
    for (let i = 0; i < 3; i++) {
      const accepted = await handshake(running.wsUrl);
      assert.equal(accepted.status, 101);
      open.push(accepted.ws!);
    }
    const refused = await handshake(running.wsUrl);
    assertRefused(refused, 429, 'RATE_LIMITED');
    assert.match(String(refused.headers['retry-after']), /^[1-9]$/);
    assert.equal(refused.headers['ratelimit-limit'], '3');
    assert.equal(await running.server.chat.size(), 3);
    // One budget for the client on both doors: its REST requests are refused too until the window ends.
    const rest = await request(`${running.api}/users`);
    assert.deepEqual([rest.status, rest.body.error.code], [429, 'RATE_LIMITED']);
    await sleep(Number(refused.headers['retry-after']) * 1000 + 50);
    const again = await handshake(running.wsUrl);
    assert.equal(again.status, 101);
    for (const ws of [...open, again.ws!]) ws.terminate();
  });

  test("handshakes and REST requests of one client spend one budget: REST first, then the handshake's 429", async (t) => {
    const running = await startRoster({ RATE_LIMIT: '3/minute', TRUST_PROXY: '127.0.0.1' });
    t.after(() => running.stop());
    const client = { 'x-forwarded-for': '198.51.100.7' };
    for (let i = 0; i < 3; i++) assert.equal((await request(`${running.api}/users`, { headers: client })).status, 200);
    assertRefused(await handshake(running.wsUrl, { headers: client }), 429, 'RATE_LIMITED');
    // Another client still has its whole budget.
    const other = await handshake(running.wsUrl, { headers: { 'x-forwarded-for': '198.51.100.8' } });
    assert.equal(other.status, 101);
    other.ws!.terminate();
  });

  test('messages: over the limit dropped with one system notice to the sender only; sustained abuse closes with 1008', async (t) => {
    const running = await startRoster({ RATE_LIMIT: '5/second', TRUST_PROXY: '127.0.0.1' });
    t.after(() => running.stop());
    const sender = await handshake(running.wsUrl);
    // Another client (another address): the budget is per client, shared by all its connections.
    const other = await handshake(running.wsUrl, { headers: { 'x-forwarded-for': '198.51.100.2' } });
    const ws = sender.ws!;
    for (let i = 0; i < 8; i++) ws.send(JSON.stringify({ type: 'chat', message: `m${i}` }));
    await sleep(300);
    const chatsSeen = other.messages.filter((m) => m.type === 'chat').map((m) => m.message);
    assert.deepEqual(chatsSeen, ['m0', 'm1', 'm2', 'm3', 'm4'], 'the first 5 (the bucket) pass, the rest are dropped');
    const notices = sender.messages.filter((m) => m.type === 'system' && String(m.message).startsWith('Slow down'));
    assert.equal(notices.length, 1, 'one notice per window');
    assert.ok(
      !other.messages.some((m) => m.type === 'system' && String(m.message).startsWith('Slow down')),
      'the notice goes to the sender only',
    );
    assert.equal(ws.readyState, ws.OPEN, 'a short burst is not closed');

    // Three times the limit within a window: closed with 1008.
    const closed = closeOf(ws);
    for (let i = 0; i < 15; i++) ws.send(JSON.stringify({ type: 'chat', message: `flood ${i}` }));
    const { code } = await closed;
    assert.equal(code, 1008);
    // Everyone else carries on.
    other.ws!.send(JSON.stringify({ type: 'ping' }));
    await sleep(100);
    assert.ok(other.messages.some((m) => m.type === 'pong'));
    other.ws!.terminate();
  });

  test('messages at the limit for several windows are never dropped', async (t) => {
    const running = await startRoster({ RATE_LIMIT: '10/second' });
    t.after(() => running.stop());
    const sender = await handshake(running.wsUrl);
    for (let i = 0; i < 15; i++) {
      sender.ws!.send(JSON.stringify({ type: 'chat', message: `steady ${i}` }));
      await sleep(110);
    }
    await sleep(100);
    assert.equal(sender.messages.filter((m) => m.type === 'chat').length, 15);
    assert.ok(!sender.messages.some((m) => String(m.message).startsWith('Slow down')));
    sender.ws!.terminate();
  });
});
