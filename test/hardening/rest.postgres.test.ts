/** The REST hardening suite (rest.test.ts: Unicode names, email folding, concurrency) again, with the users in PostgreSQL. */
import { test } from 'node:test';
import { DATABASE_URL, NO_DATABASE, usePostgresStore } from '../support/index.js';

if (DATABASE_URL) {
  usePostgresStore();
  await import('./rest.test.js');
} else {
  test('REST hardening against PostgreSQL', { skip: NO_DATABASE }, () => {});
}
