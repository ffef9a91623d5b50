/**
 * `roster backup <file>`: an online copy of the store of DATABASE_URL, where its backend can take one
 * (SQLite: users/stores/sqlite/backup.ts), while the service keeps serving.
 */
import { configuredStore, STANDARD_IO, usageError, type Io } from './io.js';

export const BACKUP_USAGE = `Usage: roster backup <file>

Copies the SQLite database named by DATABASE_URL (sqlite:<path>) to <file>, online: the service may keep
running and writing meanwhile. <file> must not exist yet. To restore, stop the service, copy the backup
over the database file, delete the database's -wal and -shm files if any, and start the service.
Exit status 0 when the copy is complete, 1 when it failed, 2 for a usage error or a bad setting.`;

export async function backupCommand(
  args: string[],
  io: Io = STANDARD_IO,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  if (args.length !== 1 || args[0] === '')
    return usageError(io, 'backup', 'takes one argument: the file to write the backup to');
  const target = args[0]!;
  const store = configuredStore(io, 'backup', env);
  if (typeof store === 'number') return store;
  const backup = store.backend.backupOf?.(store.storage);
  if (!backup) return usageError(io, 'backup', 'needs DATABASE_URL=sqlite:<file> naming the database file to back up');
  try {
    const { users, pages, source } = await backup(target);
    io.output.write(`backed up ${users} users (${pages} pages) from ${source} to ${target}\n`);
    return 0;
  } catch (error) {
    io.errors.write(`roster backup: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
