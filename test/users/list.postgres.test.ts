/** The REST suite of the list operation (list.test.ts) again, with the users in PostgreSQL. */
import { test } from 'node:test';
import { DATABASE_URL, NO_DATABASE, usePostgresStore } from '../support/index.js';

if (DATABASE_URL) {
  usePostgresStore();
  await import('./list.test.js');
} else {
  test('the list operation against PostgreSQL', { skip: NO_DATABASE }, () => {});
}
