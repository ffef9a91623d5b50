/**
 * How Roster serves the browser console (HTTP only, no browser): the page at `/`, assets under
 * /console/, the settings, and errors in the envelope. Plus the page's pure modules, run in Node.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../../src/config/index.js';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { consoleCsp, CONSOLE_IMPORT_MAP } from '../../src/http/console.js';
import { request, startConsoleRoster, startRoster, WEB_ROOT, type ConsoleRoster } from '../support/index.js';

describe('console serving', () => {
  let roster: ConsoleRoster;
  before(async () => {
    roster = await startConsoleRoster({ ROLES: 'admin,user,auditor' });
  });
  after(() => roster.stop());

  test('the page is served at / with a strict content security policy', async () => {
    const response = await fetch(`${roster.origin}/`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    // The chat's own origin, the page's host on the chat port, and no other WebSocket (a bare ws: would
    // let a script in the page send anything anywhere).
    const chat = `127.0.0.1:${roster.wsPort}`;
    assert.equal(response.headers.get('content-security-policy'), consoleCsp([`ws://${chat}`, `wss://${chat}`]));
    assert.match(response.headers.get('content-security-policy')!, /connect-src 'self' ws:\/\/127\.0\.0\.1:\d+ wss:/);
    assert.doesNotMatch(response.headers.get('content-security-policy')!, / wss?:(;| )/);
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(response.headers.get('cache-control'), 'no-cache');
    const html = await response.text();
    assert.match(html, /<script type="module" src="console\/main\.js"><\/script>/);
    // The import map is the one inline script, allowed by its hash: the page's text and the hash's agree.
    assert.ok(html.includes(`<script type="importmap">${CONSOLE_IMPORT_MAP}</script>`), 'the import map of the CSP');
    const { imports } = JSON.parse(CONSOLE_IMPORT_MAP) as { imports: Record<string, string> };
    for (const url of Object.values(imports)) {
      const module = await fetch(new URL(url, `${roster.origin}/`));
      assert.equal(module.status, 200, url);
      assert.match(module.headers.get('content-type') ?? '', /^(text|application)\/javascript/);
    }
    assert.doesNotMatch(html, /https?:\/\//, 'no external resources: the console works offline');
    const head = await fetch(`${roster.origin}/`, { method: 'HEAD' });
    assert.equal(head.status, 200);
  });

  test('the CSP names the chat as the page will reach it: CHAT_PUBLIC_URL, or the host asked for; a Host that is not one adds nothing', async (t) => {
    // node:http, not fetch, which will not send a Host header of the caller's.
    const csp = async (origin: string, host?: string) => {
      const response = await new Promise<IncomingMessage>((resolve, reject) =>
        httpGet(`${origin}/`, host ? { headers: { host } } : {}, resolve).on('error', reject),
      );
      response.resume();
      return /connect-src ([^;]*)/.exec(String(response.headers['content-security-policy'] ?? ''))?.[1];
    };
    assert.equal(
      await csp(roster.origin, 'roster.example:8080'),
      `'self' ws://roster.example:${roster.wsPort} wss://roster.example:${roster.wsPort}`,
    );
    assert.equal(
      await csp(roster.origin, '[::1]:8080'),
      `'self' ws://[::1]:${roster.wsPort} wss://[::1]:${roster.wsPort}`,
    );
    assert.equal(await csp(roster.origin, 'evil.example;script-src *'), "'self'", 'nothing of a forged Host');
    const behindProxy: [chatUrl: string, expected: (restPort: number) => string][] = [
      ['wss://chat.example.com/ws', () => "'self' wss://chat.example.com"],
      ['http://chat.example.com:8080/', () => "'self' ws://chat.example.com:8080"],
      ['/chat', (port) => `'self' ws://127.0.0.1:${port} wss://127.0.0.1:${port}`],
    ];
    for (const [chatUrl, expected] of behindProxy) {
      const behind = await startRoster({ CHAT_PUBLIC_URL: chatUrl });
      t.after(() => behind.stop());
      assert.equal(await csp(behind.origin), expected(behind.port), chatUrl);
    }
  });

  test('assets are served under /console/ with their types', async () => {
    for (const [path, type] of [
      ['console/main.js', /javascript/],
      ['console/users/panel.js', /javascript/],
      ['console/protocol/client/user-fields.js', /javascript/],
      ['console/console.css', /^text\/css/],
      ['console/favicon.svg', /^image\/svg\+xml/],
    ] as const) {
      const response = await fetch(`${roster.origin}/${path}`);
      assert.equal(response.status, 200, path);
      assert.match(response.headers.get('content-type') ?? '', type, path);
      assert.ok(response.headers.get('etag'), `${path} has an ETag`);
    }
  });

  test('the settings give the chat port actually bound and the configured roles', async () => {
    const response = await request(`${roster.origin}/console/config.json`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('cache-control'), 'no-store');
    assert.deepEqual(response.body, {
      chatPort: roster.wsPort,
      chatUrl: null,
      roles: ['admin', 'user', 'auditor'],
      auth: 'none',
    });
  });

  test('a missing asset is a 404 in the error envelope', async () => {
    for (const path of ['/console/nope.js', '/console', '/index.html', '/console/.hidden', '/favicon.ico']) {
      const response = await request(`${roster.origin}${path}`);
      assert.equal(response.status, 404, path);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/, path);
      assert.equal(response.body.status, 'error', path);
      assert.equal(response.body.error.code, 'NOT_FOUND', path);
    }
  });

  test('the asset folder itself is not listed', async () => {
    const response = await request(`${roster.origin}/console/`);
    assert.equal(response.status, 403);
    assert.deepEqual(response.body, { status: 'error', error: { code: 'FORBIDDEN', message: 'Forbidden' } });
  });

  test('paths escaping the root are refused in the envelope', async () => {
    for (const path of [
      '/console/%2e%2e/%2e%2e/package.json',
      '/console/..%2f..%2fpackage.json',
      '/console/%2e%2e%2fconsole.css',
    ]) {
      const response = await request(`${roster.origin}${path}`);
      assert.ok([403, 404].includes(response.status), `${path}: ${response.status}`);
      assert.equal(response.body.status, 'error', path);
      assert.doesNotMatch(response.text, /"name": "roster"/);
    }
  });

  test('other methods on / are 405 with Allow, in the envelope', async () => {
    const response = await request(`${roster.origin}/`, { method: 'POST', body: {} });
    assert.equal(response.status, 405);
    assert.equal(response.body.error.code, 'METHOD_NOT_ALLOWED');
    assert.equal(response.headers.get('allow'), 'GET, HEAD');
  });

  test('the API is untouched', async () => {
    const response = await request(`${roster.api}/users`);
    assert.equal(response.status, 200);
    assert.equal(response.body.data.pagination.total, 3);
  });
});

describe('console settings', () => {
  test('a public chat URL is handed to the page as given', async () => {
    const roster = await startConsoleRoster({}, { chatUrl: 'wss://chat.example.com/room' });
    try {
      const response = await request(`${roster.origin}/console/config.json`);
      assert.equal(response.body.chatUrl, 'wss://chat.example.com/room');
      assert.equal(response.body.chatPort, roster.wsPort);
    } finally {
      await roster.stop();
    }
  });

  test('a chat URL a browser cannot open a WebSocket to is refused where settings are read (CHAT_PUBLIC_URL)', () => {
    for (const chatUrl of ['ftp://example.com/', 'not a url', '//example.com/chat']) {
      assert.throws(() => loadConfig({ CHAT_PUBLIC_URL: chatUrl }), /CHAT_PUBLIC_URL must be/, chatUrl);
    }
  });
});

describe('console modules', () => {
  // The page's own module, as compiled for the browser (config.js only touches the DOM in loadConfig).
  test('the chat address comes from the page host and chat port, or the public URL', async () => {
    const { chatAddress } = (await import(pathToFileURL(`${WEB_ROOT}config.js`).href)) as {
      chatAddress(config: { chatPort: number; chatUrl: string | null }, page: URL): string;
    };
    const page = (href: string) => new URL(href);
    assert.equal(
      chatAddress({ chatPort: 8765, chatUrl: null }, page('http://roster.local:5000/')),
      'ws://roster.local:8765/',
    );
    assert.equal(
      chatAddress({ chatPort: 8765, chatUrl: null }, page('https://roster.local/')),
      'wss://roster.local:8765/',
    );
    assert.equal(chatAddress({ chatPort: 8765, chatUrl: null }, page('http://[::1]:5000/')), 'ws://[::1]:8765/');
    assert.equal(
      chatAddress({ chatPort: 8765, chatUrl: 'wss://chat.example.com/room' }, page('http://x/')),
      'wss://chat.example.com/room',
    );
    assert.equal(
      chatAddress({ chatPort: 8765, chatUrl: '/chat' }, page('https://roster.example.com/')),
      'wss://roster.example.com/chat',
    );
    assert.equal(chatAddress({ chatPort: 8765, chatUrl: 'http://proxy:81/ws' }, page('http://x/')), 'ws://proxy:81/ws');
  });

  test('reconnection delays double from 0.5 s up to 10 s, with jitter', async () => {
    // The page's own module, as compiled for the browser (it has no DOM dependencies).
    const { backoffDelay, DEFAULT_BACKOFF } = (await import(pathToFileURL(`${WEB_ROOT}protocol/backoff.js`).href)) as {
      backoffDelay(attempt: number, options?: object, random?: () => number): number;
      DEFAULT_BACKOFF: object;
    };
    const top = (attempt: number) => backoffDelay(attempt, DEFAULT_BACKOFF, () => 0);
    const bottom = (attempt: number) => backoffDelay(attempt, DEFAULT_BACKOFF, () => 1);
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 50].map(top), [500, 1000, 2000, 4000, 8000, 10_000, 10_000, 10_000]);
    assert.deepEqual([0, 1, 2, 5].map(bottom), [250, 500, 1000, 5000]);
    for (let i = 0; i < 100; i++) {
      const delay = backoffDelay(3);
      assert.ok(delay >= 2000 && delay <= 4000, String(delay));
    }
  });
});
