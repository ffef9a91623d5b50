/**
 * Slow clients (docs/decisions.md, "Request limits"): slowloris on the REST port and the chat port, a
 * trickled body, the kept-alive idle timeout and the REST connection cap (HEADERS_TIMEOUT_MS,
 * REQUEST_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS, MAX_CONNECTIONS). Time bounds here are correctness bounds
 * on scheduling properties (a request is not starved; a trickler is cut "within seconds"), generous
 * enough for a loaded two-core machine; they are not performance measurements.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import {
  assertErrorEnvelope,
  chatRoundTrip,
  handshakeRequest,
  parseHead,
  plainRequest,
  startHardened,
  within,
  type Hardened,
} from '../support/index.js';

const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 2000;
/**
 * Node checks the header and request deadlines once per `connectionsCheckingInterval` (1 s in Roster),
 * so a trickler is cut between its deadline and about a second later; this leaves room for a busy box.
 */
const CUT_SLACK_MS = 4000;
/** A normal request made while the attack goes on must be answered within this. */
const PROMPT_MS = 500;

interface Trickler {
  socket: Socket;
  openedAt: number;
  /** When the server ended or reset the connection. */
  cutAt?: number;
  received: Buffer;
}

/**
 * Opens `count` connections to `port`. Each writes `prefix` at once, then one byte of `trickled`
 * every `everyMs` (starting over when it runs out), until the server cuts it or `stop` is called.
 */
async function slowloris(
  port: number,
  count: number,
  options: { prefix?: string; trickled: string; everyMs?: number },
) {
  const { prefix = '', trickled, everyMs = 100 } = options;
  const tricklers: Trickler[] = [];
  const open = async (): Promise<Trickler> => {
    const trickler: Trickler = { socket: connect(port, '127.0.0.1'), openedAt: Date.now(), received: Buffer.alloc(0) };
    const { socket } = trickler;
    socket.setNoDelay(true);
    const cut = () => {
      trickler.cutAt ??= Date.now();
    };
    socket.on('data', (chunk: Buffer) => {
      trickler.received = Buffer.concat([trickler.received, chunk]);
    });
    socket.on('end', cut);
    socket.on('close', cut);
    socket.on('error', cut);
    await within(once(socket, 'connect'), 5000, 'a slowloris connection');
    trickler.openedAt = Date.now();
    if (prefix) socket.write(prefix);
    tricklers.push(trickler);
    return trickler;
  };
  // In batches, so the accept queue is not the thing being tested.
  for (let i = 0; i < count; i += 50) await Promise.all(Array.from({ length: Math.min(50, count - i) }, open));
  let position = 0;
  const timer = setInterval(() => {
    const byte = trickled[position++ % trickled.length]!;
    for (const trickler of tricklers)
      if (trickler.cutAt === undefined && trickler.socket.writable) trickler.socket.write(byte);
  }, everyMs);
  return {
    tricklers,
    /** Resolves once every trickler has been cut, or rejects after `ms`. */
    async allCut(ms: number): Promise<void> {
      const deadline = Date.now() + ms;
      while (tricklers.some((t) => t.cutAt === undefined)) {
        const left = tricklers.filter((t) => t.cutAt === undefined).length;
        if (Date.now() > deadline)
          throw new Error(`${left} of ${tricklers.length} slow connections still open after ${ms} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    stop(): void {
      clearInterval(timer);
      for (const trickler of tricklers) trickler.socket.destroy();
    },
  };
}

/** What the server said before cutting a trickler: nothing, or a 408 in the error envelope. */
function assertCutCleanly(trickler: Trickler, what: string): void {
  if (trickler.received.length === 0) return; // closed without a word: allowed
  const text = trickler.received.toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  assert.ok(end > 0, `${what}: a complete response head, got ${JSON.stringify(text.slice(0, 200))}`);
  const head = parseHead(text.slice(0, end));
  assertErrorEnvelope(
    { status: head.status, headers: head.headers, text: text.slice(end + 4) },
    { status: 408, code: 'REQUEST_TIMEOUT' },
    what,
  );
}

/**
 * Calls `round` every `everyMs` until `stop` resolves; `round` gets a `timed` wrapper that records how
 * long each request in it took. Returns those durations.
 */
async function meanwhile(
  stop: Promise<unknown>,
  everyMs: number,
  round: (timed: <T>(request: Promise<T>) => Promise<T>) => Promise<void>,
): Promise<number[]> {
  const durations: number[] = [];
  const timed = async <T>(request: Promise<T>): Promise<T> => {
    const started = Date.now();
    const result = await request;
    durations.push(Date.now() - started);
    return result;
  };
  let done = false;
  void stop.finally(() => {
    done = true;
  });
  while (!done) {
    await round(timed);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return durations;
}

function assertPrompt(t: TestContext, durations: number[], what: string): void {
  t.diagnostic(`${durations.length} ${what}, the slowest in ${Math.max(...durations)} ms`);
  const late = durations.filter((ms) => ms >= PROMPT_MS);
  assert.deepEqual(late, [], `of ${durations.length} ${what}, these took ${PROMPT_MS} ms or more`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const portOf = (roster: Hardened) => Number(new URL(roster.running.origin).port);

describe(
  'slow clients cannot stop normal requests (HEADERS_TIMEOUT_MS=1000, REQUEST_TIMEOUT_MS=2000)',
  { concurrency: true },
  () => {
    const env = { HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) };

    test('300 connections trickling headers one byte per 100 ms: normal requests are answered promptly, the tricklers get 408 within seconds', async (t) => {
      const roster = await startHardened(env);
      t.after(() => roster.stop());
      const attack = await slowloris(portOf(roster), 300, {
        trickled: 'GET /api/v1/users HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ' + 'z'.repeat(10_000),
      });
      try {
        let created = 0;
        // Normal traffic for as long as any trickler is still connected.
        const cutAll = attack.allCut(HEADERS_TIMEOUT_MS + CUT_SLACK_MS);
        const durations = await meanwhile(
          cutAll.catch(() => {}),
          50,
          async (timed) => {
            const health = await timed(plainRequest(`${roster.running.api}/health`));
            assert.equal(health.status, 200);
            const user = await timed(
              plainRequest(`${roster.running.api}/users`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ name: 'Amid the attack', email: `amid.${created++}.${Date.now()}@example.com` }),
              }),
            );
            assert.equal(user.status, 201, user.text);
            assert.equal((await timed(plainRequest(`${roster.running.api}/users/${user.body.data.id}`))).status, 200);
          },
        );
        assert.ok(durations.length >= 15, `only ${durations.length} normal requests during the attack`);
        assertPrompt(t, durations, 'requests during the attack');

        await cutAll;
        for (const [i, trickler] of attack.tricklers.entries()) {
          const lifetime = trickler.cutAt! - trickler.openedAt;
          assert.ok(
            lifetime >= HEADERS_TIMEOUT_MS - 100,
            `trickler ${i} cut after ${lifetime} ms, before the headers timeout`,
          );
          assert.ok(lifetime <= HEADERS_TIMEOUT_MS + CUT_SLACK_MS, `trickler ${i} lived ${lifetime} ms`);
          assertCutCleanly(trickler, `trickler ${i}`);
        }
        assert.ok(
          attack.tricklers.filter((x) => x.received.length > 0).length > 0,
          'at least some got the 408 envelope',
        );
      } finally {
        attack.stop();
      }
      await roster.check('after the slowloris attack');
    });

    test('normal requests stay prompt (each within 500 ms) while waves of new tricklers keep arriving', async (t) => {
      const roster = await startHardened(env);
      t.after(() => roster.stop());
      // Waves of 100 new tricklers every 500 ms for 3 s, so that the service is always under attack,
      // including while earlier tricklers are being cut.
      const waves: Awaited<ReturnType<typeof slowloris>>[] = [];
      const attacking = (async () => {
        for (let wave = 0; wave < 6; wave++) {
          waves.push(
            await slowloris(portOf(roster), 100, {
              trickled: 'POST /api/v1/users HTTP/1.1\r\nHost: x\r\nCookie: ' + 'c'.repeat(10_000),
            }),
          );
          await sleep(500);
        }
      })();
      try {
        const durations = await meanwhile(
          attacking.catch(() => {}),
          20,
          async (timed) => {
            assert.equal((await timed(plainRequest(`${roster.running.api}/health`))).status, 200);
            assert.equal((await timed(plainRequest(`${roster.running.api}/users?limit=5`))).status, 200);
          },
        );
        await attacking;
        assertPrompt(t, durations, 'requests during the waves');
        for (const wave of waves) await wave.allCut(HEADERS_TIMEOUT_MS + CUT_SLACK_MS);
        for (const wave of waves) for (const trickler of wave.tricklers) assertCutCleanly(trickler, 'a trickler');
      } finally {
        for (const wave of waves) wave.stop();
      }
      await roster.check('after waves of tricklers');
    });

    test('a body trickled one byte per 100 ms is cut by REQUEST_TIMEOUT_MS, and nothing is stored', async (t) => {
      const roster = await startHardened(env);
      t.after(() => roster.stop());
      const email = `trickled.${Date.now()}@example.com`;
      const body = JSON.stringify({ name: 'Trickled', email, padding: 'p'.repeat(2000) });
      const attack = await slowloris(portOf(roster), 20, {
        prefix: `POST /api/v1/users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        trickled: body,
      });
      try {
        await attack.allCut(REQUEST_TIMEOUT_MS + CUT_SLACK_MS);
        for (const [i, trickler] of attack.tricklers.entries()) {
          const lifetime = trickler.cutAt! - trickler.openedAt;
          // The headers came at once, so only the request timeout applies.
          assert.ok(
            lifetime >= REQUEST_TIMEOUT_MS - 100,
            `body trickler ${i} cut after ${lifetime} ms, before the request timeout`,
          );
          assert.ok(lifetime <= REQUEST_TIMEOUT_MS + CUT_SLACK_MS, `body trickler ${i} lived ${lifetime} ms`);
          assertCutCleanly(trickler, `body trickler ${i}`);
        }
      } finally {
        attack.stop();
      }
      const search = await plainRequest(`${roster.running.api}/users?search=${encodeURIComponent(email)}`);
      assert.equal(search.body.data.pagination.total, 0, 'a request cut short stored nothing');
      await roster.check('after trickled bodies');
    });

    test('the chat handshake is cut by HEADERS_TIMEOUT_MS too, and the room keeps working meanwhile', async (t) => {
      const roster = await startHardened(env);
      t.after(() => roster.stop());
      const wsPort = roster.running.wsPort;
      const attack = await slowloris(wsPort, 100, {
        trickled: handshakeRequest(wsPort, { headers: { 'X-Slow': 'w'.repeat(5000) } }).text,
      });
      try {
        // A round trip is a handshake, a welcome, a message and its broadcast.
        const durations = await meanwhile(sleep(1500), 50, (timed) =>
          timed(chatRoundTrip(roster.running, 'during a handshake slowloris')),
        );
        assertPrompt(t, durations, 'chat round trips during the attack');
        await attack.allCut(HEADERS_TIMEOUT_MS + CUT_SLACK_MS);
        for (const [i, trickler] of attack.tricklers.entries()) {
          const lifetime = trickler.cutAt! - trickler.openedAt;
          assert.ok(lifetime <= HEADERS_TIMEOUT_MS + CUT_SLACK_MS, `handshake trickler ${i} lived ${lifetime} ms`);
          assertCutCleanly(trickler, `handshake trickler ${i}`);
        }
      } finally {
        attack.stop();
      }
      assert.equal(await roster.running.server.chat.size(), 0, 'no trickler joined the room');
      await roster.check('after a handshake slowloris');
    });

    test('KEEP_ALIVE_TIMEOUT_MS=500: an idle kept-alive connection is closed after it', async (t) => {
      const roster = await startHardened({ ...env, KEEP_ALIVE_TIMEOUT_MS: '500' });
      t.after(() => roster.stop());
      const socket = connect(portOf(roster), '127.0.0.1');
      socket.on('error', () => {});
      await within(once(socket, 'connect'), 3000, 'connect');
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
      socket.write('GET /api/v1/health HTTP/1.1\r\nHost: x\r\n\r\n');
      const answered = Date.now();
      await within(once(socket, 'close'), 500 + CUT_SLACK_MS, 'the idle kept-alive connection to be closed');
      assert.match(received, /^HTTP\/1\.1 200 /);
      assert.ok(Date.now() - answered >= 400, 'kept alive for a while first');
      await roster.check();
    });
  },
);

describe('connection cap (MAX_CONNECTIONS=20)', () => {
  test('with 20 idle connections the 21st is dropped; the chat port is unaffected; after some close, requests are served again', async (t) => {
    // One address opens them all: the per-address cap (a quarter of MAX_CONNECTIONS by default) is off.
    const roster = await startHardened({ MAX_CONNECTIONS: '20', MAX_CONNECTIONS_PER_ADDRESS: '0' });
    t.after(() => roster.stop());
    const server = roster.running.server.rest.server;
    const connections = () =>
      new Promise<number>((resolve, reject) =>
        server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      );
    // plantUsers used connections that close after their reply; wait until they are gone.
    const deadline = Date.now() + 3000;
    while ((await connections()) > 0) {
      assert.ok(Date.now() < deadline, 'earlier connections still open');
      await sleep(10);
    }

    const idle: Socket[] = [];
    for (let i = 0; i < 20; i++) {
      const socket = connect(portOf(roster), '127.0.0.1');
      socket.on('error', () => {});
      await within(once(socket, 'connect'), 3000, 'an idle connection');
      idle.push(socket);
    }
    try {
      while ((await connections()) < 20) await sleep(5);

      // The 21st: accepted by the kernel, then dropped by Node without an answer.
      await assert.rejects(
        plainRequest(`${roster.running.api}/health`, { timeoutMs: 3000 }),
        (error: Error & { code?: string }) => {
          assert.ok(
            ['ECONNRESET', 'EPIPE', 'ECONNREFUSED'].includes(error.code ?? '') || /socket hang up/.test(error.message),
            String(error),
          );
          return true;
        },
      );
      assert.equal(await connections(), 20);
      // The chat port has its own limit.
      await chatRoundTrip(roster.running, 'while the REST port is full');

      for (const socket of idle.splice(0, 5)) socket.destroy();
      const served = Date.now() + 3000;
      for (;;) {
        const outcome = await plainRequest(`${roster.running.api}/health`, { timeoutMs: 3000 }).catch(
          (error: Error) => error,
        );
        if (!(outcome instanceof Error)) {
          assert.equal(outcome.status, 200);
          break;
        }
        assert.ok(Date.now() < served, `still refused after closing 5: ${String(outcome)}`);
        await sleep(20);
      }
      await roster.check('with 15 idle connections still open');
    } finally {
      for (const socket of idle) socket.destroy();
    }
  });
});
