/**
 * The start line says where a person points a browser: the console and the API reference, each a URL
 * that answers; and `/docs` at the root, where people guess documentation lives, leads to the reference.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { browserUrls } from '../src/server.js';
import { captureLog, startRoster } from './support/index.js';

async function listeningLine(env: Record<string, string>) {
  const { lines, logTo } = captureLog();
  const roster = await startRoster({ LOG_LEVEL: 'info', ...env }, { logTo });
  const line = lines.find((l) => l.msg === 'Roster is listening');
  assert.ok(line, 'a "Roster is listening" line');
  return { roster, line: line as { console?: string; reference?: string } };
}

test('the start line names the console and the API reference, and both answer', async (t) => {
  const { roster, line } = await listeningLine({});
  t.after(() => roster.stop());
  assert.equal(line.console, `${roster.origin}/`);
  assert.equal(line.reference, `${roster.origin}/api/v1/reference`);
  const page = await fetch(line.console!);
  assert.equal(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  const reference = await fetch(line.reference!);
  assert.equal(reference.status, 200, 'the reference (after its own redirect, if any)');
  assert.match(await reference.text(), /Roster API reference/);
});

test('without the console, the start line names the reference only', async (t) => {
  const { roster, line } = await listeningLine({ CONSOLE: 'false' });
  t.after(() => roster.stop());
  assert.equal(line.console, undefined);
  assert.equal(line.reference, `${roster.origin}/api/v1/reference`);
});

test('the URLs are ones a browser opens: a wildcard HOST through loopback, IPv6 in brackets, https with TLS', () => {
  const tls = { cert: Buffer.alloc(0), key: Buffer.alloc(0), ciphers: '' };
  assert.deepEqual(browserUrls({ host: '0.0.0.0', tls: undefined, console: true }, 5000), {
    console: 'http://127.0.0.1:5000/',
    reference: 'http://127.0.0.1:5000/api/v1/reference',
  });
  assert.deepEqual(browserUrls({ host: '::', tls, console: false }, 443), {
    reference: 'https://[::1]:443/api/v1/reference',
  });
  assert.equal(browserUrls({ host: 'fd00::5', tls: undefined, console: true }, 80).console, 'http://[fd00::5]:80/');
  assert.equal(browserUrls({ host: 'roster.local', tls, console: true }, 8443).console, 'https://roster.local:8443/');
});

test('/docs at the root redirects to the API reference, also under AUTH', async (t) => {
  const roster = await startRoster({ AUTH: 'apikey', API_KEYS: 'k3y-0123456789abcdef' });
  t.after(() => roster.stop());
  for (const method of ['GET', 'HEAD']) {
    const reply = await fetch(`${roster.origin}/docs`, { method, redirect: 'manual' });
    assert.equal(reply.status, 302, method);
    assert.equal(reply.headers.get('location'), '/api/v1/reference', method);
  }
  const followed = await fetch(`${roster.origin}/docs`);
  assert.equal(followed.status, 200);
  assert.match(await followed.text(), /Roster API reference/);
});
