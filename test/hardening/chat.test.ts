/**
 * Hardening of the chat port: clients that vanish mid-frame, connection churn, 1 000 simultaneous
 * connections, and every protocol violation, each followed by the shared health check (health 200, a
 * chat round trip, the users planted before the attack intact). The close codes of single violations
 * are pinned in test/chat/wire.test.ts; here they are thrown at the service all at once, beside a
 * working room.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import {
  barrier,
  ChatClient,
  closePayload,
  encodeFrame,
  handshakeRequest,
  Opcode,
  parseHead,
  RawClient,
  roomSettles,
  startHardened,
  tcpOf,
  within,
  type EncodeOptions,
  type Hardened,
} from '../support/index.js';

async function hardened(t: TestContext, env: Record<string, string> = {}): Promise<Hardened> {
  const roster = await startHardened(env);
  t.after(() => roster.stop());
  return roster;
}

/** Connected ChatClients (welcome consumed), torn down with the test. */
async function clients(t: TestContext, roster: Hardened, n: number): Promise<ChatClient[]> {
  const list: ChatClient[] = [];
  for (let i = 0; i < n; i++) {
    const client = new ChatClient(roster.running.wsUrl);
    client.ws.on('error', () => {});
    t.after(() => client.ws.terminate());
    await within(
      client.next((m) => m.type === 'system'),
      5000,
      'a welcome',
    );
    // Every earlier client has seen this one join, so that no join notice is left in flight.
    await Promise.all(list.map((other) => other.next((m) => m.type === 'user_join' && m.online_count === i + 1)));
    list.push(client);
  }
  return list;
}

const roomSize = (roster: Hardened) => roster.running.server.chat.size();

/** The count in a welcome text ("Welcome to the chat! 3 users online."). */
function countIn(welcome: { message?: unknown }): number {
  const match = /(\d+)/.exec(String(welcome.message));
  assert.ok(match, `a count in the welcome ${JSON.stringify(welcome)}`);
  return Number(match[1]);
}

/** A fresh client's welcome reports `expected` (itself included); it leaves again. */
async function assertWelcomeCount(roster: Hardened, expected: number): Promise<void> {
  const client = new ChatClient(roster.running.wsUrl);
  client.ws.on('error', () => {});
  try {
    const welcome = await within(
      client.next((m) => m.type === 'system'),
      5000,
      'the welcome',
    );
    assert.equal(countIn(welcome), expected, `welcome: ${welcome.message}`);
  } finally {
    client.ws.terminate();
  }
}

const text = (payload: Buffer | string, options: EncodeOptions = {}) => encodeFrame(Opcode.text, payload, options);

describe('a client that drops the TCP connection mid-frame leaves no member behind', () => {
  const cuts: [string, () => Buffer][] = [
    [
      'a header declaring 100 bytes, then 10 of them',
      () =>
        Buffer.concat([
          encodeFrame(Opcode.text, Buffer.alloc(0), { declaredLength: 100, headerOnly: true }),
          Buffer.alloc(10, 0x61),
        ]),
    ],
    [
      'a 16-bit length header declaring 1000 bytes, then 10',
      () =>
        Buffer.concat([
          encodeFrame(Opcode.text, Buffer.alloc(0), { declaredLength: 1000, headerOnly: true }),
          Buffer.alloc(10, 0x61),
        ]),
    ],
    [
      'a 64-bit length header declaring 100 000 bytes, then 10',
      () =>
        Buffer.concat([
          encodeFrame(Opcode.text, Buffer.alloc(0), { declaredLength: 100_000, headerOnly: true }),
          Buffer.alloc(10, 0x61),
        ]),
    ],
    ['one byte of a header', () => Buffer.from([0x81])],
    ['a header without its masking key', () => Buffer.from([0x81, 0x85, 0x01, 0x02])],
    [
      'a whole first fragment, then half a continuation',
      () =>
        Buffer.concat([
          text('{"type":"chat",', { fin: false }),
          encodeFrame(Opcode.continuation, '"message":"cut"}').subarray(0, 8),
        ]),
    ],
    ['half a close frame', () => encodeFrame(Opcode.close, closePayload(1000, 'bye')).subarray(0, 5)],
    ['half a ping', () => encodeFrame(Opcode.ping, 'are you there').subarray(0, 9)],
  ];

  for (const ending of ['destroy', 'half-close'] as const) {
    test(`mid-frame ${ending}: the others get user_leave with the right online_count; a newcomer's welcome counts right`, async (t) => {
      const roster = await hardened(t);
      const observers = await clients(t, roster, 2);
      for (const [name, bytes] of cuts) {
        const raw = await RawClient.connect(roster.running.wsPort);
        for (const observer of observers)
          assert.equal((await observer.next((m) => m.type === 'user_join')).online_count, 3, name);
        await raw.write(bytes());
        if (ending === 'destroy') raw.destroy();
        else raw.socket.end();
        for (const observer of observers) {
          const leave = await within(
            observer.next((m) => m.type === 'user_leave'),
            5000,
            `user_leave after ${name}`,
          );
          assert.equal(leave.online_count, 2, name);
        }
        raw.destroy();
        assert.equal(await roomSize(roster), 2, `no leaked member after ${name}`);
      }
      // Nothing of the cut frames reached the room, and nothing else is pending.
      await barrier(observers[0]!, observers);
      for (const observer of observers) assert.deepEqual(observer.messages, []);
      await assertWelcomeCount(roster, 3);
      await roster.check();
    });
  }

  test('many clients cut mid-frame at once', async (t) => {
    const roster = await hardened(t);
    const [observer] = (await clients(t, roster, 1)) as [ChatClient];
    const raws = await Promise.all(Array.from({ length: 60 }, () => RawClient.connect(roster.running.wsPort)));
    await roomSettles(roster.running, 61);
    await Promise.all(
      raws.map(async (raw, i) => {
        await raw.write(cuts[i % cuts.length]![1]()).catch(() => {});
        raw.destroy();
      }),
    );
    await roomSettles(roster.running, 1);
    const seen: number[] = [];
    while (seen.length < 60) seen.push((await observer.next((m) => m.type === 'user_leave')).online_count);
    assert.equal(seen.at(-1), 1, 'the last leave says 1');
    await assertWelcomeCount(roster, 2);
    await roster.check();
  });
});

describe('connection churn: online_count equals the true number of open connections', () => {
  test('400 connects and disconnects of every kind, with some staying: the counts are exact afterwards', async (t) => {
    const roster = await hardened(t);
    const port = roster.running.wsPort;
    const [observer] = (await clients(t, roster, 1)) as [ChatClient];
    const staying: ChatClient[] = [];
    t.after(() => staying.forEach((client) => client.ws.terminate()));

    const rawSocket = async (): Promise<Socket> => {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => {});
      await within(once(socket, 'connect'), 5000, 'connect');
      return socket;
    };
    const handshake = () => handshakeRequest(port).text;
    /** Resolves once the server has answered the handshake (the 101 head). */
    const upgraded = (socket: Socket) =>
      within(
        new Promise<void>((resolve) => {
          let seen = '';
          socket.on('data', (chunk: Buffer) => {
            seen += chunk.toString('latin1');
            if (seen.includes('\r\n\r\n')) resolve();
          });
        }),
        5000,
        'the 101',
      );

    /** A chat client that has been welcomed. */
    const welcomed = async () => {
      const client = new ChatClient(roster.running.wsUrl);
      client.ws.on('error', () => {});
      await within(
        client.next((m) => m.type === 'system'),
        5000,
        'welcome',
      );
      return client;
    };

    const kinds: [string, () => Promise<void>][] = [
      [
        'clean close',
        async () => {
          const client = await welcomed();
          await within(client.close(), 5000, 'close handshake');
        },
      ],
      [
        'terminate after the welcome',
        async () => {
          (await welcomed()).ws.terminate();
        },
      ],
      [
        'TCP destroy right after open',
        async () => {
          const client = new ChatClient(roster.running.wsUrl);
          client.ws.on('error', () => {});
          await within(once(client.ws, 'open'), 5000, 'open');
          tcpOf(client.ws).destroy();
        },
      ],
      [
        'abort while connecting',
        async () => {
          const client = new ChatClient(roster.running.wsUrl);
          client.ws.on('error', () => {});
          await new Promise((resolve) => setImmediate(resolve));
          client.ws.terminate();
        },
      ],
      [
        'hang up mid-handshake',
        async () => {
          const socket = await rawSocket();
          socket.write(handshake().slice(0, 40));
          socket.destroy();
        },
      ],
      [
        'handshake and FIN together',
        async () => {
          const socket = await rawSocket();
          socket.resume();
          socket.end(handshake());
          await within(once(socket, 'close'), 5000, 'the server to close');
        },
      ],
      [
        'destroy right after the 101',
        async () => {
          const socket = await rawSocket();
          const answered = upgraded(socket);
          socket.write(handshake());
          await answered;
          socket.destroy();
        },
      ],
      [
        'destroy mid-frame',
        async () => {
          const socket = await rawSocket();
          const answered = upgraded(socket);
          socket.write(handshake());
          await answered;
          socket.write(encodeFrame(Opcode.text, Buffer.alloc(0), { declaredLength: 100, headerOnly: true }));
          socket.destroy();
        },
      ],
      [
        'connect and say nothing',
        async () => {
          const socket = await rawSocket();
          socket.destroy();
        },
      ],
      [
        'close frame then destroy',
        async () => {
          const raw = await RawClient.connect(port);
          await raw.send(Opcode.close, closePayload(1000)).catch(() => {});
          raw.destroy();
        },
      ],
    ];

    let operations = 0;
    for (let wave = 0; wave < 8; wave++) {
      await Promise.all(
        Array.from({ length: 50 }, async (_, i) => {
          operations++;
          if (i % 25 === 0) {
            // Two per wave stay connected.
            const client = new ChatClient(roster.running.wsUrl);
            client.ws.on('error', () => {});
            staying.push(client);
            await within(
              client.next((m) => m.type === 'system'),
              5000,
              'welcome',
            );
            return;
          }
          const [, run] = kinds[(wave * 50 + i) % kinds.length]!;
          await run();
        }),
      );
    }
    assert.equal(operations, 400);
    const open = 1 + staying.length;
    await roomSettles(roster.running, open);

    // Black-box: a newcomer's welcome, and the join the others hear, count exactly the open connections.
    const newcomer = new ChatClient(roster.running.wsUrl);
    newcomer.ws.on('error', () => {});
    t.after(() => newcomer.ws.terminate());
    assert.equal(
      countIn(
        await within(
          newcomer.next((m) => m.type === 'system'),
          5000,
          'welcome',
        ),
      ),
      open + 1,
    );
    const joined = await observer.next((m) => m.type === 'user_join' && m.online_count === open + 1, 5000);
    assert.equal(joined.online_count, open + 1);
    // The last notice before that one left the room at exactly the open count.
    const notices = observer.messages.filter((m) => m.type === 'user_join' || m.type === 'user_leave');
    assert.equal(notices.at(-1)?.online_count, open, 'the last notice before the newcomer');
    // And every staying client is still in the room and receives.
    await barrier(newcomer, [observer, newcomer, ...staying]);
    await roster.check();
  });
});

/**
 * A light chat client over a raw socket, for crowds: it reads its welcome, then only scans the bytes
 * it receives for a marker (server frames are unmasked, so a text payload appears as is on the wire).
 */
class LightClient {
  welcome?: { message?: unknown };
  seenAt?: number;
  #tail: Buffer = Buffer.alloc(0);
  #marker?: Buffer;
  #onWelcome?: (error?: Error) => void;
  #onSeen?: () => void;

  private constructor(readonly socket: Socket) {}

  static async open(port: number): Promise<LightClient> {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    const client = new LightClient(socket);
    const welcomed = new Promise<void>(
      (resolve, reject) => (client.#onWelcome = (error) => (error ? reject(error) : resolve())),
    );
    socket.on('data', (chunk: Buffer) => client.#feed(chunk));
    // Errors are ignored above: a refused connection would never emit 'connect', hence the deadlines.
    await within(once(socket, 'connect'), 5000, 'the connection');
    socket.write(handshakeRequest(port).text);
    await within(welcomed, 5000, 'the welcome');
    return client;
  }

  #feed(chunk: Buffer): void {
    const data = this.#tail.length > 0 ? Buffer.concat([this.#tail, chunk]) : chunk;
    if (!this.welcome) {
      const end = data.indexOf('\r\n\r\n');
      if (end < 0 || data.length < end + 6) {
        this.#tail = data;
        return;
      }
      const head = parseHead(data.subarray(0, end).toString('latin1'));
      if (head.status !== 101) return this.#onWelcome?.(new Error(`handshake refused: ${head.statusLine}`));
      // The welcome is the first frame, a short text frame (7-bit or 16-bit length).
      const start = end + 4;
      const short = data[start + 1]! & 0x7f;
      const [offset, length] = short === 126 ? [start + 4, data.readUInt16BE(start + 2)] : [start + 2, short];
      if (data.length < offset + length) {
        this.#tail = data;
        return;
      }
      this.welcome = JSON.parse(data.subarray(offset, offset + length).toString('utf8')) as { message?: unknown };
      this.#tail = Buffer.alloc(0);
      this.#onWelcome?.();
      return this.#scan(data.subarray(offset + length));
    }
    this.#scan(data);
  }

  #scan(data: Buffer): void {
    if (!this.#marker || this.seenAt !== undefined) return;
    if (data.indexOf(this.#marker) >= 0) {
      this.seenAt = Date.now();
      this.#onSeen?.();
      return;
    }
    this.#tail = Buffer.from(data.subarray(Math.max(0, data.length - this.#marker.length)));
  }

  /** Resolves when the marker has arrived. */
  expect(marker: string): Promise<void> {
    this.#marker = Buffer.from(marker);
    this.#tail = Buffer.alloc(0);
    return new Promise((resolve) => (this.#onSeen = resolve));
  }

  send(message: unknown): void {
    this.socket.write(encodeFrame(Opcode.text, JSON.stringify(message)));
  }
}

describe('1 000 simultaneous connections', () => {
  test('all get their welcome, counts 1..1000 exactly once; one broadcast reaches all within seconds; all leave cleanly', async (t) => {
    const roster = await hardened(t);
    const port = roster.running.wsPort;
    const crowd: LightClient[] = [];
    t.after(() => crowd.forEach((client) => client.socket.destroy()));

    const opening = Array.from({ length: 1000 }, () => LightClient.open(port).then((client) => crowd.push(client)));
    const started = Date.now();
    // Every join is announced to everyone already there: half a million notices in all, which takes
    // the one process that runs the service and the crowd some seconds.
    await within(Promise.all(opening), 30_000, '1 000 welcomes');
    t.diagnostic(`1 000 welcomes in ${Date.now() - started} ms`);
    assert.equal(await roomSize(roster), 1000);
    const counts = crowd.map((client) => countIn(client.welcome!)).sort((a, b) => a - b);
    assert.deepEqual(
      counts,
      Array.from({ length: 1000 }, (_, i) => i + 1),
      'each welcome counts the room at its join',
    );

    // A fresh client's welcome says 1001, and a chat from one of the crowd reaches all 1 000.
    await assertWelcomeCount(roster, 1001);
    const marker = `to-everyone-${Date.now()}`;
    const arrivals = crowd.map((client) => client.expect(marker));
    const sent = Date.now();
    crowd[0]!.send({ type: 'chat', message: marker });
    await within(Promise.all(arrivals), 10_000, 'the broadcast to reach all 1 000');
    const slowest = Math.max(...crowd.map((client) => client.seenAt! - sent));
    t.diagnostic(`the broadcast reached all 1 000 in ${slowest} ms`);
    // Within seconds, as a chat must: generous for a loaded two-core machine that also runs all 1 000 clients.
    assert.ok(slowest < 5000, `the broadcast took ${slowest} ms to reach the last client`);

    for (const client of crowd) client.socket.destroy();
    await roomSettles(roster.running, 0, 10_000);
    await assertWelcomeCount(roster, 1);
    await roster.check();
  });
});

describe('every protocol violation at once, beside a working room', () => {
  const violations: [string, () => Buffer, number][] = [
    ['an unmasked frame', () => text('{"type":"chat","message":"unmasked"}', { mask: false }), 1002],
    ['RSV1', () => text('x', { rsv1: true }), 1002],
    ['RSV2', () => text('x', { rsv2: true }), 1002],
    ['RSV3', () => text('x', { rsv3: true }), 1002],
    ['all RSV bits on a ping', () => encodeFrame(Opcode.ping, 'p', { rsv1: true, rsv2: true, rsv3: true }), 1002],
    ['a ping over 125 bytes', () => encodeFrame(Opcode.ping, Buffer.alloc(126)), 1002],
    ['a pong over 125 bytes (16-bit length)', () => encodeFrame(Opcode.pong, Buffer.alloc(300)), 1002],
    ['a close over 125 bytes', () => encodeFrame(Opcode.close, closePayload(1000, 'r'.repeat(200))), 1002],
    ['a fragmented ping', () => encodeFrame(Opcode.ping, 'a', { fin: false }), 1002],
    ['a fragmented close', () => encodeFrame(Opcode.close, closePayload(1000), { fin: false }), 1002],
    ...[0x3, 0x4, 0x5, 0x6, 0x7, 0xb, 0xc, 0xd, 0xe, 0xf].map((op): [string, () => Buffer, number] => [
      `opcode 0x${op.toString(16)}`,
      () => encodeFrame(op, 'x'),
      1002,
    ]),
    ['a stray continuation', () => encodeFrame(Opcode.continuation, 'x'), 1002],
    ['invalid UTF-8', () => text(Buffer.from([0x68, 0xff])), 1007],
    [
      'invalid UTF-8 split across fragments',
      () =>
        Buffer.concat([
          text(Buffer.from([0xe2]), { fin: false }),
          encodeFrame(Opcode.continuation, Buffer.from([0x28])),
        ]),
      1007,
    ],
    ['a binary frame', () => encodeFrame(Opcode.binary, Buffer.from([1, 2, 3])), 1003],
    ['an empty binary frame', () => encodeFrame(Opcode.binary), 1003],
    [
      'a header declaring 300 000 bytes (over 256 KiB), no payload',
      () => encodeFrame(Opcode.text, Buffer.alloc(0), { declaredLength: 300_000, headerOnly: true }),
      1009,
    ],
    [
      'a header declaring 2^62 bytes, no payload',
      () => {
        const header = encodeFrame(Opcode.text, Buffer.alloc(0), { declaredLength: 300_000, headerOnly: true });
        header[2] = 0x40;
        return header;
      },
      1009,
    ],
    [
      'a fragment whose total goes over the limit, announced in the header',
      () =>
        Buffer.concat([
          text('y'.repeat(200_000), { fin: false }),
          encodeFrame(Opcode.continuation, Buffer.alloc(0), { declaredLength: 100_000, headerOnly: true }),
        ]),
      1009,
    ],
  ];

  test('each gets its close code (1002, 1007, 1003, 1009), the room counts them out, and the service stays healthy', async (t) => {
    const roster = await hardened(t);
    const observers = await clients(t, roster, 2);
    const raws = await Promise.all(violations.map(() => RawClient.connect(roster.running.wsPort)));
    t.after(() => raws.forEach((raw) => raw.destroy()));
    await roomSettles(roster.running, 2 + violations.length);

    const codes = await Promise.all(
      violations.map(async ([name, bytes], i) => {
        const raw = raws[i]!;
        await raw.write(bytes());
        const { code, frame } = await raw
          .closeFrame(5000)
          .catch((error: Error) => assert.fail(`${name}: ${error.message}`));
        assert.equal(frame.masked, false, name);
        await raw.send(Opcode.close, closePayload(code ?? 1000)).catch(() => {});
        await raw.serverClosed(5000);
        return [name, code];
      }),
    );
    assert.deepEqual(
      codes,
      violations.map(([name, , code]) => [name, code]),
    );
    await roomSettles(roster.running, 2);
    const leaves = await Promise.all(
      observers.map((observer) =>
        within(
          (async () => {
            let last = 0;
            for (let i = 0; i < violations.length; i++)
              last = (await observer.next((m) => m.type === 'user_leave')).online_count;
            return last;
          })(),
          5000,
          'every user_leave',
        ),
      ),
    );
    assert.deepEqual(leaves, [2, 2]);
    // None of the bad frames was broadcast.
    await barrier(observers[0]!, observers);
    for (const observer of observers)
      assert.deepEqual(
        observer.messages.filter((m) => m.type === 'chat'),
        [],
      );
    await assertWelcomeCount(roster, 3);
    await roster.check();
  });
});
