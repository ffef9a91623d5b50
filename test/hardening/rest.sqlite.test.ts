/** The REST hardening suite (rest.test.ts: Unicode names, email folding, concurrency) again, with the users in SQLite (a fresh file per Roster, synchronous=FULL). */
import { useSqliteStore } from '../support/index.js';

useSqliteStore();
await import('./rest.test.js');
