/**
 * Screenshots of both panels at 1920, 1280 and 390 px wide (and 1280 in dark mode), saved to
 * test-artifacts/console for review, and the layout checks that go with them: no content cap at
 * 1920 px (emails and dates on one line), rows dense enough that the pager is in view, filters that
 * keep their widths when Order toggles, no horizontal scrolling on a phone, every control labelled.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Page } from 'playwright-core';
import {
  artifactPath,
  DESKTOP,
  eventually,
  noChromium,
  openConsole,
  PHONE,
  request,
  sayInChat,
  waitForText,
  withConsole,
} from '../support/index.js';

/**
 * Text whose colour contrast with its (composited) background is under WCAG AA: 4.5:1, or 3:1 for
 * large text. Disabled controls are exempt, as WCAG says.
 */
const LOW_CONTRAST = `(() => {
  const parse = (c) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(c);
    if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return { r: p[0], g: p[1], b: p[2], a: p[3] ?? 1 };
  };
  const channel = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const luminance = (c) => 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
  const over = (top, bottom) => ({ r: top.r * top.a + bottom.r * (1 - top.a), g: top.g * top.a + bottom.g * (1 - top.a), b: top.b * top.a + bottom.b * (1 - top.a), a: 1 });
  const backgroundOf = (element) => {
    const layers = [];
    for (let e = element; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a === 1) break; }
    }
    return layers.reverse().reduce((below, layer) => over(layer, below), { r: 255, g: 255, b: 255, a: 1 });
  };
  const failures = [];
  for (const element of document.querySelectorAll('body *')) {
    const hasText = [...element.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim() !== '');
    if (!hasText || !element.checkVisibility() || element.closest('.visually-hidden, :disabled')) continue;
    const style = getComputedStyle(element);
    const background = backgroundOf(element);
    const color = over(parse(style.color), background);
    const [hi, lo] = [luminance(color), luminance(background)].sort((a, b) => b - a);
    const ratio = (hi + 0.05) / (lo + 0.05);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    if (ratio < (large ? 3 : 4.5)) failures.push(element.tagName + '.' + element.className + ' "' + element.textContent.trim().slice(0, 30) + '" ' + ratio.toFixed(2));
  }
  return failures;
})()`;

async function shoot(page: Page, width: number): Promise<void> {
  // The whole page: the viewport made as tall as the page (Chromium's full-page capture misplaces the
  // bottom of layouts sized in vh units).
  const viewport = page.viewportSize()!;
  await page.setViewportSize({
    width: viewport.width,
    height: Number(await page.evaluate('document.documentElement.scrollHeight')),
  });
  await page.screenshot({ path: artifactPath(`console-${width}.png`) });
  await page.setViewportSize(viewport);
  await page.locator('#users').screenshot({ path: artifactPath(`users-${width}.png`) });
  await page.locator('#chat').screenshot({ path: artifactPath(`chat-${width}.png`) });
}

const WIDE = { width: 1920, height: 1080 };

/** The heights of the table's body rows. */
const rowHeights = (page: Page) =>
  page.locator('#users-body tr').evaluateAll((rows) => rows.map((row) => row.getBoundingClientRect().height));

test(
  'screenshots at 1920, 1280 and 390 px; dense rows, no cap, steady filters; no horizontal scroll on a phone; every control labelled',
  { skip: noChromium, timeout: 45_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const people = [
        ['Katherine Johnson', 'katherine.johnson@example.com', 'admin'],
        ['Margaret Hamilton', 'margaret.hamilton@example.com', 'user'],
        ['Edsger Dijkstra', 'edsger.dijkstra@example.com', 'user'],
        ['Barbara Liskov', 'barbara.liskov@example.com', 'admin'],
        ['Donald Knuth', 'donald.knuth@example.com', 'user'],
      ];
      for (const [name, email, role] of people) {
        assert.equal(
          (await request(`${roster.api}/users`, { method: 'POST', body: { name, email, role } })).status,
          201,
        );
      }

      const alice = await openConsole(browser, roster.origin, DESKTOP);
      await waitForText(alice.page.locator('#chat-status-text'), 'Connected');
      const bob = await openConsole(browser, roster.origin, DESKTOP);
      await waitForText(bob.page.locator('#chat-status-text'), 'Connected');
      await waitForText(alice.page.locator('#online-count'), /^2$/);
      await sayInChat(bob.page, 'Morning! Is the new admin set up yet?');
      await waitForText(alice.page.locator('#chat-log li.message').last(), 'Morning!');
      await sayInChat(alice.page, 'Yes — Katherine Johnson is in, role admin.');
      await waitForText(alice.page.locator('#chat-log li.message.own'), 'Katherine Johnson is in');
      await sayInChat(bob.page, 'Thanks!');
      await waitForText(alice.page.locator('#chat-log li.message').last(), 'Thanks');
      await waitForText(alice.page.locator('#page-info'), '8 users');
      const { page } = alice;
      await shoot(page, 1280);

      // 1280 px: rows of about 38 px, so ten of them and the pager fit in a 900 px window.
      for (const height of await rowHeights(page)) assert.ok(height >= 34 && height <= 42, `row height ${height}`);
      const pager = await page.locator('.pager').boundingBox();
      assert.ok(
        pager && pager.y + pager.height <= DESKTOP.height,
        `the pager is in view (bottom at ${pager && pager.y + pager.height})`,
      );
      assert.equal(
        await page.evaluate(
          `(() => { const t = document.querySelector('.table-wrap'); return t.scrollWidth - t.clientWidth; })()`,
        ),
        0,
        'the table fits at 1280 px',
      );
      // Toggling Order changes its label, never the filters' widths.
      const widths = () =>
        page
          .locator('#user-filters .field')
          .evaluateAll((fields) => fields.map((field) => Math.round(field.getBoundingClientRect().width)));
      const before = await widths();
      await page.getByRole('button', { name: 'Order Descending' }).click();
      await waitForText(page.locator('#sort-order-text'), 'Ascending');
      assert.deepEqual(await widths(), before);
      await page.getByRole('button', { name: 'Order Ascending' }).click();
      await waitForText(page.locator('#sort-order-text'), 'Descending');
      await eventually(
        async () => (await page.locator('#users-table').getAttribute('aria-busy')) === 'false',
        'the list to load',
      );

      await shoot(page, 1280);
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.screenshot({ path: artifactPath('console-1280-dark.png') });
      assert.deepEqual(await page.evaluate(LOW_CONTRAST), [], 'text contrast at 1280 px, dark');
      await page.emulateMedia({ colorScheme: 'light' });

      // 1920 px: the content uses the width; no email or date wraps onto a second line.
      await page.setViewportSize(WIDE);
      const users = await page.locator('#users').boundingBox();
      assert.ok(users && users.width > 1300, `the users panel uses the width (${users?.width} px)`);
      const wrapped = await page
        .locator('#users-body .cell-email, #users-body .cell-date, #users-body .cell-name')
        .evaluateAll((cells) =>
          cells
            .filter((cell) => cell.getClientRects().length > 0 && cell.scrollHeight > 40)
            .map((cell) => cell.textContent),
        );
      assert.deepEqual(wrapped, [], 'one line per cell at 1920 px');
      await shoot(page, 1920);
      await page.setViewportSize(DESKTOP);
      assert.deepEqual(await page.evaluate(LOW_CONTRAST), [], 'text contrast at 1280 px');
      await page.setViewportSize(PHONE);
      await shoot(page, 390);
      assert.deepEqual(await page.evaluate(LOW_CONTRAST), [], 'text contrast at 390 px');
      const overflow = await page.evaluate(
        'document.documentElement.scrollWidth - document.documentElement.clientWidth',
      );
      assert.equal(overflow, 0, 'no horizontal scrolling at 390 px');

      // The edit dialog with a validation error, on a phone.
      await page.getByRole('button', { name: 'Edit Katherine Johnson' }).click();
      await page.locator('#user-email').fill('katherine@');
      await page.getByRole('button', { name: /Replace all fields/ }).click();
      await waitForText(page.locator('#user-email-error'), 'Enter an email address like name@example.com');
      await page.screenshot({ path: artifactPath('dialog-390.png') });
      assert.equal(
        await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'),
        0,
      );
      await page.keyboard.press('Escape');

      // Every form control has a name for assistive technology.
      await page.setViewportSize(DESKTOP);
      const unlabelled = await page.evaluate(`[...document.querySelectorAll('input, select, button, textarea')]
      .filter((el) => !el.closest('[hidden]') && !(el.labels?.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby') && el.textContent.trim() === '')
      .map((el) => el.outerHTML)`);
      assert.deepEqual(unlabelled, []);

      await bob.page.context().close();
      await eventually(async () => (await page.locator('#online-count').textContent()) === '1', 'Bob to leave');
      assert.deepEqual([...alice.errors, ...bob.errors, ...bob.consoleErrors], []);
      assert.deepEqual(alice.consoleErrors, [], 'the form refused the email itself: nothing was sent');
    });
  },
);
