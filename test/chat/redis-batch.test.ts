/**
 * The joins and leaves of one event-loop turn cross Redis as one publication (one script call), which
 * each other instance reads as one message and tells its members of event by event, in order; a chat
 * sent in the same turn goes after them. Two rooms in this process on the real Redis (REDIS_URL), a
 * subscriber of the test's own watching the channel.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { RedisBus } from '../../src/chat/redis/redis-bus.js';
import { ChatRoom, type Member } from '../../src/chat/room.js';
import { eventually, roomUrl, WITHOUT_REDIS } from '../support/index.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Message = any;

/** A member that keeps what the room hands it, parsed, in order. */
function member(id: string): Member & { got: Message[] } {
  const got: Message[] = [];
  return {
    id,
    got,
    deliver: (payload) => void got.push(JSON.parse(payload.toString())),
    deliverMany: (payloads, from) => {
      for (const payload of payloads.slice(from)) got.push(JSON.parse(payload.toString()));
    },
    replay: (_payloads, done) => done(),
    drop: () => assert.fail(`${id} dropped`),
  };
}

describe('a turn of joins and leaves on the Redis bus', { skip: WITHOUT_REDIS }, () => {
  test('one publication for a turn’s events; the other instance tells each, in order, before the chat', async (t) => {
    const url = roomUrl();
    const log = pino({ level: 'silent' });
    const [a, b] = [new RedisBus(url, log), new RedisBus(url, log)];
    const [roomA, roomB] = [new ChatRoom({}, a), new ChatRoom({}, b)];
    const watcher = new Redis(url);
    t.after(async () => {
      await Promise.all([a.close(), b.close()]);
      watcher.disconnect();
    });
    const channel = `${new URL(url).searchParams.get('keyPrefix')}chat`;
    const seen: unknown[] = [];
    watcher.on('message', (_channel: string, text: string) => seen.push(JSON.parse(text)));
    await watcher.subscribe(channel);
    await Promise.all([a.start(), b.start()]);

    const there = member('there');
    roomB.join(there);
    await eventually(() => roomA.members().then((all) => all.length === 1), 'B’s member listed');
    seen.length = 0;

    // Five joins and a chat in one turn on A.
    const here = ['h1', 'h2', 'h3', 'h4', 'h5'].map(member);
    for (const m of here) roomA.join(m);
    roomA.receive(here[0]!, 'after the joins');
    await eventually(() => there.got.some((m) => m.type === 'chat'), 'the chat on B', 5_000);
    const events = seen.filter((s) => (Array.isArray(s) ? true : (s as { m?: unknown }).m !== undefined));
    assert.equal(events.length, 2, `one publication for the joins, one for the chat: ${JSON.stringify(events)}`);
    assert.ok(Array.isArray(events[0]) && events[0].length === 5, 'the five joins, as one array');
    assert.deepEqual(
      there.got.slice(1).map((m) => [m.type, m.online_count]),
      [
        ['user_join', 2],
        ['user_join', 3],
        ['user_join', 4],
        ['user_join', 5],
        ['user_join', 6],
        ['chat', undefined],
      ],
      'told each join, in order, then the chat',
    );

    // Three leaves in one turn: one publication, three notices counting down.
    seen.length = 0;
    for (const m of here.slice(0, 3)) roomA.leave(m);
    await eventually(() => there.got.filter((m) => m.type === 'user_leave').length === 3, 'the leaves on B');
    const leaves = seen.filter((s) => Array.isArray(s));
    assert.equal(leaves.length, 1);
    assert.equal((leaves[0] as unknown[]).length, 3);
    assert.deepEqual(
      there.got.filter((m) => m.type === 'user_leave').map((m) => m.online_count),
      [5, 4, 3],
    );
    assert.equal((await roomB.members()).length, 3, 'the member list followed every join and leave');
  });
});
