/**
 * The chat endpoint's limits and refusals (docs/decisions.md, "Chat"): non-conforming handshakes, the
 * connection limit, the protocol heartbeat, slow consumers, the message size limit and graceful stop.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { describe, test, type TestContext } from 'node:test';
import { WebSocket } from 'ws';
import { loadConfig } from '../../src/config/index.js';
import {
  barrier,
  ChatClient,
  closeOf,
  closePayload,
  crowd,
  handshakeRequest,
  Opcode,
  pings,
  RawClient,
  rawHttp,
  Scope,
  within,
  type HttpExchange,
} from '../support/index.js';

async function scoped(t: TestContext, env: Record<string, string> = {}): Promise<Scope> {
  const scope = await Scope.start(env);
  t.after(() => scope.dispose());
  return scope;
}

/** The error envelope of the contract, with the given status and (when given) code. */
function assertErrorEnvelope(response: HttpExchange, code?: string): void {
  assert.match(response.headers['content-type'] ?? '', /^application\/json/);
  const body = JSON.parse(response.body) as { status?: unknown; error?: { code?: unknown; message?: unknown } };
  assert.equal(body.status, 'error');
  assert.equal(typeof body.error?.code, 'string');
  assert.equal(typeof body.error?.message, 'string');
  if (code !== undefined) assert.equal(body.error?.code, code);
}

/** Opens a `ws` client that is expected to be refused; resolves with the HTTP status and body. */
async function refusedHandshake(url: string): Promise<{ status: number; body: string }> {
  const ws = new WebSocket(url);
  ws.on('error', () => {});
  const outcome = await within(
    Promise.race([
      once(ws, 'unexpected-response').then(([, response]) => response as IncomingMessage),
      once(ws, 'open').then(() => undefined),
    ]),
    3000,
    'the handshake outcome',
  );
  if (outcome === undefined) {
    ws.terminate();
    assert.fail('the handshake was accepted');
  }
  let body = '';
  outcome.setEncoding('utf8');
  for await (const chunk of outcome) body += chunk as string;
  ws.terminate();
  return { status: outcome.statusCode ?? 0, body };
}

describe('handshake refusals: prompt HTTP errors in the error envelope', () => {
  // A hang would be bounded only by the 10 s handshake timeout; every refusal must come at once.
  const PROMPT_MS = 1000;

  test('no Sec-WebSocket-Key -> 400', async (t) => {
    const scope = await scoped(t);
    const response = await rawHttp(
      scope.port,
      handshakeRequest(scope.port, { headers: { 'Sec-WebSocket-Key': null } }).text,
    );
    assert.equal(response.status, 400);
    assertErrorEnvelope(response);
    assert.ok(response.elapsedMs < PROMPT_MS, `${response.elapsedMs} ms`);
    assert.equal(response.closedByServer, true);
    assert.equal(await scope.roomSize(), 0);
  });

  test('Sec-WebSocket-Version: 8 -> 426 with Sec-WebSocket-Version: 13', async (t) => {
    const scope = await scoped(t);
    const response = await rawHttp(
      scope.port,
      handshakeRequest(scope.port, { headers: { 'Sec-WebSocket-Version': '8' } }).text,
    );
    assert.equal(response.status, 426);
    assert.equal(response.headers['sec-websocket-version'], '13');
    assertErrorEnvelope(response);
    assert.ok(response.elapsedMs < PROMPT_MS, `${response.elapsedMs} ms`);
    assert.equal(response.closedByServer, true);
  });

  test('no Sec-WebSocket-Version at all -> 426', async (t) => {
    const scope = await scoped(t);
    const response = await rawHttp(
      scope.port,
      handshakeRequest(scope.port, { headers: { 'Sec-WebSocket-Version': null } }).text,
    );
    assert.equal(response.status, 426);
    assert.equal(response.headers['sec-websocket-version'], '13');
    assertErrorEnvelope(response);
  });

  test('an HTTP/1.0 upgrade request -> 400 (RFC 6455 asks for HTTP/1.1)', async (t) => {
    const scope = await scoped(t);
    const request = handshakeRequest(scope.port).text.replace(' HTTP/1.1\r\n', ' HTTP/1.0\r\n');
    const response = await rawHttp(scope.port, request);
    assert.equal(response.status, 400);
    assertErrorEnvelope(response);
    assert.equal(await scope.roomSize(), 0);
  });

  test('a HEAD request -> 400 with the headers only (HTTP forbids a body on a reply to HEAD)', async (t) => {
    const scope = await scoped(t);
    // Read raw bytes for a moment: a body would follow the blank line that ends the head.
    const socket = connect(scope.port, '127.0.0.1');
    socket.write(`HEAD / HTTP/1.1\r\nHost: 127.0.0.1:${scope.port}\r\n\r\n`);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    await new Promise((resolve) => setTimeout(resolve, 300));
    socket.destroy();
    assert.match(received, /^HTTP\/1\.1 400 /);
    assert.match(received, /content-type: application\/json; charset=utf-8\r\n/i);
    assert.ok(received.endsWith('\r\n\r\n'), `nothing after the head: ${JSON.stringify(received)}`);
  });

  test('a plain GET without Upgrade -> 400', async (t) => {
    const scope = await scoped(t);
    const response = await rawHttp(scope.port, `GET / HTTP/1.1\r\nHost: 127.0.0.1:${scope.port}\r\n\r\n`);
    assert.equal(response.status, 400);
    assertErrorEnvelope(response);
    assert.ok(response.elapsedMs < PROMPT_MS, `${response.elapsedMs} ms`);
    // The same through fetch.
    const viaFetch = await fetch(`http://127.0.0.1:${scope.port}/chat`);
    assert.equal(viaFetch.status, 400);
    const body = (await viaFetch.json()) as { status: string; error: { code: string; message: string } };
    assert.equal(body.status, 'error');
    assert.equal(typeof body.error.code, 'string');
    assert.equal(typeof body.error.message, 'string');
  });

  test('Upgrade: websocket without Connection: Upgrade -> 400', async (t) => {
    const scope = await scoped(t);
    const response = await rawHttp(
      scope.port,
      handshakeRequest(scope.port, { headers: { Connection: 'keep-alive' } }).text,
    );
    assert.equal(response.status, 400);
    assertErrorEnvelope(response);
    assert.ok(response.elapsedMs < PROMPT_MS, `${response.elapsedMs} ms`);
  });

  test('a POST with the upgrade headers -> 400', async (t) => {
    const scope = await scoped(t);
    const response = await rawHttp(scope.port, handshakeRequest(scope.port, { method: 'POST' }).text);
    assert.equal(response.status, 400);
    assertErrorEnvelope(response);
    assert.ok(response.elapsedMs < PROMPT_MS, `${response.elapsedMs} ms`);
  });

  test('a malformed Sec-WebSocket-Key -> 400 in the envelope too', async (t) => {
    const scope = await scoped(t);
    for (const key of ['not-a-16-byte-nonce', 'dGhlIHNhbXBsZSBub25jZQ', 'AAAAAAAAAAAAAAAAAAAAAAAAAAA=']) {
      const response = await rawHttp(scope.port, handshakeRequest(scope.port, { key }).text);
      assert.equal(response.status, 400, key);
      assertErrorEnvelope(response);
      assert.ok(response.elapsedMs < PROMPT_MS, `${response.elapsedMs} ms`);
    }
  });

  test('bytes that are not HTTP -> 400', async (t) => {
    const scope = await scoped(t);
    const response = await rawHttp(scope.port, 'HELLO THERE\r\n\r\n');
    assert.equal(response.status, 400);
    assertErrorEnvelope(response);
    assert.ok(response.elapsedMs < PROMPT_MS, `${response.elapsedMs} ms`);
  });

  test('refused handshakes do not join the room', async (t) => {
    const scope = await scoped(t);
    const [a] = (await crowd(scope, 1)) as [ChatClient];
    await rawHttp(scope.port, handshakeRequest(scope.port, { headers: { 'Sec-WebSocket-Key': null } }).text);
    await rawHttp(scope.port, handshakeRequest(scope.port, { headers: { 'Sec-WebSocket-Version': '8' } }).text);
    await barrier(a, [a]);
    assert.deepEqual(a.messages, []);
    assert.equal(await scope.roomSize(), 1);
  });
});

describe('connection limit (WS_MAX_CONNECTIONS=3)', () => {
  test('the 4th handshake gets 503; after one leaves a new one is accepted', async (t) => {
    // Every client here is 127.0.0.1: the per-address cap (a quarter of the port's cap by default)
    // is off, so that the port's own cap is what refuses.
    const scope = await scoped(t, { WS_MAX_CONNECTIONS: '3', MAX_CONNECTIONS_PER_ADDRESS: '0' });
    const [a, b, c] = (await crowd(scope, 3)) as [ChatClient, ChatClient, ChatClient];

    const refused = await refusedHandshake(scope.wsUrl);
    assert.equal(refused.status, 503);
    const body = JSON.parse(refused.body) as { status: string; error: { code: string; message: string } };
    assert.equal(body.status, 'error');
    assert.equal(typeof body.error.code, 'string');
    assert.equal(typeof body.error.message, 'string');

    // A raw handshake is refused the same way, promptly, and nobody hears of it.
    const raw = await rawHttp(scope.port, handshakeRequest(scope.port).text);
    assert.equal(raw.status, 503);
    await barrier(a, [a, b, c]);
    for (const x of [a, b, c]) assert.deepEqual(x.messages, []);

    await within(c.close(), 3000, 'the close handshake');
    for (const x of [a, b]) assert.equal((await x.next((m) => m.type === 'user_leave')).online_count, 2);
    const d = await scope.client();
    for (const x of [a, b]) assert.equal((await x.next((m) => m.type === 'user_join')).online_count, 3);
    assert.equal(d.ws.readyState, WebSocket.OPEN);
    assert.equal((await refusedHandshake(scope.wsUrl)).status, 503);
  });
});

describe('connection limit under concurrent handshakes (WS_MAX_CONNECTIONS=3)', () => {
  test('of 8 simultaneous handshakes exactly 3 are accepted and 5 get 503', async (t) => {
    // Every client here is 127.0.0.1: the per-address cap (a quarter of the port's cap by default)
    // is off, so that the port's own cap is what refuses.
    const scope = await scoped(t, { WS_MAX_CONNECTIONS: '3', MAX_CONNECTIONS_PER_ADDRESS: '0' });
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const ws = scope.socket();
        const [event, response] = (await within(
          Promise.race([
            once(ws, 'open').then(() => ['open']),
            once(ws, 'unexpected-response').then(([, res]) => ['refused', res as IncomingMessage]),
          ]),
          3000,
          'the handshake outcome',
        )) as [string, IncomingMessage?];
        if (event === 'refused') {
          response!.resume();
          return response!.statusCode;
        }
        return 101;
      }),
    );
    assert.deepEqual(
      outcomes.sort((a, b) => (a ?? 0) - (b ?? 0)),
      [101, 101, 101, 503, 503, 503, 503, 503],
    );
    assert.equal(await scope.roomSize(), 3);
  });
});

describe('heartbeat (WS_HEARTBEAT_MS=100)', () => {
  test('a peer that never answers pings is terminated; a normal one stays across several intervals', async (t) => {
    const scope = await scoped(t, { WS_HEARTBEAT_MS: '100' });
    const [normal] = (await crowd(scope, 1)) as [ChatClient];
    const mute = scope.socket({ autoPong: false });
    const mutePinged = pings(mute, 1);
    await within(once(mute, 'open'), 3000, 'the open');
    assert.equal((await normal.next((m) => m.type === 'user_join')).online_count, 2);
    await mutePinged;

    const { code } = await within(closeOf(mute), 3000, 'the mute client to be terminated');
    assert.equal(code, 1006, 'terminated, no close handshake');
    assert.equal((await normal.next((m) => m.type === 'user_leave')).online_count, 1);

    // The normal client keeps answering and keeps its place over four more intervals.
    await pings(normal.ws, 4);
    assert.equal(normal.ws.readyState, WebSocket.OPEN);
    normal.send({ type: 'ping' });
    await normal.next((m) => m.type === 'pong');
    assert.deepEqual(normal.messages, []);
    assert.equal(await scope.roomSize(), 1);
  });

  test('a raw client that answers pings by hand stays connected', async (t) => {
    const scope = await scoped(t, { WS_HEARTBEAT_MS: '100' });
    const raw = await scope.raw();
    let answered = 0;
    raw.socket.on('data', () => {
      for (const frame of raw.frames.splice(0)) {
        if (frame.opcode !== Opcode.ping) continue;
        answered++;
        void raw.send(Opcode.pong, frame.payload).catch(() => {});
      }
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${answered} pings answered`)), 3000);
      const check = setInterval(() => {
        if (answered < 3) return;
        clearInterval(check);
        clearTimeout(timer);
        resolve();
      }, 20);
    });
    assert.equal(raw.ended, false);
    assert.equal(await scope.roomSize(), 1);
  });
});

// These two mostly wait on server timers, so they run side by side.
describe('peers Roster gives up on', { concurrency: true }, () => {
  test("a peer that never answers the 1003 close is disconnected within seconds, not ws's 30 s", async (t) => {
    const scope = await scoped(t);
    const raw = await scope.raw();
    const started = Date.now();
    await raw.send(Opcode.binary, Buffer.from([0]));
    assert.equal((await raw.closeFrame()).code, 1003);
    await raw.serverClosed(5000);
    assert.ok(Date.now() - started < 5000);
    assert.equal(await scope.roomSize(), 0);
  });

  test('slow consumer (WS_MAX_BACKLOG=65536): a reader that stops reading is dropped; the others get every message', async (t) => {
    const scope = await scoped(t, { WS_MAX_BACKLOG: '65536' });
    const [sender, reader] = (await crowd(scope, 2)) as [ChatClient, ChatClient];
    const slow = await scope.raw();
    for (const x of [sender, reader]) assert.equal((await x.next((m) => m.type === 'user_join')).online_count, 3);
    slow.socket.pause();

    // Count what the normal reader and the sender get, by the index at the start of each message;
    // the message bodies themselves are dropped as they come, to keep memory flat.
    const got = { reader: [] as number[], sender: [] as number[] };
    const counted = (ws: WebSocket, into: number[]) =>
      ws.on('message', (data) => {
        const m = JSON.parse(String(data)) as { type: string; message: string };
        if (m.type === 'chat') into.push(Number(m.message.slice(0, m.message.indexOf(':'))));
      });
    counted(reader.ws, got.reader);
    counted(sender.ws, got.sender);
    const forgetChats = (client: ChatClient) => {
      const kept = client.messages.filter((m) => m.type !== 'chat');
      client.messages.splice(0, client.messages.length, ...kept);
    };
    const chunk = 'k'.repeat(16 * 1024);
    let sent = 0;
    const sendBatches = async (batches: number) => {
      for (let b = 0; b < batches; b++) {
        for (let i = 0; i < 10; i++) sender.send({ type: 'chat', message: `${sent++}:${chunk}` });
        // Pace by the normal clients, so that only the paused one can fall behind.
        const last = `${sent - 1}:`;
        await Promise.all(
          [reader, sender].map((c) => c.next((m) => m.type === 'chat' && String(m.message).startsWith(last))),
        );
        forgetChats(reader);
        forgetChats(sender);
      }
    };

    // 640 x 16 KiB = 10 MiB: the kernel's loopback socket buffers absorb some MiB (about 4 MiB here)
    // before anything stays queued in the server, so 200 messages are not always enough.
    await sendBatches(64);
    // The slow one is closed (1013), and terminated when its close handshake cannot complete.
    const leave = await sender.next((m) => m.type === 'user_leave', 6000);
    assert.equal(leave.online_count, 2);
    assert.equal((await reader.next((m) => m.type === 'user_leave')).online_count, 2);
    assert.equal(await scope.roomSize(), 2);
    // Delivery goes on after the drop.
    await sendBatches(5);

    // The normal reader got every message, in order, and so did the sender.
    const all = Array.from({ length: sent }, (_, i) => i);
    assert.deepEqual(got.reader, all);
    assert.deepEqual(got.sender, all);

    // Once it reads again, the slow client finds its close frame (1013, or 1008) behind the backlog,
    // and the server ends the connection.
    slow.socket.resume();
    const { code } = await slow.closeFrame(5000);
    assert.ok(code === 1013 || code === 1008, `close code ${code}`);
    await slow.send(Opcode.close, closePayload(code!)).catch(() => {});
    await slow.serverClosed(3000);
    assert.equal(await scope.roomSize(), 2);
  });
});

describe('message size limit (default 256 KiB)', () => {
  test('a 256 KiB message is accepted; one byte more closes with 1009', async (t) => {
    const scope = await scoped(t);
    const [a, b] = (await crowd(scope, 2)) as [ChatClient, ChatClient];
    const limit = 256 * 1024;
    const exact = 'e'.repeat(limit);
    a.send(exact);
    assert.equal((await b.next((m) => m.type === 'chat')).message, exact);
    const closed = closeOf(a.ws);
    a.send('e'.repeat(limit + 1));
    assert.equal((await within(closed, 3000, 'the 1009 close')).code, 1009);
    assert.equal((await b.next((m) => m.type === 'user_leave')).online_count, 1);
  });

  test('configuration refuses a limit below 64 KiB (the 64-bit length form must work)', () => {
    assert.throws(() => loadConfig({ WS_MAX_PAYLOAD: '65535' }), /WS_MAX_PAYLOAD/);
    assert.equal(loadConfig({ WS_MAX_PAYLOAD: '64KiB' }).chat.maxPayload, 65_536);
    assert.equal(loadConfig({}).chat.maxPayload, 256 * 1024);
  });
});

describe('graceful stop', () => {
  test('a client that never answers the 1001 close is cut off at SHUTDOWN_TIMEOUT_MS', async () => {
    const scope = await Scope.start({ SHUTDOWN_TIMEOUT_MS: '300' });
    const raw = await scope.raw();
    const started = Date.now();
    try {
      const stopping = scope.running.stop();
      assert.equal((await raw.closeFrame()).code, 1001);
      // The raw client does not answer; stop() must still finish, and the socket must be closed.
      await within(stopping, 3000, 'stop()');
      const elapsed = Date.now() - started;
      assert.ok(elapsed >= 250 && elapsed < 2000, `stop() took ${elapsed} ms`);
      await raw.serverClosed();
    } finally {
      raw.destroy();
    }
  });

  test('stop() sends close code 1001 to every connected client', async () => {
    const scope = await Scope.start();
    let stopped = false;
    try {
      const clients = await crowd(scope, 3);
      const raw = await scope.raw();
      const closes = clients.map((c) => closeOf(c.ws));
      const stopping = scope.running.stop().then(() => {
        stopped = true;
      });
      const rawClose = await raw.closeFrame();
      assert.equal(rawClose.code, 1001);
      await raw.send(Opcode.close, closePayload(1001)).catch(() => {});
      for (const close of await within(Promise.all(closes), 3000, 'the 1001 closes')) assert.equal(close.code, 1001);
      await within(stopping, 3000, 'stop()');
      await raw.serverClosed();
      // The chat port no longer accepts connections.
      await assert.rejects(RawClient.open(scope.port));
    } finally {
      if (!stopped) await scope.dispose();
      else for (const client of scope.clients) client.ws.terminate();
    }
  });
});
