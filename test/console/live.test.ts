/**
 * The console's users table kept live by the change feed (web/src/users/live.ts), in headless Chromium:
 * a user changed, added or deleted through the API by someone else shows within a second, with the
 * page, sort and search kept; an edit form open on a user changed elsewhere warns as a 412 does, and
 * one deleted elsewhere says so; with AUTH on (the credential a header), the table is live too; and a
 * reset (the stream asked for from a cursor the feed no longer keeps) reads the list again, once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { eventually, noChromium, openConsole, request, waitForText, withConsole, type Json } from '../support/index.js';

/** What "live" promises: a change elsewhere is on screen within a second. */
const LIVE_MS = 1_000;

const names = (page: Page) => page.locator('#users-body td[data-field="name"]').allTextContents();

async function create(api: string, name: string, headers: Record<string, string> = {}): Promise<string> {
  const email = `${name.toLowerCase().replace(/\W+/g, '.')}@example.com`;
  const reply = await request(`${api}/users`, { method: 'POST', body: { name, email }, headers });
  assert.equal(reply.status, 201, reply.text);
  return reply.body.data.id as string;
}

/** Waits for the live indicator to say the stream is open. */
const live = (page: Page) => waitForText(page.locator('#users-live'), 'Live', 10_000);

/** Waits (at most LIVE_MS) until the names shown are `expected`. */
async function shows(page: Page, expected: string[], what: string): Promise<void> {
  await eventually(async () => JSON.stringify(await names(page)) === JSON.stringify(expected), what, LIVE_MS, 20).catch(
    async (error: Error) => assert.fail(`${error.message}; shown: ${JSON.stringify(await names(page))}`),
  );
}

test(
  'a user changed, added or deleted elsewhere shows within a second; the page, sort and search are kept',
  { skip: noChromium, timeout: 60_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const ids = new Map<string, string>();
      for (let n = 1; n <= 12; n++) {
        const name = `Live ${String(n).padStart(2, '0')}`;
        ids.set(name, await create(roster.api, name));
      }
      const view = '/?search=live&sort=name&order=desc&limit=5&page=2';
      const { page, errors } = await openConsole(browser, roster.origin, undefined, view);
      await live(page);
      await shows(page, ['Live 07', 'Live 06', 'Live 05', 'Live 04', 'Live 03'], 'page 2, by name descending');

      const renamed = await request(`${roster.api}/users/${ids.get('Live 05')}`, {
        method: 'PATCH',
        body: { name: 'Live 05 renamed' },
      });
      assert.equal(renamed.status, 200);
      await shows(page, ['Live 07', 'Live 06', 'Live 05 renamed', 'Live 04', 'Live 03'], 'the row edited elsewhere');

      await create(roster.api, 'Live 06a');
      await shows(page, ['Live 07', 'Live 06a', 'Live 06', 'Live 05 renamed', 'Live 04'], 'the user added elsewhere');

      assert.equal((await request(`${roster.api}/users/${ids.get('Live 06')}`, { method: 'DELETE' })).status, 204);
      await shows(page, ['Live 07', 'Live 06a', 'Live 05 renamed', 'Live 04', 'Live 03'], 'the user deleted elsewhere');

      await create(roster.api, 'Someone Else'); // not in the search: the page stays as it is
      const url = new URL(page.url());
      assert.deepEqual(
        ['search', 'sort', 'order', 'limit', 'page'].map((key) => url.searchParams.get(key)),
        ['live', 'name', 'desc', '5', '2'],
      );
      assert.equal(await page.locator('#user-search').inputValue(), 'live');
      await waitForText(page.locator('#page-info'), 'Page 2 of 3 · 12 users');
      assert.deepEqual(errors, []);
    });
  },
);

test(
  'an edit form open on a user changed elsewhere warns as a 412 does; deleted elsewhere, it says so',
  { skip: noChromium, timeout: 60_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const id = await create(roster.api, 'Edited Here');
      const { page, errors } = await openConsole(browser, roster.origin, undefined, '/?search=edited');
      await live(page);
      await page.getByRole('button', { name: 'Edit Edited Here' }).click();
      await eventually(
        async () => (await page.locator('#user-form').getAttribute('aria-busy')) === 'false',
        'the read',
      );
      await page.locator('#user-name').fill('My Own Name');

      const meanwhile = await request(`${roster.api}/users/${id}`, { method: 'PATCH', body: { role: 'admin' } });
      assert.equal(meanwhile.status, 200);
      const conflict = page.locator('#user-conflict');
      await waitForText(conflict, 'changed by someone else since you opened it', LIVE_MS);
      await waitForText(conflict.locator('dd[data-field="role"]'), 'admin');
      assert.equal(await page.locator('#user-name').inputValue(), 'My Own Name', 'what was typed is kept');
      assert.equal(await page.locator('#user-dialog').getAttribute('open'), '', 'the form stays open');

      // Re-applied: this form's change over theirs, sent with their ETag.
      await page.getByRole('button', { name: 'Re-apply my changes' }).click();
      await waitForText(page.locator('#users-notice'), 'Updated My Own Name (name).');
      const stored = (await request(`${roster.api}/users/${id}`)).body.data as Json;
      assert.deepEqual([stored.name, stored.role], ['My Own Name', 'admin']);

      // Opened again, then deleted elsewhere.
      await page.getByRole('button', { name: 'Edit My Own Name' }).click();
      await eventually(
        async () => (await page.locator('#user-form').getAttribute('aria-busy')) === 'false',
        'the read',
      );
      assert.equal(await conflict.isHidden(), true, 'its own save is no conflict');
      assert.equal((await request(`${roster.api}/users/${id}`, { method: 'DELETE' })).status, 204);
      await waitForText(page.locator('#user-form-error'), 'This user no longer exists', LIVE_MS);
      assert.equal(await page.locator('#user-submit').isDisabled(), true);
      assert.deepEqual(errors, []);
    });
  },
);

test('with AUTH on (a header credential), the table is live too', { skip: noChromium, timeout: 60_000 }, async () => {
  const key = 'live-console-key-0123456789';
  await withConsole({ AUTH: 'apikey', API_KEYS: `${key}:admin` }, async (roster, browser) => {
    const { page, errors } = await openConsole(browser, roster.origin, undefined, '/?search=header');
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await live(page);
    await create(roster.api, 'Header Signed', { 'x-api-key': key });
    await shows(page, ['Header Signed'], 'the user added elsewhere');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await eventually(async () => await page.locator('#users-live').isHidden(), 'the indicator to go');
    assert.deepEqual(errors, []);
  });
});

test(
  'a reset (the feed no longer holds the cursor) reloads the table once, and it stays live',
  { skip: noChromium, timeout: 60_000 },
  async () => {
    // The feed keeps 3 changes: a stream asked for from a cursor 5 changes old is answered by a reset.
    await withConsole({ CHANGES_MAX: '3' }, async (roster, browser) => {
      await create(roster.api, 'Reset 01');
      const seen: string[] = [];
      const lists = () => seen.filter((url) => url.startsWith('/api/v1/users?')).length;
      // The first stream request is held by the browser, unsent, while the writes go on.
      let held: (() => Promise<void>) | undefined;
      const { page, errors } = await openConsole(
        browser,
        roster.origin,
        undefined,
        '/?search=reset',
        undefined,
        async (page) => {
          page.on('request', (sent) => {
            const url = new URL(sent.url());
            if (url.pathname.startsWith('/api/v1/users')) seen.push(`${url.pathname}${url.search}`);
          });
          await page.route('**/api/v1/users/changes**', async (route) => {
            const stream = (route.request().headers().accept ?? '').includes('text/event-stream');
            if (stream && held === undefined) held = () => route.continue();
            else await route.continue();
          });
        },
      );
      await eventually(async () => held !== undefined, 'the stream request');
      await shows(page, ['Reset 01'], 'the list read before the stream');
      assert.equal(lists(), 1, `the list is read once before the stream: ${seen.join(' ')}`);

      for (let n = 2; n <= 6; n++) await create(roster.api, `Reset 0${n}`);
      // Held, the stream has told the page nothing: the table still shows the first read.
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.deepEqual(await names(page), ['Reset 01'], `nothing shown before the stream: ${seen.join(' ')}`);
      assert.equal(lists(), 1, `no other list read while the stream is held: ${seen.join(' ')}`);

      await held!();
      // Newest first, the list's default order.
      await shows(
        page,
        ['Reset 06', 'Reset 05', 'Reset 04', 'Reset 03', 'Reset 02', 'Reset 01'],
        'the list after a reset',
      );
      assert.equal(lists(), 2, `the reset reads the list once more: ${seen.join(' ')}`);
      await live(page);
      // After the reset, the watch goes on from the cursor the reset named: a later change shows.
      await create(roster.api, 'Reset 07');
      await shows(
        page,
        ['Reset 07', 'Reset 06', 'Reset 05', 'Reset 04', 'Reset 03', 'Reset 02', 'Reset 01'],
        'a change after the reset',
      );
      assert.deepEqual(errors, []);
    });
  },
);
