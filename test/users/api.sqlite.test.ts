/** The REST suite of the user endpoints (api.test.ts) again, with the users in SQLite (a fresh file per Roster, synchronous=FULL). */
import { useSqliteStore } from '../support/index.js';

useSqliteStore();
await import('./api.test.js');
