/**
 * One client cannot fill the chat room (docs/decisions.md, "Protection": *Chat connections per client*,
 * *Rate limiting before credentials*), over real sockets: open connections per client (principal when
 * authenticated, else address) are capped by WS_MAX_CONNECTIONS_PER_CLIENT (32 by default with
 * protection on) with 429 TOO_MANY_CONNECTIONS before the upgrade, and the chat message budget of
 * RATE_LIMIT is per client, shared by its connections, not per socket.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { WebSocket } from 'ws';
import {
  API_KEY_ADMIN,
  API_KEY_READER,
  assertRefused,
  handshake,
  startRoster,
  within,
  type Handshake,
} from '../support/index.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('WS_MAX_CONNECTIONS_PER_CLIENT', () => {
  test('AUTH on, default 32 per principal: the 33rd connection of a key is refused with 429; another key still joins; a closed one frees a slot', async (t) => {
    const running = await startRoster({ AUTH: 'apikey', API_KEYS: `${API_KEY_ADMIN}:admin,${API_KEY_READER}:user` });
    const open: WebSocket[] = [];
    t.after(async () => {
      for (const ws of open) ws.terminate();
      await running.stop();
    });
    const as = (key: string) => handshake(running.wsUrl, { headers: { 'x-api-key': key } });
    for (let i = 0; i < 32; i++) {
      const accepted = await as(API_KEY_READER);
      assert.equal(accepted.status, 101, `connection ${i + 1}`);
      open.push(accepted.ws!);
    }
    const refused = await as(API_KEY_READER);
    assertRefused(refused, 429, 'TOO_MANY_CONNECTIONS');
    assert.equal(await running.server.chat.size(), 32);

    // The admin, from the same address, is another client.
    const admin = await as(API_KEY_ADMIN);
    assert.equal(admin.status, 101);
    open.push(admin.ws!);

    const closing = open.shift()!;
    const closed = new Promise((resolve) => closing.once('close', resolve));
    closing.close();
    await within(closed, 5000, 'the close handshake');
    await sleep(50);
    const again = await as(API_KEY_READER);
    assert.equal(again.status, 101, 'a slot freed by a close');
    open.push(again.ws!);
  });

  test('per address without AUTH (TRUST_PROXY believed), concurrent handshakes included; any other address joins', async (t) => {
    const running = await startRoster({
      WS_MAX_CONNECTIONS_PER_CLIENT: '3',
      RATE_LIMIT: '1000/second',
      TRUST_PROXY: '127.0.0.1',
    });
    const outcomes: Handshake[] = [];
    t.after(async () => {
      for (const outcome of outcomes) outcome.ws?.terminate();
      await running.stop();
    });
    const from = (address: string) => handshake(running.wsUrl, { headers: { 'x-forwarded-for': address } });
    outcomes.push(...(await Promise.all(Array.from({ length: 10 }, () => from('203.0.113.5')))));
    const accepted = outcomes.filter((outcome) => outcome.status === 101);
    assert.equal(accepted.length, 3, `statuses: ${outcomes.map((outcome) => outcome.status).join(' ')}`);
    for (const outcome of outcomes) if (outcome.status !== 101) assertRefused(outcome, 429, 'TOO_MANY_CONNECTIONS');

    const other = await from('203.0.113.6');
    outcomes.push(other);
    assert.equal(other.status, 101);
    assert.equal(await running.server.chat.size(), 4);
  });

  test("set without any protection, it applies per address; unset, there is no such limit (the contract's behaviour)", async (t) => {
    const capped = await startRoster({ WS_MAX_CONNECTIONS_PER_CLIENT: '2' });
    const open: WebSocket[] = [];
    t.after(async () => {
      for (const ws of open) ws.terminate();
      await capped.stop();
    });
    for (let i = 0; i < 2; i++) open.push((await handshake(capped.wsUrl)).ws!);
    assertRefused(await handshake(capped.wsUrl), 429, 'TOO_MANY_CONNECTIONS');

    const plain = await startRoster();
    t.after(() => plain.stop());
    for (let i = 0; i < 40; i++) {
      const accepted = await handshake(plain.wsUrl);
      assert.equal(accepted.status, 101);
      open.push(accepted.ws!);
    }
  });
});

describe('RATE_LIMIT chat message budget per client', () => {
  const chats = (outcome: Handshake) => outcome.messages.filter((m) => m.type === 'chat').map((m) => m.message);
  const slowDowns = (outcome: Handshake) =>
    outcome.messages.filter((m) => m.type === 'system' && String(m.message).startsWith('Slow down'));

  test('two connections of one client share one budget; another client has its own; reconnecting does not refill it', async (t) => {
    const running = await startRoster({ RATE_LIMIT: '5/second', TRUST_PROXY: '127.0.0.1' });
    const all: Handshake[] = [];
    t.after(async () => {
      for (const outcome of all) outcome.ws?.terminate();
      await running.stop();
    });
    const from = async (address: string) => {
      const outcome = await handshake(running.wsUrl, { headers: { 'x-forwarded-for': address } });
      assert.equal(outcome.status, 101);
      all.push(outcome);
      return outcome;
    };
    const observer = await from('198.51.100.9');
    const [first, second] = [await from('203.0.113.5'), await from('203.0.113.5')];
    for (let i = 0; i < 4; i++) first.ws!.send(JSON.stringify({ type: 'chat', message: `a${i}` }));
    for (let i = 0; i < 4; i++) second.ws!.send(JSON.stringify({ type: 'chat', message: `b${i}` }));
    await sleep(300);
    // Five in all pass (which five depends on how the two sockets' frames interleave): the budget is
    // the client's, not each socket's, which would have let all eight through.
    assert.equal(chats(observer).length, 5, `passed: ${chats(observer).join(' ')}`);
    assert.equal(slowDowns(first).length + slowDowns(second).length, 1, 'one notice for the client');

    // Another client is not held back by this one.
    observer.ws!.send(JSON.stringify({ type: 'chat', message: 'from the observer' }));
    await sleep(100);
    assert.ok(chats(observer).includes('from the observer'));

    // Both gone and back at once: the spent budget is still the client's (it refills at 5 per second).
    for (const outcome of [first, second]) outcome.ws!.terminate();
    await sleep(50);
    const back = await from('203.0.113.5');
    for (let i = 0; i < 5; i++) back.ws!.send(JSON.stringify({ type: 'chat', message: `c${i}` }));
    await sleep(200);
    const passed = chats(observer).filter((message) => String(message).startsWith('c'));
    assert.ok(passed.length < 5, `after reconnecting, ${passed.length} of 5 passed`);
  });
});
