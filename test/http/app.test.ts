/**
 * The REST door on its own: buildApp with a store and no chat door, listening on an ephemeral port.
 * What a route test needs and no more; the rest of the suites start the whole server.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/index.js';
import { buildApp } from '../../src/http/app.js';
import { MemoryUserStore } from '../../src/users/stores/memory/memory-store.js';
import { userSchemas } from '../../src/users/schema.js';
import { UserService } from '../../src/users/service.js';
import { createUserValidator } from '../../src/users/validation.js';
import { request } from '../helpers.js';

test('buildApp serves the REST door alone: the users it is given, health, and the envelope for errors', async (t) => {
  const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent', CONSOLE: 'false', METRICS: 'false' });
  const schemas = userSchemas(config.roles, config.strictValidation);
  const service = new UserService(new MemoryUserStore(), createUserValidator(schemas), {
    maxPageSize: config.maxPageSize,
    strict: false,
  });
  const app = await buildApp(config, { logger: pino({ level: 'silent' }), users: { service, schemas } });
  t.after(() => app.close());
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
