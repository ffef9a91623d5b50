/** The REST suite of the list operation (list.test.ts) again, with the users in PostgreSQL. */
import { test } from 'node:test';
import { usePostgresStore } from '../helpers.js';
import { DATABASE_URL, NO_DATABASE } from '../support/postgres.js';

if (DATABASE_URL) {
  usePostgresStore();
  await import('./list.test.js');
} else {
  test('the list operation against PostgreSQL', { skip: NO_DATABASE }, () => {});
}
