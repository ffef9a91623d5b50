/**
 * The chat door on its own thread (src/chat/thread.ts, worker.ts): the chat answers while the REST
 * thread is busy with real work for over a second, and a chat thread that dies is started again on
 * the same port, counted, while the REST door carries on.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { WebSocket } from 'ws';
import { SqliteUserStore } from '../../src/users/stores/sqlite/sqlite-store.js';
import { ANSWER_TIMEOUT_MS } from '../../src/chat/thread.js';
import { ChatClient, closeOf, request, RosterProcess, startRoster, until, within } from '../support/index.js';

/**
 * Users in the SQLite file, and heavy requests enough that the REST thread is busy for over a second
 * (seeding 30 000 takes about 2 s).
 */
const USERS = 30_000;
/** The heavy requests sent at once: the REST thread works through them one after another. */
const HEAVY = 160;

async function metric(origin: string, name: string): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.slice(name.length + 1));
}

describe('the chat on its own thread', () => {
  test(
    `the chat answers pings within 100 ms while the REST thread spends over a second on searches of ${USERS / 1000}k SQLite users`,
    { timeout: 180_000 },
    async (t) => {
      const folder = mkdtempSync(join(tmpdir(), 'roster-busy-'));
      t.after(() => rmSync(folder, { recursive: true, force: true }));
      const path = join(folder, 'roster.db');
      // Filled through the store's own bulk path, then served by a real Roster process.
      const store = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, pino({ level: 'silent' }));
      await store.seed(
        Array.from({ length: USERS }, (_, i) => ({
          id: randomUUID(),
          name: `User ${i} Sennett`,
          email: `user${i}@example${i % 97}.com`,
          role: i % 3 === 0 ? 'admin' : 'user',
        })),
      );
      await store.close();
      const roster = new RosterProcess(t, {
        PORT: '0',
        WS_PORT: '0',
        LOG_LEVEL: 'info',
        DATABASE_URL: `sqlite:${path}`,
      });
      const { port, wsPort } = await roster.listening();
      const origin = `http://127.0.0.1:${port}`;
      const ws = new WebSocket(`ws://127.0.0.1:${wsPort}`);
      ws.on('error', () => {});
      await within(once(ws, 'open'), 10_000, 'the chat connection');

      // A search that matches every user, sorted by name descending, its last pages: no index helps.
      const heavy = `${origin}/api/v1/users?search=e&sort=name&order=desc&limit=100&page=${USERS / 100 - 1}`;
      const rtts: number[] = [];
      let sentAt = 0;
      ws.on('message', (data) => {
        if (JSON.parse(String(data)).type === 'pong') rtts.push(performance.now() - sentAt);
      });
      let pinging = true;
      // A ping with no pong within 2 s is lost (and one is enough to fail): a late pong must not be
      // timed against the next ping.
      let lost = 0;
      const pinger = (async () => {
        while (pinging && lost === 0) {
          sentAt = performance.now();
          const before = rtts.length;
          ws.send('{"type":"ping"}');
          while (rtts.length === before && performance.now() - sentAt < 2000)
            await new Promise((resolve) => setTimeout(resolve, 1));
          if (rtts.length === before) lost++;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 200));
      const started = performance.now();
      const durations = await Promise.all(
        Array.from({ length: HEAVY }, async () => {
          const response = await fetch(heavy);
          assert.equal(response.status, 200);
          const body = (await response.json()) as { data: { pagination: { total: number } } };
          assert.equal(body.data.pagination.total, USERS);
          return performance.now() - started;
        }),
      );
      pinging = false;
      await pinger;
      const busy = Math.max(...durations);
      const worst = Math.max(...rtts);
      t.diagnostic(
        `REST busy ${busy.toFixed(0)} ms (${HEAVY} searches); ${rtts.length} pings, RTT max ${worst.toFixed(1)} ms`,
      );
      assert.ok(busy > 1000, `the REST thread was busy for ${busy.toFixed(0)} ms, not over a second`);
      assert.equal(lost, 0, 'a ping got no pong within 2 s');
      assert.ok(rtts.length >= 10, `${rtts.length} pongs while REST was busy`);
      assert.ok(worst < 100, `a pong took ${worst.toFixed(1)} ms`);
      ws.close();
    },
  );

  test('a chat thread that dies: its connections drop, it is started again on the same port, counted; REST carries on', async (t) => {
    const running = await startRoster({ LOG_LEVEL: 'silent' });
    t.after(() => running.stop());
    const created = await request(`${running.api}/users`, {
      method: 'POST',
      body: { name: 'Kept', email: 'kept@example.com' },
    });
    assert.equal(created.status, 201);
    const before = await ChatClient.connect(running.wsUrl);
    const dropped = closeOf(before.ws);
    await running.server.chat.worker.terminate();
    assert.equal((await dropped).code, 1006, 'the connection went with the thread');
    // REST meanwhile: untouched, the users with it.
    assert.equal((await request(`${running.api}/users/${created.body.data.id}`)).status, 200);
    // Back on the same port.
    let after: ChatClient | undefined;
    const deadline = Date.now() + 10_000;
    while (!after) {
      const client = new ChatClient(running.wsUrl);
      client.ws.on('error', () => {});
      try {
        await client.next((m) => m.type === 'system', 1000);
        after = client;
      } catch {
        client.ws.terminate();
        assert.ok(Date.now() < deadline, 'the chat came back within 10 s');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    after.send({ type: 'chat', message: 'back' });
    assert.equal((await after.next((m) => m.type === 'chat')).message, 'back');
    assert.equal(await metric(running.origin, 'roster_chat_thread_restarts_total'), 1);
    assert.equal(await running.server.chat.size(), 1);
    await after.close();
  });

  for (const second of ['terminate', 'crash'] as const)
    test(`two deaths in a row, the second by ${second === 'crash' ? 'an exception in its own code' : 'terminate()'}: /metrics and the member list answer at once meanwhile`, async (t) => {
      const running = await startRoster({ LOG_LEVEL: 'silent' });
      t.after(() => running.stop());
      const chat = running.server.chat;
      const members = `${running.api}/chat/members`;
      assert.equal((await request(members)).status, 200);
      // A first death is restarted at once.
      await chat.worker.terminate();
      await until('the first restart', () => chat.restarts === 1 && chat.door.state().up, 10_000, 20);
      // A second, soon after, waits out a back-off of a second: by terminate(), or by an exception thrown
      // in the chat thread's own code (thread-protocol.ts: the `crash` hook).
      // (events.once would reject on the thread's 'error', which the crash emits before 'exit'.)
      const exited = new Promise<number>((resolve) => chat.worker.on('exit', resolve));
      if (second === 'crash') chat.worker.postMessage({ type: 'crash' });
      else void chat.worker.terminate();
      assert.equal(await within(exited, 10_000, 'the thread’s exit'), 1, 'the thread died');
      assert.equal(chat.restarts, 2);
      assert.equal(chat.door.state().up, false, 'no thread serves yet: the back-off runs');
      // Within the back-off, each route answers well before the question's own deadline.
      const timed = async (url: string) => {
        const started = performance.now();
        const response = await fetch(url, { signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
        return { response, ms: performance.now() - started };
      };
      for (let i = 0; i < 3; i++) {
        const scrape = await timed(`${running.origin}/metrics`);
        assert.equal(scrape.response.status, 200);
        const text = await scrape.response.text();
        assert.match(text, /^roster_chat_thread_restarts_total 2$/m);
        assert.doesNotMatch(text, /^roster_chat_connections_open /m, 'no chat series while there is no chat thread');
        assert.ok(scrape.ms < 500, `/metrics took ${scrape.ms.toFixed(0)} ms`);
        const listed = await timed(members);
        assert.equal(listed.response.status, 503);
        assert.match(listed.response.headers.get('content-type') ?? '', /^application\/json/);
        assert.match(listed.response.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
        const body = (await listed.response.json()) as { status: string; error: { code: string } };
        assert.deepEqual([body.status, body.error.code], ['error', 'SERVICE_UNAVAILABLE']);
        assert.ok(listed.ms < 500, `the member list took ${listed.ms.toFixed(0)} ms`);
      }
      assert.equal(chat.door.state().up, false, 'all of that within the back-off');
      // And once the thread is back, both answer from it again.
      await until('the second restart serves', () => chat.door.state().up, 10_000, 20);
      const client = await ChatClient.connect(running.wsUrl);
      const back = await request(members);
      assert.equal(back.status, 200);
      assert.equal(back.body.data.pagination.total, 1);
      assert.match(await (await fetch(`${running.origin}/metrics`)).text(), /^roster_chat_connections_open 1$/m);
      await client.close();
    });

  test('a chat thread that does not answer: /metrics and the member list answer at the question’s deadline', async (t) => {
    const running = await startRoster({ LOG_LEVEL: 'silent' });
    t.after(() => running.stop());
    await until('the chat serves', () => running.server.chat.door.state().up, 10_000, 20);
    // Its event loop held for longer than the deadline (thread-protocol.ts: the `stall` hook).
    running.server.chat.worker.postMessage({ type: 'stall', ms: ANSWER_TIMEOUT_MS + 3000 });
    const started = performance.now();
    const [scrape, listed] = await Promise.all([
      fetch(`${running.origin}/metrics`, { signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS + 2000) }),
      fetch(`${running.api}/chat/members`, { signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS + 2000) }),
    ]);
    const ms = performance.now() - started;
    assert.equal(scrape.status, 200);
    assert.doesNotMatch(await scrape.text(), /^roster_chat_connections_open /m);
    assert.equal(listed.status, 503);
    assert.equal(listed.headers.get('retry-after'), '1');
    assert.equal(((await listed.json()) as { error: { code: string } }).error.code, 'SERVICE_UNAVAILABLE');
    assert.ok(ms >= ANSWER_TIMEOUT_MS - 100 && ms < ANSWER_TIMEOUT_MS + 1000, `answered after ${ms.toFixed(0)} ms`);
    // The late answers, once the loop is free, are dropped; the next questions are answered again.
    await until(
      'answering again',
      async () => (await fetch(`${running.api}/chat/members`)).status === 200,
      10_000,
      100,
    );
  });

  test('a question pending when the thread dies is answered then, not at its deadline', async (t) => {
    const running = await startRoster({ LOG_LEVEL: 'silent' });
    t.after(() => running.stop());
    await until('the chat serves', () => running.server.chat.door.state().up, 10_000, 20);
    running.server.chat.worker.postMessage({ type: 'stall', ms: 10_000 });
    const started = performance.now();
    const listed = fetch(`${running.api}/chat/members`, { signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS) });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await running.server.chat.worker.terminate();
    const reply = await listed;
    const ms = performance.now() - started;
    assert.equal(reply.status, 503);
    assert.match(reply.headers.get('retry-after') ?? '', /^[1-9][0-9]*$/);
    assert.ok(ms < ANSWER_TIMEOUT_MS - 500, `answered after ${ms.toFixed(0)} ms, at the exit`);
  });

  test('health says the chat is down while the thread is being started again, and nothing once it serves', async (t) => {
    const running = await startRoster({ LOG_LEVEL: 'silent' });
    t.after(() => running.stop());
    const health = async () => (await request(`${running.api}/health`)).body;
    const quiet = await health();
    assert.deepEqual([quiet.data.status, quiet.data.checks], ['healthy', undefined]);
    // A first death is restarted at once; a second soon after waits (a back-off of a second).
    await running.server.chat.worker.terminate();
    await until(
      'the first restart',
      () => running.server.chat.restarts === 1 && running.server.chat.door.state().up,
      10_000,
      20,
    );
    await running.server.chat.worker.terminate();
    const down = await health();
    assert.equal(down.data.status, 'degraded');
    assert.deepEqual(down.data.checks, { chat: 'down' });
    assert.match(down.message, /chat down/);
    // The REST door still answers, 200: the chat is not critical to it.
    assert.equal((await request(`${running.api}/users`)).status, 200);
    await until('healthy again', async () => (await health()).data.status === 'healthy', 10_000, 50);
    assert.equal((await health()).data.checks, undefined);
    assert.equal(await metric(running.origin, 'roster_chat_thread_restarts_total'), 2);
  });
});
