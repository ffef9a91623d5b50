/**
 * No client input ends the process, and none makes it hold more than its bounds, tried as an attacker
 * would: against the real process (`node dist/src/main.js`), so a crash or an out-of-memory abort is
 * seen as what it is.
 *
 * - One 10 KB chat frame of 5 000 nested arrays: the sender is closed (1008), `/livez` still answers.
 * - Any odd JSON in a chat `message` (deep, wide, huge numbers, lone surrogates, `__proto__` keys),
 *   fuzzed through a real socket: sent on as its JSON text, or refused with 1008 past the depth bound.
 * - The last line of defence: a handler that throws closes that one connection (1011), is counted in
 *   /metrics, and the process carries on; on the REST port, the 500 envelope.
 * - History replays: 4 handshakes asking for all of a history of maximum-size messages, that never
 *   read, under --max-old-space-size=512: the process stays up and its RSS within the bound docs/chat-protocol.md states.
 * - Messages that JSON escapes six times over are refused (1009) rather than stored and sent 6×.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { connect, type Socket } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import fc from 'fast-check';
import { WebSocket } from 'ws';
import { MAX_MESSAGE_DEPTH } from '../../src/protocol/chat-codec.js';
import { MAX_REPLAYS } from '../../src/chat/room.js';
import { MemoryUserStore } from '../../src/users/stores/memory/memory-store.js';
import { MemoryHistory } from '../../src/chat/history.js';
import {
  ChatClient,
  chatInThread,
  closeOf,
  handshakeRequest,
  Listening,
  rawHttp,
  request,
  RosterProcess,
  startRoster,
  until,
  within,
  type InThreadChat,
} from '../support/index.js';

/** roster_chat_handler_errors_total of an in-thread chat door. */
async function handlerErrors(chat: InThreadChat): Promise<number> {
  const line = (await chat.metrics()).split('\n').find((l) => l.startsWith('roster_chat_handler_errors_total '));
  return Number(line?.split(' ')[1] ?? 0);
}

const KIB = 1024;
/**
 * How long a wait for one close or one message may take here before it fails: each is answered in
 * milliseconds, and a rule that broke (the depth limit raised, say) must fail its test in seconds rather
 * than at the runner's timeout.
 */
const EVENT_MS = 10_000;
const MIB = 1024 * KIB;
/** The bound docs/chat-protocol.md states for the replay test below. */
const RSS_BOUND_MIB = 256;

/** A real Roster process on free ports, with `env` over quiet logs. */
async function roster(
  t: TestContext,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<{ process: RosterProcess; api: string; origin: string; ws: string }> {
  const process = new RosterProcess(t, { PORT: '0', WS_PORT: '0', LOG_LEVEL: 'info', ...env }, { nodeArgs });
  const { port, wsPort } = await process.listening();
  return {
    process,
    origin: `http://127.0.0.1:${port}`,
    api: `http://127.0.0.1:${port}/api/v1`,
    ws: `ws://127.0.0.1:${wsPort}`,
  };
}

async function open(url: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers });
  ws.on('error', () => {});
  await within(once(ws, 'open'), EVENT_MS, `the connection to ${url}`);
  return ws;
}

/** The process's resident set, from /proc. */
function rssOf(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))!;
  return Number(/(\d+)/.exec(line)![1]) * KIB;
}

/** A metric's value on the /metrics page (0 when absent). */
async function metric(origin: string, name: string): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

/**
 * `count` chat messages of the largest size (WS_MAX_PAYLOAD), numbered, from one client: one at a
 * time, each after its echo (a sender that does not read its echoes is a slow consumer).
 */
async function sendLargest(url: string, count: number): Promise<void> {
  const sender = await open(url);
  const big = 'x'.repeat(256 * KIB);
  let echoed: () => void = () => {};
  sender.on('message', (data) => {
    if (String(data).startsWith('{"type":"chat"')) echoed();
  });
  for (let i = 0; i < count; i++) {
    const echo = new Promise<void>((resolve) => (echoed = resolve));
    sender.send(`${i} ${big.slice(String(i).length + 1)}`);
    await within(echo, EVENT_MS, `the echo of message ${i}`);
  }
  sender.close();
}

const DEEP_FRAME = `{"type":"chat","message":${'['.repeat(5000)}${']'.repeat(5000)}}`;
const READER_KEY = 'reader-key-0123456789abcdef';

describe('one chat frame cannot end the process', () => {
  const setups: [string, Record<string, string>, Record<string, string>][] = [
    ['the default settings', {}, {}],
    ['AUTH=apikey, a reader key', { AUTH: 'apikey', API_KEYS: `${READER_KEY}:user` }, { 'X-API-Key': READER_KEY }],
    ['RATE_LIMIT', { RATE_LIMIT: '100/minute' }, {}],
  ];
  for (const [name, env, headers] of setups) {
    test(`${name}: 5 000 nested arrays (${DEEP_FRAME.length} bytes) close the sender (1008); /livez answers`, async (t) => {
      const { ws, origin } = await roster(t, env);
      const attacker = await open(ws, headers);
      const closed = closeOf(attacker, EVENT_MS);
      // An echo instead of the close (the depth bound not held) fails at once, not at the deadline.
      const echo = new Promise<{ code: number; echoed: string }>((resolve) =>
        attacker.on('message', (data) => {
          if (JSON.parse(String(data)).type === 'chat') resolve({ code: 0, echoed: String(data).slice(0, 80) });
        }),
      );
      attacker.send(DEEP_FRAME);
      const outcome = await Promise.race([closed, echo]);
      assert.equal(outcome.code, 1008, JSON.stringify(outcome));
      assert.equal((await fetch(`${origin}/livez`)).status, 200);
      // And the chat still works for everyone else.
      const other = await open(ws, headers);
      const echoed = new Promise<string>((resolve) =>
        other.on('message', (data) => {
          const message = JSON.parse(String(data));
          if (message.type === 'chat') resolve(message.message);
        }),
      );
      other.send(JSON.stringify({ type: 'chat', message: 'still here' }));
      assert.equal(await within(echoed, EVENT_MS, 'the echo of "still here"'), 'still here');
      other.close();
    });
  }
});

/** Raw JSON texts of every odd kind, with their depth of nesting (0: not an object or array). */
const oddJson: fc.Arbitrary<{ text: string; depth: number }> = fc.letrec<{
  value: { text: string; depth: number };
}>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    // Numbers JavaScript cannot hold exactly, or at all.
    fc.constantFrom('1e400', '-1e400', '123456789012345678901234567890', '-0', '0.1e-400', '5e-324').map((text) => ({
      text,
      depth: 0,
    })),
    fc.double().map((n) => ({ text: JSON.stringify(n), depth: 0 })),
    // Strings with lone surrogates (escaped: a lone surrogate has no UTF-8), controls, anything.
    fc.string({ unit: 'binary' }).map((s) => ({ text: JSON.stringify(s), depth: 0 })),
    fc.constantFrom('"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', 'true', 'null').map((text) => ({ text, depth: 0 })),
    fc.array(tie('value'), { maxLength: 5 }).map((items) => ({
      text: `[${items.map((i) => i.text).join(',')}]`,
      depth: 1 + Math.max(0, ...items.map((i) => i.depth)),
    })),
    fc
      .array(fc.tuple(fc.constantFrom('__proto__', 'constructor', 'type', 'message', 'toString', 'a'), tie('value')), {
        maxLength: 4,
      })
      .map((entries) => ({
        text: `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value.text}`).join(',')}}`,
        // JSON.parse keeps the last of a repeated key: a deep value that a later twin replaces is not there.
        depth: 1 + Math.max(0, ...[...new Map(entries).values()].map((value) => value.depth)),
      })),
    // Deep: arrays or objects nested to any depth around the bound, and far past it.
    fc.integer({ min: MAX_MESSAGE_DEPTH - 2, max: 6000 }).map((depth) => ({
      text:
        depth % 2
          ? `${'['.repeat(depth)}${']'.repeat(depth)}`
          : `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`,
      depth,
    })),
    // Wide: thousands of elements.
    fc.integer({ min: 1000, max: 20_000 }).map((n) => ({ text: `[${'0,'.repeat(n - 1)}0]`, depth: 1 })),
  ),
})).value;

describe('the chat codec, fuzzed through a real socket', () => {
  test(
    'odd JSON in `message`: sent on as its JSON text, or refused (1008) past the depth bound; never a crash',
    { timeout: 120_000 },
    async (t) => {
      const { ws, origin } = await roster(t);
      let client: WebSocket | undefined;
      let inbox: string[] = [];
      let wake: (() => void) | undefined;
      const connectClient = async () => {
        client = await open(ws);
        inbox = [];
        client.on('message', (data) => {
          inbox.push(String(data));
          wake?.();
        });
      };
      const nextChat = async (): Promise<unknown> => {
        for (;;) {
          const at = inbox.findIndex((text) => JSON.parse(text).type === 'chat');
          if (at >= 0) return JSON.parse(inbox.splice(at, 1)[0]!).message;
          await new Promise<void>((resolve) => (wake = resolve));
        }
      };
      await connectClient();
      let refused = 0;
      let sentOn = 0;
      await fc.assert(
        fc.asyncProperty(oddJson, async ({ text, depth }) => {
          const frame = `{"type":"chat","message":${text}}`;
          if (depth > MAX_MESSAGE_DEPTH) {
            const closed = closeOf(client!, EVENT_MS);
            client!.send(frame);
            // A chat sent on instead of the close fails here, rather than leave the test waiting.
            const outcome = await Promise.race([closed, nextChat().then((message) => ({ code: 0, message }))]);
            assert.equal(
              outcome.code,
              1008,
              `a message nested ${depth} deep: ${JSON.stringify(outcome).slice(0, 200)}`,
            );
            refused++;
            await connectClient();
            return;
          }
          client!.send(frame);
          const message = await within(nextChat(), EVENT_MS, `the echo of a message nested ${depth} deep`);
          const value: unknown = JSON.parse(text);
          assert.equal(message, value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));
          sentOn++;
        }),
        { numRuns: Number(process.env.FUZZ_RUNS ?? 150) },
      );
      client!.close();
      assert.ok(refused > 0 && sentOn > 0, `both outcomes seen (${refused} refused, ${sentOn} sent on)`);
      assert.equal((await fetch(`${origin}/livez`)).status, 200);
      assert.equal(await metric(origin, 'roster_chat_handler_errors_total'), 0, 'no unexpected error on the way');
    },
  );
});

describe('the last line of defence', () => {
  test('a chat handler that throws: that connection closes with 1011, counted and logged; the rest carry on', async (t) => {
    // The chat door on this thread, so the test can break its room (the chat thread runs the same code).
    const chat = await chatInThread(t);
    const room = chat.room;
    const receive = room.receive.bind(room);
    room.receive = (member, text) => {
      if (text === 'explode') throw new RangeError('Maximum call stack size exceeded');
      return receive(member, text);
    };
    const bystander = await ChatClient.connect(chat.wsUrl);
    const victim = await ChatClient.connect(chat.wsUrl);
    const closed = closeOf(victim.ws, EVENT_MS);
    victim.send('explode');
    assert.equal((await closed).code, 1011);
    assert.equal(await handlerErrors(chat), 1);
    bystander.send({ type: 'chat', message: 'after' });
    assert.equal((await bystander.next((m) => m.type === 'chat')).message, 'after');

    // A join that throws (after the upgrade): the new connection gets 1011.
    const join = room.join.bind(room);
    room.join = () => {
      throw new TypeError('join broke');
    };
    const late = new WebSocket(chat.wsUrl);
    late.on('error', () => {});
    assert.equal((await closeOf(late, EVENT_MS)).code, 1011);
    room.join = join;
    assert.equal(await handlerErrors(chat), 2);
    await bystander.close();
  });

  test('a handshake whose checks throw: 500 in the envelope before the upgrade, counted; the next one is served', async (t) => {
    let broken = true;
    const chat = await chatInThread(
      t,
      {},
      {
        limiter: {
          spent: async () => {
            if (broken) throw new TypeError('the limiter broke');
            return undefined;
          },
          refusal: async () => undefined,
        },
      },
    );
    const refused = await rawHttp(chat.port, handshakeRequest(chat.port).text);
    assert.equal(refused.status, 500);
    assert.equal(JSON.parse(refused.body).error.code, 'INTERNAL_ERROR');
    assert.equal(await handlerErrors(chat), 1);
    broken = false;
    const client = await ChatClient.connect(chat.wsUrl);
    client.send({ type: 'chat', message: 'in' });
    assert.equal((await client.next((m) => m.type === 'chat')).message, 'in');
    await client.close();
  });

  test('a close handler that throws: counted, and the room carries on for the others', async (t) => {
    const chat = await chatInThread(t);
    const room = chat.room;
    const leave = room.leave.bind(room);
    let breakNext = true;
    room.leave = (member) => {
      if (breakNext) {
        breakNext = false;
        throw new TypeError('leave broke');
      }
      return leave(member);
    };
    const bystander = await ChatClient.connect(chat.wsUrl);
    const leaving = await ChatClient.connect(chat.wsUrl);
    await leaving.close();
    await until('the error counted', async () => (await handlerErrors(chat)) === 1, 5_000, 20);
    bystander.send({ type: 'chat', message: 'still here' });
    assert.equal((await bystander.next((m) => m.type === 'chat')).message, 'still here');
    const next = await ChatClient.connect(chat.wsUrl);
    await next.close();
    await bystander.close();
  });

  test('a REST handler that overflows its stack: 500 in the envelope, and the next request is served', async (t) => {
    class OverflowingStore extends MemoryUserStore {
      broken = true;
      override list(...args: Parameters<MemoryUserStore['list']>): ReturnType<MemoryUserStore['list']> {
        if (!this.broken) return super.list(...args);
        const overflow = (n: number): number => overflow(n + 1) + 1;
        return Promise.resolve(overflow(0) as never);
      }
    }
    const store = new OverflowingStore();
    const running = await startRoster({ LOG_LEVEL: 'silent' }, { store });
    t.after(() => running.stop());
    const broken = await request(`${running.api}/users`);
    assert.equal(broken.status, 500);
    assert.equal(broken.body.error.code, 'INTERNAL_ERROR');
    store.broken = false;
    assert.equal((await request(`${running.api}/users`)).status, 200);
  });
});

describe('chat history within its bounds', () => {
  test('a message that JSON would escape past WS_MAX_PAYLOAD is refused (1009), not stored and sent 6×', async (t) => {
    const running = await startRoster({ LOG_LEVEL: 'silent' });
    t.after(() => running.stop());
    const client = await ChatClient.connect(running.wsUrl);
    const closed = closeOf(client.ws, EVENT_MS);
    client.send('\u0001'.repeat(256 * KIB - 1)); // raw text: each becomes \u0001, six bytes
    assert.equal((await closed).code, 1009);
    // The largest plain message still goes through, frame and all.
    const other = await ChatClient.connect(running.wsUrl);
    other.send('x'.repeat(256 * KIB));
    assert.equal((await other.next((m) => m.type === 'chat')).message.length, 256 * KIB);
    await other.close();
  });

  test('the memory history is a ring bounded by count and bytes: what it dropped is gone, recovery still exact', () => {
    const history = new MemoryHistory(5, 1000, 1_700_000_000_000);
    const chat = (message: string) => ({ type: 'chat' as const, from: 'f', message, timestamp: 't' });
    const ids = Array.from({ length: 12 }, (_, i) => history.append(chat(`m${i}`)));
    let read = history.read({ history: 100 });
    assert.deepEqual(
      read.entries.map((e) => e.id),
      ids.slice(-5),
    );
    // Bytes: three messages of ~300 bytes leave room for at most three.
    for (let i = 0; i < 3; i++) ids.push(history.append(chat('y'.repeat(250))));
    read = history.read({ history: 100 });
    assert.ok(history.bytes <= 1000, `${history.bytes} bytes kept`);
    assert.deepEqual(
      read.entries.map((e) => e.id),
      ids.slice(-read.entries.length),
    );
    assert.ok(read.entries.length < 5);
    // A since at the floor recovers exactly; one older is a gap.
    const floor = ids[ids.length - read.entries.length - 1]!;
    assert.equal(history.read({ since: floor }).recovered, true);
    assert.equal(history.read({ since: ids[0]! }).recovered, false);
    // A message over the whole bound is not kept at all.
    history.append(chat('z'.repeat(2000)));
    assert.equal(history.read({ history: 100 }).entries.length, 0);
    assert.equal(history.bytes, 0);
  });

  test('a message the memory history dropped is released: its frame goes at the next collection', async () => {
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const history = new MemoryHistory(5, 400, 1_700_000_000_000);
    const chat = (message: string) => ({ type: 'chat' as const, from: 'f', message, timestamp: 't' });
    // In a function of its own, so that no variable of this test holds the first message.
    const watch = () => {
      history.append(chat('first'));
      const first = history.read({ history: 5 }).entries[0]!;
      return { entry: new WeakRef(first), frame: new WeakRef(first.payload) };
    };
    const { entry, frame } = watch();
    // Dropped by bytes, so its slot of the ring is not written again: it must be cleared.
    history.append(chat('y'.repeat(300)));
    // WeakRef targets stay alive until the end of the task that last read them.
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    assert.equal(entry.deref(), undefined, 'the dropped entry is still reachable');
    assert.equal(frame.deref(), undefined, 'the dropped frame is still reachable');
    assert.deepEqual(
      history.read({ history: 5 }).entries.map((e) => JSON.parse(e.payload.toString()).message),
      ['y'.repeat(300)],
    );
  });

  test(
    '1 000 messages of 256 KiB under --max-old-space-size=256: the history keeps its bound, the process lives',
    { timeout: 120_000 },
    async (t) => {
      const { process: child, ws, origin } = await roster(t, {}, ['--max-old-space-size=256']);
      await sendLargest(ws, 1000);
      assert.equal((await fetch(`${origin}/livez`)).status, 200);
      const reader = new Listening(`${ws}/?history=1000`);
      t.after(() => reader.terminate());
      const end = await reader.until((m) => m.type === 'history', 30_000);
      assert.ok(end.count * 256 * KIB <= 16 * MIB, `${end.count} messages kept, within CHAT_HISTORY_BYTES`);
      assert.equal(reader.chats().at(-1).message.split(' ')[0], '999');
      assert.equal(child.exit, undefined, 'the process is still running');
    },
  );

  test(
    `4 × ?history=500 that never read, over a full history of maximum-size messages, under --max-old-space-size=512: RSS within ${RSS_BOUND_MIB} MiB`,
    { timeout: 120_000 },
    async (t) => {
      const { process: child, ws, origin } = await roster(t, {}, ['--max-old-space-size=512']);
      await sendLargest(ws, 500);
      const before = rssOf(child.child.pid!);
      // Four raw handshakes that never read a byte of the replays.
      const stuck: Socket[] = [];
      for (let i = 0; i < 4; i++) {
        const port = Number(new URL(ws).port);
        const socket = connect(port, '127.0.0.1');
        socket.on('error', () => {});
        socket.pause();
        socket.write(handshakeRequest(port, { path: '/?history=500' }).text);
        stuck.push(socket);
      }
      t.after(() => stuck.forEach((s) => s.destroy()));
      await new Promise((resolve) => setTimeout(resolve, 2000));
      const during = rssOf(child.child.pid!);
      // The process answers meanwhile, and a reader gets the whole history, intact.
      assert.equal((await fetch(`${origin}/livez`)).status, 200);
      const reader = new Listening(`${ws}/?history=500`);
      t.after(() => reader.terminate());
      const end = await reader.until((m) => m.type === 'history', 30_000);
      const kept = reader.chats();
      assert.equal(end.count, kept.length);
      assert.ok(kept.length > 0 && kept.length * 256 * KIB <= 16 * MIB, `${kept.length} messages kept of 16 MiB`);
      assert.equal(kept.at(-1).message.split(' ')[0], '499');
      for (const message of kept) assert.equal(message.message.length, 256 * KIB);
      const after = rssOf(child.child.pid!);
      t.diagnostic(
        `RSS: ${(before / MIB).toFixed(0)} MiB full, ${(during / MIB).toFixed(0)} MiB with 4 stuck replays, ${(after / MIB).toFixed(0)} MiB after a read one`,
      );
      for (const rss of [before, during, after]) assert.ok(rss <= RSS_BOUND_MIB * MIB, `RSS ${rss / MIB} MiB`);
      assert.equal(child.exit, undefined, 'the process is still running');
    },
  );

  test('what waits behind a stuck replay counts against WS_MAX_BACKLOG: past it, dropped as a slow consumer', async (t) => {
    const running = await startRoster({ LOG_LEVEL: 'silent', WS_MAX_BACKLOG: '64KiB' });
    t.after(() => running.stop());
    const sender = await ChatClient.connect(running.wsUrl);
    for (let i = 0; i < 40; i++) {
      sender.send(`${i} ${'x'.repeat(200 * KIB)}`);
      await sender.next((m) => m.type === 'chat' && m.message.startsWith(`${i} `));
    }
    // More stuck readers than MAX_REPLAYS: none holds back another.
    const stuck: Socket[] = [];
    for (let i = 0; i < MAX_REPLAYS + 1; i++) {
      const socket = connect(running.wsPort, '127.0.0.1');
      socket.on('error', () => {});
      socket.pause();
      socket.write(handshakeRequest(running.wsPort, { path: '/?history=500' }).text);
      stuck.push(socket);
    }
    t.after(() => stuck.forEach((s) => s.destroy()));
    await sender.next((m) => m.type === 'user_join' && m.online_count === MAX_REPLAYS + 2);
    const reader = new Listening(`${running.wsUrl}/?history=500`);
    t.after(() => reader.terminate());
    assert.equal((await reader.until((m) => m.type === 'history')).count, 40);
    // 100 KiB more for the stuck ones, who are still behind their replays: over the bound, dropped.
    for (let i = 0; i < 5; i++) sender.send(`late ${i} ${'y'.repeat(20 * KIB)}`);
    await sender.next((m) => m.type === 'user_leave' && m.online_count === 2, 10_000);
    assert.equal(await metric(running.origin, 'roster_chat_slow_consumers_dropped_total'), MAX_REPLAYS + 1);
    await sender.close();
  });
});

/** How long both doors are fuzzed at once; FUZZ_MINUTE_MS shortens or lengthens it. */
const FUZZ_MINUTE_MS = Number(process.env.FUZZ_MINUTE_MS ?? 60_000);

/** A REST request of any shape, with hostile bodies: deep, wide, huge, odd Unicode, `__proto__`. */
const restRequest = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'),
  path: fc.oneof(
    fc.constant('/api/v1/users'),
    fc.uuid().map((id) => `/api/v1/users/${id}`),
    fc.string({ maxLength: 40 }).map((s) => `/api/v1/users/${encodeURIComponent(s)}`),
    fc
      .record({
        role: fc.string({ maxLength: 8 }),
        search: fc.string({ unit: 'binary', maxLength: 300 }),
        sort: fc.constantFrom('name', 'email', '__proto__', 'constructor', 'x'),
        page: fc.oneof(fc.integer(), fc.constant(Infinity), fc.string({ maxLength: 5 })),
        limit: fc.oneof(fc.integer(), fc.string({ maxLength: 5 })),
      })
      .map(
        (query) =>
          `/api/v1/users?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)] as [string, string]))}`,
      ),
    fc.constantFrom('/api/v1/health', '/livez', '/readyz', '/api/v1/openapi.json', '/api/v1/chat/members', '/nope'),
  ),
  contentType: fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-16', 'x/y', ''),
  body: fc.oneof(
    oddJson.map((j) => j.text),
    fc
      .record({ name: oddJson, email: oddJson, role: oddJson })
      .map((u) => `{"name":${u.name.text},"email":${u.email.text},"role":${u.role.text}}`),
    fc
      .record({ name: fc.string({ unit: 'binary' }), email: fc.emailAddress(), role: fc.constantFrom('admin', 'user') })
      .map((u) => JSON.stringify(u)),
    fc.integer({ min: 1, max: 300_000 }).map((n) => `{"name":"${'n'.repeat(n)}","email":"a${n}@example.com"}`),
    fc.constant('{"__proto__":{"role":"admin"},"name":"p","email":"p@example.com"}'),
    fc.string({ unit: 'binary', maxLength: 200 }),
  ),
});

/** A chat frame of any kind a client can send: odd JSON, chat messages of it, text, binary. */
const textFrame = fc.oneof(
  oddJson.map((j) => ({ data: `{"type":"chat","message":${j.text}}`, binary: false })),
  oddJson.map((j) => ({ data: j.text, binary: false })),
  fc.constantFrom('{"type":"ping"}', '{"type":"__proto__"}', '{"__proto__":{"type":"chat"}}').map((data) => ({
    data,
    binary: false,
  })),
  fc.string({ unit: 'binary', maxLength: 2000 }).map((data) => ({ data, binary: false })),
);
const chatFrame = fc.oneof(
  { arbitrary: textFrame, weight: 40 },
  // Rare: a binary frame ends the connection (1003), and the rest of its frames with it.
  {
    arbitrary: fc.uint8Array({ maxLength: 100 }).map((data) => ({ data: Buffer.from(data), binary: true })),
    weight: 1,
  },
);

describe('both doors fuzzed at once', () => {
  test(
    `${FUZZ_MINUTE_MS / 1000} s of hostile input on both ports: no 5xx, no 1011, no process end`,
    { timeout: FUZZ_MINUTE_MS + 60_000 },
    async (t) => {
      const { process: child, api, origin, ws } = await roster(t);
      const deadline = Date.now() + FUZZ_MINUTE_MS;
      const base = api.slice(0, -'/api/v1'.length);
      let requests = 0;
      let frames = 0;
      const closes = new Map<number, number>();
      const rest = async () => {
        while (Date.now() < deadline) {
          for (const r of fc.sample(restRequest, 20)) {
            const response = await fetch(`${base}${r.path}`, {
              method: r.method,
              headers: r.contentType ? { 'content-type': r.contentType } : {},
              ...(['GET', 'HEAD'].includes(r.method) ? {} : { body: r.body }),
            });
            const text = await response.text();
            requests++;
            assert.ok(response.status < 500, `${r.method} ${r.path}: ${response.status} ${text.slice(0, 200)}`);
            if (response.status >= 400 && r.method !== 'HEAD') assert.equal(JSON.parse(text).status, 'error');
          }
        }
      };
      const chat = async () => {
        while (Date.now() < deadline) {
          const client = await open(ws);
          const closed = closeOf(client, EVENT_MS);
          for (const frame of fc.sample(chatFrame, 30)) {
            if (client.readyState !== WebSocket.OPEN) break;
            client.send(frame.data, { binary: frame.binary });
            frames++;
            await new Promise((resolve) => setImmediate(resolve));
          }
          if (client.readyState === WebSocket.OPEN) client.close();
          const { code } = await closed;
          closes.set(code, (closes.get(code) ?? 0) + 1);
          assert.notEqual(code, 1011, 'an unexpected error on the chat port');
        }
      };
      await Promise.all([rest(), rest(), chat(), chat()]);
      t.diagnostic(`${requests} requests, ${frames} frames; chat closes by code: ${JSON.stringify([...closes])}`);
      assert.equal((await fetch(`${origin}/livez`)).status, 200);
      assert.equal(await metric(origin, 'roster_chat_handler_errors_total'), 0);
      assert.equal(child.exit, undefined, 'the process is still running');
    },
  );
});
