/** The REST hardening suite (rest.test.ts: Unicode names, email folding, concurrency) again, with the users in PostgreSQL. */
import { test } from 'node:test';
import { usePostgresStore } from '../helpers.js';
import { DATABASE_URL, NO_DATABASE } from '../support/postgres.js';

if (DATABASE_URL) {
  usePostgresStore();
  await import('./rest.test.js');
} else {
  test('REST hardening against PostgreSQL', { skip: NO_DATABASE }, () => {});
}
