/**
 * Cross-site WebSocket hijacking (docs/decisions.md, "Protection": *Chat `Origin` under `AUTH`*): with
 * AUTH on and no CORS_ORIGINS, a browser's chat handshake (one with Origin) must come from Roster's own
 * pages, the REST port (the console) or the chat's own origin; a page on another port or host gets 403
 * in the envelope, even with valid credentials (which a browser may add by itself: cached Basic
 * credentials). Clients without Origin are unaffected, and so is AUTH=none.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hashPassword } from '../../src/edge/password.js';
import { API_KEY_ADMIN, assertRefused, basic, freePort, handshake, startRoster } from '../support/index.js';

describe('chat Origin check under AUTH without CORS_ORIGINS', () => {
  test('AUTH=basic: another port or host of the page is refused (403) with valid credentials; the console origin, the chat origin and no Origin connect', async (t) => {
    const running = await startRoster({ AUTH: 'basic', BASIC_USERS: `ada:${await hashPassword('pw-of-ada')}` });
    t.after(() => running.stop());
    const restPort = new URL(running.origin).port;
    const headers = { authorization: basic('ada', 'pw-of-ada') };
    const attackerPort = await freePort();
    for (const origin of [
      `http://127.0.0.1:${attackerPort}`,
      `http://localhost:${restPort}`,
      'https://evil.example',
      'null',
    ]) {
      const refused = await handshake(running.wsUrl, { headers, origin });
      assertRefused(refused, 403, 'FORBIDDEN', undefined, `Origin ${origin}`);
      assert.match(refused.text, /origin/i);
    }
    assert.equal(await running.server.chat.size(), 0, 'nobody joined');

    for (const origin of [
      running.origin,
      `https://127.0.0.1:${restPort}`,
      `http://127.0.0.1:${running.wsPort}`,
      undefined,
    ]) {
      const accepted = await handshake(running.wsUrl, { headers, ...(origin ? { origin } : {}) });
      assert.equal(accepted.status, 101, `Origin ${origin}: ${accepted.text}`);
      accepted.ws!.terminate();
    }
  });

  test('a foreign Origin is refused before the credentials are looked at: 403, not 401', async (t) => {
    const running = await startRoster({ AUTH: 'apikey', API_KEYS: API_KEY_ADMIN });
    t.after(() => running.stop());
    assertRefused(await handshake(running.wsUrl, { origin: 'http://127.0.0.1:1' }), 403, 'FORBIDDEN');
    assertRefused(
      await handshake(`${running.wsUrl}/?api_key=${API_KEY_ADMIN}`, { origin: 'http://127.0.0.1:1' }),
      403,
      'FORBIDDEN',
    );
    const own = await handshake(`${running.wsUrl}/?api_key=${API_KEY_ADMIN}`, { origin: running.origin });
    assert.equal(own.status, 101, own.text);
    own.ws!.terminate();
  });

  test('AUTH=none: any Origin still connects, as the contract has it', async (t) => {
    const running = await startRoster();
    t.after(() => running.stop());
    const chat = await handshake(running.wsUrl, { origin: 'https://anyone.example' });
    assert.equal(chat.status, 101);
    chat.ws!.terminate();
  });
});
