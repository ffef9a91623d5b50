/**
 * The chat session both clients run (src/protocol/reconnecting-chat.ts), over a stand-in socket: it
 * reconnects after a drop with the backoff and asks for what it missed, shows nothing twice, keeps the
 * connection alive with pings and gives up on one whose ping goes unanswered, and, for a client that
 * wants it, ends when the first connection cannot be made.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ReconnectingChat,
  type SessionEnd,
  type SessionEvents,
  type SessionOptions,
  type SessionSocket,
  type SessionState,
} from '../../src/protocol/reconnecting-chat.js';
import type { ServerMessage } from '../../src/protocol/chat-codec.js';

type Listener = (event: never) => void;

/** A socket the test opens, feeds and closes by hand. */
class FakeSocket implements SessionSocket {
  readyState = 0;
  readonly sent: unknown[] = [];
  closedWith: number | undefined;
  readonly #listeners = new Map<string, Listener[]>();

  constructor(readonly url: string) {}

  addEventListener(type: string, listener: Listener): void {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener]);
  }

  send(data: string): void {
    this.sent.push(JSON.parse(data));
  }

  close(code = 1005): void {
    this.closedWith = code;
    this.readyState = 3;
  }

  emit(type: string, event: object = {}): void {
    for (const listener of this.#listeners.get(type) ?? []) (listener as (event: object) => void)(event);
  }

  open(): void {
    this.readyState = 1;
    this.emit('open');
  }

  receive(message: object): void {
    this.emit('message', { data: JSON.stringify(message) });
  }

  drop(code = 1006): void {
    this.readyState = 3;
    this.emit('close', { code, reason: '' });
  }
}

const AT = '2026-11-22T10:15:30.123456';

function session(options: Partial<SessionOptions> = {}) {
  const sockets: FakeSocket[] = [];
  const states: SessionState[] = [];
  const messages: ServerMessage[] = [];
  const ends: SessionEnd[] = [];
  const events: SessionEvents = {
    state: (state) => states.push(state),
    message: (message) => messages.push(message),
    ended: (end) => ends.push(end),
  };
  const chat = new ReconnectingChat(
    {
      url: () => 'ws://chat.test/',
      connect: (url) => {
        const socket = new FakeSocket(url);
        sockets.push(socket);
        return socket;
      },
      backoff: { initialMs: 5, maxMs: 20, jitter: 0 },
      ...options,
    },
    events,
  );
  const socket = async (index: number) => {
    for (let i = 0; i < 200 && sockets.length <= index; i++) await sleep(2);
    assert.ok(sockets[index], `connection ${index + 1} was opened`);
    return sockets[index];
  };
  return { chat, sockets, states, messages, ends, socket };
}

describe('ReconnectingChat', () => {
  test('after a drop it reconnects with the backoff, asks for what it missed, and shows nothing twice', async () => {
    const { chat, states, messages, socket } = session({ history: 10 });
    chat.start();
    const first = await socket(0);
    assert.equal(first.url, 'ws://chat.test/?history=10');
    first.open();
    first.receive({ type: 'system', message: 'Welcome', timestamp: AT });
    first.receive({ type: 'chat', from: 'a', message: 'one', timestamp: AT, id: '1-1', history: true });
    first.receive({ type: 'history', count: 1, last_id: '1-1', timestamp: AT });
    first.receive({ type: 'chat', from: 'a', message: 'two', timestamp: AT, id: '1-2' });
    first.drop();
    assert.deepEqual(states.at(-1), { kind: 'waiting', attempt: 0, delayMs: 5, wasOpen: true });

    const second = await socket(1);
    assert.equal(second.url, 'ws://chat.test/?since=1-2', 'the last id seen');
    second.open();
    assert.deepEqual(states.at(-1), { kind: 'open', reconnected: true });
    second.receive({ type: 'chat', from: 'a', message: 'two', timestamp: AT, id: '1-2' });
    second.receive({ type: 'chat', from: 'a', message: 'three', timestamp: AT, id: '1-3' });
    const chats = messages.flatMap((m) => (m.type === 'chat' ? [m.message] : []));
    assert.deepEqual(chats, ['one', 'two', 'three'], 'the repeat of two is left out');
    chat.stop();
  });

  test('the backoff grows with failed attempts and starts over with a welcome', async () => {
    const { chat, states, socket } = session();
    chat.start();
    (await socket(0)).drop();
    (await socket(1)).drop();
    const third = await socket(2);
    const waits = states.flatMap((s) => (s.kind === 'waiting' ? [s.delayMs] : []));
    assert.deepEqual(waits, [5, 10]);
    third.open();
    third.receive({ type: 'system', message: 'Welcome', timestamp: AT });
    third.drop();
    assert.deepEqual(states.at(-1), { kind: 'waiting', attempt: 0, delayMs: 5, wasOpen: true });
    chat.stop();
  });

  test('a ping every interval; one left unanswered until the next gives the connection up', async () => {
    const { chat, states, socket } = session({ pingIntervalMs: 15 });
    chat.start();
    const first = await socket(0);
    first.open();
    for (let i = 0; i < 100 && first.sent.length === 0; i++) await sleep(2);
    assert.deepEqual(first.sent, [{ type: 'ping' }]);
    first.receive({ type: 'pong', timestamp: AT });
    // Answered: the next interval pings again; unanswered, the one after gives up on the socket.
    for (let i = 0; i < 200 && first.closedWith === undefined; i++) await sleep(2);
    assert.deepEqual(first.sent, [{ type: 'ping' }, { type: 'ping' }]);
    assert.equal(first.closedWith, 1005, 'closed by the client');
    assert.ok(states.some((s) => s.kind === 'waiting' && s.wasOpen));
    await socket(1);
    chat.stop();
  });

  test('with retryFirst off, a first connection that fails ends the session with its cause', async () => {
    const { chat, ends, socket, sockets } = session({ retryFirst: false });
    chat.start();
    const first = await socket(0);
    first.emit('error', { message: 'connect ECONNREFUSED 127.0.0.1:1' });
    first.drop();
    assert.deepEqual(ends, [{ kind: 'unreachable', cause: 'connect ECONNREFUSED 127.0.0.1:1' }]);
    await sleep(30);
    assert.equal(sockets.length, 1, 'no retry');
  });

  test('stop closes with 1000 and nothing is retried', async () => {
    const { chat, socket, sockets } = session();
    chat.start();
    const first = await socket(0);
    first.open();
    assert.equal(chat.send({ type: 'chat', message: 'hi' }), true);
    chat.stop();
    assert.equal(first.closedWith, 1000);
    first.drop(1000);
    await sleep(30);
    assert.equal(sockets.length, 1);
    assert.equal(chat.send({ type: 'chat', message: 'late' }), false);
  });
});
