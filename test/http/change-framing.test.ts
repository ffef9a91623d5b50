/**
 * The change streams' bytes on the socket (change-streams.ts writes the fan-out's frames as one chunk it
 * frames itself, straight to each HTTP/1.1 stream's socket): read raw, over a real connection, the
 * chunked coding must hold (every size line the size of its data, the events whole inside the data),
 * and a client without it (HTTP/1.0) must get the same events unframed.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { eventually, request, rosterFor, type Running } from '../support/index.js';

/** A raw stream request from `since`, over HTTP/1.0 or 1.1; what the socket receives, as text. */
function rawStream(running: Running, since: string, version: '1.0' | '1.1'): { socket: Socket; text: () => string } {
  const socket = connect(running.port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.write(
    `GET /api/v1/users/changes?since=${since} HTTP/${version}\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n`,
  );
  return { socket, text: () => Buffer.concat(chunks).toString('utf8') };
}

/** The chunked body taken apart, each size checked against its data; the data, joined. */
function dechunk(body: string): string {
  const bytes = Buffer.from(body, 'utf8');
  let data = '';
  let at = 0;
  while (at < bytes.length) {
    const line = bytes.indexOf('\r\n', at);
    assert.ok(line > at, `a size line at byte ${at}`);
    const size = Number.parseInt(bytes.subarray(at, line).toString('latin1'), 16);
    assert.ok(Number.isInteger(size), `a hex size at byte ${at}: ${bytes.subarray(at, line).toString('latin1')}`);
    const end = line + 2 + size;
    assert.ok(end + 2 <= bytes.length, `the chunk at byte ${at} is whole (${size} bytes)`);
    assert.equal(bytes.subarray(end, end + 2).toString('latin1'), '\r\n', `CRLF after the chunk at byte ${at}`);
    data += bytes.subarray(line + 2, end).toString('utf8');
    at = end + 2;
  }
  return data;
}

const ids = (events: string) => [...events.matchAll(/^id: (\S+)$/gm)].map((match) => match[1]);

test('over HTTP/1.1 the fan-out is chunks whose sizes match their data; over HTTP/1.0, the same events unframed', async (t) => {
  const running = await rosterFor(t);
  const head = (await request(`${running.api}/users/changes`)).body.next as string;
  const epoch = head.split('.')[0]!;
  const first = Number(head.split('.')[1]);
  const streams = { '1.1': rawStream(running, head, '1.1'), '1.0': rawStream(running, head, '1.0') };
  t.after(() => Object.values(streams).forEach(({ socket }) => socket.destroy()));
  const opened = (text: string) => text.includes('\r\n\r\n') && text.includes('retry:');
  await eventually(async () => opened(streams['1.1'].text()) && opened(streams['1.0'].text()), 'both streams open');

  // Two fan-outs at least: a burst, then one more write after it has gone out.
  for (let n = 0; n < 5; n++)
    assert.equal(
      (await request(`${running.api}/users`, { method: 'POST', body: { name: `F${n}`, email: `f${n}@example.com` } }))
        .status,
      201,
    );
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.equal(
    (await request(`${running.api}/users`, { method: 'POST', body: { name: 'F5', email: 'f5@example.com' } })).status,
    201,
  );
  const expected = Array.from({ length: 6 }, (_, n) => `${epoch}.${first + n + 1}`);
  const bodyOf = (version: '1.0' | '1.1') => {
    const text = streams[version].text();
    return text.slice(text.indexOf('\r\n\r\n') + 4);
  };
  await eventually(
    async () => ids(dechunk(bodyOf('1.1'))).length === 6 && ids(bodyOf('1.0')).length === 6,
    'six events on each stream',
  );

  const head11 = streams['1.1'].text().split('\r\n\r\n')[0]!;
  assert.match(head11, /^HTTP\/1\.1 200 /);
  assert.match(head11, /^transfer-encoding: chunked$/im);
  const events11 = dechunk(bodyOf('1.1'));
  assert.deepEqual(ids(events11), expected);

  const head10 = streams['1.0'].text().split('\r\n\r\n')[0]!;
  assert.doesNotMatch(head10, /transfer-encoding/i);
  const events10 = bodyOf('1.0');
  assert.deepEqual(ids(events10), expected);
  // The same events, byte for byte, with and without the framing.
  assert.equal(events10, events11);
  assert.ok(events10.startsWith('retry: '), 'the body starts with the retry advice, no size line');
});
