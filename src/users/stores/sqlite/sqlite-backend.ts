/** Users in one SQLite file owned by this process (`DATABASE_URL=sqlite:<path>`). */
import { SQLITE_PREFIX, sqlitePath } from '../../../config/readers.js';
import type { StorageConfig } from '../../../config/index.js';
import { keyBoundsOf, type StoreBackend } from '../backend.js';
import type { SqliteFile } from './sqlite-connection.js';

const fileOf = (storage: StorageConfig): SqliteFile => ({
  path: sqlitePath(storage.url!),
  synchronous: storage.sqliteSynchronous,
});

let fileSizeSignalIgnored = false;

export const sqliteBackend: StoreBackend = {
  name: 'sqlite',
  accepts: (url) => url !== undefined && url.toLowerCase().startsWith(SQLITE_PREFIX),
  note: (storage) => {
    const { path } = fileOf(storage);
    return path === ':memory:'
      ? 'Users are kept in an in-memory SQLite database and are lost when Roster stops (DATABASE_URL)'
      : `Users are kept in the SQLite file ${path} (DATABASE_URL)`;
  },
  async open(storage, deps) {
    // A file size limit reached (ulimit -f) must refuse the write (503), as a full disk does; the
    // signal's default action would end the process instead.
    if (!fileSizeSignalIgnored) process.on('SIGXFSZ', () => {});
    fileSizeSignalIgnored = true;
    // Loaded here, not at the top: only a process on SQLite carries better-sqlite3.
    const { SqliteUserStore } = await import('./sqlite-store.js');
    const store = await SqliteUserStore.open(fileOf(storage), deps.logger, {
      clock: deps.clock,
      keyBounds: keyBoundsOf(storage),
      changeBounds: storage.changeBounds,
    });
    return { store, health: store.health };
  },
  async migrate(storage) {
    const { migrateSqliteFile } = await import('./sqlite-migrations.js');
    return migrateSqliteFile(fileOf(storage));
  },
  backupOf(storage) {
    const file = fileOf(storage);
    if (file.path === ':memory:') return undefined;
    return async (target) => (await import('./sqlite-backup.js')).backup(file.path, target);
  },
};
