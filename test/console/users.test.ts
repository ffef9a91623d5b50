/**
 * The console's users panel in headless Chromium: create through the form, find by search, edit with
 * PUT and with PATCH, delete after confirmation; the API's validation errors next to the fields;
 * sorting by column, order, role filter and pagination; empty and error states; keyboard use.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page, Request } from 'playwright-core';
import {
  artifactPath,
  eventually,
  noChromium,
  openConsole,
  request,
  waitForText,
  withConsole,
} from '../support/index.js';

const rows = (page: Page) => page.locator('#users-body tr:not(.empty-row)');
const names = (page: Page) => page.locator('#users-body .cell-name').allTextContents();
const dialog = (page: Page) => page.locator('#user-dialog');
const pageInfo = (page: Page) => page.locator('#page-info');

/** Requests to the user API with a body, as [method, parsed body]. */
function recordWrites(page: Page): [string, unknown][] {
  const writes: [string, unknown][] = [];
  page.on('request', (req: Request) => {
    if (req.url().includes('/api/v1/users') && req.method() !== 'GET')
      writes.push([req.method(), req.postData() ? JSON.parse(req.postData()!) : undefined]);
  });
  return writes;
}

async function settled(page: Page): Promise<void> {
  await eventually(
    async () => (await page.locator('#users-table').getAttribute('aria-busy')) === 'false',
    'the list to load',
  );
}

test(
  'a user added with the role left at "default" is sent without one and gets the service\'s default role',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const { page, errors } = await openConsole(browser, roster.origin);
      const writes = recordWrites(page);
      await settled(page);
      await page.getByRole('button', { name: 'Add user' }).click();
      assert.equal(await page.locator('#user-role').inputValue(), '', 'a new user starts at "default"');
      await page.locator('#user-name').fill('Dorothy Vaughan');
      await page.locator('#user-email').fill('dorothy@example.com');
      await page.getByRole('button', { name: 'Create user' }).click();
      await waitForText(page.locator('#users-notice'), 'Created Dorothy Vaughan.');
      assert.deepEqual(writes, [['POST', { name: 'Dorothy Vaughan', email: 'dorothy@example.com' }]]);
      const { body } = await request(`${roster.api}/users?search=dorothy@example.com`);
      const [created] = body.data.users;
      assert.deepEqual(
        (await request(`${roster.api}/users`, { method: 'POST', body: { name: 'X', email: 'x@example.com' } })).body
          .data.role,
        created.role,
        'the role the service gives a user written without one',
      );
      assert.deepEqual(errors, []);
    });
  },
);

test(
  'a user is created, found by search, edited with PUT and PATCH, and deleted',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const { page, errors } = await openConsole(browser, roster.origin);
      const writes = recordWrites(page);
      await eventually(async () => (await rows(page).count()) === 3, 'the three seed users');
      await waitForText(pageInfo(page), 'Page 1 of 1 · 3 users');
      // The list came through the typed client: openapi-fetch, which the page's import map resolves to its copy.
      const modules = (await page.evaluate(
        "performance.getEntriesByType('resource').map((entry) => new URL(entry.name).pathname)",
      )) as string[];
      assert.ok(modules.includes('/console/vendor/openapi-fetch/index.mjs'), modules.join(' '));
      assert.ok(modules.includes('/console/protocol/client/rest.js'), modules.join(' '));

      // Create: the create rules are checked in the form, in words, and nothing is sent until they pass.
      await page.getByRole('button', { name: 'Add user' }).click();
      assert.equal(await dialog(page).getAttribute('open'), '');
      await page.getByRole('button', { name: 'Create user' }).click();
      await waitForText(page.locator('#user-name-error'), 'Name is required');
      await waitForText(page.locator('#user-email-error'), 'Email is required');
      assert.equal(await page.evaluate('document.activeElement.id'), 'user-name', 'focus on the first field in error');
      assert.deepEqual(writes, [], 'an empty form sends nothing');
      await page.locator('#user-name').fill('Katherine Johnson');
      await page.locator('#user-email').fill('katherine-at-nasa');
      await page.getByRole('button', { name: 'Create user' }).click();
      const emailError = page.locator('#user-email-error');
      await waitForText(emailError, 'Enter an email address like name@example.com');
      assert.deepEqual(writes, [], 'an email Create would refuse is not sent');
      assert.equal(await page.locator('#user-email').getAttribute('aria-invalid'), 'true');
      assert.equal(await page.locator('#user-email').getAttribute('aria-describedby'), 'user-email-error');
      assert.equal(await page.locator('#user-name-error').isHidden(), true, 'no error on the valid name');
      assert.equal(await page.evaluate('document.activeElement.id'), 'user-email', 'focus moves to the field in error');
      await page.screenshot({ path: artifactPath('users-validation-1280.png') });

      // An email that exists already: the 409 is shown on the email field too.
      await page.locator('#user-email').fill('KATHERINE@example.com');
      assert.equal(await emailError.isHidden(), true, 'editing the field clears its error');
      const existing = (await request(`${roster.api}/users?limit=1`)).body.data.users[0];
      await page.locator('#user-email').fill(` ${existing.email.toUpperCase()} `);
      await page.getByRole('button', { name: 'Create user' }).click();
      await waitForText(emailError, 'A user with this email already exists');

      await page.locator('#user-email').fill('katherine@example.com');
      await page.locator('#user-role').selectOption('admin');
      await page.locator('#user-email').press('Enter');
      await eventually(async () => (await dialog(page).getAttribute('open')) === null, 'the dialog to close');
      await waitForText(page.locator('#users-notice'), 'Created Katherine Johnson.');
      await waitForText(pageInfo(page), '4 users');
      assert.deepEqual(writes.at(-1), [
        'POST',
        { name: 'Katherine Johnson', email: 'katherine@example.com', role: 'admin' },
      ]);

      // Search finds her (case-insensitive, name or email); the success notice goes, the search is in the address.
      await page.locator('#user-search').fill('JOHNSON');
      await eventually(async () => (await names(page)).join() === 'Katherine Johnson', 'the search result');
      await waitForText(pageInfo(page), 'Page 1 of 1 · 1 user');
      assert.equal(await page.locator('#users-notice').textContent(), '', 'a later search clears the notice');
      assert.equal(new URL(page.url()).searchParams.get('search'), 'JOHNSON');
      const id = await rows(page).first().getAttribute('data-id');
      assert.ok(id);

      // Full update (PUT): every field is sent.
      await page.getByRole('button', { name: 'Edit Katherine Johnson' }).click();
      await waitForText(page.locator('#user-dialog-title'), 'Edit Katherine Johnson');
      assert.equal(await page.locator('#user-name').inputValue(), 'Katherine Johnson');
      assert.equal(await page.locator('#user-role').inputValue(), 'admin');
      await page.locator('#user-name').fill('Katherine Coleman Johnson');
      await page.getByRole('button', { name: /Replace all fields/ }).click();
      await waitForText(page.locator('#users-notice'), 'Replaced Katherine Coleman Johnson (all fields).');
      assert.deepEqual(writes.at(-1), [
        'PUT',
        { name: 'Katherine Coleman Johnson', email: 'katherine@example.com', role: 'admin' },
      ]);
      await waitForText(rows(page).first().locator('.cell-name'), 'Katherine Coleman Johnson');
      // Focus returns to the row's Edit button.
      assert.equal(await page.evaluate('document.activeElement.dataset.action'), 'edit');

      // PUT with an empty name: refused in the form, as Create would, and not sent.
      await page.getByRole('button', { name: 'Edit Katherine Coleman Johnson' }).click();
      let sent = writes.length;
      await page.locator('#user-name').fill('   ');
      await page.getByRole('button', { name: /Replace all fields/ }).click();
      await waitForText(page.locator('#user-name-error'), 'Name is required');
      assert.equal(writes.length, sent);

      // PATCH with an email Create would refuse: a warning first; the same values saved again go ahead.
      await page.locator('#user-name').fill('Katherine Coleman Johnson');
      await page.locator('#user-email').fill('katherine@localhost');
      await page.getByRole('button', { name: /Save changes/ }).click();
      await waitForText(page.locator('#user-email-error'), 'Enter an email address like name@example.com');
      await waitForText(page.locator('#user-form-error'), 'Create would refuse this data');
      assert.equal(writes.length, sent, 'the warning comes before anything is sent');
      await page.getByRole('button', { name: /Save changes/ }).click();
      await waitForText(page.locator('#users-notice'), 'Updated Katherine Coleman Johnson (email).');
      assert.deepEqual(writes.at(-1), ['PATCH', { email: 'katherine@localhost' }]);
      sent = writes.length;
      // Back to a good email (PATCH, no warning: it passes the create rules).
      await page.getByRole('button', { name: 'Edit Katherine Coleman Johnson' }).click();
      await page.locator('#user-email').fill('katherine@example.com');
      await page.getByRole('button', { name: /Save changes/ }).click();
      await waitForText(page.locator('#users-notice'), 'Updated Katherine Coleman Johnson (email).');
      assert.equal(writes.length, sent + 1);
      await page.getByRole('button', { name: 'Edit Katherine Coleman Johnson' }).click();

      // Partial update (PATCH): only the changed field is sent.
      await page.locator('#user-name').fill('Katherine Coleman Johnson');
      await page.locator('#user-role').selectOption('user');
      await page.getByRole('button', { name: /Save changes/ }).click();
      await waitForText(page.locator('#users-notice'), 'Updated Katherine Coleman Johnson (role).');
      assert.deepEqual(writes.at(-1), ['PATCH', { role: 'user' }]);
      await waitForText(rows(page).first().locator('.cell-role'), 'user');

      // Nothing changed: nothing is sent.
      const before = writes.length;
      await page.getByRole('button', { name: 'Edit Katherine Coleman Johnson' }).click();
      await page.getByRole('button', { name: /Save changes/ }).click();
      await waitForText(page.locator('#user-form-error'), 'Nothing to save');
      assert.equal(writes.length, before);
      await page.keyboard.press('Escape');
      await eventually(async () => (await dialog(page).getAttribute('open')) === null, 'Escape to close the dialog');

      const stored = (await request(`${roster.api}/users/${id}`)).body.data;
      assert.deepEqual(
        [stored.name, stored.email, stored.role],
        ['Katherine Coleman Johnson', 'katherine@example.com', 'user'],
      );

      // Delete, after confirming; Cancel first leaves her alone.
      await page.getByRole('button', { name: 'Delete Katherine Coleman Johnson' }).click();
      await waitForText(
        page.locator('#delete-dialog-text'),
        'Katherine Coleman Johnson (katherine@example.com) will be removed.',
      );
      assert.equal(await page.evaluate('document.activeElement.textContent'), 'Cancel', 'the safe choice has focus');
      await page.keyboard.press('Enter');
      await eventually(
        async () => (await page.locator('#delete-dialog').getAttribute('open')) === null,
        'cancel to close',
      );
      assert.equal((await request(`${roster.api}/users/${id}`)).status, 200);

      await page.getByRole('button', { name: 'Delete Katherine Coleman Johnson' }).click();
      await page.locator('#delete-dialog').getByRole('button', { name: 'Delete' }).click();
      await waitForText(page.locator('#users-notice'), 'Deleted Katherine Coleman Johnson.');
      assert.deepEqual(writes.at(-1), ['DELETE', undefined]);
      // Nothing matches the search any more: the empty state.
      await waitForText(page.locator('#users-body .empty-title'), 'No users match');
      await page.locator('#users').screenshot({ path: artifactPath('users-empty-1280.png') });
      assert.equal((await request(`${roster.api}/users/${id}`)).status, 404);

      await page.getByRole('button', { name: 'Clear filters' }).click();
      await waitForText(pageInfo(page), 'Page 1 of 1 · 3 users');
      assert.equal(await page.locator('#user-search').inputValue(), '');
      assert.deepEqual(errors, []);
    });
  },
);

test(
  'sorting by column, order, role filter and pagination follow the list API',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      for (let i = 1; i <= 12; i++) {
        const n = String(i).padStart(2, '0');
        const created = await request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: `Member ${n}`, email: `member${n}@example.com` },
        });
        assert.equal(created.status, 201);
      }
      const base = roster.api;
      const api = async (query: string) =>
        (await request(`${base}/users?${query}`)).body.data.users.map((u: { name: string }) => u.name);

      const { page, errors, consoleErrors } = await openConsole(browser, roster.origin);
      await waitForText(pageInfo(page), 'Page 1 of 2 · 15 users');
      assert.deepEqual(await names(page), await api('limit=10'), 'newest first by default, as the API');
      assert.equal(await page.locator('th[data-sort="created_at"]').getAttribute('aria-sort'), 'descending');

      await page.getByLabel('Per page').selectOption('5');
      await waitForText(pageInfo(page), 'Page 1 of 3 · 15 users');
      assert.equal(await page.getByRole('button', { name: 'Previous page' }).isDisabled(), true);
      await page.getByRole('button', { name: 'Next page' }).click();
      await waitForText(pageInfo(page), 'Page 2 of 3');
      await settled(page);
      assert.deepEqual(await names(page), await api('limit=5&page=2'));
      await page.getByRole('button', { name: 'Next page' }).click();
      await waitForText(pageInfo(page), 'Page 3 of 3');
      assert.equal(await page.getByRole('button', { name: 'Next page' }).isDisabled(), true);

      // A column header sorts ascending by it, from the first page; again, descending.
      await page.getByRole('button', { name: 'Name', exact: true }).click();
      await waitForText(pageInfo(page), 'Page 1 of 3');
      await settled(page);
      assert.equal(await page.locator('th[data-sort="name"]').getAttribute('aria-sort'), 'ascending');
      assert.equal(await page.locator('th[data-sort="created_at"]').getAttribute('aria-sort'), null);
      assert.deepEqual(await names(page), await api('limit=5&sort=name&order=asc'));
      await page.getByRole('button', { name: 'Name', exact: true }).click();
      await eventually(
        async () => (await page.locator('th[data-sort="name"]').getAttribute('aria-sort')) === 'descending',
        'descending',
      );
      await settled(page);
      assert.deepEqual(await names(page), await api('limit=5&sort=name&order=desc'));
      // The order toggle does the same.
      await page.getByRole('button', { name: 'Order Descending' }).click();
      await eventually(
        async () => (await page.locator('th[data-sort="name"]').getAttribute('aria-sort')) === 'ascending',
        'ascending again',
      );
      await settled(page);
      assert.deepEqual(await names(page), await api('limit=5&sort=name&order=asc'));

      await page.getByRole('button', { name: 'Email', exact: true }).click();
      await settled(page);
      assert.deepEqual(await names(page), await api('limit=5&sort=email&order=asc'));

      // Role filter: the one admin.
      await page.getByLabel('Role', { exact: true }).and(page.locator('#role-filter')).selectOption('admin');
      await waitForText(pageInfo(page), 'Page 1 of 1 · 1 user');
      assert.deepEqual(await names(page), await api('role=admin'));
      await page.locator('#role-filter').selectOption('');
      await waitForText(pageInfo(page), 'Page 1 of 3 · 15 users');

      // The view is in the address: a reload (or the link, shared) shows the same page of the same sort.
      await page.getByRole('button', { name: 'Next page' }).click();
      await waitForText(pageInfo(page), 'Page 2 of 3 · 15 users');
      await settled(page);
      const view = await names(page);
      const address = new URL(page.url());
      assert.deepEqual(Object.fromEntries(address.searchParams), {
        sort: 'email',
        order: 'asc',
        page: '2',
        limit: '5',
      });
      await page.reload();
      await waitForText(pageInfo(page), 'Page 2 of 3 · 15 users');
      await settled(page);
      assert.deepEqual(await names(page), view);
      assert.equal(await page.locator('th[data-sort="email"]').getAttribute('aria-sort'), 'ascending');
      assert.equal(await page.getByLabel('Per page').inputValue(), '5');
      const shared = await openConsole(
        browser,
        roster.origin,
        undefined,
        '/?search=member1&role=user&sort=name&order=desc',
      );
      await waitForText(pageInfo(shared.page), '3 users');
      assert.deepEqual(await names(shared.page), ['Member 12', 'Member 11', 'Member 10']);
      assert.equal(await shared.page.locator('#user-search').inputValue(), 'member1');
      assert.equal(await shared.page.locator('#role-filter').inputValue(), 'user');
      await shared.page.context().close();
      await page.getByRole('button', { name: 'Previous page' }).click();
      await waitForText(pageInfo(page), 'Page 1 of 3 · 15 users');
      await settled(page);

      // The error state, with a retry: the API fails once, then answers again.
      await page.route('**/api/v1/users?*', (route) =>
        route.fulfill({
          status: 500,
          contentType: 'application/json',
          body: JSON.stringify({
            status: 'error',
            error: { code: 'INTERNAL_ERROR', message: 'An unexpected error occurred' },
          }),
        }),
      );
      const before = await names(page);
      await page.getByRole('button', { name: 'Next page' }).click();
      await waitForText(page.locator('#users-error'), 'The server had a problem (500 INTERNAL_ERROR)');
      await waitForText(page.locator('#users-error'), 'still shows the users loaded before');
      await page.locator('#users').screenshot({ path: artifactPath('users-error-1280.png') });
      assert.deepEqual(await names(page), before, 'a failed reload keeps the last users on screen');
      assert.equal(await page.locator('#users-table').getAttribute('data-state'), 'stale');
      await page.unroute('**/api/v1/users?*');
      await page.route('**/api/v1/users?*', (route) => route.abort('connectionrefused'));
      await page.getByRole('button', { name: 'Retry' }).click();
      await waitForText(page.locator('#users-error'), 'The server could not be reached');
      await page.unroute('**/api/v1/users?*');
      await page.getByRole('button', { name: 'Retry' }).click();
      await eventually(async () => page.locator('#users-error').isHidden(), 'the error to go');
      await waitForText(pageInfo(page), 'Page 2 of 3 · 15 users');
      assert.deepEqual(errors, []);
      assert.equal(consoleErrors.length, 2, `the two failed requests: ${consoleErrors.join(' | ')}`);
    });
  },
);

test(
  'keyboard: the dialog opens with Enter, keeps focus, closes with Escape and gives focus back',
  { skip: noChromium, timeout: 20_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const { page, errors } = await openConsole(browser, roster.origin);
      await eventually(async () => (await rows(page).count()) === 3, 'the seed users');

      // Tab order starts with the skip links, then the sections, then the panel's controls.
      const tabTo = async (id: string) => {
        for (let i = 0; i < 30; i++) {
          await page.keyboard.press('Tab');
          if ((await page.evaluate('document.activeElement.id')) === id) return;
        }
        throw new Error(`Tab never reached #${id}`);
      };
      await tabTo('add-user');
      await page.keyboard.press('Enter');
      assert.equal(await page.evaluate('document.activeElement.id'), 'user-name');
      // The rest of the page is inert while the modal dialog is open: Tab cycles through the dialog
      // (and the browser's own UI, where focus shows as the body), never the page behind it.
      const visited = new Set<string>();
      for (let i = 0; i < 8; i++) {
        await page.keyboard.press('Tab');
        visited.add(
          String(
            await page.evaluate(
              'document.activeElement === document.body ? "body" : document.activeElement.closest("dialog")?.id ?? document.activeElement.id',
            ),
          ),
        );
      }
      assert.deepEqual(
        [...visited].filter((where) => where !== 'user-dialog' && where !== 'body'),
        [],
      );
      assert.ok(visited.has('user-dialog'));
      await page.keyboard.press('Escape');
      await eventually(async () => (await dialog(page).getAttribute('open')) === null, 'Escape to close');
      await eventually(
        async () => (await page.evaluate('document.activeElement.id')) === 'add-user',
        'focus back on Add user',
      );
      // A visible focus indicator on the focused control.
      const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle');
      assert.equal(outline, 'solid');

      // Searching from the keyboard: Enter searches at once.
      await tabTo('user-search');
      await page.keyboard.type('ada');
      await page.keyboard.press('Enter');
      await settled(page);
      assert.equal(new URL(page.url()).searchParams.get('search'), 'ada', 'Enter applied the search');
      assert.ok((await rows(page).count()) <= 1);

      // The close event comes a task after the dialog closed: focus the user moved on to meanwhile (a
      // quick Tab after Escape) stays there, and is not pulled back to the button that opened the dialog.
      await page.keyboard.press('Shift+Tab');
      assert.equal(await page.evaluate('document.activeElement.id'), 'add-user');
      await page.keyboard.press('Enter');
      await eventually(async () => (await dialog(page).getAttribute('open')) !== null, 'the dialog again');
      const focusAfterClose = await page.evaluate(`(async () => {
        document.getElementById('user-dialog').close();
        document.getElementById('user-search').focus();
        await new Promise((resolve) => setTimeout(resolve, 100));
        return document.activeElement.id;
      })()`);
      assert.equal(focusAfterClose, 'user-search');
      assert.deepEqual(errors, []);
    });
  },
);

/** The lines an element's text is laid out on, read from each character's box (its top edge). */
const LINES_OF = `(element) => {
  const lines = [];
  let top;
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i++) {
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rect = range.getClientRects()[0];
      if (!rect) continue;
      if (top === undefined || rect.top > top + 2) lines.push('');
      top = rect.top;
      lines[lines.length - 1] += node.data[i];
    }
  }
  return lines;
}`;

test(
  'at 390 px an email wraps before an @ or a dot, never inside a word; its text is unchanged',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const email = 'katherine.coleman.goble.johnson@flight-research.langley.example.com';
      const created = await request(`${roster.api}/users`, { method: 'POST', body: { name: 'Katherine', email } });
      assert.equal(created.status, 201);
      const { page, errors } = await openConsole(browser, roster.origin, { width: 390, height: 844 });
      const cell = page.locator(`#users-body .cell-email .clip[title="${email}"]`);
      await cell.waitFor({ timeout: 10_000 });
      assert.equal(await cell.textContent(), email, 'copy and screen readers get the address whole');
      const lines = (await page.evaluate(
        `(${LINES_OF})(document.querySelector(${JSON.stringify(`#users-body .cell-email .clip[title="${email}"]`)}))`,
      )) as string[];
      assert.ok(lines.length > 1, `the address wraps at 390 px: ${JSON.stringify(lines)}`);
      assert.equal(lines.join(''), email);
      for (const line of lines.slice(1))
        assert.match(line, /^[.@]/, `a break before @ or a dot: ${JSON.stringify(lines)}`);

      await page
        .locator(`#users-body tr:has([data-user-id="${created.body.data.id}"])`)
        .screenshot({ path: artifactPath('email-wrap-390.png'), timeout: 10_000 });

      // The delete dialog names the user the same way.
      await page
        .locator(`#users-body button[data-action="delete"][data-user-id="${created.body.data.id}"]`)
        .click({ timeout: 10_000 });
      const text = page.locator('#delete-dialog-text');
      assert.match(
        (await text.textContent()) ?? '',
        new RegExp(`\\(${email.replace(/\./g, '\\.')}\\) will be removed`),
      );
      assert.deepEqual(errors, []);
    });
  },
);
