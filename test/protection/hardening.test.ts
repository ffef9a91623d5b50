/**
 * The hardened defaults of protection (docs/decisions.md, "Protection": *Credential checks*, *TLS*;
 * CHANGELOG.md, "Security"), over real sockets: scrypt at N = 2^17 with older hashes still verifying,
 * TLS 1.2 without CBC or SHA-1 suites, plain HTTP on a TLS port answered with a 400, HSTS as
 * configured, the headers SECURITY_HEADERS adds (Permissions-Policy, no-store on authenticated replies,
 * cross-origin isolation), and METRICS_AUTH.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { request as httpsRequest } from 'node:https';
import { hashPassword, parsePasswordHash } from '../../src/edge/password.js';
import { PERMISSIONS_POLICY } from '../../src/http/protection.js';
import {
  API_KEY_ADMIN,
  API_KEY_READER,
  assertRefused,
  basic,
  launchBrowser,
  makeCertificate,
  noChromium,
  openConsole,
  request,
  sendRaw,
  startConsoleRoster,
  startRoster,
  waitForText,
  within,
  type Running,
} from '../support/index.js';

describe('scrypt: N = 2^17 for new hashes; older hashes still verify', () => {
  test('hash-password writes N=131072; a BASIC_USERS list mixing it with an N=2^15 hash signs both in', async (t) => {
    const strong = await hashPassword('new-password');
    assert.match(strong, /^scrypt\$131072\$8\$1\$/);
    assert.equal(parsePasswordHash(strong)?.N, 2 ** 17);
    const old = await hashPassword('old-password', { N: 2 ** 15, r: 8, p: 1 });
    const running = await startRoster({ AUTH: 'basic', BASIC_USERS: `new:${strong},old:${old}` });
    t.after(() => running.stop());
    assert.equal(
      (await request(`${running.api}/users`, { headers: { authorization: basic('new', 'new-password') } })).status,
      200,
    );
    assert.equal(
      (await request(`${running.api}/users`, { headers: { authorization: basic('old', 'old-password') } })).status,
      200,
    );
    assertRefused(
      await request(`${running.api}/users`, { headers: { authorization: basic('old', 'new-password') } }),
      401,
      'UNAUTHORIZED',
    );
  });
});

/** The suite a TLS handshake settles on, or the error that ended it. */
function negotiate(
  port: number,
  options: ConnectionOptions,
): Promise<{ cipher?: string; version?: string; error?: string }> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options }, () => {
      const cipher = socket.getCipher();
      resolve({ cipher: cipher.standardName, version: socket.getProtocol() ?? undefined });
      socket.destroy();
    });
    socket.on('error', (error) => resolve({ error: error.message }));
  });
}

function httpsHeaders(url: string, ca: Buffer): Promise<Record<string, string | string[] | undefined>> {
  return new Promise((resolve, reject) => {
    httpsRequest(url, { ca, agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.headers));
    })
      .on('error', reject)
      .end();
  });
}

const files = makeCertificate();
const noOpenssl = files ? false : 'openssl is not installed';

describe('TLS', { skip: noOpenssl }, () => {
  let running: Running;
  let ca: Buffer;
  let restPort: number;
  before(async () => {
    running = await startRoster({ TLS_CERT: files!.cert, TLS_KEY: files!.key, SECURITY_HEADERS: 'true' });
    ca = readFileSync(files!.cert);
    restPort = Number(new URL(running.origin).port);
  });
  after(async () => {
    await running?.stop();
    rmSync(files!.dir, { recursive: true, force: true });
  });

  test('TLS 1.2: CBC suites (SHA-1 and SHA-2 MACs) refused on both ports; ECDHE with AES-GCM or ChaCha20 accepted; TLS 1.3 accepted', async () => {
    for (const port of [restPort, running.wsPort]) {
      for (const cipher of [
        'ECDHE-ECDSA-AES128-SHA',
        'ECDHE-ECDSA-AES256-SHA',
        'ECDHE-ECDSA-AES128-SHA256',
        'ECDHE-ECDSA-AES256-SHA384',
      ]) {
        const outcome = await negotiate(port, { ciphers: cipher, maxVersion: 'TLSv1.2' });
        assert.ok(outcome.error, `port ${port}: ${cipher} was negotiated`);
      }
      for (const cipher of [
        'ECDHE-ECDSA-AES128-GCM-SHA256',
        'ECDHE-ECDSA-AES256-GCM-SHA384',
        'ECDHE-ECDSA-CHACHA20-POLY1305',
      ]) {
        const outcome = await negotiate(port, { ciphers: cipher, maxVersion: 'TLSv1.2' });
        assert.equal(outcome.version, 'TLSv1.2', `port ${port}: ${cipher}: ${outcome.error}`);
      }
      assert.equal((await negotiate(port, {})).version, 'TLSv1.3');
      assert.ok((await negotiate(port, { maxVersion: 'TLSv1.1', minVersion: 'TLSv1' })).error, 'TLS 1.1 refused');
    }
  });

  test('plain HTTP on the HTTPS port, and a ws:// handshake on the WSS port: 400 in the envelope, saying to use TLS', async () => {
    for (const [port, text] of [
      [restPort, 'GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'],
      [
        running.wsPort,
        'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
      ],
    ] as const) {
      // sendRaw would resolve at 6 s with what came; within fails first unless the server closed by 5 s.
      const reply = await within(sendRaw(port, text, 6000), 5000, `the reply on port ${port}`);
      assert.match(reply, /^HTTP\/1\.1 400 Bad Request\r\n/, reply);
      const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4));
      assert.equal(body.status, 'error');
      assert.match(body.error.message, /TLS/);
    }
    const viaFetch = await request(`http://127.0.0.1:${restPort}/api/v1/health`);
    assertRefused(viaFetch, 400, 'ERROR');
  });

  test('HSTS by default: one year, without includeSubDomains', async () => {
    const headers = await httpsHeaders(`https://127.0.0.1:${restPort}/api/v1/health`, ca);
    assert.equal(headers['strict-transport-security'], 'max-age=31536000');
  });

  test('HSTS_MAX_AGE and HSTS_INCLUDE_SUBDOMAINS; TLS_CIPHERS replaces the suite list', async (t) => {
    const second = makeCertificate()!;
    const other = await startRoster({
      TLS_CERT: second.cert,
      TLS_KEY: second.key,
      SECURITY_HEADERS: 'true',
      HSTS_MAX_AGE: '600',
      HSTS_INCLUDE_SUBDOMAINS: 'true',
      TLS_CIPHERS: 'ECDHE-ECDSA-AES128-SHA256:TLS_AES_128_GCM_SHA256',
    });
    t.after(async () => {
      await other.stop();
      rmSync(second.dir, { recursive: true, force: true });
    });
    const port = Number(new URL(other.origin).port);
    const headers = await httpsHeaders(`https://127.0.0.1:${port}/api/v1/health`, readFileSync(second.cert));
    assert.equal(headers['strict-transport-security'], 'max-age=600; includeSubDomains');
    assert.equal(
      (await negotiate(port, { ciphers: 'ECDHE-ECDSA-AES128-SHA256', maxVersion: 'TLSv1.2' })).version,
      'TLSv1.2',
    );
    assert.ok((await negotiate(port, { ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256', maxVersion: 'TLSv1.2' })).error);
  });
});

describe('SECURITY_HEADERS: what helmet does not send', () => {
  test('Permissions-Policy everywhere; Cache-Control: no-store on replies that needed a credential (errors too), not on public ones; cross-origin isolation', async (t) => {
    const running = await startRoster({ SECURITY_HEADERS: 'true', AUTH: 'apikey', API_KEYS: API_KEY_ADMIN });
    t.after(() => running.stop());
    const list = await request(`${running.api}/users`, { headers: { 'x-api-key': API_KEY_ADMIN } });
    assert.equal(list.status, 200);
    assert.equal(list.headers.get('cache-control'), 'no-store');
    const refused = await request(`${running.api}/users`);
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('cache-control'), 'no-store', 'the 401 too');
    const missing = await request(`${running.api}/users/nobody`, { headers: { 'x-api-key': API_KEY_ADMIN } });
    assert.equal(missing.headers.get('cache-control'), 'no-store', 'a 404 of a user');
    const health = await request(`${running.api}/health`);
    assert.equal(health.headers.get('cache-control'), null, 'public replies are left alone');
    for (const response of [list, refused, health]) {
      assert.equal(response.headers.get('permissions-policy'), PERMISSIONS_POLICY);
      assert.equal(response.headers.get('cross-origin-opener-policy'), 'same-origin');
      assert.equal(response.headers.get('cross-origin-embedder-policy'), 'require-corp');
      assert.equal(response.headers.get('cross-origin-resource-policy'), 'same-origin');
    }
    const page = await fetch(`${running.origin}/`);
    await page.arrayBuffer();
    assert.equal(page.headers.get('cross-origin-embedder-policy'), 'require-corp');
    assert.equal(page.headers.get('permissions-policy'), PERMISSIONS_POLICY);
  });

  test('off by default: no Permissions-Policy, no no-store on the API', async (t) => {
    const running = await startRoster({ AUTH: 'apikey', API_KEYS: API_KEY_ADMIN });
    t.after(() => running.stop());
    const list = await request(`${running.api}/users`, { headers: { 'x-api-key': API_KEY_ADMIN } });
    assert.equal(list.headers.get('permissions-policy'), null);
    assert.equal(list.headers.get('cache-control'), null);
  });
});

describe('METRICS_AUTH', () => {
  test('true: /metrics wants an admin credential (401 without, 403 for a reader); health stays public', async (t) => {
    const running = await startRoster({
      AUTH: 'apikey',
      API_KEYS: `${API_KEY_ADMIN}:admin,${API_KEY_READER}`,
      METRICS_AUTH: 'true',
    });
    t.after(() => running.stop());
    assertRefused(await request(`${running.origin}/metrics`), 401, 'UNAUTHORIZED', /^ApiKey/);
    assertRefused(
      await request(`${running.origin}/metrics`, { headers: { 'x-api-key': API_KEY_READER } }),
      403,
      'FORBIDDEN',
    );
    const admin = await fetch(`${running.origin}/metrics`, { headers: { 'x-api-key': API_KEY_ADMIN } });
    assert.equal(admin.status, 200);
    assert.match(await admin.text(), /roster_http_requests_total/);
    assert.equal((await request(`${running.api}/health`)).status, 200);
  });

  test('the OpenAPI document says so: /metrics has the security requirement only with METRICS_AUTH', async (t) => {
    const secured = await startRoster({ AUTH: 'apikey', API_KEYS: `${API_KEY_ADMIN}:admin`, METRICS_AUTH: 'true' });
    t.after(() => secured.stop());
    const open = await startRoster({ AUTH: 'apikey', API_KEYS: `${API_KEY_ADMIN}:admin` });
    t.after(() => open.stop());
    const metricsOf = async (running: typeof secured) => {
      const doc = (await request(`${running.api}/openapi.json`, { headers: { 'x-api-key': API_KEY_ADMIN } })).body as {
        paths: Record<string, Record<string, { security?: unknown[]; responses: object }>>;
      };
      return doc.paths['/metrics']!;
    };
    const guarded = await metricsOf(secured);
    for (const method of ['get'])
      assert.deepEqual(guarded[method]!.security, [{ apiKeyHeader: [] }, { apiKeyQuery: [] }], method);
    assert.ok('401' in guarded.get!.responses && '403' in guarded.get!.responses);
    const public_ = await metricsOf(open);
    assert.deepEqual(public_.get!.security, []);
    assert.ok(!('401' in public_.get!.responses));
  });

  test('default (false): /metrics is public under AUTH, as documented', async (t) => {
    const running = await startRoster({ AUTH: 'apikey', API_KEYS: API_KEY_ADMIN });
    t.after(() => running.stop());
    const response = await fetch(`${running.origin}/metrics`);
    await response.arrayBuffer();
    assert.equal(response.status, 200);
  });
});

describe('SECURITY_HEADERS in a browser', () => {
  test(
    'the console is cross-origin isolated and still lists users and joins the chat',
    { skip: noChromium, timeout: 30_000 },
    async () => {
      const roster = await startConsoleRoster({ SECURITY_HEADERS: 'true' });
      const browser = await launchBrowser();
      try {
        const { page, errors, consoleErrors } = await openConsole(browser, roster.origin);
        await waitForText(page.locator('#page-info'), '3 users');
        await waitForText(page.locator('#chat-status-text'), 'Connected');
        assert.equal(await page.evaluate('crossOriginIsolated'), true);
        assert.deepEqual(errors, []);
        assert.deepEqual(consoleErrors, []);
      } finally {
        await browser.close();
        await roster.stop();
      }
    },
  );
});
