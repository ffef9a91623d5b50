/**
 * The machine-facing faces of the REST port: the OpenAPI 3.1 document and its reference page, the
 * Prometheus metrics, and request ids.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { captureLog, ChatClient, request, startRoster, type Running } from '../support/index.js';

/** The examples of a media type, wherever @fastify/swagger put them (schema `examples`, media `example(s)`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function exampleOf(media: any): { error: { code: string } }[] {
  if (media.schema?.examples) return media.schema.examples;
  if (media.examples)
    return Object.values(media.examples).map((e) => (e as { value: { error: { code: string } } }).value);
  return media.example ? [media.example] : [];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let roster: Running;
before(async () => {
  roster = await startRoster();
});
after(() => roster.stop());

describe('OpenAPI document', () => {
  test('is a valid OpenAPI 3.1 document', async () => {
    const { status, body, headers } = await request(`${roster.api}/openapi.json`);
    assert.equal(status, 200);
    assert.equal(headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(body.openapi, '3.1.0');
    assert.equal(body.info.version, '1.0.0');
    const result = await new Validator().validate(body);
    assert.ok(result.valid, JSON.stringify(result.errors, null, 2));
  });

  test('documents every route the server has, and nothing it does not serve', async () => {
    const { body } = await request(`${roster.api}/openapi.json`);
    const documented = new Set<string>();
    for (const [path, operations] of Object.entries(body.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(operations))
        documented.add(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`);
    }
    // What a client calls is documented; HEAD, served for every GET, and OPTIONS (a preflight or 405)
    // are said once in info.description, not as operations.
    const served = [
      ...new Set(
        roster.server.rest.routeCatalog.entries
          .filter((entry) => !entry.hidden)
          .map((entry) => `${entry.method} ${entry.url}`),
      ),
    ];
    assert.deepEqual([...documented].sort(), served.filter((operation) => !operation.startsWith('HEAD ')).sort());
    const gets = served.filter((operation) => operation.startsWith('GET ')).map((operation) => operation.slice(4));
    const heads = served.filter((operation) => operation.startsWith('HEAD ')).map((operation) => operation.slice(5));
    assert.deepEqual(heads.sort(), gets.sort(), 'HEAD is served wherever GET is');
    assert.ok(![...documented].some((operation) => /^(HEAD|OPTIONS) /.test(operation)));
    for (const operation of [
      'GET /api/v1/users',
      'POST /api/v1/users',
      'GET /api/v1/users/:id',
      'PUT /api/v1/users/:id',
      'PATCH /api/v1/users/:id',
      'DELETE /api/v1/users/:id',
      'GET /api/v1/health',
      'GET /api/v1/docs',
      'GET /metrics',
    ]) {
      assert.ok(documented.has(operation), operation);
    }
  });

  test('each operation lists its parameters, body, success and every error reply with the envelope and examples', async () => {
    const { body } = await request(`${roster.api}/openapi.json`);
    const list = body.paths['/api/v1/users'].get;
    assert.deepEqual(list.parameters.map((p: { name: string }) => p.name).sort(), [
      'after',
      'limit',
      'order',
      'page',
      'role',
      'search',
      'sort',
    ]);
    for (const p of list.parameters) assert.equal(p.in, 'query');
    assert.deepEqual(Object.keys(list.responses).sort(), ['200', '400', '422', '500']);

    const create = body.paths['/api/v1/users'].post;
    // Shared shapes are components, referenced ($ref) from the operations.
    const component = (ref: string) => body.components.schemas[ref.replace('#/components/schemas/', '')];
    const bodyMedia = create.requestBody.content['application/json'];
    assert.deepEqual(component(bodyMedia.schema.$ref).required.sort(), ['email', 'name']);
    assert.equal(bodyMedia.example.email, 'grace.hopper@example.com', 'the body has an example');
    assert.deepEqual(Object.keys(create.responses).sort(), ['201', '400', '409', '413', '415', '422', '500', '507']);
    const conflict = create.responses['409'].content['application/json'];
    assert.deepEqual(Object.keys(component(conflict.schema.$ref).properties).sort(), ['error', 'status']);
    assert.equal(exampleOf(conflict)[0]?.error.code, 'EMAIL_EXISTS');
    const created = component(create.responses['201'].content['application/json'].schema.$ref);
    assert.equal(
      component(created.properties.data.$ref).examples?.[0]?.name,
      'Ada Lovelace',
      'the user has an example',
    );

    const one = body.paths['/api/v1/users/{id}'];
    assert.equal(one.get.parameters[0].name, 'id');
    assert.equal(one.get.parameters[0].in, 'path');
    assert.ok(
      exampleOf(one.get.responses['404'].content['application/json']).some((e) => e.error.code === 'USER_NOT_FOUND'),
    );
    assert.ok('204' in one.delete.responses);
    for (const [path, operations] of Object.entries(
      body.paths as Record<string, Record<string, { description?: string; responses: object }>>,
    )) {
      for (const [method, operation] of Object.entries(operations)) {
        assert.ok(operation.description, `${method} ${path} has a description`);
        assert.ok('500' in operation.responses, `${method} ${path} documents 500`);
      }
    }
  });

  test('error replies still have the exact envelope (the error schemas also serialize them)', async () => {
    const invalid = await request(`${roster.api}/users`, { method: 'POST', body: { name: '', email: 'nope' } });
    assert.equal(invalid.status, 422);
    assert.deepEqual(Object.keys(invalid.body), ['status', 'error']);
    assert.deepEqual(Object.keys(invalid.body.error), ['code', 'message', 'details']);
    assert.deepEqual(invalid.body.error.details.map((d: { field: string }) => d.field).sort(), ['email', 'name']);
    const missing = await request(`${roster.api}/users/nobody`);
    assert.equal(
      missing.text,
      JSON.stringify({ status: 'error', error: { code: 'USER_NOT_FOUND', message: 'No user with id "nobody"' } }),
    );
  });
});

describe('reference page', () => {
  test('served locally at /api/v1/reference, with every asset from this server (no CDN)', async () => {
    const page = await fetch(`${roster.api}/reference`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    const html = await page.text();
    assert.doesNotMatch(html, /(src|href)=["']https?:\/\//, 'no asset from another host');
    const assets = [...html.matchAll(/(?:src|href)=["']([^"']+)["']/g)].map((m) => m[1]!);
    assert.ok(assets.length >= 2, `assets: ${assets.join(', ')}`);
    for (const asset of assets) {
      const response = await fetch(new URL(asset, page.url));
      assert.equal(response.status, 200, asset);
      await response.arrayBuffer();
    }
    // The page's initializer points Swagger UI at this server's document.
    const initializer = assets.find((asset) => asset.endsWith('swagger-initializer.js'));
    assert.ok(initializer, 'the initializer script is on the page');
    assert.match(await (await fetch(new URL(initializer, page.url))).text(), /url:/);
  });
});

describe('metrics', () => {
  test('GET /metrics: Prometheus text with HTTP requests by route pattern, method and status', async () => {
    const roster = await startRoster();
    after(() => roster.stop());
    const created = await request(`${roster.api}/users`, {
      method: 'POST',
      body: { name: 'Metered', email: 'metered@example.com' },
    });
    await request(`${roster.api}/users/${created.body.data.id}`);
    await request(`${roster.api}/users/no-such-id`);
    await request(`${roster.api}/nothing-here`);
    const response = await fetch(`${roster.origin}/metrics`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await response.text();
    assert.match(text, /roster_http_requests_total\{route="\/api\/v1\/users\/:id",method="GET",status="200"\} 1/);
    assert.match(text, /roster_http_requests_total\{route="\/api\/v1\/users\/:id",method="GET",status="404"\} 1/);
    assert.match(text, /roster_http_requests_total\{route="\/api\/v1\/users",method="POST",status="201"\} 1/);
    assert.match(text, /roster_http_requests_total\{route="unmatched",method="GET",status="404"\} 1/);
    assert.match(
      text,
      /roster_http_request_duration_seconds_bucket\{le="0.005",route="\/api\/v1\/users",method="POST",status="201"\} \d/,
    );
    assert.doesNotMatch(text, /no-such-id|nothing-here/, 'raw URLs never become labels');
    assert.match(text, /^process_cpu_seconds_total \d/m);
    assert.match(text, /^nodejs_eventloop_lag_seconds \d/m);
  });

  test('chat: connections open, joins, leaves, messages in and out, close codes', async () => {
    const local = await startRoster();
    try {
      const a = await ChatClient.connect(local.wsUrl);
      const b = await ChatClient.connect(local.wsUrl);
      a.send({ type: 'chat', message: 'hello' });
      await b.next((m) => m.type === 'chat');
      await a.next((m) => m.type === 'chat');
      a.ws.close(1000, 'bye');
      await b.next((m) => m.type === 'user_leave');
      // Flushed counts land after the write turn.
      await new Promise((resolve) => setImmediate(resolve));
      const text = await (await fetch(`${local.origin}/metrics`)).text();
      const value = (name: string) =>
        Number(
          text
            .split('\n')
            .find((line) => line.startsWith(`${name} `))
            ?.slice(name.length + 1),
        );
      assert.equal(value('roster_chat_connections_open'), 1);
      assert.equal(value('roster_chat_joins_total'), 2);
      assert.equal(value('roster_chat_leaves_total'), 1);
      assert.equal(value('roster_chat_messages_in_total'), 1);
      // welcome x2, user_join to a, chat to a and b, user_leave to b
      assert.equal(value('roster_chat_messages_out_total'), 6);
      assert.equal(value('roster_chat_slow_consumers_dropped_total'), 0);
      assert.equal(value('roster_chat_closes_total{code="1000"}'), 1);
      await b.close();
    } finally {
      await local.stop();
    }
  });

  test('METRICS=false: no /metrics route (404 in the envelope)', async () => {
    const local = await startRoster({ METRICS: 'false' });
    try {
      const response = await request(`${local.origin}/metrics`);
      assert.equal(response.status, 404);
      assert.equal(response.body.error.code, 'NOT_FOUND');
      const doc = await request(`${local.api}/openapi.json`);
      assert.ok(!('/metrics' in doc.body.paths));
    } finally {
      await local.stop();
    }
  });
});

describe('request ids', () => {
  test('every reply has X-Request-Id; a sane one from the client is kept; it is in the log line', async () => {
    const { lines, logTo } = captureLog();
    const local = await startRoster({ LOG_LEVEL: 'info' }, { logTo });
    try {
      const generated = await request(`${local.api}/health`);
      assert.match(generated.headers.get('x-request-id') ?? '', UUID);
      const kept = await request(`${local.api}/users/nobody`, { headers: { 'X-Request-Id': 'trace-42.abc' } });
      assert.equal(kept.status, 404);
      assert.equal(kept.headers.get('x-request-id'), 'trace-42.abc');
      for (const hostile of ['has space', 'x'.repeat(200), 'é']) {
        const replaced = await request(`${local.api}/health`, {
          headers: { 'X-Request-Id': encodeURIComponent(hostile) === hostile ? hostile : hostile },
        });
        assert.match(replaced.headers.get('x-request-id') ?? '', UUID, hostile);
      }
      const line = lines.find((l) => l.msg === 'request' && l.reqId === 'trace-42.abc');
      assert.ok(line, `log line with the id: ${JSON.stringify(lines.slice(-5))}`);
      assert.equal(line.status, 404);
    } finally {
      await local.stop();
    }
  });
});
