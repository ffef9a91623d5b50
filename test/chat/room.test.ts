/**
 * The chat room through real `ws` clients: welcome, join and leave notices with online counts, chat
 * broadcast, ping/pong, ignored input, and delivery that survives one broken connection.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import type { BusRoom, SharedMessage } from '../../src/chat/bus.js';
import { ChatRoom, type Member } from '../../src/chat/room.js';
import {
  barrier,
  ChatClient,
  chatInThread,
  crowd,
  handshakeRequest,
  Scope,
  tcpOf,
  TIMESTAMP,
  UUID_LIKE,
  within,
} from '../support/index.js';

async function scoped(t: TestContext, env: Record<string, string> = {}): Promise<Scope> {
  const scope = await Scope.start(env);
  t.after(() => scope.dispose());
  return scope;
}

/** A client connected by the test itself (to see its welcome message), torn down with the scope. */
function track(scope: Scope, client: ChatClient): ChatClient {
  scope.clients.push(client);
  client.ws.on('error', () => {});
  return client;
}

/** The welcome text includes the online count (its wording is not part of the contract). */
function assertMentionsCount(text: unknown, count: number): void {
  assert.equal(typeof text, 'string');
  assert.match(text as string, new RegExp(`(^|\\D)${count}(\\D|$)`), `the welcome should mention ${count}`);
}

function assertTimestamp(value: unknown): void {
  assert.equal(typeof value, 'string');
  assert.match(value as string, TIMESTAMP);
  // UTC without offset: read as UTC it is close to now.
  const skew = Math.abs(Date.parse(`${value as string}Z`) - Date.now());
  assert.ok(skew < 60_000, `timestamp ${value as string} is ${skew} ms away from now (not UTC?)`);
}

describe('welcome and join notices', () => {
  test('the newcomer alone gets a system message with the online count', async (t) => {
    const scope = await scoped(t);
    const a = track(scope, new ChatClient(scope.wsUrl));
    assertMentionsCount((await a.next((m) => m.type === 'system')).message, 1);
    const b = track(scope, new ChatClient(scope.wsUrl));
    const systemB = await b.next((m) => m.type === 'system');
    assert.deepEqual(Object.keys(systemB).sort(), ['message', 'timestamp', 'type']);
    assertMentionsCount(systemB.message, 2);
    assertTimestamp(systemB.timestamp);

    const joinA = await a.next((m) => m.type === 'user_join');
    assert.equal(joinA.online_count, 2);

    const c = await scope.client();
    await Promise.all([a, b].map((x) => x.next((m) => m.type === 'user_join' && m.online_count === 3)));
    await barrier(c, [a, b, c]);
    // Nobody but the newcomer got a system message, and the newcomer got no user_join.
    for (const client of [a, b, c]) assert.deepEqual(client.messages, []);
  });

  test('welcome counts 1, 2, 3 as clients arrive', async (t) => {
    const scope = await scoped(t);
    for (const expected of [1, 2, 3]) {
      const client = track(scope, new ChatClient(scope.wsUrl));
      const welcome = await client.next((m) => m.type === 'system');
      assertMentionsCount(welcome.message, expected);
    }
  });

  test('user_join with online_count goes to every other connection, not the newcomer', async (t) => {
    const scope = await scoped(t);
    const others = await crowd(scope, 3);
    const newcomer = await scope.client();
    const joins = await Promise.all(others.map((o) => o.next((m) => m.type === 'user_join')));
    for (const join of joins) {
      assert.equal(join.online_count, 4);
      assert.equal(typeof join.message, 'string');
      assertTimestamp(join.timestamp);
      assert.deepEqual(Object.keys(join).sort(), ['message', 'online_count', 'timestamp', 'type']);
    }
    await barrier(newcomer, [...others, newcomer]);
    for (const client of [...others, newcomer])
      assert.deepEqual(client.messages, [], 'one join notice each, none to the newcomer');
    assert.equal(await scope.roomSize(), 4);
  });
});

describe('coalesced join and leave notices in a crowd', () => {
  // 150 members: the notice window is 3 ms (room.ts), so many joins share one delivery.
  const CROWD = 150;

  test('every member hears of every later join exactly once, in order, and nothing overtakes a pending notice', async (t) => {
    const scope = await scoped(t);
    // All at once, so joins land in the same windows.
    const clients = Array.from({ length: CROWD }, () => track(scope, new ChatClient(scope.wsUrl)));
    // Arrival order, kept apart from `messages` (which next() takes messages out of).
    const arrivals = clients.map((client) => {
      const seen: string[] = [];
      client.ws.on('message', (data) => {
        const message = JSON.parse(data.toString());
        seen.push(message.type === 'user_join' ? `join ${message.online_count}` : message.type);
      });
      return seen;
    });
    const welcomes = await Promise.all(clients.map((c) => c.next((m) => m.type === 'system', 15_000)));
    const position = welcomes.map((w) => Number(/(\d+) users? online/.exec(w.message as string)![1]));
    assert.deepEqual(
      [...position].sort((a, b) => a - b),
      Array.from({ length: CROWD }, (_, i) => i + 1),
      'welcome counts 1..N',
    );

    // The last newcomer joins, and a chat follows at once: the notice of the join, still pending in
    // the window, must reach everyone before the chat.
    const last = track(scope, new ChatClient(scope.wsUrl));
    await last.next((m) => m.type === 'system');
    last.send({ type: 'chat', message: 'after the crowd' });
    await Promise.all(clients.map((c) => c.next((m) => m.type === 'chat' && m.message === 'after the crowd', 15_000)));

    clients.forEach((client, i) => {
      const joins = client.messages.filter((m) => m.type === 'user_join').map((m) => m.online_count as number);
      const expected = Array.from({ length: CROWD + 1 - position[i]! }, (_, k) => position[i]! + 1 + k);
      assert.deepEqual(joins, expected, `member ${position[i]} hears of each later join once, in order`);
      assert.equal(client.messages.length, expected.length, 'no other message');
      // Everything this member received, in order: the welcome, the joins, then the chat.
      assert.deepEqual(arrivals[i], ['system', ...expected.map((count) => `join ${count}`), 'chat']);
    });
    assert.equal(await scope.roomSize(), CROWD + 1);
  });

  test('leaves in a crowd: each remaining member hears every leave once, with counts going down', async (t) => {
    const scope = await scoped(t);
    const clients = await crowd(scope, CROWD);
    const leaving = clients.slice(0, 60);
    const staying = clients.slice(60);
    for (const c of staying) c.messages.length = 0;
    await Promise.all(leaving.map((c) => c.close()));
    const remaining = staying.length;
    await Promise.all(
      staying.map((c) => c.next((m) => m.type === 'user_leave' && m.online_count === remaining, 15_000)),
    );
    for (const c of staying) {
      const counts = c.messages.filter((m) => m.type === 'user_leave').map((m) => m.online_count as number);
      // The one waited for was taken out of `messages` by next().
      assert.deepEqual(
        [...counts, remaining],
        Array.from({ length: 60 }, (_, k) => CROWD - 1 - k),
      );
    }
  });
});

describe('leave notices', () => {
  test('a clean close sends user_leave with the new count to the remaining connections', async (t) => {
    const scope = await scoped(t);
    const [a, b, c] = (await crowd(scope, 3)) as [ChatClient, ChatClient, ChatClient];
    assert.equal(await within(c.close(), 3000, 'the close handshake'), 1005);
    const leaves = await Promise.all([a, b].map((x) => x.next((m) => m.type === 'user_leave')));
    for (const leave of leaves) {
      assert.equal(leave.online_count, 2);
      assert.equal(typeof leave.message, 'string');
      assertTimestamp(leave.timestamp);
      assert.deepEqual(Object.keys(leave).sort(), ['message', 'online_count', 'timestamp', 'type']);
    }
    await within(b.close(), 3000, 'the close handshake');
    assert.equal((await a.next((m) => m.type === 'user_leave')).online_count, 1);
    await barrier(a, [a]);
    assert.deepEqual(a.messages, []);
    assert.equal(await scope.roomSize(), 1);
  });

  test('an abrupt TCP destroy counts the connection out', async (t) => {
    const scope = await scoped(t);
    const [a, b, c] = (await crowd(scope, 3)) as [ChatClient, ChatClient, ChatClient];
    tcpOf(c.ws).destroy();
    for (const x of [a, b]) assert.equal((await x.next((m) => m.type === 'user_leave')).online_count, 2);
    b.ws.terminate();
    assert.equal((await a.next((m) => m.type === 'user_leave')).online_count, 1);
    await barrier(a, [a]);
    assert.deepEqual(a.messages, [], 'exactly one user_leave per departure');
    assert.equal(await scope.roomSize(), 1);
  });

  test('online_count matches the open connections after 50 connects and disconnects', async (t) => {
    const scope = await scoped(t);
    const [observer] = (await crowd(scope, 1)) as [ChatClient];
    let departures = 0;
    for (let wave = 0; wave < 5; wave++) {
      const batch = await Promise.all(Array.from({ length: 10 }, () => scope.client()));
      // Half leave politely, a quarter are terminated, the rest have their TCP socket destroyed.
      batch.forEach((client, i) => {
        if (i % 2 === 0) client.ws.close();
        else if (i % 4 === 1) client.ws.terminate();
        else tcpOf(client.ws).destroy();
      });
      departures += batch.length;
    }
    // The observer sees all 50 joins and all 50 leaves (in whatever interleaving).
    const seen = { joins: 0, leaves: 0 };
    while (seen.joins < 50 || seen.leaves < departures) {
      const m = await observer.next((x) => x.type === 'user_join' || x.type === 'user_leave');
      if (m.type === 'user_join') seen.joins++;
      else seen.leaves++;
      assert.ok(m.online_count >= 1 && m.online_count <= 51, `online_count ${m.online_count} out of range`);
    }
    assert.equal(await scope.roomSize(), 1);
    const last = await scope.client();
    assert.equal((await observer.next((m) => m.type === 'user_join')).online_count, 2);
    await barrier(last, [observer, last]);
    assert.deepEqual(observer.messages, []);
    assert.equal(await scope.roomSize(), 2);
  });
});

describe('connections that vanish during the handshake', () => {
  test('clients that hang up right after sending the upgrade do not leak into the count', async (t) => {
    const scope = await scoped(t);
    const [observer] = (await crowd(scope, 1)) as [ChatClient];
    // Each sends its handshake and its FIN together, then waits until the server has closed its side.
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        const socket = connect(scope.port, '127.0.0.1');
        socket.on('error', () => {});
        await within(once(socket, 'connect'), 3000, 'connect');
        socket.resume();
        socket.end(handshakeRequest(scope.port).text);
        await within(once(socket, 'close'), 3000, 'the server to close the socket');
      }),
    );
    // Every handshake has been handled; the room's own bookkeeping may lag the FIN by a tick.
    const deadline = Date.now() + 2000;
    while ((await scope.roomSize()) !== 1) {
      assert.ok(Date.now() < deadline, `room still holds ${await scope.roomSize()}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await barrier(observer, [observer]);
    const joins = observer.messages.filter((m) => m.type === 'user_join').length;
    const leaves = observer.messages.filter((m) => m.type === 'user_leave').length;
    assert.equal(joins, leaves, 'each one accepted also left');
    observer.messages.splice(0);
    const last = await scope.client();
    assert.equal((await observer.next((m) => m.type === 'user_join')).online_count, 2);
    await barrier(last, [observer, last]);
    assert.deepEqual(observer.messages, []);
  });
});

describe('chat messages', () => {
  const bogus = '1999-01-01T00:00:00.000000';

  test('a chat goes to everyone including the sender, from the sender id, with a server timestamp', async (t) => {
    const scope = await scoped(t);
    const [a, b, c] = (await crowd(scope, 3)) as [ChatClient, ChatClient, ChatClient];
    a.send({ type: 'chat', message: 'hello', timestamp: bogus });
    const got = await Promise.all([a, b, c].map((x) => x.next((m) => m.type === 'chat')));
    const fromA = got[0].from;
    assert.match(fromA, UUID_LIKE);
    for (const m of got) {
      assert.deepEqual(Object.keys(m).sort(), ['from', 'message', 'timestamp', 'type']);
      assert.equal(m.message, 'hello');
      assert.equal(m.from, fromA);
      assert.notEqual(m.timestamp, bogus, 'the client timestamp is ignored');
      assertTimestamp(m.timestamp);
    }
    // One identifier per connection: the same for all of a's messages, another for b's and c's.
    a.send({ type: 'chat', message: 'again' });
    b.send({ type: 'chat', message: 'from b' });
    c.send({ type: 'chat', message: 'from c' });
    const again = await b.next((m) => m.message === 'again');
    const fromB = (await a.next((m) => m.message === 'from b')).from;
    const fromC = (await a.next((m) => m.message === 'from c')).from;
    assert.equal(again.from, fromA);
    assert.match(fromB, UUID_LIKE);
    assert.match(fromC, UUID_LIKE);
    assert.equal(new Set([fromA, fromB, fromC]).size, 3);
  });

  test('connection ids are not a counter and not reused after a reconnect', async (t) => {
    const scope = await scoped(t);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const client = await scope.client();
      client.send({ type: 'chat', message: 'who am i' });
      ids.push((await client.next((m) => m.type === 'chat')).from);
      await within(client.close(), 3000, 'the close handshake');
    }
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) {
      assert.match(id, UUID_LIKE);
      assert.doesNotMatch(id, /^\d+$/);
      assert.ok(!id.includes('127.0.0.1'), 'not an address');
    }
  });

  test('message is "" when absent and always a string', async (t) => {
    const scope = await scoped(t);
    const [a, b] = (await crowd(scope, 2)) as [ChatClient, ChatClient];
    a.send({ type: 'chat' });
    assert.equal((await b.next((m) => m.type === 'chat')).message, '');
    a.send({ type: 'chat', message: null });
    assert.equal((await b.next((m) => m.type === 'chat')).message, '');
    a.send({ type: 'chat', message: 42 });
    assert.equal((await b.next((m) => m.type === 'chat')).message, '42');
    a.send({ type: 'chat', message: { nested: [1, true] } });
    assert.equal((await b.next((m) => m.type === 'chat')).message, '{"nested":[1,true]}');
    a.send({ type: 'chat', message: 'héllo 👋 "quotes" \\ <b>' });
    assert.equal((await b.next((m) => m.type === 'chat')).message, 'héllo 👋 "quotes" \\ <b>');
  });

  test('text that is not JSON is broadcast as a chat with the raw text', async (t) => {
    const scope = await scoped(t);
    const [a, b] = (await crowd(scope, 2)) as [ChatClient, ChatClient];
    const texts = ['hello world', '{not json', 'ping', '{"type":"ping"', ' ', 'ünïcödé ✓'];
    for (const text of texts) a.send(text);
    for (const client of [a, b]) {
      for (const text of texts) {
        const m = await client.next((x) => x.type === 'chat');
        assert.equal(m.message, text, 'in order, verbatim');
        assertTimestamp(m.timestamp);
      }
    }
    a.send({ type: 'chat', message: 'id check' });
    const fromA = (await b.next((m) => m.message === 'id check')).from;
    a.send('raw again');
    assert.equal((await b.next((m) => m.message === 'raw again')).from, fromA);
  });

  test('ping gets a pong to the sender only', async (t) => {
    const scope = await scoped(t);
    const [a, b, c] = (await crowd(scope, 3)) as [ChatClient, ChatClient, ChatClient];
    a.send({ type: 'ping', timestamp: bogus });
    const pong = await a.next((m) => m.type === 'pong');
    assert.deepEqual(Object.keys(pong).sort(), ['timestamp', 'type']);
    assertTimestamp(pong.timestamp);
    assert.notEqual(pong.timestamp, bogus);
    a.send({ type: 'ping' });
    await a.next((m) => m.type === 'pong');
    await barrier(a, [a, b, c]);
    for (const client of [a, b, c]) assert.deepEqual(client.messages, []);
  });

  test('other types and JSON that is not an object produce nothing for anyone', async (t) => {
    const scope = await scoped(t);
    const [a, b] = (await crowd(scope, 2)) as [ChatClient, ChatClient];
    const ignored = [
      '{"type":"pong"}',
      '{"type":"system","message":"fake"}',
      '{"type":"user_join","online_count":99}',
      '{"type":"Chat","message":"case matters"}',
      '{"type":"PING"}',
      '{"message":"no type"}',
      '{"type":null}',
      '{"type":["chat"]}',
      '{"__proto__":{"type":"chat"},"message":"proto"}',
      '{}',
      '123',
      '[]',
      '[{"type":"chat","message":"in array"}]',
      'null',
      'true',
      '"chat"',
      ' {"type":"nope"} ',
    ];
    for (const text of ignored) a.send(text);
    await barrier(a, [a, b]);
    assert.deepEqual(a.messages, []);
    assert.deepEqual(b.messages, []);
  });

  test('every server message has a type and a timestamp', async (t) => {
    const scope = await scoped(t);
    const all: Record<string, unknown>[] = [];
    const record = (client: ChatClient) =>
      client.ws.on('message', (data) => all.push(JSON.parse(String(data)) as Record<string, unknown>));
    const a = await scope.client();
    record(a);
    const b = track(scope, new ChatClient(scope.wsUrl));
    record(b);
    await b.next((m) => m.type === 'system');
    a.send({ type: 'chat', message: 'x' });
    a.send('raw');
    a.send({ type: 'ping' });
    await a.next((m) => m.type === 'pong');
    await b.next((m) => m.message === 'raw');
    await within(b.close(), 3000, 'the close handshake');
    await a.next((m) => m.type === 'user_leave');
    const types = new Set(all.map((m) => m.type));
    for (const type of ['system', 'user_join', 'chat', 'pong', 'user_leave']) assert.ok(types.has(type), `saw ${type}`);
    for (const m of all) {
      assert.equal(typeof m.type, 'string');
      assertTimestamp(m.timestamp);
    }
  });
});

describe('upgrade path', () => {
  test('the upgrade is accepted on any path, into the one room', async (t) => {
    const scope = await scoped(t);
    const paths = ['/', '/chat', '/a/b?c=d', '/ws/room/42'];
    const clients: ChatClient[] = [];
    for (const [i, path] of paths.entries()) {
      const client = track(scope, new ChatClient(scope.wsUrl + path));
      assertMentionsCount((await client.next((m) => m.type === 'system')).message, i + 1);
      clients.push(client);
    }
    clients[3]!.send({ type: 'chat', message: 'one room' });
    await Promise.all(clients.map((c) => c.next((m) => m.message === 'one room')));
  });
});

describe('delivery failures', () => {
  test('a client destroyed mid-broadcast does not stop delivery to the others', async (t) => {
    const scope = await scoped(t);
    const [a, b, c, d] = (await crowd(scope, 4)) as [ChatClient, ChatClient, ChatClient, ChatClient];
    tcpOf(b.ws).destroy();
    for (let i = 0; i < 20; i++) a.send({ type: 'chat', message: `m${i}` });
    for (const client of [a, c, d]) {
      for (let i = 0; i < 20; i++) assert.equal((await client.next((m) => m.type === 'chat')).message, `m${i}`);
      assert.equal((await client.next((m) => m.type === 'user_leave')).online_count, 3);
    }
    await barrier(c, [a, c, d]);
    for (const client of [a, c, d]) assert.deepEqual(client.messages, []);
  });

  test('a member whose delivery throws does not stop delivery to the others (room in a real server)', async (t) => {
    const chat = await chatInThread(t);
    const connect = async () => {
      const client = new ChatClient(chat.wsUrl);
      client.ws.on('error', () => {});
      t.after(() => client.ws.terminate());
      await client.next((m) => m.type === 'system');
      return client;
    };
    const a = await connect();
    // A member that throws on every delivery, placed between real members in the room's order.
    let attempts = 0;
    const broken: Member = {
      id: 'broken-member',
      deliver() {
        attempts++;
        throw new Error('socket exploded');
      },
      deliverMany() {
        attempts++;
        throw new Error('socket exploded');
      },
      replay() {
        throw new Error('socket exploded');
      },
      drop() {},
    };
    chat.room.join(broken);
    assert.equal((await a.next((m) => m.type === 'user_join')).online_count, 2);
    const b = await connect();
    const c = await connect();
    await a.next((m) => m.type === 'user_join' && m.online_count === 4);
    b.send({ type: 'chat', message: 'still delivered' });
    await Promise.all([a, b, c].map((x) => x.next((m) => m.message === 'still delivered')));
    // Welcome, the two joins (perhaps coalesced into one delivery), the chat message.
    assert.ok(attempts >= 3, `the broken member was tried (${attempts} attempts)`);
    chat.room.leave(broken);
    for (const x of [a, b, c]) assert.equal((await x.next((m) => m.type === 'user_leave')).online_count, 3);
    // A broken member that is gone stays gone; a second leave does nothing.
    chat.room.leave(broken);
    await barrier(a, [a, b, c]);
    for (const x of [a, b, c]) {
      assert.ok(!x.messages.some((m) => m.type === 'user_leave'), 'no second user_leave');
    }
  });
});

const TIMESTAMP_AT = '2026-11-27T06:00:00.000000';

describe('joins of other instances', () => {
  /** A member that keeps the types of the frames it is handed. */
  function member(id: string): Member & { types: string[] } {
    const types: string[] = [];
    const keep = (payload: Buffer) => types.push((JSON.parse(payload.toString()) as { type: string }).type);
    return {
      id,
      types,
      deliver: keep,
      deliverMany: (payloads, from) => payloads.slice(from).forEach(keep),
      replay() {},
      drop() {},
    };
  }

  test('a join the bus relayed before a member’s own is not told to that member; the others get it', async () => {
    let bus: BusRoom | undefined;
    const room = new ChatRoom({}, { attach: (attached) => (bus = attached), publish() {}, remoteCount: () => 0 });
    const [a, b, c] = [member('a'), member('b'), member('c')];
    room.join(a);
    room.join(b);
    const join = { type: 'user_join', message: 'A user joined the chat', online_count: 3, timestamp: TIMESTAMP_AT };
    // b and c joined after the remote join in the bus's order: c, joining after it in the same window.
    bus!.deliver(join as SharedMessage, undefined, false, ['b', 'c', 'gone']);
    room.join(c);
    bus!.deliver(join as SharedMessage, undefined, false, []);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(a.types, ['system', 'user_join', 'user_join', 'user_join', 'user_join']);
    assert.deepEqual(b.types, ['system', 'user_join', 'user_join']);
    assert.deepEqual(c.types, ['system', 'user_join']);
  });
});
