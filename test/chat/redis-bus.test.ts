/**
 * Several Roster instances in this process sharing one room through the real Redis (REDIS_URL): chat
 * fan-out exactly once, each sender's order, join and leave notices and welcomes with the room-wide
 * count, and a Redis outage (through a proxy the test cuts): local chat goes on, health says degraded,
 * the bus comes back by itself.
 *
 * Counts are checked where the instance that computes them has provably heard the events counted: a
 * client there has received a later one, or Redis (one server, publications in order) delivered them
 * before the event that carries the count.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { Redis } from 'ioredis';
import type { ServerParts } from '../../src/server.js';
import {
  barrier,
  ChatClient,
  LogWatch,
  redisTarget,
  request,
  roomUrl,
  startRoster,
  TcpProxy,
  via,
  within,
  WITHOUT_REDIS,
  type Running,
} from '../support/index.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Message = any;

/** One instance and the clients the test connected to it; all torn down when the test ends. */
class Instance {
  readonly clients: ChatClient[] = [];

  constructor(readonly running: Running) {}

  /** A new member here, with its welcome. */
  async join(): Promise<{ client: ChatClient; welcome: Message }> {
    const client = new ChatClient(this.running.wsUrl);
    client.ws.on('error', () => {});
    this.clients.push(client);
    const welcome = await client.next((m) => m.type === 'system');
    return { client, welcome };
  }

  async member(): Promise<ChatClient> {
    return (await this.join()).client;
  }

  async health(): Promise<Message> {
    const response = await within(request(`${this.running.api}/health`), 5000, 'health');
    assert.equal(response.status, 200);
    return response.body.data;
  }
}

async function start(
  t: TestContext,
  redisUrl: string,
  logTo?: LogWatch,
  chatBus?: ServerParts['chatBus'],
): Promise<Instance> {
  const running = await startRoster(
    { REDIS_URL: redisUrl, SHUTDOWN_TIMEOUT_MS: '2000', ...(logTo ? { LOG_LEVEL: 'info' } : {}) },
    { ...(logTo ? { logTo: logTo.stream } : {}), chatBus },
  );
  const instance = new Instance(running);
  t.after(async () => {
    for (const client of instance.clients) client.ws.terminate();
    await running.stop();
  });
  return instance;
}

async function startMany(t: TestContext, count: number, url = roomUrl()): Promise<Instance[]> {
  const instances: Instance[] = [];
  for (let i = 0; i < count; i++) instances.push(await start(t, url));
  return instances;
}

/** The number in a welcome message (its wording is not part of the contract; the count is). */
function welcomeCount(welcome: Message): number {
  assert.equal(welcome.type, 'system');
  const match = /(\d+) users? online/.exec(welcome.message as string);
  assert.ok(match, `no count in ${JSON.stringify(welcome)}`);
  return Number(match[1]);
}

function chatsOf(client: ChatClient, text: string): Message[] {
  return client.messages.filter((m) => m.type === 'chat' && m.message === text);
}

describe('the Redis chat bus', { skip: WITHOUT_REDIS }, () => {
  test('a chat message on one instance reaches the members of every instance exactly once, unchanged', async (t) => {
    const [a, b, c] = await startMany(t, 3);
    const a1 = await a!.member();
    const a2 = await a!.member();
    const b1 = await b!.member();
    const c1 = await c!.member();
    const everyone = [a1, a2, b1, c1];

    a1.send({ type: 'chat', message: 'hello, everyone' });
    const copies = await Promise.all(
      everyone.map((client) => client.next((m) => m.type === 'chat' && m.message === 'hello, everyone')),
    );
    // The sender's own copy says who sent it; every instance tells the same message, timestamp included.
    for (const copy of copies) assert.deepEqual(copy, copies[0]);
    b1.send('from b');
    const fromB = await a1.next((m) => m.type === 'chat' && m.message === 'from b');
    assert.notEqual(fromB.from, copies[0].from, 'each sender has its own id');

    // Anything duplicated would have arrived before the barrier, which follows on the same path.
    await barrier(a1, everyone);
    for (const client of everyone) assert.deepEqual(chatsOf(client, 'hello, everyone'), [], 'delivered exactly once');
    assert.deepEqual(chatsOf(a2, 'from b'), [fromB]);
    assert.deepEqual(chatsOf(c1, 'from b'), [fromB]);

    const health = await a!.health();
    assert.equal(health.status, 'healthy');
    assert.deepEqual(health.checks, { chat_bus: 'up' });
  });

  test('every member gets each sender’s messages in the order sent, whichever instance it is on', async (t) => {
    const [a, b, c] = await startMany(t, 3);
    const a1 = await a!.member();
    const b1 = await b!.member();
    const c1 = await c!.member();
    const BURST = 200;
    for (let i = 0; i < BURST; i++) {
      a1.send(`a-${i}`);
      b1.send(`b-${i}`);
    }
    a1.send('a-done');
    b1.send('b-done');
    for (const client of [a1, b1, c1]) {
      await within(
        Promise.all([client.next((m) => m.message === 'a-done'), client.next((m) => m.message === 'b-done')]),
        10_000,
        'both bursts',
      );
      const chats = client.messages.filter((m) => m.type === 'chat');
      for (const sender of ['a', 'b']) {
        const texts = chats.map((m) => m.message as string).filter((text) => text.startsWith(`${sender}-`));
        assert.deepEqual(
          texts,
          Array.from({ length: BURST }, (_, i) => `${sender}-${i}`),
          `${sender}'s burst, in order, once each`,
        );
      }
    }
  });

  test('joins and leaves are told on every instance with the room-wide count, and welcomes count the whole room', async (t) => {
    const [a, b, c] = await startMany(t, 3);
    const { client: a1, welcome } = await a!.join();
    assert.equal(welcomeCount(welcome), 1);

    const b1 = await b!.member();
    const joinedB = await a1.next((m) => m.type === 'user_join');
    assert.equal(joinedB.online_count, 2);
    assert.deepEqual(Object.keys(joinedB).sort(), ['message', 'online_count', 'timestamp', 'type']);

    // a1's join may still have been on its way to B when b1 joined there: then b1 hears of it too, as
    // B then saw the room. Once a later message of A's has reached b1, B has heard all of A's.
    await barrier(a1, [a1, b1]);
    const inFlight = b1.messages.splice(0);
    assert.ok(
      inFlight.length <= 1 && inFlight.every((m) => m.type === 'user_join' && m.online_count === 2),
      JSON.stringify(inFlight),
    );

    // A has heard of b1 (a1 was told): a newcomer on A is welcomed to a room of three.
    const { client: a2, welcome: welcomeA2 } = await a!.join();
    assert.equal(welcomeCount(welcomeA2), 3);
    for (const client of [a1, b1]) assert.equal((await client.next((m) => m.type === 'user_join')).online_count, 3);

    const c1 = await c!.member();
    // (c1 may likewise hear of a2's join; its messages are not checked below.)
    for (const client of [a1, a2, b1]) assert.equal((await client.next((m) => m.type === 'user_join')).online_count, 4);

    await b1.close();
    for (const client of [a1, a2, c1]) {
      const left = await client.next((m) => m.type === 'user_leave');
      assert.equal(left.online_count, 3);
      assert.deepEqual(Object.keys(left).sort(), ['message', 'online_count', 'timestamp', 'type']);
    }
    const { welcome: welcomeC2 } = await c!.join();
    assert.equal(welcomeCount(welcomeC2), 4);
    // Nothing but these notices (and no notice of one's own join) reached anyone.
    await barrier(c1, [a1, a2, c1]);
    for (const client of [a1, a2])
      assert.deepEqual(
        client.messages.map((m) => m.type),
        ['user_join'],
        'only the join of c2',
      );
  });

  test('publications on the channel that are not Roster’s are ignored', async (t) => {
    const url = roomUrl();
    const [a, b] = await startMany(t, 2, url);
    const a1 = await a!.member();
    const b1 = await b!.member();
    const redis = new Redis(url, { lazyConnect: true });
    t.after(() => redis.disconnect());
    await redis.connect();
    const channel = `${new URL(url).searchParams.get('keyPrefix')}chat`;
    for (const junk of ['not json', '[]', '{"i":"x","n":-1}', '{"i":"x","n":1,"m":{"type":"pong","timestamp":"t"}}']) {
      assert.equal(await redis.publish(channel, junk), 2, 'both instances listen on the channel');
    }
    await barrier(a1, [a1, b1]);
    // (b1 may have heard of a1's join, as in the test above.)
    assert.deepEqual(
      b1.messages.filter((m) => m.type !== 'user_join'),
      [],
    );
    assert.deepEqual(
      a1.messages.map((m) => m.type),
      ['user_join'],
      'b1’s join only',
    );
  });

  test('with Redis gone, chat on an instance goes on locally, health says degraded, and the bus comes back by itself', async (t) => {
    const proxy = await TcpProxy.start(redisTarget());
    t.after(() => proxy.close());
    const url = roomUrl();
    const log = new LogWatch();
    const a = await start(t, via(url, proxy.port), log);
    const b = await start(t, url);
    const a1 = await a.member();
    const a2 = await a.member();
    const b1 = await b.member();
    await a1.next((m) => m.type === 'user_join' && m.online_count === 3);

    const down = log.until(/chat bus down/);
    proxy.cut();
    await down;
    const health = await a.health();
    assert.equal(health.status, 'degraded');
    assert.equal(health.checks.chat_bus, 'down');

    a1.send('while Redis is away');
    for (const client of [a1, a2]) await client.next((m) => m.message === 'while Redis is away');

    // Reported once per outage, not once per reconnection attempt.
    await proxy.refusals(2);
    const back = log.until(/chat bus is back/, 10_000);
    proxy.restore();
    const backLine = await back;
    assert.equal(log.lines.filter((line) => /chat bus down/.test(line.msg as string)).length, 1);
    assert.ok((backLine.lost as number) >= 1, 'the outage’s events are counted as not carried');
    assert.deepEqual((await a.health()).checks, { chat_bus: 'up' });

    a1.send('Redis is back');
    await within(
      b1.next((m) => m.message === 'Redis is back'),
      5000,
      'A → B after the outage',
    );
    assert.deepEqual(chatsOf(b1, 'while Redis is away'), [], 'nothing from the outage is delivered late');
    b1.send('B hears A again');
    await within(
      a1.next((m) => m.message === 'B hears A again'),
      5000,
      'B → A after the outage',
    );
  });

  test('when Redis stops answering, events past the bound are dropped for the other instances, not held; local chat goes on', async (t) => {
    const proxy = await TcpProxy.start(redisTarget());
    t.after(() => proxy.close());
    const url = roomUrl();
    const log = new LogWatch();
    const MAX_PENDING = 20;
    const a = await start(t, via(url, proxy.port), log, { maxPending: MAX_PENDING });
    const b = await start(t, url);
    const a1 = await a.member();
    const b1 = await b.member();
    await a1.next((m) => m.type === 'user_join');

    proxy.stall();
    const behind = log.until(/chat bus falling behind/);
    const SENT = MAX_PENDING + 30;
    for (let i = 0; i < SENT; i++) a1.send(`stalled-${i}`);
    await within(behind, 5000, 'the falling-behind warning');
    // Every one of them reached the sender's own instance at once.
    await a1.next((m) => m.message === `stalled-${SENT - 1}`);
    assert.equal(a1.messages.filter((m) => m.type === 'chat').length, SENT - 1);

    // Redis answers the held-back publications in one batch; the next heartbeat then goes out and says so.
    const caughtUp = log.until(/chat bus caught up/);
    proxy.resume();
    const line = await within(caughtUp, 5000, 'the caught-up line');
    a1.send('after');
    await within(
      b1.next((m) => m.message === 'after'),
      5000,
      'a message after the stall',
    );
    // Before the bound: carried (late). Past it: dropped and counted, never carried. Nothing twice.
    const carried = b1.messages.filter((m) => m.type === 'chat').map((m) => m.message as string);
    assert.deepEqual(
      carried,
      carried.map((_, i) => `stalled-${i}`),
      'the first ones, in order',
    );
    assert.ok(carried.length <= MAX_PENDING && carried.length >= MAX_PENDING - 5, `${carried.length} carried`);
    assert.equal(line.lost, SENT - carried.length, 'every event either carried or counted as lost');
    assert.equal(log.lines.filter((l) => /falling behind/.test(l.msg as string)).length, 1, 'warned once');
  });

  test('an instance started while Redis is unreachable opens its ports anyway and joins the room once Redis is there', async (t) => {
    const proxy = await TcpProxy.start(redisTarget());
    t.after(() => proxy.close());
    proxy.cut();
    const url = roomUrl();
    const log = new LogWatch();
    const a = await start(t, via(url, proxy.port), log);
    assert.equal((await a.health()).checks.chat_bus, 'down');
    const a1 = await a.member();
    a1.send('alone');
    await a1.next((m) => m.message === 'alone');

    const b = await start(t, url);
    const b1 = await b.member();
    const back = log.until(/chat bus is back/, 10_000, 0);
    proxy.restore();
    await back;
    b1.send('now everywhere');
    await within(
      a1.next((m) => m.message === 'now everywhere'),
      5000,
      'B → A once A is connected',
    );
    // B's message carried B's count: a newcomer on A counts a1, b1 and itself.
    const { welcome } = await a.join();
    assert.equal(welcomeCount(welcome), 3);
  });
});
