/**
 * The console's chat panel in headless Chromium: two pages talk, see each other join and leave and
 * the online count change, own messages are marked, the application ping goes out every 30 s, and a
 * dropped connection is reported and re-established.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatServerMessage } from '../../src/cli/chat-view.js';
import {
  artifactPath,
  ChatClient,
  eventually,
  launchBrowser,
  noChromium,
  openConsole,
  sayInChat,
  startConsoleRoster,
  TcpProxy,
  waitForText,
  withConsole,
  type ConsoleRoster,
} from '../support/index.js';
import type { Browser, Page } from 'playwright-core';

const status = (page: Page) => page.locator('#chat-status-text');
const count = (page: Page) => page.locator('#online-count');
const messages = (page: Page) => page.locator('#chat-log li.message');

test(
  'two pages chat: welcome, join and leave notices, online count, own messages marked',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const alice = await openConsole(browser, roster.origin);
      await waitForText(status(alice.page), 'Connected');
      await waitForText(alice.page.locator('#chat-log'), 'Welcome to the chat! 1 user online.');
      await waitForText(count(alice.page), /^1$/);

      const bob = await openConsole(browser, roster.origin);
      await waitForText(status(bob.page), 'Connected');
      await waitForText(bob.page.locator('#chat-log'), 'Welcome to the chat! 2 users online.');
      await waitForText(count(bob.page), /^2$/);
      await waitForText(alice.page.locator('#chat-log li.notice.join'), 'A user joined the chat');
      await waitForText(count(alice.page), /^2$/);

      await sayInChat(alice.page, 'Hello from Alice');
      await waitForText(messages(bob.page).last(), 'Hello from Alice');
      await waitForText(messages(alice.page).last(), 'Hello from Alice');
      assert.equal(
        await alice.page.getByLabel('Message', { exact: true }).inputValue(),
        '',
        'the input is cleared after sending',
      );

      await sayInChat(bob.page, 'Hi Alice, Bob here');
      await waitForText(messages(alice.page).last(), 'Hi Alice, Bob here');
      await waitForText(messages(bob.page).last(), 'Hi Alice, Bob here');

      // Each page marks its own message, and only that one.
      const marks = async (page: Page) =>
        messages(page).evaluateAll((items) =>
          items.map((item) => [
            item.querySelector('.text')?.textContent,
            item.getAttribute('data-own'),
            item.querySelector('.who')?.textContent,
          ]),
        );
      assert.deepEqual(await marks(alice.page), [
        ['Hello from Alice', 'true', 'You'],
        ['Hi Alice, Bob here', 'false', await messages(alice.page).last().locator('.who').textContent()],
      ]);
      assert.deepEqual(
        (await marks(bob.page)).map(([text, own]) => [text, own]),
        [
          ['Hello from Alice', 'false'],
          ['Hi Alice, Bob here', 'true'],
        ],
      );
      assert.match((await marks(bob.page))[0]?.[2] ?? '', /^[0-9a-f]{8}$/);
      // The same short id as the terminal client shows for that sender (src/cli/chat-view.ts).
      const aliceAtBob = messages(bob.page).first();
      const from = (await aliceAtBob.getAttribute('data-from')) ?? '';
      const terminalLine =
        formatServerMessage({ type: 'chat', from, message: 'Hello from Alice', timestamp: '' }) ?? '';
      assert.equal(terminalLine.split(' ')[1]?.replace(/:$/, ''), await aliceAtBob.locator('.who').textContent());

      // A second message from Alice, with the same text Bob could send: still told apart by id.
      await sayInChat(alice.page, 'Hi Alice, Bob here');
      await eventually(async () => (await messages(bob.page).count()) === 3, 'the third message at Bob');
      assert.equal(await messages(alice.page).nth(2).getAttribute('data-own'), 'true');
      assert.equal(await messages(bob.page).nth(2).getAttribute('data-own'), 'false');

      await bob.page.context().close();
      await waitForText(alice.page.locator('#chat-log li.notice.leave'), 'A user left the chat');
      await waitForText(count(alice.page), /^1$/);

      assert.deepEqual([...alice.errors, ...bob.errors], []);
      assert.deepEqual([...alice.consoleErrors, ...bob.consoleErrors], []);
    });
  },
);

test('the page sends the contract ping every 30 s and gets a pong', { skip: noChromium, timeout: 30_000 }, async () => {
  await withConsole(async (roster, browser) => {
    const context = await browser.newContext();
    const page = await context.newPage();
    // A fake clock: 30 s pass in an instant, while the network stays real.
    await page.clock.install();
    const sent: string[] = [];
    const received: string[] = [];
    page.on('websocket', (socket) => {
      socket.on('framesent', (frame) => sent.push(String(frame.payload)));
      socket.on('framereceived', (frame) => received.push(String(frame.payload)));
    });
    await page.goto(`${roster.origin}/`);
    await waitForText(status(page), 'Connected');

    await page.clock.runFor(29_000);
    assert.deepEqual(sent, [], 'nothing is sent before 30 s');
    await page.clock.runFor(1_000);
    await eventually(async () => sent.length === 1, 'the first ping');
    assert.deepEqual(JSON.parse(sent[0]!), { type: 'ping' });
    await eventually(async () => received.some((text) => JSON.parse(text).type === 'pong'), 'the pong');

    await page.clock.runFor(30_000);
    await eventually(async () => sent.length === 2, 'the second ping');
    await eventually(
      async () => received.filter((text) => JSON.parse(text).type === 'pong').length === 2,
      'the second pong',
    );
    // Answered pings keep the connection: still the same one, still connected.
    assert.equal(await status(page).textContent(), 'Connected');
    assert.equal(await roster.server.chat.size(), 1);
  });
});

test(
  'a dropped connection shows "Reconnecting in … s" and comes back with backoff',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    let roster: ConsoleRoster | undefined;
    let browser: Browser | undefined;
    let proxy: TcpProxy | undefined;
    try {
      // The page reaches the chat through a proxy (given as the public chat URL), which the test cuts.
      let chatPort = 0;
      proxy = await TcpProxy.start(() => ({ host: '127.0.0.1', port: chatPort }));
      roster = await startConsoleRoster({}, { chatUrl: `ws://127.0.0.1:${proxy.port}/` });
      chatPort = roster.wsPort;
      browser = await launchBrowser();
      const { page, errors } = await openConsole(browser, roster.origin);
      await waitForText(status(page), 'Connected');
      await sayInChat(page, 'before the drop');
      await eventually(
        async () => (await messages(page).first().getAttribute('data-own')) === 'true',
        'own message marked',
      );

      // The network drops every connection and refuses new ones for a while.
      proxy.cut();
      await waitForText(status(page), /^Connection lost\. Reconnecting in \d+ s…$/);
      assert.equal(await page.locator('#chat-send').isDisabled(), true, 'sending is off while disconnected');
      assert.equal(await count(page).textContent(), '–');
      await waitForText(page.locator('#chat-log li.notice.lost'), 'Connection lost');
      await page.locator('#chat').screenshot({ path: artifactPath('chat-reconnecting-1280.png') });
      // Retries keep failing; the page keeps saying so.
      await eventually(async () => proxy!.refused >= 2, 'two refused reconnection attempts', 8_000);
      await waitForText(status(page), /^Connection lost\. Reconnecting in \d+ s…$|^Reconnecting…$/);

      proxy.restore();
      await waitForText(status(page), 'Connected', 15_000);
      await waitForText(count(page), /^1$/);
      assert.equal(await roster.server.chat.size(), 1, 'the old connection is gone, the new one is in');

      // A new connection has a new id: the page learns it again and marks its messages.
      await sayInChat(page, 'after the reconnect');
      await eventually(async () => (await messages(page).count()) === 2, 'the second message');
      assert.equal(await messages(page).nth(1).getAttribute('data-own'), 'true');
      assert.deepEqual(errors, []);
    } finally {
      await browser?.close();
      await proxy?.close();
      await roster?.stop();
    }
  },
);

test(
  'the page shows recent history on joining and, after a drop, exactly what was missed',
  { skip: noChromium, timeout: 40_000 },
  async () => {
    let roster: ConsoleRoster | undefined;
    let browser: Browser | undefined;
    let proxy: TcpProxy | undefined;
    let observer: ChatClient | undefined;
    try {
      let chatPort = 0;
      proxy = await TcpProxy.start(() => ({ host: '127.0.0.1', port: chatPort }));
      roster = await startConsoleRoster({}, { chatUrl: `ws://127.0.0.1:${proxy.port}/` });
      chatPort = roster.wsPort;
      // Someone talks before the page joins, straight to the chat port.
      observer = await ChatClient.connect(`ws://127.0.0.1:${roster.wsPort}`);
      for (const text of ['early 1', 'early 2']) observer.send({ type: 'chat', message: text });
      await observer.next((m) => m.message === 'early 2');

      browser = await launchBrowser();
      const { page, errors } = await openConsole(browser, roster.origin);
      await waitForText(status(page), 'Connected');
      await eventually(async () => (await messages(page).count()) === 2, 'the two earlier messages');
      assert.deepEqual(
        await messages(page).evaluateAll((items) => items.map((item) => item.classList.contains('earlier'))),
        [true, true],
      );

      proxy.cut();
      await waitForText(page.locator('#chat-log li.notice.lost'), 'Connection lost');
      await observer.next((m) => m.type === 'user_leave');
      for (const text of ['while away 1', 'while away 2', 'while away 3'])
        observer.send({ type: 'chat', message: text });
      await observer.next((m) => m.message === 'while away 3');
      proxy.restore();
      await waitForText(status(page), 'Connected', 15_000);
      await waitForText(page.locator('#chat-log li.notice.system').last(), '3 missed messages recovered');
      observer.send({ type: 'chat', message: 'after' });
      await waitForText(messages(page).last(), 'after');
      const texts = await messages(page).evaluateAll((items) =>
        items.map((item) => item.querySelector('.text')?.textContent),
      );
      assert.deepEqual(
        texts,
        ['early 1', 'early 2', 'while away 1', 'while away 2', 'while away 3', 'after'],
        'nothing lost, nothing twice',
      );
      assert.deepEqual(errors, []);
    } finally {
      observer?.ws.terminate();
      await browser?.close();
      await proxy?.close();
      await roster?.stop();
    }
  },
);
