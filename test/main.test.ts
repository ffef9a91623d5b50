/**
 * The real entry point, `node dist/src/main.js`, as a child process: bad configuration (exit 2, one
 * line on stderr naming the variable), the running service on ephemeral ports, graceful shutdown on
 * SIGTERM and SIGINT (chat gets 1001, the REST port stops accepting, in-flight requests finish, exit 0),
 * and the request log (one line a request at `info`, none at `warn`).
 *
 * Every wait is bounded; every child is killed when its test ends, whatever the outcome.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { ChatClient, closeOf, freePort, request, RosterProcess, within, type Message } from './support/index.js';

/** Generous bounds: each one only matters when something is broken. */
const START_MS = 10_000;
const EVENT_MS = 5_000;
const TEST_MS = 30_000;

/** What a new TCP connection to `port` gets: 'connected' or the error code (ECONNREFUSED). */
async function connectOutcome(port: number): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  try {
    await within(once(socket, 'connect'), EVENT_MS, `a connection to port ${port}`);
    return 'connected';
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error);
  } finally {
    socket.destroy();
  }
}

/** A chat client on `wsPort` and the first message it receives (the welcome). */
async function joinChat(wsPort: number): Promise<{ chat: ChatClient; welcome: Message }> {
  const chat = new ChatClient(`ws://127.0.0.1:${wsPort}`);
  return { chat, welcome: await chat.next(() => true, EVENT_MS) };
}

/** A raw HTTP/1.1 connection whose received bytes can be awaited. */
class RawHttp {
  readonly socket: Socket;
  received = '';
  ended = false;
  #waiters = new Set<() => void>();

  constructor(port: number) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setEncoding('utf8');
    this.socket.on('data', (chunk: string) => {
      this.received += chunk;
      this.#wake();
    });
    this.socket.on('close', () => {
      this.ended = true;
      this.#wake();
    });
    this.socket.on('error', () => {}); // seen as 'close'
  }

  /** Waits until `parse(received)` returns something other than undefined. */
  async until<T>(parse: (received: string) => T | undefined, what: string, ms = EVENT_MS): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = parse(this.received);
      if (value !== undefined) return value;
      if (this.ended) throw new Error(`connection closed before ${what}; received ${JSON.stringify(this.received)}`);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`timed out waiting for ${what}; received ${JSON.stringify(this.received)}`);
      await within(new Promise<void>((resolve) => this.#waiters.add(resolve)), remaining, what).catch(() => {});
    }
  }

  #wake(): void {
    for (const resolve of this.#waiters) resolve();
    this.#waiters.clear();
  }
}

/** The final (non-1xx) response in `received`, once it is complete (Content-Length framing). */
function finalResponse(received: string): { status: number; headers: string; body: string } | undefined {
  let rest = received;
  for (;;) {
    const match = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n((?:[^\r\n]+\r\n)*)\r\n/.exec(rest);
    if (!match) return undefined;
    const status = Number(match[1]);
    const headers = match[2]!;
    rest = rest.slice(match[0].length);
    if (status >= 100 && status < 200) continue;
    const length = Number(/^content-length:\s*(\d+)/im.exec(headers)?.[1] ?? NaN);
    if (!Number.isFinite(length) || Buffer.byteLength(rest) < length) return undefined;
    return { status, headers, body: rest };
  }
}

describe('main.js: a bad setting stops start-up', () => {
  const cases: [variable: string, value: string][] = [
    ['PORT', 'abc'],
    ['WS_PORT', '-1'],
    ['LOG_LEVEL', 'loud'],
    ['ROLES', 'admin'],
    ['WS_MAX_PAYLOAD', '1000'],
    // Not a host: must fail as configuration (status 2), not later in listen() (status 1).
    ['HOST', 'http://0.0.0.0:5000'],
  ];

  for (const [variable, value] of cases) {
    test(
      `${variable}=${value}: exit status 2, one stderr line naming ${variable}, nothing started`,
      { timeout: TEST_MS },
      async (t) => {
        const roster = new RosterProcess(t, { PORT: '0', WS_PORT: '0', LOG_LEVEL: 'info', [variable]: value });
        const exit = await roster.exited();
        assert.deepEqual(exit, { code: 2, signal: null }, roster.describe());
        const lines = roster.stderr.split(/\r?\n/).filter((line, index, all) => line !== '' || index < all.length - 1);
        assert.equal(lines.length, 1, `exactly one stderr line, got ${JSON.stringify(roster.stderr)}`);
        assert.match(lines[0]!, new RegExp(`\\b${variable}\\b`), 'the line names the variable');
        assert.deepEqual(roster.stdout, [], 'nothing is logged: the service never started');
      },
    );
  }
});

describe('main.js: the running service and its shutdown', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    test(
      `serves REST and chat on the ports it logs; ${signal}: chat gets 1001, exit 0, ports closed`,
      { timeout: TEST_MS },
      async (t) => {
        const roster = new RosterProcess(t, { PORT: '0', WS_PORT: '0', LOG_LEVEL: 'info' });
        const { port, wsPort } = await roster.listening();
        assert.notEqual(port, 0);
        assert.notEqual(wsPort, 0);
        assert.notEqual(port, wsPort);

        const { status, body } = await within(request(`http://127.0.0.1:${port}/api/v1/users`), EVENT_MS, 'the users');
        assert.equal(status, 200);
        const data = (body as { data: { users: { role: string }[]; pagination: { total: number } } }).data;
        assert.equal(data.users.length, 3);
        assert.equal(data.pagination.total, 3);
        assert.deepEqual(data.users.map((user) => user.role).sort(), ['admin', 'user', 'user']);

        const { chat, welcome } = await joinChat(wsPort);
        t.after(() => chat.ws.terminate());
        assert.equal(welcome.type, 'system');
        assert.match(welcome.message ?? '', /\b1\b/, 'the welcome includes the online count');
        assert.equal(typeof welcome.timestamp, 'string');

        const closed = closeOf(chat.ws).then(({ code }) => code);
        assert.ok(roster.child.kill(signal));
        assert.equal(await within(closed, EVENT_MS, 'the chat close frame'), 1001);
        assert.deepEqual(await roster.exited(), { code: 0, signal: null }, roster.describe());
        assert.equal(roster.stderr, '');

        assert.equal(await connectOutcome(port), 'ECONNREFUSED', 'the REST port refuses new connections');
        assert.equal(await connectOutcome(wsPort), 'ECONNREFUSED', 'the chat port refuses new connections');
      },
    );
  }

  // In-flight requests: a request whose body has not fully arrived is in flight, and
  // `Expect: 100-continue` tells us when the server has parsed its headers (no slow endpoint needed).
  //
  // The keep-alive row guards against a slow stop: a connection that was busy when shutdown began
  // must be told `Connection: close` on its last reply, or it idles until SHUTDOWN_TIMEOUT_MS runs out.
  for (const keepAlive of [false, true]) {
    const kind = keepAlive ? 'keep-alive' : 'Connection: close';
    test(
      `SIGTERM with a request in flight (${kind}): it completes, new connections are refused meanwhile, then prompt exit 0`,
      { timeout: TEST_MS },
      async (t) => {
        const roster = new RosterProcess(t, { PORT: '0', WS_PORT: '0', LOG_LEVEL: 'info' });
        const { port, wsPort } = await roster.listening();
        const { chat } = await joinChat(wsPort);
        t.after(() => chat.ws.terminate());

        const body = JSON.stringify({ name: 'In Flight', email: 'in.flight@example.com', role: 'user' });
        const http = new RawHttp(port);
        t.after(() => http.socket.destroy());
        http.socket.write(
          'POST /api/v1/users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
            `Content-Length: ${Buffer.byteLength(body)}\r\n${keepAlive ? '' : 'Connection: close\r\n'}Expect: 100-continue\r\n\r\n`,
        );
        // The server has parsed the headers: the request is in flight.
        await http.until((received) => (/^HTTP\/1\.1 100 /.test(received) ? true : undefined), '100 Continue');
        http.socket.write(body.slice(0, 10));

        const closed = closeOf(chat.ws).then(({ code }) => code);
        roster.child.kill('SIGTERM');
        // 1001 is sent in the same turn as the REST server's close() starts: shutdown is under way.
        assert.equal(await within(closed, EVENT_MS, 'the chat close frame'), 1001);
        assert.equal(roster.exit, undefined, 'the process waits for the in-flight request');
        assert.equal(await connectOutcome(port), 'ECONNREFUSED', 'no new connection during shutdown');

        http.socket.write(body.slice(10));
        const response = await http.until(finalResponse, 'the response to the in-flight request');
        assert.equal(response.status, 201, response.body);
        assert.equal((JSON.parse(response.body) as { data: { email: string } }).data.email, 'in.flight@example.com');

        // The client keeps its end open, as a keep-alive client does; the server must not wait for it.
        assert.deepEqual(await roster.exited(), { code: 0, signal: null }, roster.describe());
      },
    );
  }
});

describe('main.js: request log', () => {
  const requests = [
    { path: '/api/v1/users?limit=2', status: 200 },
    { path: '/api/v1/health', status: 200 },
    { path: '/api/v1/users/no-such-user', status: 404 },
  ];

  test(
    'LOG_LEVEL=info: exactly one JSON line per request, msg "request" with method, url, status',
    { timeout: TEST_MS },
    async (t) => {
      const roster = new RosterProcess(t, { PORT: '0', WS_PORT: '0', LOG_LEVEL: 'info' });
      const { port } = await roster.listening();
      for (const { path, status } of requests) {
        assert.equal((await within(request(`http://127.0.0.1:${port}${path}`), EVENT_MS, path)).status, status, path);
      }
      // Stop and read everything: after exit no line can still be on its way.
      roster.child.kill('SIGTERM');
      assert.deepEqual(await roster.exited(), { code: 0, signal: null }, roster.describe());

      const lines = roster.lines; // every stdout line is JSON
      const requestLines = lines.filter((line) => line.msg === 'request');
      assert.deepEqual(
        requestLines.map(({ method, url, status }) => ({ method, url, status })),
        requests.map(({ path, status }) => ({ method: 'GET', url: path, status })),
      );
      for (const line of requestLines) assert.equal(line.level, 30, 'request lines are at info');
      // Nothing else is tied to a request (no Fastify "incoming request" / "request completed" pair).
      const perRequest = lines.filter((line) => 'reqId' in line || 'req' in line || 'res' in line);
      assert.equal(perRequest.length, requests.length, JSON.stringify(perRequest));
      assert.equal(
        new Set(perRequest.map((line) => line.reqId)).size,
        requests.length,
        'one line per distinct request',
      );
    },
  );

  test('LOG_LEVEL=warn: no per-request lines, nothing below warn', { timeout: TEST_MS }, async (t) => {
    // At warn the "Roster is listening" line is not written, so the ports are chosen here and the
    // service is polled until it answers (there is no event to await).
    const [port, wsPort] = [await freePort(), await freePort()];
    const roster = new RosterProcess(t, { PORT: String(port), WS_PORT: String(wsPort), LOG_LEVEL: 'warn' });
    // Start-up is complete once both ports accept (the chat port opens first, then the REST port).
    const deadline = Date.now() + START_MS;
    for (const listening of [port, wsPort]) {
      for (;;) {
        if (roster.exit) assert.fail(`Roster exited before answering; ${roster.describe()}`);
        if ((await connectOutcome(listening)) === 'connected') break;
        if (Date.now() > deadline) assert.fail(`Roster did not answer on port ${listening}; ${roster.describe()}`);
        await delay(25);
      }
    }
    for (const { path, status } of requests) {
      assert.equal((await within(request(`http://127.0.0.1:${port}${path}`), EVENT_MS, path)).status, status, path);
    }
    roster.child.kill('SIGTERM');
    assert.deepEqual(await roster.exited(), { code: 0, signal: null }, roster.describe());

    const lines = roster.lines;
    assert.deepEqual(
      lines.filter((line) => line.msg === 'request' || 'reqId' in line),
      [],
      'no per-request lines',
    );
    assert.deepEqual(
      lines.filter((line) => (line.level ?? 0) < 40),
      [],
      'nothing below warn',
    );
  });
});
