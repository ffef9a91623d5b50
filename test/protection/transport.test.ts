/**
 * TLS (HTTPS and WSS on the same ports, with a certificate the test makes), CORS (allowed, foreign,
 * preflight; the chat's Origin check), security headers, the OpenAPI document with protection on, and
 * credentials kept out of the logs.
 */
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { WebSocket } from 'ws';
import { chatSources, consoleCsp } from '../../src/http/console.js';
import {
  API_KEY_ADMIN,
  API_KEY_READER,
  assertRefused,
  captureLog,
  handshake,
  makeCertificate,
  request,
  SECRET,
  startRoster,
  token,
  within,
} from '../support/index.js';

function httpsGet(
  url: string,
  ca: Buffer,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    httpsRequest(url, { ca, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
    })
      .on('error', reject)
      .end();
  });
}

describe('TLS_CERT / TLS_KEY', () => {
  const files = makeCertificate();
  test(
    'HTTPS on the REST port and WSS on the chat port, with the same replies',
    { skip: files ? false : 'openssl is not installed' },
    async (t) => {
      const { dir, cert, key } = files!;
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      const running = await startRoster({ TLS_CERT: cert, TLS_KEY: key, SECURITY_HEADERS: 'true' });
      t.after(() => running.stop());
      const ca = readFileSync(cert);
      const port = new URL(running.origin).port;

      const health = await httpsGet(`https://127.0.0.1:${port}/api/v1/health`, ca);
      assert.equal(health.status, 200);
      assert.equal(JSON.parse(health.text).data.status, 'healthy');
      assert.match(String(health.headers['strict-transport-security']), /max-age=\d+/, 'HSTS over TLS');
      // Plain HTTP on the TLS port gets nowhere but a 400 saying so (hardening.test.ts).
      assertRefused(await request(`http://127.0.0.1:${port}/api/v1/health`), 400, 'ERROR');

      const ws = new WebSocket(`wss://127.0.0.1:${running.wsPort}`, { ca });
      const welcome = await within(
        new Promise<Record<string, unknown>>((resolve, reject) => {
          ws.once('message', (data) => resolve(JSON.parse(String(data)) as Record<string, unknown>));
          ws.once('error', reject);
        }),
        5000,
        'the welcome over WSS',
      );
      assert.equal(welcome.type, 'system');
      const echo = new Promise<Record<string, unknown>>((resolve) =>
        ws.once('message', (data) => resolve(JSON.parse(String(data)) as Record<string, unknown>)),
      );
      ws.send(JSON.stringify({ type: 'chat', message: 'over tls' }));
      assert.equal((await within(echo, 5000, 'the echo')).message, 'over tls');
      ws.close();

      // A client that does not trust the certificate is refused by TLS itself.
      const untrusting = new WebSocket(`wss://127.0.0.1:${running.wsPort}`);
      const failure = await within(
        new Promise<Error>((resolve) => untrusting.once('error', resolve)),
        5000,
        'the TLS failure',
      );
      assert.match(failure.message, /self[- ]signed|certificate/i);
    },
  );
});

describe('CORS_ORIGINS', () => {
  const ALLOWED = 'https://app.example.com';
  const FOREIGN = 'https://evil.example.com';

  test('allowed origin: CORS headers; foreign: none; preflight 204; plain OPTIONS stays 405', async (t) => {
    const running = await startRoster({ CORS_ORIGINS: ALLOWED, AUTH: 'apikey', API_KEYS: API_KEY_ADMIN });
    t.after(() => running.stop());
    const allowed = await request(`${running.api}/users`, { headers: { origin: ALLOWED, 'x-api-key': API_KEY_ADMIN } });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers.get('access-control-allow-origin'), ALLOWED);
    assert.match(allowed.headers.get('access-control-expose-headers') ?? '', /RateLimit-Remaining/);
    // Error replies carry them too, so a page can read its 401.
    const refused = await request(`${running.api}/users`, { headers: { origin: ALLOWED } });
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('access-control-allow-origin'), ALLOWED);

    const foreign = await request(`${running.api}/users`, { headers: { origin: FOREIGN, 'x-api-key': API_KEY_ADMIN } });
    assert.equal(foreign.headers.get('access-control-allow-origin'), null);

    const preflight = await fetch(`${running.api}/users`, {
      method: 'OPTIONS',
      headers: {
        origin: ALLOWED,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-api-key, content-type',
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), ALLOWED);
    assert.match(preflight.headers.get('access-control-allow-methods') ?? '', /POST/);
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /X-API-Key/i);

    const foreignPreflight = await request(`${running.api}/users`, {
      method: 'OPTIONS',
      headers: { origin: FOREIGN, 'access-control-request-method': 'POST' },
    });
    assert.equal(foreignPreflight.headers.get('access-control-allow-origin'), null);
    assertRefused(foreignPreflight, 405, 'METHOD_NOT_ALLOWED');
    assertRefused(await request(`${running.api}/users`, { method: 'OPTIONS' }), 405, 'METHOD_NOT_ALLOWED');
  });

  test('off by default: no CORS headers, OPTIONS is 405', async (t) => {
    const running = await startRoster();
    t.after(() => running.stop());
    const response = await request(`${running.api}/users`, { headers: { origin: ALLOWED } });
    assert.equal(response.headers.get('access-control-allow-origin'), null);
    const preflight = await request(`${running.api}/users`, {
      method: 'OPTIONS',
      headers: { origin: ALLOWED, 'access-control-request-method': 'POST' },
    });
    assertRefused(preflight, 405, 'METHOD_NOT_ALLOWED');
  });

  test('chat: a foreign Origin gets 403 before the upgrade; a listed one and none at all connect', async (t) => {
    const running = await startRoster({ CORS_ORIGINS: ALLOWED });
    t.after(() => running.stop());
    assertRefused(await handshake(running.wsUrl, { origin: FOREIGN }), 403, 'FORBIDDEN');
    assert.equal(await running.server.chat.size(), 0);
    const listed = await handshake(running.wsUrl, { origin: ALLOWED });
    assert.equal(listed.status, 101);
    const tool = await handshake(running.wsUrl);
    assert.equal(tool.status, 101, 'no Origin: a non-browser client');
    listed.ws!.terminate();
    tool.ws!.terminate();
  });
});

describe('SECURITY_HEADERS', () => {
  test('on: helmet headers on API replies, errors included; the console keeps its own policy; the reference page loads', async (t) => {
    const running = await startRoster({ SECURITY_HEADERS: 'true' });
    t.after(() => running.stop());
    for (const path of ['/api/v1/health', '/api/v1/users/nobody']) {
      const response = await request(`${running.origin}${path}`);
      assert.match(response.headers.get('content-security-policy') ?? '', /default-src 'self'/, path);
      assert.match(response.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, path);
      assert.equal(response.headers.get('x-frame-options'), 'DENY', path);
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff', path);
      assert.equal(response.headers.get('referrer-policy'), 'no-referrer', path);
      assert.equal(response.headers.get('cross-origin-opener-policy'), 'same-origin', path);
      assert.equal(response.headers.get('strict-transport-security'), null, 'no HSTS over plain HTTP');
    }
    const page = await fetch(`${running.origin}/`);
    await page.arrayBuffer();
    assert.equal(
      page.headers.get('content-security-policy'),
      consoleCsp(chatSources(null, running.wsPort, { host: `127.0.0.1:${running.port}`, hostname: '127.0.0.1' })),
      'the console keeps its own CSP (connect-src: its chat only)',
    );
    const reference = await fetch(`${running.api}/reference/static/index.html`);
    const html = await reference.text();
    assert.equal(reference.status, 200);
    assert.doesNotMatch(html, /<script>(?!\s*<\/script>)/, 'no inline script for the CSP to block');
  });

  test('off by default: no helmet headers', async (t) => {
    const running = await startRoster();
    t.after(() => running.stop());
    const response = await request(`${running.api}/health`);
    assert.equal(response.headers.get('content-security-policy'), null);
    assert.equal(response.headers.get('x-frame-options'), null);
  });
});

describe('OpenAPI with protection on', () => {
  test('AUTH=jwt and RATE_LIMIT: a valid document with the bearer scheme, 401/403 on user routes, 429 except on health', async (t) => {
    const running = await startRoster({ AUTH: 'jwt', JWT_SECRET: SECRET, RATE_LIMIT: '100/minute' });
    t.after(() => running.stop());
    const { body } = await request(`${running.api}/openapi.json`);
    const result = await new Validator().validate(body);
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
    assert.deepEqual(body.components.securitySchemes.bearerAuth, {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
      description: body.components.securitySchemes.bearerAuth.description,
    });
    for (const [path, method] of [
      ['/api/v1/users', 'get'],
      ['/api/v1/users', 'post'],
      ['/api/v1/users/{id}', 'delete'],
    ] as const) {
      const operation = body.paths[path][method];
      assert.deepEqual(operation.security, [{ bearerAuth: [] }], `${method} ${path}`);
      for (const status of ['401', '403', '429'])
        assert.ok(status in operation.responses, `${method} ${path} ${status}`);
    }
    const health = body.paths['/api/v1/health'].get;
    // A public operation states that it needs nothing (security: []), so linters see every operation covered.
    assert.deepEqual(health.security, []);
    assert.ok(!('401' in health.responses) && !('429' in health.responses));
    assert.ok('429' in body.paths['/api/v1/docs'].get.responses);
    assert.ok(!('401' in body.paths['/api/v1/docs'].get.responses));
  });

  test('AUTH=apikey: header and query schemes', async (t) => {
    const running = await startRoster({ AUTH: 'apikey', API_KEYS: API_KEY_ADMIN });
    t.after(() => running.stop());
    const { body } = await request(`${running.api}/openapi.json`);
    assert.ok((await new Validator().validate(body)).valid);
    assert.deepEqual(body.paths['/api/v1/users'].get.security, [{ apiKeyHeader: [] }, { apiKeyQuery: [] }]);
    assert.equal(body.components.securitySchemes.apiKeyQuery.in, 'query');
  });
});

describe('credentials never reach the logs', () => {
  test('api_key and access_token are redacted from the request line; headers are not logged', async (t) => {
    const { lines, logTo } = captureLog();
    const running = await startRoster(
      { LOG_LEVEL: 'trace', AUTH: 'apikey', API_KEYS: `${API_KEY_ADMIN},${API_KEY_READER}:user` },
      { logTo },
    );
    t.after(() => running.stop());
    const jwt = await token();
    await request(`${running.api}/users?api_key=${API_KEY_READER}&page=1`);
    await request(`${running.api}/users?page=1&api%5Fkey=${API_KEY_ADMIN}`);
    // Read as a key too (a leading `?` of the query is dropped, as URLSearchParams does).
    await request(`${running.api}/users??api_key=${API_KEY_READER}`);
    await request(`${running.api}/users?access_token=${jwt}`);
    await request(`${running.api}/users`, { headers: { 'x-api-key': API_KEY_ADMIN, authorization: `Bearer ${jwt}` } });
    await request(`${running.api}/users`, {
      method: 'POST',
      headers: { 'x-api-key': API_KEY_READER },
      body: { name: 'x', email: 'x@example.com' },
    });
    const chat = await handshake(`${running.wsUrl}/?api_key=${API_KEY_ADMIN}`);
    chat.ws!.terminate();
    await handshake(`${running.wsUrl}/?api_key=wrong-${API_KEY_ADMIN}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const text = lines.map((line) => JSON.stringify(line)).join('\n');
    const requestLines = lines.filter((line) => line.msg === 'request');
    assert.ok(requestLines.length >= 5, text);
    assert.ok(
      requestLines.some((line) => line.url === '/api/v1/users?api_key=[REDACTED]&page=1'),
      text,
    );
    assert.ok(
      requestLines.some((line) => line.url === '/api/v1/users?page=1&api%5Fkey=[REDACTED]'),
      text,
    );
    for (const secret of [API_KEY_ADMIN, API_KEY_READER, jwt, jwt.split('.')[2]!])
      assert.ok(!text.includes(secret), `a credential in the log: ${secret.slice(0, 12)}…`);
  });
});
