/**
 * The chat's write path (chat/outbox.ts) on fake sockets: every payload goes out as one unmasked text
 * frame with the right length encoding, a broadcast is framed once for every socket, a batch is
 * written from any offset in one write, and each socket is corked for the turn and uncorked after it,
 * with the turn's frame count reported once.
 */
import assert from 'node:assert/strict';
import type { Duplex } from 'node:stream';
import { describe, test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Outbox } from '../../src/chat/outbox.js';

/** What a socket was asked to do, in order. */
class FakeSocket {
  readonly calls: string[] = [];
  readonly writes: Buffer[] = [];
  cork(): void {
    this.calls.push('cork');
  }
  uncork(): void {
    this.calls.push('uncork');
  }
  write(chunk: Buffer): boolean {
    this.calls.push('write');
    this.writes.push(chunk);
    return true;
  }
  get duplex(): Duplex {
    return this as unknown as Duplex;
  }
  get bytes(): Buffer {
    return Buffer.concat(this.writes);
  }
}

interface Frame {
  fin: boolean;
  opcode: number;
  masked: boolean;
  headerLength: number;
  payload: Buffer;
}

/** Reads back-to-back server frames (RFC 6455 §5.2); fails on a truncated one. */
function frames(bytes: Buffer): Frame[] {
  const out: Frame[] = [];
  let at = 0;
  while (at < bytes.length) {
    const first = bytes[at]!;
    const second = bytes[at + 1]!;
    let length = second & 0x7f;
    let headerLength = 2;
    if (length === 126) {
      length = bytes.readUInt16BE(at + 2);
      headerLength = 4;
    } else if (length === 127) {
      length = Number(bytes.readBigUInt64BE(at + 2));
      headerLength = 10;
    }
    assert.ok(at + headerLength + length <= bytes.length, 'a whole frame');
    out.push({
      fin: (first & 0x80) !== 0,
      opcode: first & 0x0f,
      masked: (second & 0x80) !== 0,
      headerLength,
      payload: bytes.subarray(at + headerLength, at + headerLength + length),
    });
    at += headerLength + length;
  }
  return out;
}

const payload = (size: number, fill = 'x') => Buffer.from(fill.repeat(size));

describe('Outbox', () => {
  // The three length encodings of RFC 6455, at their edges.
  const sizes: [size: number, headerLength: number][] = [
    [0, 2],
    [1, 2],
    [125, 2],
    [126, 4],
    [65_535, 4],
    [65_536, 10],
  ];
  for (const [size, headerLength] of sizes) {
    test(`a ${size}-byte payload is one final, unmasked text frame with a ${headerLength}-byte header`, async () => {
      const socket = new FakeSocket();
      new Outbox().write(socket.duplex, payload(size));
      await nextTurn();
      assert.deepEqual(
        frames(socket.bytes).map(({ fin, opcode, masked, headerLength: h, payload: p }) => ({
          fin,
          opcode,
          masked,
          h,
          size: p.length,
        })),
        [{ fin: true, opcode: 1, masked: false, h: headerLength, size }],
      );
      assert.deepEqual(frames(socket.bytes)[0]!.payload, payload(size));
    });
  }

  test('a broadcast is framed once: every socket gets the same frame buffer', () => {
    const outbox = new Outbox();
    const message = payload(300, 'b');
    const sockets = [new FakeSocket(), new FakeSocket(), new FakeSocket()];
    for (const socket of sockets) outbox.write(socket.duplex, message);
    assert.equal(sockets[1]!.writes[0], sockets[0]!.writes[0]);
    assert.equal(sockets[2]!.writes[0], sockets[0]!.writes[0]);
    // A different payload is framed anew.
    outbox.write(sockets[0]!.duplex, payload(300, 'c'));
    assert.notEqual(sockets[0]!.writes[1], sockets[0]!.writes[0]);
    assert.deepEqual(
      frames(sockets[0]!.bytes).map((frame) => frame.payload.toString()),
      ['b'.repeat(300), 'c'.repeat(300)],
    );
  });

  const batches: [name: string, sizes: number[], from: number][] = [
    ['a batch from its start', [3, 200, 70_000], 0],
    ['a batch from its middle', [3, 200, 70_000], 1],
    ['a batch from its last message', [3, 200, 70_000], 2],
    ['a batch of one', [10], 0],
  ];
  for (const [name, batchSizes, from] of batches) {
    test(`writeMany: ${name} goes out in one write, each message its own frame, in order`, () => {
      const outbox = new Outbox();
      const batch = batchSizes.map((size, i) => payload(size, String.fromCharCode(97 + i)));
      const socket = new FakeSocket();
      outbox.writeMany(socket.duplex, batch, from);
      assert.equal(socket.writes.length, 1);
      assert.deepEqual(
        frames(socket.bytes).map((frame) => frame.payload),
        batch.slice(from),
      );
    });
  }

  test('writeMany: sockets given the same batch from different offsets each get their own part of it', () => {
    const outbox = new Outbox();
    const batch = [payload(5, 'a'), payload(130, 'b'), payload(7, 'c')];
    const whole = new FakeSocket();
    const tail = new FakeSocket();
    outbox.writeMany(whole.duplex, batch, 0);
    outbox.writeMany(tail.duplex, batch, 2);
    assert.deepEqual(
      frames(whole.bytes).map((frame) => frame.payload.toString()),
      ['a'.repeat(5), 'b'.repeat(130), 'c'.repeat(7)],
    );
    assert.deepEqual(
      frames(tail.bytes).map((frame) => frame.payload.toString()),
      ['c'.repeat(7)],
    );
    // A view into the one framed buffer, where the third frame starts (headers of 2 and 4 bytes before it).
    assert.equal(tail.writes[0]!.buffer, whole.writes[0]!.buffer);
    assert.equal(tail.writes[0]!.byteOffset, whole.writes[0]!.byteOffset + 2 + 5 + 4 + 130);
  });

  test('a socket is corked at its first write of a turn, uncorked after the turn, and the turn’s frames are counted once', async () => {
    const flushes: number[] = [];
    const outbox = new Outbox((count) => flushes.push(count));
    const a = new FakeSocket();
    const b = new FakeSocket();
    assert.equal(outbox.isCorked(a.duplex), false);
    outbox.write(a.duplex, payload(1));
    outbox.write(a.duplex, payload(2));
    outbox.writeMany(b.duplex, [payload(1), payload(2), payload(3)], 1);
    assert.equal(outbox.isCorked(a.duplex), true);
    assert.equal(outbox.isCorked(b.duplex), true);
    assert.deepEqual(a.calls, ['cork', 'write', 'write'], 'corked once, not yet uncorked');
    assert.deepEqual(b.calls, ['cork', 'write']);
    assert.deepEqual(flushes, []);

    await nextTurn();
    assert.deepEqual(a.calls, ['cork', 'write', 'write', 'uncork']);
    assert.deepEqual(b.calls, ['cork', 'write', 'uncork']);
    assert.equal(outbox.isCorked(a.duplex), false);
    assert.deepEqual(flushes, [4], 'two frames to a, two to b');

    // The next turn starts over.
    outbox.write(a.duplex, payload(1));
    await nextTurn();
    assert.deepEqual(a.calls.slice(4), ['cork', 'write', 'uncork']);
    assert.deepEqual(flushes, [4, 1]);
  });
});
