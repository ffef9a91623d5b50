/**
 * The REST door on its own (support/app.ts): buildApp with a store and no chat door, listening on an
 * ephemeral port. What a route test needs and no more; the rest of the suites start the whole server.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { request, restApp } from '../support/index.js';

test('buildApp serves the REST door alone: the users it is given, health, and the envelope for errors', async (t) => {
  const app = await restApp(t, { CONSOLE: 'false', METRICS: 'false' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`;

  // No seeds: buildApp stores nothing by itself; the service is the test's.
  assert.equal((await request(`${api}/users`)).body.data.pagination.total, 0);
  const created = await request(`${api}/users`, { method: 'POST', body: { name: 'Only', email: 'only@example.com' } });
  assert.equal(created.status, 201, created.text);
  assert.equal((await request(`${api}/users/${created.body.data.id}`)).body.data.name, 'Only');
  assert.equal((await request(`${api}/health`)).status, 200);
  const missing = await request(`${api}/nothing`);
  assert.deepEqual([missing.status, missing.body.error.code], [404, 'NOT_FOUND']);
  assert.equal((await request(`${api.replace('/api/v1', '')}/metrics`)).status, 404, 'METRICS=false: no route');
});

test('restApp answers through inject, without a socket: a route rule such as 405 with Allow', async (t) => {
  const app = await restApp(t);
  const reply = await app.inject({ method: 'DELETE', url: '/api/v1/users' });
  assert.equal(reply.statusCode, 405, reply.body);
  assert.equal(reply.json().error.code, 'METHOD_NOT_ALLOWED');
  assert.deepEqual(String(reply.headers.allow).split(', ').sort(), ['GET', 'HEAD', 'POST']);
});

test('bodies are checked by the service, not by Fastify: a route body schema must say it only describes', async (t) => {
  const app = await restApp(t);
  // The users' body schemas are documentationOnly(): a body against them gets the service's envelope.
  const bad = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 7 } });
  assert.equal(bad.statusCode, 422, bad.body);
  assert.deepEqual(bad.json().error.details, [{ field: 'email', message: 'email is required' }]);
  // PUT checks existence first, which a Fastify body check would have answered before.
  const put = await app.inject({ method: 'PUT', url: '/api/v1/users/nobody', payload: { name: 7 } });
  assert.equal(put.statusCode, 404, put.body);
  // A body schema not marked so would look validated and not be: the app refuses to start with it.
  const other = await restApp(t);
  other.post('/described', { schema: { body: { type: 'object', required: ['x'] } } }, async () => ({}));
  await assert.rejects(async () => {
    await other.ready();
  }, /POST \/described: its body schema must be documentationOnly\(\)/);
});
