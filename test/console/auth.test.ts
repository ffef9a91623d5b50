/**
 * The console with authentication on (AUTH=apikey, jwt, basic) in headless Chromium: the page asks
 * for the scheme's credential before anything else, a wrong one is refused at the form, the right one
 * lists users and joins the chat (the credential in the handshake's URL), a reader's write is a 403
 * shown at the form, a credential Roster stops accepting brings the form back, and sign-out forgets it.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { hashPassword } from '../../src/edge/password.js';
import { tokenCommand } from '../../src/cli/credential-commands.js';
import {
  artifactPath,
  DESKTOP,
  eventually,
  launchBrowser,
  noChromium,
  openConsole,
  PHONE,
  request,
  sayInChat,
  startConsoleRoster,
  waitForText,
  withConsole,
  type ConsoleRoster,
} from '../support/index.js';

const ADMIN_KEY = 'console-admin-key-0123456789';
const READER_KEY = 'console-reader-key-0123456789';
const SECRET = 'console-test-secret-of-at-least-32-bytes';

const form = (page: Page) => page.locator('#sign-in');
const formError = (page: Page) => page.locator('#sign-in-error');
const pageInfo = (page: Page) => page.locator('#page-info');
const chatStatus = (page: Page) => page.locator('#chat-status-text');
/** [entries in sessionStorage, entries in localStorage, the saved credential]. */
const stored = (page: Page) =>
  page.evaluate<[number, number, string | null]>(
    `[sessionStorage.length, localStorage.length, sessionStorage.getItem('roster.console.credential')]`,
  );

/** A token as `roster token` mints it (src/cli/credential-commands.ts). */
async function rosterToken(...args: string[]): Promise<string> {
  let out = '';
  const output = new Writable({
    write(chunk: Buffer, _encoding, done) {
      out += chunk.toString();
      done();
    },
  });
  const code = await tokenCommand(args, { input: process.stdin, output, errors: output }, { JWT_SECRET: SECRET });
  assert.equal(code, 0, out);
  return out.trim();
}

/** Asks for the credential first: the form, focused, and nothing of the panels; no user request yet. */
async function assertAsked(page: Page, firstField: string): Promise<void> {
  await eventually(async () => await form(page).isVisible(), 'the sign-in form');
  assert.equal(await page.locator('#users').isHidden(), true, 'the users panel is hidden');
  assert.equal(await page.locator('#chat').isHidden(), true, 'the chat panel is hidden');
  assert.equal(await page.locator('#session').isHidden(), true, 'no session in the top bar');
  assert.equal(await page.evaluate('document.activeElement.id'), firstField, 'focus is in the form');
}

/** Signed in: the seed users listed, the chat connected, and a message of this page back from the room. */
async function assertWorking(page: Page, message: string): Promise<void> {
  await waitForText(pageInfo(page), 'Page 1 of 1 · 3 users');
  assert.equal(await form(page).isHidden(), true);
  await waitForText(chatStatus(page), 'Connected');
  await sayInChat(page, message);
  await waitForText(page.locator('#chat-log li.message.own'), message);
}

test('the settings name the scheme and carry no credential', async () => {
  const roster = await startConsoleRoster({ AUTH: 'apikey', API_KEYS: `${ADMIN_KEY},${READER_KEY}:user` });
  try {
    const response = await request(`${roster.origin}/console/config.json`);
    assert.equal(response.status, 200);
    assert.equal(response.body.auth, 'apikey');
    assert.doesNotMatch(response.text, /console-(admin|reader)-key/);
  } finally {
    await roster.stop();
  }
});

test(
  'AUTH=apikey: asked first, a wrong key refused, the right one lists users and chats, a refused one asks again, sign-out forgets',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole({ AUTH: 'apikey', API_KEYS: `${ADMIN_KEY},${READER_KEY}:user` }, async (roster, browser) => {
      const { page, errors, consoleErrors } = await openConsole(browser, roster.origin);
      const userRequests: string[] = [];
      page.on('request', (req) => {
        if (req.url().includes('/api/v1/users')) userRequests.push(req.headers()['x-api-key'] ?? '(none)');
      });
      await assertAsked(page, 'sign-in-key');
      assert.match(
        (await page.locator('#sign-in-hint').textContent()) ?? '',
        /API key.*kept in this browser tab only/s,
      );
      assert.equal(userRequests.length, 0, 'nothing is asked of the API before signing in');

      // An empty form is not sent; a wrong key is refused at the form, which stays.
      await page.getByRole('button', { name: 'Sign in' }).click();
      await waitForText(formError(page), 'Enter the API key.');
      await page.getByLabel('API key').fill('not-the-key-0123456789');
      await page.getByLabel('API key').press('Enter');
      await waitForText(formError(page), 'Not signed in: The API key is not valid.');
      assert.equal(await page.getByLabel('API key').getAttribute('aria-invalid'), 'true');
      assert.equal(await page.locator('#users').isHidden(), true);
      await page.screenshot({ path: artifactPath('sign-in-error-1280.png') });

      // The right key, typed and sent with the keyboard alone (focus is back in the field, its text selected).
      assert.equal(await page.evaluate('document.activeElement.id'), 'sign-in-key');
      await page.keyboard.type(ADMIN_KEY);
      await page.keyboard.press('Enter');
      await waitForText(pageInfo(page), '3 users');
      assert.equal(await page.evaluate('document.activeElement.id'), 'users', 'focus goes on to the users panel');
      await assertWorking(page, 'Hello with an API key');
      await waitForText(page.locator('#session-text'), 'Signed in with an API key');
      assert.ok(userRequests.includes(ADMIN_KEY), 'the REST calls carry X-API-Key');
      const [sessionCount, localCount, saved] = await stored(page);
      assert.equal(localCount, 0, 'nothing in localStorage');
      assert.equal(sessionCount, 1);
      assert.match(saved ?? '', /"kind":"apikey"/);

      // A reload in the same tab keeps the session: no form, straight to the panels.
      await page.reload();
      await waitForText(pageInfo(page), '3 users');
      await waitForText(chatStatus(page), 'Connected');
      assert.equal(await form(page).isHidden(), true);

      // A key Roster no longer accepts (here: another one put in the tab's storage): the next call's
      // 401 brings the form back with the reason, and the panels' contents go.
      await page.evaluate(
        `sessionStorage.setItem('roster.console.credential', JSON.stringify({ kind: 'apikey', key: 'revoked-key-0123456789' }))`,
      );
      await page.reload();
      await waitForText(formError(page), /Your credential was refused: The API key is not valid\. Sign in again\./);
      assert.equal(await page.locator('#users').isHidden(), true);
      assert.equal(await page.locator('#users-body tr').count(), 0);
      assert.equal((await stored(page))[0], 0, 'the refused key is forgotten');

      // Sign out: the form again, the credential gone, the conversation gone.
      await page.getByLabel('API key').fill(ADMIN_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await assertWorking(page, 'Back again');
      await page.getByRole('button', { name: 'Sign out' }).click();
      await assertAsked(page, 'sign-in-key');
      await waitForText(page.locator('#sign-in-notice'), 'Signed out.');
      assert.equal(await formError(page).isHidden(), true, 'signing out is not an error');
      assert.deepEqual(await stored(page), [0, 0, null]);
      assert.equal(await page.locator('#chat-log li').count(), 0, 'the conversation is gone');
      assert.equal(await page.getByLabel('API key').inputValue(), '', 'the key is not left in the form');
      await eventually(async () => (await roster!.server.chat.size()) === 0, 'the page to leave the chat');

      assert.deepEqual(errors, []);
      assert.ok(
        consoleErrors.every((line) => /status of 401/.test(line)),
        consoleErrors.join('\n'),
      );
    });
  },
);

test(
  'AUTH=jwt: a role "user" token reads and chats; its create is a visible 403 at the form; sign-out asks again',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole({ AUTH: 'jwt', JWT_SECRET: SECRET }, async (roster, browser) => {
      const reader = await rosterToken('--sub', 'reader-1', '--name', 'Rita Reader', '--role', 'user');
      const admin = await rosterToken('--sub', 'admin-1', '--name', 'Ada Admin', '--role', 'admin');
      const forged = await rosterToken(
        '--sub',
        'admin-1',
        '--role',
        'admin',
        '--secret',
        'another-secret-of-at-least-32-bytes!!',
      );
      const { page, errors } = await openConsole(browser, roster.origin);
      const handshakes: string[] = [];
      page.on('websocket', (socket) => handshakes.push(socket.url()));
      await assertAsked(page, 'sign-in-token');

      await page.getByLabel('Bearer token').fill(forged);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await waitForText(formError(page), 'Not signed in: The token is not valid.');

      await page.getByLabel('Bearer token').fill(reader);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await assertWorking(page, 'Hello with a token');
      await waitForText(page.locator('#session-text'), 'Signed in as Rita Reader (user)');
      assert.ok(
        handshakes.some((url) => new URL(url).searchParams.get('access_token') === reader),
        'the handshake carries access_token',
      );

      // A write: 403, shown in the dialog, which stays open; nothing breaks.
      await page.getByRole('button', { name: 'Add user' }).click();
      await page.locator('#user-name').fill('Grace Hopper');
      await page.locator('#user-email').fill('grace@example.com');
      await page.getByRole('button', { name: 'Create user' }).click();
      await waitForText(
        page.locator('#user-form-error'),
        'This needs the admin role: you are signed in with a credential that may read users but not change them (403 FORBIDDEN).',
      );
      assert.equal(await page.locator('#user-dialog').getAttribute('open'), '');
      await page.screenshot({ path: artifactPath('sign-in-403-1280.png') });
      await page.keyboard.press('Escape');
      assert.equal(
        (await request(`${roster.api}/users`, { headers: { authorization: `Bearer ${admin}` } })).body.data.pagination
          .total,
        3,
        'nothing was created',
      );

      // Sign out, then in as the admin: the create goes through.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await assertAsked(page, 'sign-in-token');
      await page.getByLabel('Bearer token').fill(`Bearer ${admin}`); // pasted with its scheme: taken as the token
      await page.getByRole('button', { name: 'Sign in' }).click();
      await waitForText(page.locator('#session-text'), 'Signed in as Ada Admin (admin)');
      await page.getByRole('button', { name: 'Add user' }).click();
      await page.locator('#user-name').fill('Grace Hopper');
      await page.locator('#user-email').fill('grace@example.com');
      await page.getByRole('button', { name: 'Create user' }).click();
      await waitForText(page.locator('#users-notice'), 'Created Grace Hopper.');
      await waitForText(pageInfo(page), '4 users');
      assert.deepEqual(errors, []);
    });
  },
);

test(
  'AUTH=basic: user and password list users, and the chat takes them from the URL after its challenge',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    let roster: ConsoleRoster | undefined;
    let browser: Browser | undefined;
    try {
      const password = 'correct horse battery stäple';
      roster = await startConsoleRoster({ AUTH: 'basic', BASIC_USERS: `ada:${await hashPassword(password)}` });
      browser = await launchBrowser();
      const { page, errors } = await openConsole(browser, roster.origin);
      await assertAsked(page, 'sign-in-user');
      await page.getByLabel('User name').fill('ada');
      await page.getByLabel('Password').fill('wrong password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await waitForText(formError(page), 'Not signed in: The user name or password is not valid.');
      assert.equal(await page.getByLabel('User name').inputValue(), 'ada', 'the user name stays');
      assert.equal(await page.evaluate('document.activeElement.id'), 'sign-in-password');
      await page.getByLabel('Password').fill(password);
      await page.getByLabel('Password').press('Enter');
      await assertWorking(page, 'Hello with a password');
      await waitForText(page.locator('#session-text'), 'Signed in as ada');
      assert.deepEqual(errors, []);
    } finally {
      await browser?.close();
      await roster?.stop();
    }
  },
);

test(
  'screenshots of the sign-in form at 1280 and 390 px; no horizontal scroll; every control labelled',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole({ AUTH: 'apikey', API_KEYS: ADMIN_KEY }, async (roster, browser) => {
      const { page } = await openConsole(browser, roster.origin, DESKTOP);
      await assertAsked(page, 'sign-in-key');
      await page.screenshot({ path: artifactPath('sign-in-1280.png') });
      await page.setViewportSize(PHONE);
      await page.screenshot({ path: artifactPath('sign-in-390.png') });
      assert.equal(
        await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'),
        0,
      );
      const unlabelled = await page.evaluate(`[...document.querySelectorAll('input, select, button, textarea')]
      .filter((el) => el.checkVisibility() && !(el.labels?.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby') && el.textContent.trim() === '')
      .map((el) => el.outerHTML)`);
      assert.deepEqual(unlabelled, []);

      // Signed in on a phone: the top bar's session fits too.
      await page.getByLabel('API key').fill(ADMIN_KEY);
      await page.getByLabel('API key').press('Enter');
      await waitForText(pageInfo(page), '3 users');
      await page.screenshot({ path: artifactPath('signed-in-390.png') });
      assert.equal(
        await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'),
        0,
      );
    });
  },
);
