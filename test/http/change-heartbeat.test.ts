/**
 * The change feed's stream keeps itself alive: `retry:` advice first, then a comment line every
 * heartbeat while no change comes (so that proxies and clients see the stream alive), and a change
 * still arrives as its event between them. Through a real HTTP server and client socket; the feed's
 * own period (15 s) is shortened through ChangeStreams' option, which the route leaves at its default.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, get, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import pino from 'pino';
import { ChangeStreams } from '../../src/http/change-streams.js';
import { HEARTBEAT_FRAME, RETRY_FRAME } from '../../src/http/change-json.js';
import { MemoryChangeLog } from '../../src/users/stores/memory/memory-changes.js';
import { eventually } from '../support/index.js';

test('a quiet stream gets a heartbeat comment each period, and a change between them', async (t) => {
  const log = new MemoryChangeLog();
  const streams = new ChangeStreams(log, { maxBacklog: 1 << 20, logger: pino({ level: 'silent' }), heartbeatMs: 100 });
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    void streams.open(res, 0, undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    streams.close();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  const response = await new Promise<IncomingMessage>((resolve, reject) =>
    get(`http://127.0.0.1:${port}/`, resolve).on('error', reject),
  );
  let text = '';
  response.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
  const beats = () => text.split(HEARTBEAT_FRAME.toString()).length - 1;

  await eventually(() => beats() >= 3, 'three heartbeats');
  assert.ok(text.startsWith(RETRY_FRAME.toString()), JSON.stringify(text));
  assert.doesNotMatch(text, /^(id|event|data):/m, 'no event while nothing changed');

  const user = { id: 'u1', name: 'Ada', email: 'ada@example.com', role: 'user' };
  log.append('created', 'u1', { ...user, created_at: 'x', updated_at: 'x' }, null, 'x');
  await eventually(() => /^event: change$/m.test(text), 'the change');
  const before = beats();
  await eventually(() => beats() > before, 'heartbeats go on after it');
  assert.match(text, new RegExp(`^id: ${log.epoch}\\.1$`, 'm'));
  response.destroy();
});
