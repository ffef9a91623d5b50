/**
 * Roster restarts under an open console: the process's users are gone (they lived in memory), the chat
 * drops and reconnects, and the console must notice the new run (health's `instance`), load the users
 * again and say so, rather than go on showing the old list.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Browser } from 'playwright-core';
import {
  launchBrowser,
  noChromium,
  openConsole,
  request,
  startRoster,
  waitForText,
  WEB_ROOT,
  type Running,
} from '../support/index.js';
import { existsSync } from 'node:fs';

test(
  'a restart of Roster under the console is noticed: the users are loaded again and a notice says so',
  { skip: noChromium, timeout: 40_000 },
  async () => {
    assert.ok(existsSync(`${WEB_ROOT}index.html`), 'the console is built');
    let roster: Running | undefined;
    let browser: Browser | undefined;
    try {
      roster = await startRoster();
      for (let i = 1; i <= 4; i++) {
        const created = await request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: `Guest ${i}`, email: `guest${i}@example.com` },
        });
        assert.equal(created.status, 201);
      }
      const before = (await request(`${roster.api}/health`)).body.data.instance;
      browser = await launchBrowser();
      const { page, errors } = await openConsole(browser, roster.origin);
      await waitForText(page.locator('#page-info'), 'Page 1 of 1 · 7 users');
      await waitForText(page.locator('#chat-status-text'), 'Connected');

      // Stop Roster and start a new one on the same ports: the four guests are gone with the process.
      const port = new URL(roster.origin).port;
      const wsPort = String(roster.wsPort);
      await roster.stop();
      roster = undefined;
      await waitForText(page.locator('#chat-status-text'), /Connection lost|Reconnecting|Cannot reach/);
      assert.equal(await page.locator('#page-info').textContent(), 'Page 1 of 1 · 7 users', 'nothing reloaded yet');
      roster = await startRoster({ PORT: port, WS_PORT: wsPort });
      assert.notEqual((await request(`${roster.api}/health`)).body.data.instance, before, 'a new run');

      await waitForText(page.locator('#chat-status-text'), 'Connected', 15_000);
      await waitForText(page.locator('#page-info'), 'Page 1 of 1 · 3 users');
      await waitForText(
        page.locator('#users-notice'),
        /^Roster restarted at \d{4}-\d\d-\d\d \d\d:\d\d; the users were loaded again\.$/,
      );
      // Among the chat's notices (the room's own, such as messages missed, may come before or after it).
      await waitForText(
        page.locator('#chat-log li.notice').filter({ hasText: 'Roster restarted' }).first(),
        'Roster restarted',
      );
      assert.deepEqual(errors, []);
    } finally {
      await browser?.close();
      await roster?.stop();
    }
  },
);
