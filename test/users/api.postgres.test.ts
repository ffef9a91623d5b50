/** The REST suite of the user endpoints (api.test.ts) again, with the users in PostgreSQL. */
import { test } from 'node:test';
import { DATABASE_URL, NO_DATABASE, usePostgresStore } from '../support/index.js';

if (DATABASE_URL) {
  usePostgresStore();
  await import('./api.test.js');
} else {
  test('the user endpoints against PostgreSQL', { skip: NO_DATABASE }, () => {});
}
