/** The REST suite of the list operation (list.test.ts) again, with the users in SQLite (a fresh file per Roster, synchronous=FULL). */
import { useSqliteStore } from '../support/index.js';

useSqliteStore();
await import('./list.test.js');
