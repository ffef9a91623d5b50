/**
 * The chat endpoint on the wire, over raw `node:net` sockets: the RFC 6455 handshake written by hand,
 * frames encoded and decoded by `./frames.ts`, and the close codes the server owes to bad frames.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import {
  acceptFor,
  ChatClient,
  closePayload,
  crowd,
  encodeFrame,
  Opcode,
  RawClient,
  Scope,
  textMessage,
  TIMESTAMP,
  UUID_LIKE,
  type EncodeOptions,
  type Frame,
} from '../support/index.js';

async function scoped(t: TestContext, env: Record<string, string> = {}): Promise<Scope> {
  const scope = await Scope.start(env);
  t.after(() => scope.dispose());
  return scope;
}

/** Server frames are never masked and never use reserved bits. */
function assertServerFrame(frame: Frame): void {
  assert.equal(frame.masked, false, 'server frames are unmasked');
  assert.equal(frame.rsv, 0, 'no reserved bits');
}

/** The shortest length form for a payload of `length` bytes (RFC 6455 5.2: minimal encoding). */
function formFor(length: number): 7 | 16 | 64 {
  return length < 126 ? 7 : length < 0x10000 ? 16 : 64;
}

describe('handshake', () => {
  test('101 Switching Protocols with Upgrade, Connection and the right Sec-WebSocket-Accept', async (t) => {
    const scope = await scoped(t);
    const raw = scope.track(await RawClient.open(scope.port, { path: '/chat' }));
    assert.equal(raw.head.status, 101);
    assert.match(raw.head.statusLine, /^HTTP\/1\.1 101 Switching Protocols$/);
    assert.equal(raw.head.headers.upgrade?.toLowerCase(), 'websocket');
    assert.ok(
      raw.head.headers.connection
        ?.toLowerCase()
        .split(/\s*,\s*/)
        .includes('upgrade'),
      raw.head.headers.connection,
    );
    assert.equal(raw.head.headers['sec-websocket-accept'], acceptFor(raw.key));
    const welcome = await raw.nextMessage((m) => m.type === 'system');
    assert.match(String(welcome.timestamp), TIMESTAMP);
    for (const frame of raw.frames) assertServerFrame(frame);
  });

  test('the accept value for the RFC 6455 sample key', async (t) => {
    const scope = await scoped(t);
    assert.equal(acceptFor('dGhlIHNhbXBsZSBub25jZQ=='), 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
    const raw = scope.track(await RawClient.open(scope.port, { key: 'dGhlIHNhbXBsZSBub25jZQ==' }));
    assert.equal(raw.head.status, 101);
    assert.equal(raw.head.headers['sec-websocket-accept'], 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=');
  });

  test('header names and values are case-insensitive; no extension is negotiated', async (t) => {
    const scope = await scoped(t);
    const raw = scope.track(
      await RawClient.open(scope.port, {
        headers: {
          Upgrade: 'WebSocket',
          Connection: 'keep-alive, Upgrade',
          'Sec-WebSocket-Extensions': 'permessage-deflate; client_max_window_bits',
        },
      }),
    );
    assert.equal(raw.head.status, 101);
    assert.equal(raw.head.headers['sec-websocket-accept'], acceptFor(raw.key));
    assert.equal(raw.head.headers['sec-websocket-extensions'], undefined, 'compression is off, so RSV1 stays reserved');
    await raw.nextMessage((m) => m.type === 'system');
  });
});

describe('pipelining', () => {
  test('a frame sent in the same packet as the handshake is processed after the welcome', async (t) => {
    const scope = await scoped(t);
    const trailing = encodeFrame(Opcode.text, JSON.stringify({ type: 'chat', message: 'right behind the handshake' }));
    const raw = scope.track(await RawClient.open(scope.port, { trailing }));
    assert.equal(raw.head.status, 101);
    await raw.nextMessage((m) => m.type === 'system');
    assert.equal((await raw.nextMessage((m) => m.type === 'chat')).message, 'right behind the handshake');
    const types = raw.frames.map((f) => textMessage(f).type);
    assert.deepEqual(types, ['system', 'chat'], 'welcome first');
  });
});

describe('bursts (writes are framed once and coalesced per event-loop turn)', () => {
  test('300 chats in one TCP write reach every member whole and in order, among pings and a ping reply', async (t) => {
    const scope = await scoped(t);
    const observers = await crowd(scope, 3);
    const raw = await scope.raw();
    for (const observer of observers) await observer.next((m) => m.online_count === 4);
    const burst: Buffer[] = [];
    for (let i = 0; i < 300; i++) {
      burst.push(encodeFrame(Opcode.text, JSON.stringify({ type: 'chat', message: `m${i} ${'x'.repeat(i * 7)}` })));
      if (i % 100 === 50)
        burst.push(encodeFrame(Opcode.ping, 'probe'), encodeFrame(Opcode.text, JSON.stringify({ type: 'ping' })));
    }
    raw.socket.write(Buffer.concat(burst));
    const isLast = (m: { type: string; message?: string }) => m.type === 'chat' && m.message?.startsWith('m299 ');
    for (let waited = 0; !observers.every((o) => o.messages.some(isLast)); waited += 10) {
      assert.ok(waited < 10_000, 'every observer gets the last chat within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    for (const observer of observers) {
      const chats = observer.messages.filter((m) => m.type === 'chat').map((m) => m.message.split(' ')[0]);
      assert.deepEqual(
        chats,
        Array.from({ length: 300 }, (_, i) => `m${i}`),
      );
    }
    await raw.nextMessage((m) => m.type === 'chat' && String(m.message).startsWith('m299 '));
    // The sender sees its own chats in order, with its pongs (protocol and application) among them.
    const kinds = raw.frames.map((f) => (f.opcode === Opcode.pong ? 'PONG' : (textMessage(f).type as string)));
    assert.equal(kinds.filter((k) => k === 'PONG').length, 3);
    assert.equal(kinds.filter((k) => k === 'pong').length, 3);
    const own = raw.frames
      .filter((f) => f.opcode === Opcode.text)
      .map((f) => textMessage(f))
      .filter((m) => m.type === 'chat');
    assert.deepEqual(
      own.map((m) => String(m.message).split(' ')[0]),
      Array.from({ length: 300 }, (_, i) => `m${i}`),
    );
    assert.ok(
      own.every((m, i) => m.message === `m${i} ${'x'.repeat(i * 7)}`),
      'payloads intact',
    );
  });
});

describe('data frames', () => {
  test('7-bit, 16-bit and 64-bit payload lengths arrive intact, both ways', async (t) => {
    const scope = await scoped(t);
    const [observer] = (await crowd(scope, 1)) as [ChatClient];
    const raw = await scope.raw();
    await observer.next((m) => m.type === 'user_join');

    // JSON chats: the server decodes each length form and answers in the shortest form that fits.
    for (const [size, form] of [
      [10, 7],
      [1_000, 16],
      [70_000, 64],
      [200_000, 64],
    ] as const) {
      const message = 'abcdefghij'.repeat(size / 10);
      const frame = encodeFrame(Opcode.text, JSON.stringify({ type: 'chat', message }));
      const lengthByte = frame[1]! & 0x7f;
      assert.equal(lengthByte < 126 ? 7 : lengthByte === 126 ? 16 : 64, form, `sent the ${form}-bit length form`);
      await raw.write(frame);
      const echoed = await raw.next((f) => f.opcode === Opcode.text && textMessage(f).type === 'chat');
      raw.frames.splice(raw.frames.indexOf(echoed), 1);
      assertServerFrame(echoed);
      assert.equal(echoed.fin, true);
      assert.equal(echoed.lengthForm, formFor(echoed.payload.length));
      assert.equal(echoed.lengthForm, form, 'the broadcast needs the same length form');
      const parsed = textMessage(echoed);
      assert.equal(parsed.message, message, `${size}-character message intact on the raw sender`);
      assert.match(String(parsed.from), UUID_LIKE);
      const seen = await observer.next((m) => m.type === 'chat');
      assert.equal(seen.message, message, `${size}-character message intact on the ws observer`);
    }
  });

  test('payload lengths at the form boundaries (125, 126, 65535, 65536 bytes)', async (t) => {
    const scope = await scoped(t);
    const raw = await scope.raw();
    // Text that is not JSON is broadcast verbatim, so the payload size is exactly the text size.
    for (const size of [0, 1, 125, 126, 127, 65_535, 65_536, 65_537]) {
      const text = 'y'.repeat(size);
      const frame = encodeFrame(Opcode.text, text);
      assert.equal(frame.length, 2 + (size < 126 ? 0 : size < 0x10000 ? 2 : 8) + 4 + size);
      await raw.write(frame);
      const echoed = await raw.next((f) => f.opcode === Opcode.text && textMessage(f).type === 'chat');
      raw.frames.splice(raw.frames.indexOf(echoed), 1);
      assertServerFrame(echoed);
      assert.equal(echoed.lengthForm, formFor(echoed.payload.length));
      assert.equal(textMessage(echoed).message, text, `${size} bytes`);
    }
  });

  test('a frame written a few bytes at a time is reassembled', async (t) => {
    const scope = await scoped(t);
    const raw = await scope.raw();
    const frame = encodeFrame(Opcode.text, JSON.stringify({ type: 'chat', message: 'z'.repeat(300) }));
    for (let i = 0; i < frame.length; i += i < 16 ? 1 : 97) {
      await raw.write(frame.subarray(i, i < 16 ? i + 1 : i + 97));
      await new Promise((resolve) => setImmediate(resolve));
    }
    assert.equal((await raw.nextMessage((m) => m.type === 'chat')).message, 'z'.repeat(300));
  });

  test('a fragmented message (text + continuations) is reassembled, with a ping in between', async (t) => {
    const scope = await scoped(t);
    const [observer] = (await crowd(scope, 1)) as [ChatClient];
    const raw = await scope.raw();
    const message = `fragments: ${'€'.repeat(50)} end`;
    const bytes = Buffer.from(JSON.stringify({ type: 'chat', message }), 'utf8');
    // Cut inside a three-byte "€": UTF-8 is checked per message, not per fragment.
    const cut1 = bytes.indexOf(Buffer.from('€')) + 1;
    const cut2 = Math.floor(bytes.length * 0.7);
    await raw.send(Opcode.text, bytes.subarray(0, cut1), { fin: false });
    await raw.send(Opcode.ping, 'mid-message');
    await raw.send(Opcode.continuation, bytes.subarray(cut1, cut2), { fin: false });
    await raw.send(Opcode.continuation, bytes.subarray(cut2), { fin: true });
    const pong = await raw.next((f) => f.opcode === Opcode.pong);
    assert.equal(pong.payload.toString(), 'mid-message');
    assert.equal((await raw.nextMessage((m) => m.type === 'chat')).message, message);
    assert.equal((await observer.next((m) => m.type === 'chat')).message, message);
  });

  test('a protocol ping gets a pong with the same payload', async (t) => {
    const scope = await scoped(t);
    const raw = await scope.raw();
    for (const payload of [
      Buffer.alloc(0),
      Buffer.from('hello'),
      Buffer.from([0, 255, 1, 254]),
      Buffer.alloc(125, 7),
    ]) {
      await raw.send(Opcode.ping, payload);
      const pong = await raw.next((f) => f.opcode === Opcode.pong);
      raw.frames.splice(raw.frames.indexOf(pong), 1);
      assertServerFrame(pong);
      assert.equal(pong.fin, true);
      assert.deepEqual(pong.payload, payload);
    }
    // An unsolicited pong is allowed and ignored: the connection stays usable.
    await raw.send(Opcode.pong, 'unsolicited');
    await raw.sendJson({ type: 'ping' });
    await raw.nextMessage((m) => m.type === 'pong');
  });

  test('a client close gets a close reply with the same code and the connection ends', async (t) => {
    const scope = await scoped(t);
    const [observer] = (await crowd(scope, 1)) as [ChatClient];
    const raw = await scope.raw();
    await observer.next((m) => m.type === 'user_join');
    await raw.send(Opcode.close, closePayload(1000, 'bye'));
    const { code, frame } = await raw.closeFrame();
    assertServerFrame(frame);
    assert.equal(code, 1000);
    await raw.serverClosed();
    assert.equal((await observer.next((m) => m.type === 'user_leave')).online_count, 1);
  });
});

interface Violation {
  name: string;
  /** The frames (or bytes) that break the protocol, sent after the handshake. */
  bytes: () => Buffer;
  code: number;
}

const text = (payload: Buffer | string, options: EncodeOptions = {}) => encodeFrame(Opcode.text, payload, options);

const violations: Violation[] = [
  { name: 'an unmasked client frame', bytes: () => text('{"type":"ping"}', { mask: false }), code: 1002 },
  { name: 'RSV1 set (no extension negotiated)', bytes: () => text('x', { rsv1: true }), code: 1002 },
  { name: 'RSV2 set', bytes: () => text('x', { rsv2: true }), code: 1002 },
  { name: 'RSV3 set', bytes: () => text('x', { rsv3: true }), code: 1002 },
  { name: 'a ping with a 126-byte payload', bytes: () => encodeFrame(Opcode.ping, Buffer.alloc(126)), code: 1002 },
  {
    name: 'a close with a 126-byte payload',
    bytes: () => encodeFrame(Opcode.close, closePayload(1000, 'r'.repeat(124))),
    code: 1002,
  },
  { name: 'a fragmented ping (FIN=0)', bytes: () => encodeFrame(Opcode.ping, 'a', { fin: false }), code: 1002 },
  { name: 'unknown data opcode 0x3', bytes: () => encodeFrame(0x3, 'x'), code: 1002 },
  { name: 'unknown control opcode 0xB', bytes: () => encodeFrame(0xb, 'x'), code: 1002 },
  { name: 'a continuation with nothing to continue', bytes: () => encodeFrame(Opcode.continuation, 'x'), code: 1002 },
  {
    name: 'a new text frame inside a fragmented message',
    bytes: () => Buffer.concat([text('{"type":', { fin: false }), text('"chat"}')]),
    code: 1002,
  },
  { name: 'a close frame with a 1-byte payload', bytes: () => encodeFrame(Opcode.close, Buffer.from([3])), code: 1002 },
  {
    name: 'a close frame with an invalid code (999)',
    bytes: () => encodeFrame(Opcode.close, closePayload(999)),
    code: 1002,
  },
  {
    name: 'a close frame with the reserved code 1005',
    bytes: () => encodeFrame(Opcode.close, closePayload(1005)),
    code: 1002,
  },
  { name: 'a close frame with code 5000', bytes: () => encodeFrame(Opcode.close, closePayload(5000)), code: 1002 },
  { name: 'invalid UTF-8 (0xFF)', bytes: () => text(Buffer.from([0x68, 0xff, 0x69])), code: 1007 },
  { name: 'invalid UTF-8 (overlong "/")', bytes: () => text(Buffer.from([0xc0, 0xaf])), code: 1007 },
  { name: 'invalid UTF-8 (UTF-16 surrogate)', bytes: () => text(Buffer.from([0xed, 0xa0, 0x80])), code: 1007 },
  { name: 'invalid UTF-8 (truncated sequence)', bytes: () => text(Buffer.from([0x61, 0xe2, 0x82])), code: 1007 },
  {
    name: 'invalid UTF-8 across fragments',
    bytes: () =>
      Buffer.concat([
        text(Buffer.from([0x61, 0xe2]), { fin: false }),
        encodeFrame(Opcode.continuation, Buffer.from([0x28, 0x61])),
      ]),
    code: 1007,
  },
  {
    name: 'invalid UTF-8 in a close reason',
    bytes: () => encodeFrame(Opcode.close, Buffer.concat([closePayload(1000), Buffer.from([0xff])])),
    code: 1007,
  },
  { name: 'a binary frame', bytes: () => encodeFrame(Opcode.binary, Buffer.from([1, 2, 3])), code: 1003 },
];

describe('bad frames close the connection with the right code; others are unaffected', () => {
  let scope: Scope;
  let observer: ChatClient;
  before(async () => {
    scope = await Scope.start();
    [observer] = (await crowd(scope, 1)) as [ChatClient];
  });
  after(() => scope.dispose());

  for (const violation of violations) {
    test(`${violation.name} -> ${violation.code}`, async () => {
      const raw = await scope.raw();
      assert.equal((await observer.next((m) => m.type === 'user_join')).online_count, 2);
      await raw.write(violation.bytes());
      const { code, frame } = await raw.closeFrame();
      assertServerFrame(frame);
      assert.equal(frame.fin, true);
      assert.equal(code, violation.code);
      // Answer the close as a well-behaved client would; the server then ends the TCP connection.
      await raw.send(Opcode.close, closePayload(violation.code)).catch(() => {});
      await raw.serverClosed();
      const index = raw.frames.indexOf(frame);
      assert.deepEqual(raw.frames.slice(index + 1), [], 'nothing after the close frame');
      assert.equal((await observer.next((m) => m.type === 'user_leave')).online_count, 1);
      assert.equal(await scope.roomSize(), 1);
    });
  }

  test('the observer kept working through all of it', async () => {
    observer.send({ type: 'ping' });
    await observer.next((m) => m.type === 'pong');
    assert.equal(observer.ws.readyState, observer.ws.OPEN);
  });
});

describe('message size limit (WS_MAX_PAYLOAD=65536)', () => {
  let scope: Scope;
  before(async () => {
    scope = await Scope.start({ WS_MAX_PAYLOAD: '65536' });
  });
  after(() => scope.dispose());

  test('a header declaring 70000 bytes gets 1009 before any payload is sent', async () => {
    const raw = await scope.raw();
    await raw.write(encodeFrame(Opcode.text, Buffer.alloc(0), { declaredLength: 70_000, headerOnly: true }));
    const { code } = await raw.closeFrame();
    assert.equal(code, 1009);
    await raw.serverClosed();
  });

  test('a fragmented message whose total goes over the limit gets 1009 at the second header', async () => {
    const raw = await scope.raw();
    await raw.write(text('x'.repeat(40_000), { fin: false }));
    await raw.write(encodeFrame(Opcode.continuation, Buffer.alloc(0), { declaredLength: 40_000, headerOnly: true }));
    const { code } = await raw.closeFrame();
    assert.equal(code, 1009);
    await raw.serverClosed();
  });

  test('a 64-bit length with the most significant bit set is refused (1009 or 1002) without waiting for data', async () => {
    const raw = await scope.raw();
    const header = encodeFrame(Opcode.text, Buffer.alloc(0), { declaredLength: 70_000, headerOnly: true });
    header[2] = header[2]! | 0x80; // 2^63 + 70000
    await raw.write(header);
    const { code } = await raw.closeFrame();
    assert.ok(code === 1009 || code === 1002, `close code ${code}`);
    await raw.serverClosed();
  });

  test('a message of exactly the limit is accepted and broadcast', async () => {
    const raw = await scope.raw();
    const exact = 'q'.repeat(65_536);
    await raw.write(text(exact));
    assert.equal((await raw.nextMessage((m) => m.type === 'chat')).message, exact);
    await raw.send(Opcode.close, closePayload(1000));
    await raw.closeFrame();
  });
});

describe('after the server has closed a connection (1003) and waits for the close reply', () => {
  // A connection Roster closes is out of the room at once, even while the peer has not answered the
  // close: its later frames are not chat, and it no longer counts as online.
  test('its later text frames are not broadcast', async (t) => {
    const scope = await scoped(t);
    const [observer] = (await crowd(scope, 1)) as [ChatClient];
    const raw = await scope.raw();
    await observer.next((m) => m.type === 'user_join');
    await raw.write(
      Buffer.concat([
        encodeFrame(Opcode.binary, Buffer.from([1, 2])),
        encodeFrame(Opcode.text, JSON.stringify({ type: 'chat', message: 'ghost' })),
      ]),
    );
    assert.equal((await raw.closeFrame()).code, 1003);
    observer.send({ type: 'chat', message: 'barrier' });
    await observer.next((m) => m.message === 'barrier');
    assert.deepEqual(
      observer.messages.filter((m) => m.type === 'chat'),
      [],
      'a chat from a connection already closed with 1003 reached the room',
    );
  });

  test('it no longer counts as online, and the others hear user_leave at once', async (t) => {
    const scope = await scoped(t);
    const [observer] = (await crowd(scope, 1)) as [ChatClient];
    const raw = await scope.raw();
    await observer.next((m) => m.type === 'user_join');
    await raw.send(Opcode.binary, Buffer.from([1]));
    assert.equal((await raw.closeFrame()).code, 1003);
    // The raw client never answers the close.
    assert.equal((await observer.next((m) => m.type === 'user_leave')).online_count, 1);
    await scope.client();
    const join = await observer.next((m) => m.type === 'user_join');
    assert.equal(join.online_count, 2, 'observer + newcomer; the closed connection is not open');
  });
});
