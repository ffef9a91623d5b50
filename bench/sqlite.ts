/**
 * The SQLite file of the benchmark's rows on Roster's SQLite store: migrated by the store itself and
 * filled with the benchmark's users in one transaction, columns written as the store writes them
 * (src/users/sqlite-store.ts), before Roster opens it. A file that holds users already (a server
 * restarted by the benchmark) is left as it is.
 */
import { pino } from 'pino';
import { toStored } from '../src/users/postgres-text.js';
import { toBlob } from '../src/users/sqlite-text.js';
import { SqliteUserStore } from '../src/users/sqlite-store.js';
import { emailKey } from '../src/users/store.js';
import { benchUser } from './users.js';

/** `2024-01-01T00:00:00.123456` as microseconds since the epoch. */
function microsOf(stamp: string): number {
  return Date.parse(`${stamp.slice(0, 19)}Z`) * 1000 + Number(stamp.slice(20));
}

export async function fillSqlite(path: string, count: number): Promise<void> {
  const store = await SqliteUserStore.open({ path, synchronous: 'NORMAL' }, pino({ level: 'silent' }));
  try {
    const db = store.database;
    if (db.prepare('SELECT EXISTS (SELECT 1 FROM users)').pluck().get()) return;
    const insert = db.prepare(
      `INSERT INTO users (created_at, id, name, email, role, updated_at, name_lower, email_lower, email_key)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    db.transaction(() => {
      for (let index = 0; index < count; index++) {
        const user = benchUser(index);
        const at = microsOf(user.created_at);
        insert.run(
          at,
          toBlob(user.id),
          toBlob(user.name),
          toBlob(user.email),
          toBlob(user.role),
          at,
          toStored(user.name.toLowerCase()),
          toStored(user.email.toLowerCase()),
          toStored(emailKey(user.email)),
        );
      }
    })();
    db.exec('ANALYZE');
  } finally {
    await store.close();
  }
}
