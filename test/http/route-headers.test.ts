/**
 * Every reply carries X-Request-Id and `X-Content-Type-Options: nosniff`, from one onSend hook (app.ts)
 * and, for errors, the envelope (errors.ts). A route whose reply skipped them (sent outside the hooks,
 * or in a scope that lost them) would show here: this walks every operation the served OpenAPI
 * document lists, with the security headers, CORS, authentication and metrics all on, and checks each.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startRoster, type Running } from '../support/index.js';

let roster: Running;
const KEY = 'route-headers-key-0123456789abcdef';

before(async () => {
  roster = await startRoster({
    AUTH: 'apikey',
    API_KEYS: `${KEY}:admin`,
    CORS_ORIGINS: 'https://app.example',
    METRICS: 'true',
  });
});
after(() => roster.stop());

test('every documented operation, success or refusal, carries X-Request-Id and nosniff', async () => {
  const headers = { 'x-api-key': KEY, 'content-type': 'application/json', origin: 'https://app.example' };
  const document = (await (await fetch(`${roster.api}/openapi.json`, { headers })).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  const created = await fetch(`${roster.api}/users`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ name: 'Header Walk', email: 'header.walk@example.com' }),
  });
  assert.equal(created.status, 201);
  const id = ((await created.json()) as { data: { id: string } }).data.id;
  const bodies: Record<string, unknown> = {
    post: { name: 'Header Walk Two', email: 'header.walk.two@example.com' },
    put: { name: 'Header Walk', email: 'header.walk@example.com', role: 'user' },
    patch: { name: 'Header Walked' },
  };
  const methods = ['get', 'head', 'options', 'post', 'put', 'patch', 'delete'];
  const seen: string[] = [];
  for (const [path, operations] of Object.entries(document.paths)) {
    const url = new URL(`${roster.origin}${path.replace('{id}', id)}`);
    // HEAD (wherever GET is) and OPTIONS are served on every path, though not documented as operations.
    const served = (name: string) =>
      name in operations || name === 'options' || (name === 'head' && 'get' in operations);
    for (const method of methods.filter(served)) {
      for (const [what, sent] of [
        ['with credentials', headers],
        ['without credentials', { 'content-type': 'application/json' }],
      ] as const) {
        const response = await fetch(url, {
          method: method.toUpperCase(),
          headers: sent,
          body: bodies[method] === undefined ? undefined : JSON.stringify(bodies[method]),
        });
        await response.arrayBuffer();
        const label = `${method.toUpperCase()} ${path} ${what}: ${response.status}`;
        assert.ok(response.headers.get('x-request-id'), `X-Request-Id on ${label}`);
        assert.equal(response.headers.get('x-content-type-options'), 'nosniff', `nosniff on ${label}`);
        seen.push(label);
      }
    }
  }
  // The walk reached the user routes and the system ones, not just a few.
  assert.ok(
    seen.some((label) => label.startsWith('DELETE /api/v1/users/{id} with credentials: 204')),
    seen.join('\n'),
  );
  assert.ok(seen.some((label) => label.startsWith('GET /metrics')) || seen.length > 20, seen.join('\n'));
});
