/**
 * The console's users screen is built from the generated field table (src/protocol/client/user-fields.ts):
 * its column headers, sort buttons, row cells and form inputs are the table's fields, in its order, and a
 * field added to the table (an optional `phone`, served to the page in place of the shipped module) gets
 * a column, a sort button and a labelled input, and does not stop Create, with no edit of the console.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import { USER_FIELDS, type UserFieldSpec } from '../../src/protocol/client/user-fields.js';
import { consoleFields, type ConsoleField } from '../../web/src/users/fields.js';
import { eventually, noChromium, openConsole, request, waitForText, withConsole } from '../support/index.js';

async function settled(page: Page): Promise<void> {
  await eventually(
    async () => (await page.locator('#users-table').getAttribute('aria-busy')) === 'false',
    'the list to load',
  );
}

/** The page's reading of its fields (run in the page: DOM types are not this compilation's). */
const READ_TABLE = `({
  columns: [...document.querySelectorAll('#users-table thead th[data-field]')].map((th) => [th.dataset.field, th.textContent.trim()]),
  sorts: [...document.querySelectorAll('#users-table thead th[data-sort]')].map((th) => th.dataset.sort),
  cells: [...(document.querySelector('#users-body tr:not(.empty-row)')?.querySelectorAll('td[data-field]') ?? [])].map((td) => td.dataset.field),
})`;
const READ_FORM = `[...document.querySelector('#user-form').elements]
  .filter((el) => el instanceof HTMLInputElement || el instanceof HTMLSelectElement)
  .map((el) => [el.name, el.labels[0]?.textContent.trim(), el.getAttribute('aria-required') === 'true'])`;

/** What the page shows of the fields: headers, sort buttons, one row's cells, and the form's inputs. */
async function shown(page: Page) {
  await settled(page);
  const table = (await page.evaluate(READ_TABLE)) as { columns: string[][]; sorts: string[]; cells: string[] };
  await page.getByRole('button', { name: 'Add user' }).click();
  return { ...table, inputs: await page.evaluate(READ_FORM) };
}

/** One user, so that the table has a row to read the cells of. */
async function seedOne(api: string): Promise<void> {
  const body = { name: 'Katherine Johnson', email: 'katherine@example.com' };
  assert.equal((await request(`${api}/users`, { method: 'POST', body })).status, 201);
}

/** What the page should show for a table. */
function expected(fields: readonly ConsoleField[]) {
  return {
    columns: fields.map((field) => [field.name, field.label]),
    sorts: fields.filter((field) => field.sortColumn).map((field) => field.name),
    cells: fields.map((field) => field.name),
    inputs: fields.filter((field) => field.writable).map((field) => [field.name, field.label, field.required]),
  };
}

test(
  'the columns, sort buttons, cells and form inputs are the generated table’s fields, in its order',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      await seedOne(roster.api);
      const { page, errors } = await openConsole(browser, roster.origin);
      const fields = consoleFields(USER_FIELDS);
      assert.deepEqual(await shown(page), expected(fields));
      // Every sortable field but the id (which the console does not offer as a sort) has its button.
      assert.deepEqual(
        expected(fields).sorts,
        USER_FIELDS.filter((field) => field.sortable && field.name !== 'id').map((field) => field.name),
      );
      assert.deepEqual(errors, []);
    });
  },
);

/** The field the test adds: a `phone`, unless the shipped table has one already (then that one is checked). */
const ADDED: UserFieldSpec = {
  name: 'phone',
  title: 'Phone number',
  writable: true,
  required: false,
  optional: true,
  sortable: true,
  isRole: false,
  maxLength: 40,
};
const SHIPPED_PHONE = (USER_FIELDS as readonly UserFieldSpec[]).find((field) => field.name === ADDED.name);
const PHONE = SHIPPED_PHONE ?? ADDED;
const PHONE_MAX = PHONE.maxLength!;

test(
  'a field added to the table is shown, sorted by and checked, and Create still creates',
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      await seedOne(roster.api);
      const { page, errors } = await openConsole(browser, roster.origin);
      // The page is served a field table with one more field, as a regenerated one would be (unless the
      // regenerated one holds it already: a deployment that added it).
      if (SHIPPED_PHONE === undefined) {
        await page.route('**/console/protocol/client/user-fields.js', async (route) => {
          const response = await route.fetch();
          const body = `${await response.text()}\nUSER_FIELDS.push(${JSON.stringify(PHONE)});\n`;
          await route.fulfill({ response, body });
        });
        await page.reload();
      }
      const fields = consoleFields(SHIPPED_PHONE === undefined ? [...USER_FIELDS, PHONE] : USER_FIELDS);
      assert.deepEqual(await shown(page), expected(fields));

      // Too long: refused in the form, in the table's words; left empty: not sent, and the user is created.
      const posts: unknown[] = [];
      page.on('request', (req) => {
        if (req.method() === 'POST' && req.url().includes('/api/v1/users')) posts.push(JSON.parse(req.postData()!));
      });
      await page.locator('#user-name').fill('Mary Jackson');
      await page.locator('#user-email').fill('mary@example.com');
      await page.locator('#user-phone').fill('1'.repeat(PHONE_MAX + 1));
      await page.getByRole('button', { name: 'Create user' }).click();
      await waitForText(page.locator('#user-phone-error'), `Phone must be at most ${PHONE_MAX} characters`);
      assert.deepEqual(posts, []);
      await page.locator('#user-phone').fill('');
      await page.getByRole('button', { name: 'Create user' }).click();
      await waitForText(page.locator('#users-notice'), 'Created Mary Jackson.');
      assert.deepEqual(posts, [{ name: 'Mary Jackson', email: 'mary@example.com' }]);
      const { body } = await request(`${roster.api}/users?search=mary@example.com`);
      assert.equal(body.data.users.length, 1);

      // Its column sorts the list (the API is asked for it).
      const asked = page.waitForRequest((req) => req.url().includes('sort=phone'));
      await page.locator('th[data-sort="phone"] button').click();
      await asked;
      assert.equal(await page.locator('th[data-sort="phone"]').getAttribute('aria-sort'), 'ascending');
      assert.deepEqual(errors, []);
    });
  },
);
