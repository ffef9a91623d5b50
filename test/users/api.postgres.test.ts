/** The REST suite of the user endpoints (api.test.ts) again, with the users in PostgreSQL. */
import { test } from 'node:test';
import { usePostgresStore } from '../helpers.js';
import { DATABASE_URL, NO_DATABASE } from '../support/postgres.js';

if (DATABASE_URL) {
  usePostgresStore();
  await import('./api.test.js');
} else {
  test('the user endpoints against PostgreSQL', { skip: NO_DATABASE }, () => {});
}
