/**
 * `roster chat --history N` through a real process: the room's last N messages on joining, marked as
 * replayed; and after a dropped connection (a proxy in between, cut and restored), a reconnection with
 * `since` that shows exactly what was missed, in order, nothing twice.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChatClient, Cli, startRoster, TcpProxy, TEST_MS, type Json } from '../support/index.js';

test(
  'roster chat --history: recent messages on joining, then recovery after a drop without loss or repeats',
  { timeout: TEST_MS },
  async (t) => {
    const running = await startRoster({ SHUTDOWN_TIMEOUT_MS: '2000', CHAT_HISTORY: '100' });
    t.after(() => running.stop());
    const proxy = await TcpProxy.start({ host: '127.0.0.1', port: running.wsPort });
    t.after(() => proxy.close());
    const observer = await ChatClient.connect(running.wsUrl);
    observer.ws.on('error', () => {});
    t.after(() => observer.ws.terminate());
    for (const text of ['m-0', 'm-1', 'm-2']) observer.send({ type: 'chat', message: text });
    await observer.next((m) => m.message === 'm-2');

    const cli = new Cli(t, ['chat', `ws://127.0.0.1:${proxy.port}`, '--json', '--history', '2']);
    await cli.waitForJson((m) => m.type === 'history', 'the end of the replay');
    assert.deepEqual(
      cli.json.map((m: Json) => [m.type, m.message ?? m.count, m.history ?? null]),
      [
        ['system', cli.json[0].message, null],
        ['chat', 'm-1', true],
        ['chat', 'm-2', true],
        ['history', 2, null],
      ],
    );
    await observer.next((m) => m.type === 'user_join');
    observer.send({ type: 'chat', message: 'live-0' });
    await cli.waitForJson((m) => m.message === 'live-0', 'a live message');

    // The network drops; what is said meanwhile is missed, then recovered on reconnection.
    proxy.cut();
    await observer.next((m) => m.type === 'user_leave');
    const missed = ['missed-0', 'missed-1', 'missed-2', 'missed-3'];
    for (const text of missed) observer.send({ type: 'chat', message: text });
    await observer.next((m) => m.message === 'missed-3');
    proxy.restore();
    const back = await cli.waitForJson((m) => m.type === 'history' && m.recovered !== undefined, 'the recovery');
    assert.equal(back.recovered, true);
    assert.equal(back.count, missed.length);
    observer.send({ type: 'chat', message: 'after' });
    await cli.waitForJson((m) => m.message === 'after', 'a message after the reconnection');
    cli.child.stdin.end();
    assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());

    const chats = cli.json.filter((m: Json) => m.type === 'chat').map((m: Json) => m.message);
    assert.deepEqual(chats, ['m-1', 'm-2', 'live-0', ...missed, 'after'], 'in order, nothing lost, nothing twice');
    assert.match(cli.stderr.text, /the connection dropped/);
  },
);
