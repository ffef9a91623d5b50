/**
 * Concurrent edits in the console: the edit form keeps the ETag of the user it opened and sends it as
 * If-Match, so a save over someone else's change meanwhile is refused (412), shown with the values it
 * has now, and sent again only when asked. Deletes send If-Match too. Two pages, one user, headless
 * Chromium.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page, Request } from 'playwright-core';
import { eventually, noChromium, openConsole, request, waitForText, withConsole, type Json } from '../support/index.js';

const dialog = (page: Page) => page.locator('#user-dialog');

/** The If-Match of each write to the user API, as [method, If-Match]. */
function recordPreconditions(page: Page): [string, string | undefined][] {
  const writes: [string, string | undefined][] = [];
  page.on('request', (req: Request) => {
    if (req.url().includes('/api/v1/users/') && ['PUT', 'PATCH', 'DELETE'].includes(req.method()))
      writes.push([req.method(), req.headers()['if-match']]);
  });
  return writes;
}

/** The first user created (a seed user). */
async function oldestUser(api: string): Promise<Json> {
  return ((await request(`${api}/users?sort=created_at&order=asc&limit=1`)).body.data.users as Json[])[0]!;
}

/** Opens the edit form of `name` and waits until it has read the user (the fields are editable). */
async function openEdit(page: Page, name: string): Promise<void> {
  await page.getByRole('button', { name: `Edit ${name}` }).click();
  await waitForText(page.locator('#user-dialog-title'), `Edit ${name}`);
  await eventually(
    async () => (await page.locator('#user-form').getAttribute('aria-busy')) === 'false',
    'the form to read the user',
  );
}

test(
  'two pages edit one user: the second save is refused with the current values, and re-applied when asked',
  { skip: noChromium, timeout: 60_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const seed = await oldestUser(roster.api);
      const id = seed.id as string;
      const name = seed.name as string;
      const stored = async () => (await request(`${roster.api}/users/${id}`)).body.data as Json;
      const etag = (await request(`${roster.api}/users/${id}`)).headers.get('etag');
      assert.ok(etag, 'Roster answers an ETag');

      const first = await openConsole(browser, roster.origin);
      const second = await openConsole(browser, roster.origin);
      const sent1 = recordPreconditions(first.page);
      const sent2 = recordPreconditions(second.page);
      await openEdit(first.page, name);
      await openEdit(second.page, name);

      // Page 1 renames and saves: its If-Match is the ETag both pages opened with.
      await first.page.locator('#user-name').fill('Renamed In Page One');
      await first.page.getByRole('button', { name: /Save changes/ }).click();
      await waitForText(first.page.locator('#users-notice'), 'Updated Renamed In Page One (name).');
      assert.deepEqual(sent1, [['PATCH', etag]]);

      // Page 2 changes the email over the old ETag: refused, and shown with the values it has now.
      await second.page.locator('#user-email').fill('changed.in.page.two@example.com');
      await second.page.getByRole('button', { name: /Save changes/ }).click();
      const conflict = second.page.locator('#user-conflict');
      await waitForText(conflict, 'changed by someone else since you opened it');
      assert.equal(await conflict.isVisible(), true);
      await waitForText(conflict.locator('dd[data-field="name"]'), 'Renamed In Page One');
      assert.equal(await conflict.locator('dd[data-field="email"]').textContent(), seed.email);
      assert.deepEqual(sent2, [['PATCH', etag]]);
      assert.equal(await dialog(second.page).getAttribute('open'), '', 'the form stays open, with page 2 values');
      assert.equal(await second.page.locator('#user-email').inputValue(), 'changed.in.page.two@example.com');

      // Until page 2 re-applies, the user keeps page 1's change, and only it.
      let now = await stored();
      assert.deepEqual([now.name, now.email], ['Renamed In Page One', seed.email]);

      // Re-applied: page 2's change (the email only) over page 1's, with the current ETag.
      const current = (await request(`${roster.api}/users/${id}`)).headers.get('etag');
      assert.notEqual(current, etag);
      await second.page.getByRole('button', { name: 'Re-apply my changes' }).click();
      await waitForText(second.page.locator('#users-notice'), 'Updated Renamed In Page One (email).');
      assert.deepEqual(sent2, [
        ['PATCH', etag],
        ['PATCH', current],
      ]);
      now = await stored();
      assert.deepEqual([now.name, now.email], ['Renamed In Page One', 'changed.in.page.two@example.com']);
      assert.deepEqual([...first.errors, ...second.errors], []);
    });
  },
);

test(
  'Replace all fields (PUT) over a change made meanwhile: refused with the current values; replaced only when asked',
  { skip: noChromium, timeout: 60_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const seed = await oldestUser(roster.api);
      const id = seed.id as string;
      const { page, errors } = await openConsole(browser, roster.origin);
      const sent = recordPreconditions(page);
      await openEdit(page, seed.name as string);
      const opened = (await request(`${roster.api}/users/${id}`)).headers.get('etag');
      const meanwhile = await request(`${roster.api}/users/${id}`, { method: 'PATCH', body: { role: 'admin' } });
      assert.equal(meanwhile.status, 200);

      await page.locator('#user-name').fill('Replaced Name');
      await page.getByRole('button', { name: /Replace all fields/ }).click();
      await waitForText(page.locator('#user-conflict'), 'changed by someone else since you opened it');
      await waitForText(page.locator('#user-conflict dd[data-field="role"]'), 'admin');
      assert.equal(((await request(`${roster.api}/users/${id}`)).body.data as Json).name, seed.name, 'not replaced');
      await page.getByRole('button', { name: 'Replace with my values' }).click();
      await waitForText(page.locator('#users-notice'), 'Replaced Replaced Name (all fields).');
      assert.deepEqual(sent, [
        ['PUT', opened],
        ['PUT', meanwhile.headers.get('etag')],
      ]);
      const now = (await request(`${roster.api}/users/${id}`)).body.data as Json;
      assert.deepEqual([now.name, now.role], ['Replaced Name', seed.role], 'PUT replaces every field, the role too');
      assert.deepEqual(errors, []);
    });
  },
);

test(
  'a delete sends If-Match; a user changed since the dialog opened is not deleted until confirmed again',
  { skip: noChromium, timeout: 60_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const seed = await oldestUser(roster.api);
      const id = seed.id as string;
      const { page, errors } = await openConsole(browser, roster.origin);
      const sent = recordPreconditions(page);
      const etag = (await request(`${roster.api}/users/${id}`)).headers.get('etag');
      await page.getByRole('button', { name: `Delete ${seed.name as string}` }).click();
      await eventually(
        async () => !(await page.locator('#delete-confirm').isDisabled()),
        'the dialog to read the user',
      );

      // Someone renames the user meanwhile.
      assert.equal(
        (await request(`${roster.api}/users/${id}`, { method: 'PATCH', body: { name: 'Renamed Meanwhile' } })).status,
        200,
      );
      await page.locator('#delete-confirm').click();
      await waitForText(page.locator('#delete-dialog-text'), 'changed by someone else since you opened it');
      await waitForText(page.locator('#delete-dialog-text'), 'Renamed Meanwhile');
      assert.equal((await request(`${roster.api}/users/${id}`)).status, 200, 'not deleted');
      await page.getByRole('button', { name: 'Delete anyway' }).click();
      await waitForText(page.locator('#users-notice'), 'Deleted Renamed Meanwhile.');
      assert.equal((await request(`${roster.api}/users/${id}`)).status, 404);
      const current = sent.at(-1)?.[1];
      assert.deepEqual(sent, [
        ['DELETE', etag],
        ['DELETE', current],
      ]);
      assert.notEqual(current, etag);
      assert.deepEqual(errors, []);
    });
  },
);
