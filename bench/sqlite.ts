/**
 * The SQLite file of the benchmark's rows on Roster's SQLite store: migrated by the store itself and
 * filled with the benchmark's users in one transaction, rows written by the store's own encoding
 * (src/users/stores/sqlite/sqlite-rows.ts), before Roster opens it. A file that holds users already (a server
 * restarted by the benchmark) is left as it is.
 */
import { pino } from 'pino';
import { INSERT_USER, microsOf, toRow } from '../src/users/stores/sqlite/sqlite-rows.js';
import { SqliteUserStore } from '../src/users/stores/sqlite/sqlite-store.js';
import { benchUser } from './users.js';

export async function fillSqlite(path: string, count: number): Promise<void> {
  const store = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, pino({ level: 'silent' }));
  try {
    const db = store.database;
    if (db.prepare('SELECT EXISTS (SELECT 1 FROM users)').pluck().get()) return;
    const insert = db.prepare(INSERT_USER);
    db.transaction(() => {
      for (let index = 0; index < count; index++) {
        const user = benchUser(index);
        insert.run(...toRow(user, microsOf(user.created_at)));
      }
    })();
    db.exec('ANALYZE');
  } finally {
    await store.close();
  }
}
