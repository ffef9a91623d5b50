/**
 * The reference page (/api/v1/reference) in Chromium: branded Roster (title, logo, favicon), with no
 * Explore bar offering another document, and this API's operations on it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { artifactPath, DESKTOP, eventually, noChromium, withConsole } from '../support/index.js';

test(
  "the reference page is Roster's: title, logo and favicon, one document, no Explore bar",
  { skip: noChromium, timeout: 30_000 },
  async () => {
    await withConsole(async (roster, browser) => {
      const page = await (await browser.newContext({ viewport: DESKTOP })).newPage();
      await page.goto(`${roster.api}/reference`);
      await eventually(
        async () => (await page.locator('.swagger-ui .info .title').count()) > 0,
        'the document to render',
      );
      await eventually(async () => (await page.locator('.topbar-wrapper a.link img').count()) > 0, 'the logo');
      assert.equal(await page.title(), 'Roster API reference');
      assert.match(
        (await page.locator('.topbar-wrapper a.link img').getAttribute('src')) ?? '',
        /^data:image\/svg\+xml;base64,/,
      );
      assert.deepEqual(
        await page.locator('link[rel="icon"]').evaluateAll((links) => links.map((l) => l.getAttribute('type'))),
        ['image/svg+xml'],
      );
      assert.equal(
        await page
          .locator('.download-url-wrapper')
          .isVisible()
          .catch(() => false),
        false,
        'no Explore bar',
      );
      assert.equal(
        await page
          .getByRole('button', { name: 'Explore' })
          .isVisible()
          .catch(() => false),
        false,
      );
      assert.match((await page.locator('.swagger-ui .info .title').textContent()) ?? '', /Roster/);
      assert.ok((await page.locator('.opblock').count()) >= 7, 'the operations are listed');
      await page.screenshot({ path: artifactPath('reference-1280.png') });
    });
  },
);
