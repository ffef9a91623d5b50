/**
 * `roster chat`, the terminal chat client: through a real process (`node dist/src/cli/roster.js chat`)
 * with piped input against a real Roster (or, where the wire itself is the point, a bare WebSocket
 * server); and its interactive mode in-process, with a stand-in terminal.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, test, type TestContext } from 'node:test';
import { runChat, type ChatOptions } from '../../src/cli/chat-session.js';
import {
  bareServer,
  ChatClient,
  Cli,
  deferred,
  EVENT_MS,
  freePort,
  startRoster,
  TEST_MS,
  Transcript,
  within,
  type Json,
  type Peer,
  rosterFor,
} from '../support/index.js';

/** A connected chat client (welcome received), closed when the test ends. */
async function client(t: TestContext, url: string): Promise<ChatClient> {
  const chat = await ChatClient.connect(url);
  chat.ws.on('error', () => {});
  t.after(() => chat.ws.terminate());
  return chat;
}

/** `roster chat <url> --json`, once it has printed the welcome. */
async function jsonChat(t: TestContext, url: string, env: Record<string, string> = {}): Promise<Cli> {
  const cli = new Cli(t, ['chat', url, '--json'], env);
  await cli.waitForJson((m) => m.type === 'system', 'the welcome');
  return cli;
}

describe('roster chat --json, piped', () => {
  test(
    'piped lines reach the others in order; the output is the server messages as received; exit 0 at end of input',
    { timeout: TEST_MS },
    async (t) => {
      const running = await rosterFor(t);
      const observer = await client(t, running.wsUrl);
      const cli = await jsonChat(t, running.wsUrl);
      await observer.next((m) => m.type === 'user_join' && m.online_count === 2);

      cli.child.stdin.end('first\nsecond line, with spaces  \n\n{"type":"ping"}\nthird\n');
      const texts = ['first', 'second line, with spaces  ', '{"type":"ping"}', 'third'];
      const seen: Json[] = [];
      for (const text of texts) seen.push(await observer.next((m) => m.type === 'chat' && m.message === text));
      assert.equal(new Set(seen.map((m) => m.from)).size, 1, 'one sender');
      assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
      assert.equal(cli.stderr.text, '');
      await observer.next((m) => m.type === 'user_leave' && m.online_count === 1);

      // Every stdout line is JSON: the welcome, then the client's own chats, which end of input waited for.
      const lines = cli.json;
      assert.equal(lines[0].type, 'system');
      assert.match(lines[0].message, /\b2 users online\b/);
      const chats = lines.filter((m) => m.type === 'chat');
      assert.deepEqual(
        chats.map((m) => m.message),
        texts,
        'in order; the blank line was not sent',
      );
      assert.deepEqual(lines.slice(1), chats, 'nothing else');
      // Exactly as received: the same bytes the observer got (same key order, same escaping).
      assert.deepEqual(
        cli.stdout.lines.slice(1),
        seen.map((m) => JSON.stringify(m)),
      );
    },
  );

  test('shows others joining, chatting and leaving', { timeout: TEST_MS }, async (t) => {
    const running = await rosterFor(t);
    const cli = await jsonChat(t, running.wsUrl);
    assert.match(cli.json[0].message, /\b1 user online\b/);

    const other = await client(t, running.wsUrl);
    const join = await cli.waitForJson((m) => m.type === 'user_join', 'user_join');
    assert.equal(join.online_count, 2);
    assert.equal(typeof join.timestamp, 'string');

    other.send({ type: 'chat', message: 'hello from the other side' });
    const echo = await other.next((m) => m.type === 'chat');
    const chat = await cli.waitForJson((m) => m.type === 'chat', 'the other client chat');
    assert.deepEqual(chat, echo);

    await other.close();
    const leave = await cli.waitForJson((m) => m.type === 'user_leave', 'user_leave');
    assert.equal(leave.online_count, 1);

    cli.child.stdin.end();
    assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
    assert.deepEqual(
      cli.json.map((m) => m.type),
      ['system', 'user_join', 'chat', 'user_leave'],
    );
    assert.equal(cli.stderr.text, '');
  });

  test('/quit leaves at once, with stdin still open; nothing after it is sent', { timeout: TEST_MS }, async (t) => {
    const running = await rosterFor(t);
    const observer = await client(t, running.wsUrl);
    const cli = await jsonChat(t, running.wsUrl);
    await observer.next((m) => m.type === 'user_join');

    cli.child.stdin.write('before\n/quit\nafter\n'); // and stdin stays open
    assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
    assert.equal((await observer.next((m) => m.type === 'chat')).message, 'before');
    // The server handles a connection's frames in order: a chat sent before the close frame would be
    // broadcast before the leave notice.
    await observer.next((m) => m.type === 'user_leave' && m.online_count === 1);
    assert.deepEqual(observer.messages, [], 'no "after"');
    assert.equal(cli.stderr.text, '');
  });

  test('/ping is answered by a pong, whose round trip goes to stderr', { timeout: TEST_MS }, async (t) => {
    const running = await rosterFor(t);
    const cli = await jsonChat(t, running.wsUrl);
    cli.child.stdin.end('/ping\n');
    assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
    assert.deepEqual(
      cli.json.map((m) => m.type),
      ['system', 'pong'],
      'end of input waited for the pong',
    );
    assert.match(cli.stderr.text, /^\* pong in \d+ ms\n$/);
  });

  test('the URL defaults to WS_URL, else ws://127.0.0.1:$WS_PORT', { timeout: TEST_MS }, async (t) => {
    const running = await rosterFor(t);
    const envs: Record<string, string>[] = [
      { WS_PORT: String(running.wsPort) },
      { WS_URL: running.wsUrl, WS_PORT: String(await freePort()) },
    ];
    for (const env of envs) {
      const cli = new Cli(t, ['chat', '--json'], env);
      await cli.waitForJson((m) => m.type === 'system', `the welcome with ${JSON.stringify(env)}`);
      cli.child.stdin.end();
      assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
    }
  });
});

describe('roster chat: without --json, for people', () => {
  test(
    'piped: readable lines; own chats marked (you), others not; times from the server timestamps',
    { timeout: TEST_MS },
    async (t) => {
      const running = await rosterFor(t);
      const observer = await client(t, running.wsUrl);
      const cli = new Cli(t, ['chat', running.wsUrl], { TZ: 'UTC' });
      await cli.waitForLine(/^\* Welcome to the chat! 2 users online\.$/, 'the welcome');
      await observer.next((m) => m.type === 'user_join');

      cli.child.stdin.write('hello, I am piped\n');
      const mine = await observer.next((m) => m.type === 'chat');
      await cli.waitForLine(/hello, I am piped$/, 'the own echo');

      observer.send({ type: 'chat', message: 'hi\x1b[31m there' });
      const theirs = await observer.next((m) => m.type === 'chat');
      await cli.waitForLine(/there$/, 'the observer chat');

      cli.child.stdin.end();
      assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
      const clock = (timestamp: string): string => timestamp.slice(11, 19); // UTC, and TZ=UTC
      assert.deepEqual(cli.stdout.lines, [
        '* Welcome to the chat! 2 users online.',
        `[${clock(mine.timestamp)}] ${mine.from.slice(0, 8)} (you): hello, I am piped`,
        `[${clock(theirs.timestamp)}] ${theirs.from.slice(0, 8)}: hi\\x1b[31m there`,
      ]);
      assert.equal(cli.stderr.text, '');
    },
  );
});

describe('roster chat: connection and exit status', () => {
  test('connection refused: exit 1, one line on stderr, nothing on stdout', { timeout: TEST_MS }, async (t) => {
    const url = `ws://127.0.0.1:${await freePort()}`;
    const cli = new Cli(t, ['chat', url, '--json']);
    assert.deepEqual(await cli.exited(), { code: 1, signal: null }, cli.describe());
    assert.equal(cli.stdout.text, '');
    assert.equal(cli.stderr.lines.length, 1, cli.describe());
    assert.match(cli.stderr.text, new RegExp(`^roster chat: could not connect to ${url}: .*ECONNREFUSED`));
  });

  test(
    '--no-reconnect, the server shuts down: the close code in words goes to stderr, exit 0 (1001)',
    { timeout: TEST_MS },
    async (t) => {
      const running = await rosterFor(t);
      const cli = new Cli(t, ['chat', running.wsUrl, '--json', '--no-reconnect']);
      await cli.waitForJson((m) => m.type === 'system', 'the welcome');
      await running.stop();
      assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
      assert.match(
        cli.stderr.text,
        /^roster chat: the server closed the connection: 1001\b.*\(the server is shutting down or restarting\)\n$/,
      );
    },
  );

  test(
    'the server restarts: the client says why, reconnects with backoff, and chats again',
    { timeout: TEST_MS },
    async (t) => {
      const first = await startRoster({ SHUTDOWN_TIMEOUT_MS: '2000' });
      t.after(() => first.stop());
      const cli = await jsonChat(t, first.wsUrl);
      await first.stop();
      await cli.stderr.until(
        () => (/reconnecting in \d+\.\d s/.test(cli.stderr.text) ? true : undefined),
        'the reconnecting notice',
      );
      assert.match(
        cli.stderr.text,
        /^roster chat: the server closed the connection: 1001\b.*\(the server is shutting down or restarting\)\n/,
      );

      // The same chat port, a new process's worth of state: a second welcome arrives on the new connection.
      const second = await rosterFor(t, { WS_PORT: String(first.wsPort) });
      await cli.stderr.until(
        () => (cli.stderr.text.includes(`* reconnected to ${first.wsUrl}`) ? true : undefined),
        'the reconnected notice',
        undefined,
        15_000,
      );
      await cli.waitForJson(
        (m) => m.type === 'system' && cli.json.filter((x) => x.type === 'system').length === 2,
        'the second welcome',
      );
      const observer = await client(t, second.wsUrl);
      cli.child.stdin.write('back again\n');
      assert.equal((await observer.next((m) => m.type === 'chat')).message, 'back again');
      cli.child.stdin.end();
      assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
    },
  );

  test(
    'pointed at the REST port: one line saying to use the chat port, and which one',
    { timeout: TEST_MS },
    async (t) => {
      const running = await rosterFor(t);
      const restUrl = running.origin.replace('http:', 'ws:');
      const cli = new Cli(t, ['chat', restUrl]);
      assert.deepEqual(await cli.exited(), { code: 1, signal: null }, cli.describe());
      assert.equal(cli.stdout.text, '');
      assert.equal(cli.stderr.lines.length, 1, cli.describe());
      assert.match(
        cli.stderr.text,
        /^roster chat: could not connect to ws:\/\/127\.0\.0\.1:\d+: .*REST port \(PORT\).*WS_PORT/,
      );
      assert.ok(cli.stderr.text.includes(`roster chat ${running.wsUrl}`), cli.describe());
    },
  );

  test(
    'white-space-only lines and unknown /commands are not sent; // sends a leading /',
    { timeout: TEST_MS },
    async (t) => {
      const running = await rosterFor(t);
      const observer = await client(t, running.wsUrl);
      const cli = await jsonChat(t, running.wsUrl);
      await observer.next((m) => m.type === 'user_join');
      cli.child.stdin.end('   \n\t\n/nope\n//slash\n/usr/bin is full\nlast\n');
      assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
      const sent = cli.json.filter((m) => m.type === 'chat').map((m) => m.message);
      assert.deepEqual(sent, ['/slash', '/usr/bin is full', 'last']);
      await observer.next((m) => m.type === 'user_leave');
      assert.deepEqual(
        observer.messages.filter((m: Json) => m.type === 'chat').map((m: Json) => m.message),
        sent,
        'what the room got',
      );
      assert.match(cli.stderr.text, /^\* unknown command \/nope; commands: .*\/help/m);
    },
  );

  test(
    'the server closes with another code: exit 1 (a message over WS_MAX_PAYLOAD gets 1009)',
    { timeout: TEST_MS },
    async (t) => {
      const running = await rosterFor(t, { WS_MAX_PAYLOAD: '64KiB' });
      const cli = await jsonChat(t, running.wsUrl);
      cli.child.stdin.write(`${'x'.repeat(70 * 1024)}\n`);
      assert.deepEqual(await cli.exited(), { code: 1, signal: null }, cli.describe());
      assert.match(cli.stderr.text, /the server closed the connection: 1009\b/);
    },
  );

  test('a close code and reason of the server are reported as sent', { timeout: TEST_MS }, async (t) => {
    const url = await bareServer(t, ({ ws }) => ws.close(4000, 'custom goodbye'));
    const cli = new Cli(t, ['chat', url, '--json']);
    assert.deepEqual(await cli.exited(), { code: 1, signal: null }, cli.describe());
    assert.equal(
      cli.stderr.text,
      "roster chat: the server closed the connection: 4000 custom goodbye (a code of the server's own application)\n",
    );
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`${signal}: leaves with a close frame (1000), exit 0`, { timeout: TEST_MS }, async (t) => {
      const connected = deferred<Peer>();
      const url = await bareServer(t, (peer) => {
        peer.ws.send('{"type":"system","message":"Welcome","timestamp":""}');
        connected.resolve(peer);
      });
      const cli = new Cli(t, ['chat', url, '--json']);
      await cli.waitForJson((m) => m.type === 'system', 'the welcome');
      const peer = await within(connected.promise, EVENT_MS, 'the connection');
      cli.child.kill(signal);
      assert.deepEqual(await within(peer.closed, EVENT_MS, 'the close frame'), { code: 1000, reason: '' });
      assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
      assert.equal(cli.stderr.text, '');
    });
  }

  test('usage errors: exit 2', { timeout: TEST_MS }, async (t) => {
    for (const args of [['--nope'], ['ws://a', 'ws://b'], ['http://[::1']]) {
      const cli = new Cli(t, ['chat', ...args]);
      assert.deepEqual(await cli.exited(), { code: 2, signal: null }, cli.describe());
      assert.match(cli.stderr.text, /^roster chat: /);
      assert.equal(cli.stdout.text, '');
    }
  });

  test('--help', { timeout: TEST_MS }, async (t) => {
    const cli = new Cli(t, ['chat', '--help']);
    assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
    assert.match(cli.stdout.text, /^Usage: roster chat \[URL\] \[--json\]/);
    for (const word of ['/quit', '/ping', 'WS_URL', 'WS_PORT', '--json'])
      assert.ok(cli.stdout.text.includes(word), word);
  });
});

/** A chat session in-process at a stand-in terminal: keys in, screen out, signals from an emitter. */
function terminalChat(options: ChatOptions): {
  keys: PassThrough;
  screen: Transcript;
  errors: Transcript;
  signals: EventEmitter;
  exit: Promise<number>;
} {
  const keys = new PassThrough();
  const out = new PassThrough();
  const err = new PassThrough();
  const screen = new Transcript(out);
  const errors = new Transcript(err);
  const signals = new EventEmitter();
  const exit = runChat(
    { timeZone: 'UTC', ...options },
    { input: keys, output: out, errors: err, interactive: true, signals },
  );
  return { keys, screen, errors, signals, exit };
}

describe('roster chat at a terminal (in-process)', () => {
  test('prompt, sending, (you), others, /ping, /help, /quit', { timeout: TEST_MS }, async (t) => {
    const running = await rosterFor(t);
    const { keys, screen, errors, exit } = terminalChat({ url: running.wsUrl, json: false });
    const has = (pattern: RegExp) => () => (pattern.test(screen.plain) ? true : undefined);
    await screen.until(has(/\* Welcome to the chat! 1 user online\.\n> $/), 'the welcome and a prompt');
    assert.ok(screen.plain.startsWith(`* connected to ${running.wsUrl}\n`), screen.plain);

    keys.write('hello\r');
    await screen.until(has(/\] [0-9a-f]{8} \(you\): hello\n> $/), 'the own chat, marked');

    const other = await client(t, running.wsUrl);
    await screen.until(has(/\* a user joined \(2 online\)\n> $/), 'the join notice');
    other.send({ type: 'chat', message: 'hi' });
    await screen.until(has(/\] [0-9a-f]{8}: hi\n> $/), 'the other chat, not marked');

    keys.write('/ping\r');
    await screen.until(has(/\* pong in \d+ ms\n> $/), 'the round trip');
    keys.write('/help\r');
    await screen.until(has(/\* commands: .*\/quit.*\n> $/), 'the commands');

    // A line being typed survives a message arriving: it is redrawn below it.
    keys.write('half-typed');
    other.send({ type: 'chat', message: 'interrupting' });
    await screen.until(
      () => (/interrupting\n> half-typed$/.test(screen.plain.split(/\r?\n/).slice(-2).join('\n')) ? true : undefined),
      'the redrawn line',
    );
    keys.write('\x15'); // Ctrl-U: erase it

    const leave = other.next((m) => m.type === 'user_leave');
    keys.write('/quit\r');
    assert.equal(await within(exit, EVENT_MS, 'the session to end'), 0);
    assert.equal((await leave).online_count, 1);
    assert.equal(errors.text, '');
  });

  test('Ctrl-C leaves with a close frame (1000); exit 0', { timeout: TEST_MS }, async (t) => {
    const connected = deferred<Peer>();
    const url = await bareServer(t, (peer) => {
      peer.ws.send('{"type":"system","message":"Welcome","timestamp":""}');
      connected.resolve(peer);
    });
    const { keys, screen, exit } = terminalChat({ url, json: false });
    await screen.until(() => (screen.plain.includes('* Welcome') ? true : undefined), 'the welcome');
    const peer = await within(connected.promise, EVENT_MS, 'the connection');
    keys.write('typed but not sent\x03');
    assert.equal(await within(exit, EVENT_MS, 'the session to end'), 0);
    assert.deepEqual(await within(peer.closed, EVENT_MS, 'the close frame'), { code: 1000, reason: '' });
    assert.deepEqual(peer.received, []);
  });

  test('an application ping every pingIntervalMs; its pongs are not shown', { timeout: TEST_MS }, async (t) => {
    const pings = new Transcript();
    const connected = deferred<Peer>();
    const url = await bareServer(t, (peer) => {
      peer.ws.on('message', (data) => {
        if (JSON.parse(String(data)).type !== 'ping') return;
        peer.ws.send('{"type":"pong","timestamp":""}');
        pings.append('ping\n');
      });
      connected.resolve(peer);
    });
    const { screen, signals, exit } = terminalChat({ url, json: false, pingIntervalMs: 20 });
    await pings.until(() => (pings.lines.length >= 3 ? true : undefined), 'three keep-alive pings');
    const peer = await connected.promise;
    assert.ok(
      peer.received.every((text) => text === '{"type":"ping"}'),
      JSON.stringify(peer.received),
    );
    signals.emit('SIGINT', 'SIGINT');
    assert.equal(await within(exit, EVENT_MS, 'the session to end'), 0);
    assert.doesNotMatch(screen.plain, /pong/);
  });

  test('Ctrl-D on an empty line leaves', { timeout: TEST_MS }, async (t) => {
    const running = await rosterFor(t);
    const { keys, screen, exit } = terminalChat({ url: running.wsUrl, json: false });
    await screen.until(() => (screen.plain.includes('* Welcome') ? true : undefined), 'the welcome');
    keys.write('\x04');
    assert.equal(await within(exit, EVENT_MS, 'the session to end'), 0);
  });
});
