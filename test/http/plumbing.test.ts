/** HTTP plumbing: health, docs, envelopes, malformed requests, unknown routes and methods, headers. */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Dependency, DependencyState } from '../../src/ops/health.js';
import { request, sendRaw, startRoster, TIMESTAMP, type Running } from '../support/index.js';

let roster: Running;
before(async () => {
  roster = await startRoster({ BODY_LIMIT: '4KiB' });
});
after(() => roster.stop());

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function assertError(response: { status: number; headers: Headers; body: any }, status: number, code: string) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.match(response.headers.get('content-type') ?? '', /^application\/json; charset=utf-8$/);
  assert.equal(response.body.status, 'error');
  assert.equal(response.body.error.code, code);
  assert.equal(typeof response.body.error.message, 'string');
}

const port = () => Number(new URL(roster.origin).port);

describe('health', () => {
  test('200 with status healthy and an ISO timestamp', async () => {
    const { status, body } = await request(`${roster.api}/health`);
    assert.equal(status, 200);
    assert.equal(body.status, 'success');
    assert.equal(typeof body.message, 'string');
    assert.equal(body.data.status, 'healthy');
    assert.match(body.data.timestamp, TIMESTAMP);
    assert.ok(Math.abs(Date.parse(`${body.data.timestamp}Z`) - Date.now()) < 60_000, 'UTC, and now');
    // No checks without engines; the memory store's fill under its default MAX_USERS.
    assert.deepEqual(
      Object.keys(body.data).sort(),
      ['instance', 'started_at', 'status', 'storage', 'timestamp'],
      'no checks without engines',
    );
    assert.match(body.data.instance, /^[0-9a-f-]{36}$/);
    assert.ok(body.data.started_at <= body.data.timestamp, 'started before now');
    const again = (await request(`${roster.api}/health`)).body.data;
    assert.deepEqual([again.instance, again.started_at], [body.data.instance, body.data.started_at], 'the same run');
    const other = await startRoster();
    try {
      assert.notEqual(
        (await request(`${other.api}/health`)).body.data.instance,
        body.data.instance,
        'another run, another id',
      );
    } finally {
      await other.stop();
    }
    assert.deepEqual(Object.keys(body.data.storage).sort(), ['capacity', 'users']);
  });

  test('with engines: each one reported; a non-critical one down is degraded with 200, a critical one down is 503', async () => {
    const states: Record<string, DependencyState> = { database: { up: true }, chat_bus: { up: true } };
    const dependencies: Dependency[] = [
      { name: 'database', critical: true, state: () => states.database! },
      { name: 'chat_bus', critical: false, state: () => states.chat_bus! },
    ];
    const local = await startRoster({}, { dependencies });
    try {
      let response = await request(`${local.api}/health`);
      assert.equal(response.status, 200);
      assert.equal(response.body.data.status, 'healthy');
      assert.deepEqual(response.body.data.checks, { database: 'up', chat_bus: 'up' });

      states.chat_bus = { up: false, reason: 'connect ECONNREFUSED 127.0.0.1:6379' };
      response = await request(`${local.api}/health`);
      assert.equal(response.status, 200);
      assert.equal(response.body.data.status, 'degraded');
      assert.deepEqual(response.body.data.checks, { database: 'up', chat_bus: 'down' });
      assert.match(response.body.message, /chat_bus/);

      states.database = { up: false, reason: 'connect ECONNREFUSED 127.0.0.1:5432' };
      response = await request(`${local.api}/health`);
      assertError(response, 503, 'SERVICE_UNAVAILABLE');
      assert.match(response.body.error.message, /degraded: database down/);
      assert.deepEqual(response.body.error.details, [
        { field: 'database', message: 'down: connect ECONNREFUSED 127.0.0.1:5432' },
        { field: 'chat_bus', message: 'down: connect ECONNREFUSED 127.0.0.1:6379' },
      ]);

      states.database = { up: true };
      states.chat_bus = { up: true };
      response = await request(`${local.api}/health`);
      assert.equal(response.status, 200);
      assert.equal(response.body.data.status, 'healthy');
    } finally {
      await local.stop();
    }
  });
});

describe('docs', () => {
  test('version 1.0.0, a title, one entry per operation with <id> paths', async () => {
    const { status, body } = await request(`${roster.api}/docs`);
    assert.equal(status, 200);
    assert.equal(body.status, 'success');
    const docs = body.data;
    assert.equal(docs.version, '1.0.0');
    assert.equal(typeof docs.title, 'string');
    const operations = docs.endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`).sort();
    assert.deepEqual(operations, [
      'DELETE /api/v1/users/<id>',
      'GET /api/v1/asyncapi.json',
      'GET /api/v1/chat/members',
      'GET /api/v1/docs',
      'GET /api/v1/health',
      'GET /api/v1/openapi.json',
      'GET /api/v1/users',
      'GET /api/v1/users/<id>',
      'GET /api/v1/users/changes',
      'PATCH /api/v1/users/<id>',
      'POST /api/v1/users',
      'PUT /api/v1/users/<id>',
    ]);
    for (const endpoint of docs.endpoints) {
      assert.equal(typeof endpoint.description, 'string');
      assert.ok(endpoint.description.length > 0);
    }
    const listing = docs.endpoints.find(
      (e: { method: string; path: string }) => e.method === 'GET' && e.path === '/api/v1/users',
    );
    assert.deepEqual(Object.keys(listing.parameters).sort(), [
      'after',
      'limit',
      'order',
      'page',
      'role',
      'search',
      'sort',
    ]);
    for (const text of Object.values(listing.parameters)) assert.equal(typeof text, 'string');
    const creating = docs.endpoints.find((e: { method: string }) => e.method === 'POST');
    assert.deepEqual(Object.keys(creating.body).sort(), ['email', 'name', 'role']);
  });

  test('every documented operation is really served (no 404 or 405 from the router)', async () => {
    const { body } = await request(`${roster.api}/docs`);
    // What each operation answers for an unknown id or an empty object body: its own reply, never
    // the router's 404 NOT_FOUND or 405.
    const expected: Record<string, [number, string | undefined]> = {
      'GET /api/v1/users': [200, undefined],
      'POST /api/v1/users': [422, 'VALIDATION_ERROR'],
      'GET /api/v1/users/<id>': [404, 'USER_NOT_FOUND'],
      'GET /api/v1/users/changes': [200, undefined],
      'PUT /api/v1/users/<id>': [404, 'USER_NOT_FOUND'],
      'PATCH /api/v1/users/<id>': [404, 'USER_NOT_FOUND'],
      'DELETE /api/v1/users/<id>': [404, 'USER_NOT_FOUND'],
      'GET /api/v1/health': [200, undefined],
      'GET /api/v1/docs': [200, undefined],
      'GET /api/v1/openapi.json': [200, undefined],
      'GET /api/v1/asyncapi.json': [200, undefined],
      'GET /api/v1/chat/members': [200, undefined],
    };
    for (const { method, path } of body.data.endpoints) {
      const url = `${roster.origin}${path.replace('<id>', 'no-such-id')}`;
      const response = await request(url, { method, body: ['POST', 'PUT', 'PATCH'].includes(method) ? {} : undefined });
      const [status, code] = expected[`${method} ${path}`]!;
      assert.equal(response.status, status, `${method} ${path}`);
      assert.equal(response.body.error?.code, code, `${method} ${path}`);
    }
  });
});

describe('the asterisk request target', () => {
  // With a query too (the REST fuzz found `*?=1` served as the console's page).
  for (const target of ['*', '*?=1', '*?page=2']) {
    test(`GET ${target} is a 400 in the envelope (the asterisk form is for OPTIONS), not the console page`, async () => {
      const reply = await new Promise<string>((resolve, reject) => {
        const socket = connect(Number(new URL(roster.origin).port), '127.0.0.1', () =>
          socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`),
        );
        let text = '';
        socket.on('data', (chunk) => (text += chunk));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      assert.match(reply, /^HTTP\/1\.1 400 /);
      assert.match(reply, /content-type: application\/json; charset=utf-8/i);
      assert.match(reply, /"code":"ERROR"/);
    });
  }
});

describe('malformed bodies', () => {
  const post = (body: string, contentType?: string) =>
    request(`${roster.api}/users`, {
      method: 'POST',
      body,
      headers: contentType ? { 'content-type': contentType } : {},
    });

  test('invalid JSON: 400 INVALID_JSON', async () => {
    for (const body of ['{bad', '{"name":', '{"a":1}}', "{'a':1}", 'undefined']) {
      assertError(await post(body, 'application/json'), 400, 'INVALID_JSON');
    }
  });

  test('JSON that is not an object: 400 INVALID_BODY', async () => {
    for (const body of ['[]', '[{"name":"a","email":"a@b.co"}]', '"text"', '42', 'null', 'true']) {
      assertError(await post(body, 'application/json'), 400, 'INVALID_BODY');
    }
  });

  test('no body at all on POST: 400 INVALID_BODY', async () => {
    assertError(await request(`${roster.api}/users`, { method: 'POST' }), 400, 'INVALID_BODY');
  });

  test('an empty body declared as JSON on POST, PUT and PATCH: 400 INVALID_JSON', async () => {
    assertError(await post('', 'application/json'), 400, 'INVALID_JSON');
    const users = (await request(`${roster.api}/users`)).body.data.users;
    for (const method of ['PUT', 'PATCH']) {
      const response = await request(`${roster.api}/users/${users[0].id}`, {
        method,
        body: '',
        headers: { 'content-type': 'application/json' },
      });
      assertError(response, 400, 'INVALID_JSON');
    }
  });

  test('a non-JSON content type: 415 UNSUPPORTED_MEDIA_TYPE on POST, PUT and PATCH', async () => {
    assertError(await post('name=x', 'application/x-www-form-urlencoded'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    assertError(await post('{"name":"x"}', 'text/plain'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    const users = (await request(`${roster.api}/users`)).body.data.users;
    for (const method of ['PUT', 'PATCH']) {
      const response = await request(`${roster.api}/users/${users[0].id}`, {
        method,
        body: '<x/>',
        headers: { 'content-type': 'application/xml' },
      });
      assertError(response, 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
  });

  test('JSON media types are accepted: application/json with charset, and */*+json', async () => {
    const body = (n: number) => JSON.stringify({ name: 'Json Type', email: `json${n}.${Date.now()}@example.com` });
    assert.equal((await post(body(1), 'application/json; charset=utf-8')).status, 201);
    assert.equal((await post(body(2), 'application/merge-patch+json')).status, 201);
    assert.equal((await post(body(3), 'application/vnd.roster.user+json')).status, 201);
  });

  test('a body over BODY_LIMIT: 413 PAYLOAD_TOO_LARGE, nothing stored', async () => {
    const before = (await request(`${roster.api}/users`)).body.data.pagination.total;
    const big = JSON.stringify({ name: 'x'.repeat(5000), email: `big${Date.now()}@example.com` });
    assertError(await post(big, 'application/json'), 413, 'PAYLOAD_TOO_LARGE');
    assert.equal((await request(`${roster.api}/users`)).body.data.pagination.total, before);
  });

  test('a declared Content-Length over the limit is refused without sending the body', async () => {
    const reply = await sendRaw(
      port(),
      `POST /api/v1/users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n`,
    );
    assert.match(reply, /^HTTP\/1\.1 413 /);
    assert.match(reply, /"code":"PAYLOAD_TOO_LARGE"/);
  });
});

describe('unknown routes and methods', () => {
  for (const path of ['/nope', '/api/v1/nope', '/api/v2/users', '/api/v1/users/a/b', '/api/v1']) {
    test(`GET ${path}: 404 NOT_FOUND`, async () => {
      assertError(await request(`${roster.origin}${path}`), 404, 'NOT_FOUND');
    });
  }

  test('GET / is the browser console; with CONSOLE=false it is a 404 NOT_FOUND like any unknown path', async () => {
    const page = await fetch(`${roster.origin}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    await page.arrayBuffer();
    const without = await startRoster({ CONSOLE: 'false' });
    try {
      assertError(await request(`${without.origin}/`), 404, 'NOT_FOUND');
      assertError(await request(`${without.origin}/console/config.json`), 404, 'NOT_FOUND');
    } finally {
      await without.stop();
    }
  });

  const cases: [string, string, string][] = [
    ['DELETE', '/api/v1/users', 'GET, HEAD, POST'],
    ['PUT', '/api/v1/users', 'GET, HEAD, POST'],
    ['POST', '/api/v1/users/some-id', 'DELETE, GET, HEAD, PATCH, PUT'],
    ['POST', '/api/v1/health', 'GET, HEAD'],
    ['DELETE', '/api/v1/docs', 'GET, HEAD'],
    ['OPTIONS', '/api/v1/users', 'GET, HEAD, POST'],
  ];
  for (const [method, path, allow] of cases) {
    test(`${method} ${path}: 405 METHOD_NOT_ALLOWED with Allow`, async () => {
      const response = await request(`${roster.origin}${path}`, { method });
      assertError(response, 405, 'METHOD_NOT_ALLOWED');
      assert.equal(response.headers.get('allow'), allow);
    });
  }

  for (const method of ['PROPFIND', 'PURGE', 'SEARCH', 'LINK', 'TRACE', 'QUERY']) {
    test(`${method}, a method the router may not know, on a known path: 405 in the envelope`, async () => {
      const reply = await sendRaw(port(), `${method} /api/v1/users HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      assert.match(reply, /^HTTP\/1\.1 405 /);
      assert.match(reply, /\r\nallow: GET, HEAD, POST\r\n/i);
      assert.match(reply, /"code":"METHOD_NOT_ALLOWED"/);
    });
  }

  test('CONNECT gets an envelope, not a dropped socket', async () => {
    const reply = await sendRaw(port(), 'CONNECT /api/v1/users HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(reply, /^HTTP\/1\.1 405 /);
    assert.match(reply, /"code":"METHOD_NOT_ALLOWED"/);
    const elsewhere = await sendRaw(port(), 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    assert.match(elsewhere, /^HTTP\/1\.1 404 /);
    assert.match(elsewhere, /x-content-type-options: nosniff/i);
  });

  test('HEAD on a GET route answers without a body', async () => {
    const response = await fetch(`${roster.api}/health`, { method: 'HEAD' });
    assert.equal(response.status, 200);
    assert.equal(await response.text(), '');
  });
});

describe('headers', () => {
  test('no X-Powered-By; nosniff and JSON with charset on successes and errors', async () => {
    for (const url of [
      `${roster.api}/health`,
      `${roster.api}/users`,
      `${roster.api}/users/nope`,
      `${roster.origin}/nowhere`,
    ]) {
      const response = await fetch(url);
      assert.equal(response.headers.get('x-powered-by'), null, url);
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff', url);
      assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8', url);
    }
  });
});

describe('malformed HTTP', () => {
  test('garbage instead of HTTP: 400 in the envelope', async () => {
    const reply = await sendRaw(port(), 'THIS IS NOT HTTP\r\n\r\n');
    assert.match(reply, /^HTTP\/1\.1 400 /);
    assert.match(reply, /"status":"error"/);
  });

  test('headers too large: 431 in the envelope, and the service keeps serving', async () => {
    const reply = await sendRaw(
      port(),
      `GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`,
    );
    assert.match(reply, /^HTTP\/1\.1 431 /);
    assert.match(reply, /"code":"HEADERS_TOO_LARGE"/);
    assert.equal((await request(`${roster.api}/health`)).status, 200);
  });

  test('a malformed percent-encoding in the path: a 4xx envelope with the usual headers', async () => {
    const response = await request(`${roster.api}/users/%E0%A4%A`);
    assert.ok(response.status === 400 || response.status === 404, String(response.status));
    assert.equal(response.body.status, 'error');
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
  });

  test('HTTP/1.1 without Host: 400 in the envelope (RFC 9112), HTTP/1.0 without Host is served', async () => {
    const reply = await sendRaw(port(), 'GET /api/v1/health HTTP/1.1\r\nConnection: close\r\n\r\n');
    assert.match(reply, /^HTTP\/1\.1 400 /);
    assert.match(reply, /"status":"error"/);
    assert.match(reply, /x-content-type-options: nosniff/i);
    const old = await sendRaw(port(), 'GET /api/v1/health HTTP/1.0\r\n\r\n');
    assert.match(old, /^HTTP\/1\.1 200 /);
  });
});
