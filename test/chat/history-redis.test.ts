/**
 * History, recovery and the member list across instances on the real Redis (REDIS_URL): the history
 * is one capped stream, so every instance serves the same messages with the same ids, and a client
 * dropped on one instance recovers on another; the member list is the sum of every instance's members.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import {
  ChatClient,
  Listening,
  LogWatch,
  redisTarget,
  request,
  roomUrl,
  startRoster,
  TcpProxy,
  texts,
  via,
  within,
  WITHOUT_REDIS,
  type Message,
  type Running,
} from '../support/index.js';
import { Redis } from 'ioredis';
import { compareIds } from '../../src/protocol/chat-codec.js';

async function start(t: TestContext, url: string, env: Record<string, string> = {}): Promise<Running> {
  const running = await startRoster({ REDIS_URL: url, SHUTDOWN_TIMEOUT_MS: '2000', ...env });
  t.after(() => running.stop());
  return running;
}

async function member(t: TestContext, running: Running, path = ''): Promise<ChatClient> {
  const client = new ChatClient(running.wsUrl + path);
  client.ws.on('error', () => {});
  t.after(() => client.ws.terminate());
  await client.next((m) => m.type === 'system');
  return client;
}

describe('chat history and the member list across instances (Redis)', { skip: WITHOUT_REDIS }, () => {
  test('the stream is bounded by CHAT_HISTORY_BYTES as well as by count; its running total matches', async (t) => {
    const url = roomUrl();
    const a = await start(t, url, { CHAT_HISTORY_BYTES: '1MiB' });
    const sender = await member(t, a);
    for (let i = 0; i < 20; i++) {
      sender.send(`${i} ${'x'.repeat(100 * 1024)}`);
      await sender.next((m) => m.type === 'chat' && m.message.startsWith(`${i} `));
    }
    const prefix = new URL(url).searchParams.get('keyPrefix')!;
    const redis = new Redis(process.env.REDIS_URL!);
    t.after(() => redis.quit());
    const entries = (await redis.xrange(`${prefix}chat:history`, '-', '+')) as [string, string[]][];
    const sizes = entries.map(([, fields]) => (fields[0] === 'm' ? Buffer.byteLength(fields[1]!) : 0));
    const total = sizes.reduce((sum, size) => sum + size, 0);
    assert.ok(total <= 1024 * 1024, `${total} bytes in the stream`);
    assert.equal(Number(await redis.get(`${prefix}chat:history-bytes`)), total);
    const reader = new Listening(`${a.wsUrl}/?history=500`);
    t.after(() => reader.terminate());
    const end = await reader.until((m) => m.type === 'history');
    assert.ok(end.count >= 9 && end.count <= 10, `${end.count} replayed`);
    assert.equal(reader.chats().at(-1).message.split(' ')[0], '19');
  });

  for (const where of ['the same instance', 'the other instance'] as const) {
    test(
      `a client dropped during a burst of 1 000 on one instance, back with since on ${where}: all 1 000, in order, none twice`,
      { timeout: 60_000 },
      async (t) => {
        const url = roomUrl();
        const a = await start(t, url, { CHAT_HISTORY: '1000' });
        const b = await start(t, url, { CHAT_HISTORY: '1000' });
        const sender = await member(t, b);
        const first = new Listening(`${a.wsUrl}/?history=0`, { dropAfter: 300 });
        t.after(() => first.terminate());
        await first.until((m) => m.type === 'history');
        const sent = texts('burst', 1000);
        for (const text of sent) sender.send({ type: 'chat', message: text });
        await within(first.closed, 10_000, 'the listener to drop after 300 messages');
        const seen = first.chats();
        assert.equal(seen.length, 300);

        const target = where === 'the same instance' ? a : b;
        const back = new Listening(`${target.wsUrl}/?since=${encodeURIComponent(seen.at(-1).id)}`);
        t.after(() => back.terminate());
        await back.until((m) => m.type === 'chat' && m.message === 'burst-999', 20_000);
        const end = back.messages.find((m) => m.type === 'history');
        assert.equal(end.recovered, true);
        const all = [...seen, ...back.chats()];
        assert.deepEqual(
          all.map((m) => m.message),
          sent,
          'all 1 000, in order, none twice',
        );
        for (let i = 1; i < all.length; i++) assert.ok(compareIds(all[i - 1].id, all[i].id) < 0);
      },
    );
  }

  test('every instance serves the same history, with the same ids; a gap older than it is said', async (t) => {
    const url = roomUrl();
    const a = await start(t, url, { CHAT_HISTORY: '4' });
    const b = await start(t, url, { CHAT_HISTORY: '4' });
    const onA = await member(t, a);
    const watcher = new Listening(`${b.wsUrl}/?history=0`);
    t.after(() => watcher.terminate());
    await watcher.until((m) => m.type === 'history');
    for (const text of texts('m', 6)) onA.send({ type: 'chat', message: text });
    await watcher.until((m) => m.message === 'm-5');
    const ids = watcher.chats().map((m: Message) => m.id as string);
    const histories = [];
    for (const running of [a, b]) {
      const late = new Listening(`${running.wsUrl}/?history=10`);
      t.after(() => late.terminate());
      const end = await late.until((m) => m.type === 'history');
      assert.equal(end.last_id, ids[5]);
      histories.push(late.chats().map((m: Message) => [m.id, m.message, m.history]));
    }
    assert.deepEqual(histories[0], histories[1]);
    assert.deepEqual(
      histories[0],
      texts('m', 6)
        .slice(2)
        .map((text, i) => [ids[i + 2], text, true]),
    );
    // m-1 is the newest gone: recovered; m-0: a gap.
    for (const [since, recovered, count] of [
      [ids[1], true, 4],
      [ids[0], false, 0],
    ] as const) {
      const client = new Listening(`${a.wsUrl}/?since=${since}`);
      t.after(() => client.terminate());
      const end = await client.until((m) => m.type === 'history');
      assert.deepEqual([end.recovered, end.count, client.chats().length], [recovered, count, count]);
    }
  });

  test('the member list agrees with the sum of the instances’ members, under churn', { timeout: 60_000 }, async (t) => {
    const url = roomUrl();
    const instances = [await start(t, url), await start(t, url), await start(t, url)];
    const stayers: ChatClient[] = [];
    for (let i = 0; i < 6; i++) stayers.push(await member(t, instances[i % 3]!));
    const sum = async () =>
      (await Promise.all(instances.map((running) => running.server.chat.localMembers())))
        .flat()
        .map((m) => m.id)
        .sort();
    const listed = async (on: Running) => {
      const ids: string[] = [];
      for (let page = 1; ; page++) {
        const reply = await request(`${on.api}/chat/members?limit=4&page=${page}`);
        assert.equal(reply.status, 200);
        ids.push(...reply.body.data.members.map((m: Message) => m.id as string));
        if (page >= reply.body.data.pagination.pages) return { ids, total: reply.body.data.pagination.total as number };
      }
    };
    // Churn: members come and go on every instance while the list is read.
    let churning = true;
    const churn = (async () => {
      for (let round = 0; round < 30; round++) {
        const on = instances[round % 3]!;
        const client = await member(t, on);
        if (round % 2 === 0) await client.close();
        else client.ws.terminate();
      }
      churning = false;
    })();
    let reads = 0;
    while (churning) {
      const listing = await request(`${instances[reads % 3]!.api}/chat/members?limit=100`);
      const ids = listing.body.data.members.map((m: Message) => m.id);
      assert.equal(new Set(ids).size, ids.length, 'nobody listed twice');
      assert.ok(listing.body.data.pagination.total >= 6 && listing.body.data.pagination.total <= 6 + 30);
      reads++;
    }
    await churn;
    // Settled: the list on every instance is exactly the members connected, across all three.
    let expected = await sum();
    while (expected.length !== 6) {
      await new Promise((resolve) => setImmediate(resolve)); // terminated sockets are counted out on their close event
      expected = await sum();
    }
    for (const on of instances) {
      let listing = await listed(on);
      // A leave reaches Redis in the script that publishes it: the list may be a moment behind the rooms.
      for (let tries = 0; listing.total !== 6 && tries < 100; tries++) listing = await listed(on);
      assert.equal(listing.total, 6);
      assert.deepEqual([...listing.ids].sort(), expected);
    }
  });

  test(
    'with Redis away, chat reaches the sender’s instance only, without ids and outside the history (the stated bound)',
    { timeout: 60_000 },
    async (t) => {
      const proxy = await TcpProxy.start(redisTarget());
      t.after(() => proxy.close());
      const url = roomUrl();
      const log = new LogWatch();
      const a = await startRoster(
        { REDIS_URL: via(url, proxy.port), SHUTDOWN_TIMEOUT_MS: '2000', LOG_LEVEL: 'info' },
        { logTo: log.stream },
      );
      t.after(() => a.stop());
      const sender = await member(t, a);
      const asking = new Listening(`${a.wsUrl}/?history=0`);
      t.after(() => asking.terminate());
      await asking.until((m) => m.type === 'history');
      sender.send({ type: 'chat', message: 'before' });
      const before = await asking.until((m) => m.message === 'before');
      assert.equal(typeof before.id, 'string');

      const down = log.until(/chat bus down/);
      proxy.cut();
      await down;
      sender.send({ type: 'chat', message: 'during' });
      const during = await asking.until((m) => m.message === 'during');
      assert.equal(during.id, undefined, 'not in the history: no id');

      const back = log.until(/chat bus is back/, 10_000);
      proxy.restore();
      await back;
      sender.send({ type: 'chat', message: 'after' });
      const after = await asking.until((m) => m.message === 'after');
      assert.ok(compareIds(after.id, before.id) > 0);
      // Recovery from `before` gives what the history holds: the outage's message is not in it.
      const recovering = new Listening(`${a.wsUrl}/?since=${before.id}`);
      t.after(() => recovering.terminate());
      const end = await recovering.until((m) => m.type === 'history');
      assert.deepEqual([end.recovered, recovering.chats().map((m: Message) => m.message)], [true, ['after']]);
    },
  );
});
