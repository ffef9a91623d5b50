/**
 * axe-core over every view and dialog of the console, in light and dark mode, wide and on a phone:
 * the users list, the add dialog (with its errors), the edit dialog, the delete confirmation, the chat
 * panel with messages, and the sign-in form (AUTH on). The test asserts no violations at all.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import {
  DESKTOP,
  eventually,
  launchBrowser,
  noChromium,
  openConsole,
  PHONE,
  request,
  startConsoleRoster,
  waitForText,
  type ConsoleRoster,
} from '../support/index.js';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** Runs axe-core in the page (injected through the debugger, so the page's CSP does not apply). */
async function axe(page: Page, view: string): Promise<string[]> {
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)`,
  )) as Violation[];
  return violations.map(
    (v) => `${view}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
}

const closed = (page: Page, id: string) =>
  eventually(async () => (await page.locator(`#${id}`).getAttribute('open')) === null, `#${id} to close`);

for (const colorScheme of ['light', 'dark'] as const) {
  test(
    `axe-core finds no violation in any view or dialog (${colorScheme})`,
    { skip: noChromium, timeout: 60_000 },
    async () => {
      let roster: ConsoleRoster | undefined;
      let browser: Browser | undefined;
      try {
        roster = await startConsoleRoster();
        browser = await launchBrowser();
        const found: string[] = [];
        for (const viewport of [DESKTOP, PHONE]) {
          const at = `${colorScheme} ${viewport.width}px`;
          const { page, errors } = await openConsole(browser, roster.origin, viewport);
          await page.emulateMedia({ colorScheme });
          await waitForText(page.locator('#page-info'), '3 users');
          await waitForText(page.locator('#chat-status-text'), 'Connected');
          await page.locator('#chat-input').fill('Hello, axe');
          await page.locator('#chat-input').press('Enter');
          await waitForText(page.locator('#chat-log li.message.own'), 'Hello, axe');
          found.push(...(await axe(page, `${at} users list and chat`)));

          await page.getByRole('button', { name: 'Add user' }).click();
          found.push(...(await axe(page, `${at} add dialog`)));
          await page.getByRole('button', { name: 'Create user' }).click();
          await waitForText(page.locator('#user-name-error'), 'Name is required');
          found.push(...(await axe(page, `${at} add dialog with errors`)));
          await page.keyboard.press('Escape');
          await closed(page, 'user-dialog');

          await page.locator('[data-action="edit"]').first().click();
          found.push(...(await axe(page, `${at} edit dialog`)));
          await page.keyboard.press('Escape');
          await closed(page, 'user-dialog');

          await page.locator('[data-action="delete"]').first().click();
          found.push(...(await axe(page, `${at} delete confirmation`)));
          await page.keyboard.press('Escape');
          await closed(page, 'delete-dialog');

          // The notice and the error state (a failed reload that keeps the last users).
          await page.locator('[data-action="copy-id"]').first().click();
          await page.route('**/api/v1/users?*', (route) => route.abort('connectionrefused'));
          await page.getByRole('button', { name: 'Order Descending' }).click();
          await waitForText(page.locator('#users-error'), 'could not be reached');
          found.push(...(await axe(page, `${at} failed reload`)));
          assert.deepEqual(errors, []);
          await page.context().close();
        }

        // The sign-in form (AUTH on).
        await roster.stop();
        roster = await startConsoleRoster({ AUTH: 'apikey', API_KEYS: 'k'.repeat(32) });
        const { page } = await openConsole(browser, roster.origin, DESKTOP);
        await page.emulateMedia({ colorScheme });
        await eventually(async () => page.locator('#sign-in').isVisible(), 'the sign-in form');
        found.push(...(await axe(page, `${colorScheme} sign-in`)));
        await page.getByRole('button', { name: 'Sign in' }).click();
        await eventually(
          async () => page.locator('#sign-in-error, [aria-invalid="true"]').first().isVisible(),
          'a sign-in error',
        );
        found.push(...(await axe(page, `${colorScheme} sign-in with an error`)));
        assert.equal((await request(`${roster.api}/users`)).status, 401, 'authentication is on');

        assert.deepEqual(found, []);
      } finally {
        await browser?.close();
        await roster?.stop();
      }
    },
  );
}
