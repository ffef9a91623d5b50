/**
 * The typed client's watch against a stand-in feed (a plain HTTP server speaking the feed's wire
 * format as each test plans), for what a healthy Roster does not do on demand: a stream that falls
 * silent (no heartbeat) is reopened from its last cursor, a 503 is waited out as its Retry-After says,
 * a `reset` event in the middle of a stream is handed over and followed from, and the framing may
 * arrive cut anywhere.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { createRosterClient, type WatchItem, type WatchState } from '../../src/protocol/index.js';
import { eventually, TEST_MS } from '../support/index.js';

type Handler = (request: IncomingMessage, response: ServerResponse, n: number) => void;

/** A stand-in feed on an ephemeral port; `handle` answers its n-th request. */
async function standIn(t: TestContext, handle: Handler): Promise<{ api: string; asked: IncomingMessage[] }> {
  const asked: IncomingMessage[] = [];
  const server = createServer((request, response) => handle(request, response, asked.push(request) - 1));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))));
  return { api: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`, asked };
}

const change = (seq: number) =>
  JSON.stringify({
    seq,
    cursor: `e.${seq}`,
    type: 'deleted',
    id: `id-${seq}`,
    user: null,
    etag: null,
    at: new Date(0).toISOString(),
  });
const event = (seq: number) => `id: e.${seq}\nevent: change\ndata: ${change(seq)}\n\n`;

function stream(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  response.write('retry: 2000\n\n');
}

function watch(api: string, since: string, idleMs?: number) {
  const items: WatchItem[] = [];
  const states: WatchState[] = [];
  const stop = new AbortController();
  const ended = (async () => {
    for await (const item of createRosterClient({ url: api }).watchUsers({
      since,
      signal: stop.signal,
      backoff: { initialMs: 20, maxMs: 100, jitter: 0 },
      onState: (state) => states.push(state),
      ...(idleMs === undefined ? {} : { idleMs }),
    }))
      items.push(item);
  })();
  ended.catch(() => undefined);
  const seqs = () => items.flatMap((item) => (item.kind === 'change' ? [item.change.seq] : []));
  return { items, states, stop, ended, seqs };
}

describe('watchUsers against a stand-in feed', () => {
  test('a stream silent past idleMs is reopened with Last-Event-ID', { timeout: TEST_MS }, async (t) => {
    const { api, asked } = await standIn(t, (_request, response, n) => {
      stream(response);
      response.write(event(n + 1)); // then silence: no heartbeat
    });
    const w = watch(api, 'e.0', 200);
    t.after(() => w.stop.abort());
    await eventually(() => w.seqs().length >= 2, 'a second connection after the silence');
    assert.deepEqual(w.seqs().slice(0, 2), [1, 2]);
    assert.equal(asked[0]!.headers['last-event-id'], 'e.0');
    assert.equal(asked[1]!.headers['last-event-id'], 'e.1');
    assert.equal(asked[1]!.headers.accept, 'text/event-stream');
    assert.ok(w.states.some((s) => s.state === 'retrying' && s.reason === 'the stream fell silent'));
  });

  test(
    'a 503 is tried again after its Retry-After; the framing may arrive cut anywhere',
    { timeout: TEST_MS },
    async (t) => {
      const { api } = await standIn(t, (_request, response, n) => {
        if (n === 0) {
          response.writeHead(503, { 'retry-after': '0', 'content-type': 'application/json' });
          return response.end('{"error":{"code":"SERVICE_UNAVAILABLE","message":"busy"}}');
        }
        stream(response);
        const text = event(1) + ': heartbeat\n\n' + event(2);
        let at = 0;
        const drip = setInterval(() => {
          response.write(text.slice(at, at + 7));
          at += 7;
          if (at >= text.length) clearInterval(drip);
        }, 1);
      });
      const w = watch(api, 'e.0');
      t.after(() => w.stop.abort());
      await eventually(() => w.seqs().length === 2, 'both events, read in pieces');
      assert.deepEqual(w.seqs(), [1, 2]);
      assert.deepEqual(w.states[0], { state: 'retrying', delayMs: 0, reason: 'the change feed answered 503' });
    },
  );

  test(
    'a 410 to the stream is a reset item too, followed from its Roster-Changes-Cursor',
    { timeout: TEST_MS },
    async (t) => {
      const { api, asked } = await standIn(t, (_request, response, n) => {
        if (n > 0) return stream(response);
        response.writeHead(410, { 'content-type': 'application/json', 'roster-changes-cursor': 'g.4' });
        response.end('{"status":"error","error":{"code":"CHANGES_RESET","message":"gone"}}');
      });
      const w = watch(api, 'e.0');
      t.after(() => w.stop.abort());
      await eventually(() => asked.length >= 2, 'the stream asked from the cursor named');
      assert.deepEqual(w.items, [{ kind: 'reset', cursor: 'g.4' }]);
      assert.equal(asked[1]!.headers['last-event-id'], 'g.4');
    },
  );

  test(
    'a reset event mid-stream is an item, and the next connection asks from its cursor',
    { timeout: TEST_MS },
    async (t) => {
      const { api, asked } = await standIn(t, (_request, response, n) => {
        stream(response);
        if (n === 0) response.end(`${event(1)}id: f.9\nevent: reset\ndata: {"next":"f.9"}\n\n`);
      });
      const w = watch(api, 'e.0');
      t.after(() => w.stop.abort());
      await eventually(() => asked.length >= 2, 'the reconnection');
      assert.deepEqual(w.items, [
        { kind: 'change', change: JSON.parse(change(1)) },
        { kind: 'reset', cursor: 'f.9' },
      ]);
      assert.equal(asked[1]!.headers['last-event-id'], 'f.9');
    },
  );
});
