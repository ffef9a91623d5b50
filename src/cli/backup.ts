/**
 * `roster backup <file>`: an online copy of the store of DATABASE_URL, where its backend can take one
 * (SQLite: users/stores/sqlite/backup.ts), while the service keeps serving.
 */
import { ConfigError, loadConfig } from '../config/index.js';
import { storeBackend } from '../users/stores/registry.js';

export const BACKUP_USAGE = `Usage: roster backup <file>

Copies the SQLite database named by DATABASE_URL (sqlite:<path>) to <file>, online: the service may keep
running and writing meanwhile. <file> must not exist yet. To restore, stop the service, copy the backup
over the database file, delete the database's -wal and -shm files if any, and start the service.
Exit status 0 when the copy is complete, 1 when it failed, 2 for a usage error or a bad setting.`;

interface Io {
  output: NodeJS.WritableStream;
  errors: NodeJS.WritableStream;
}

export async function backupCommand(
  args: string[],
  io: Io = { output: process.stdout, errors: process.stderr },
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) {
    io.output.write(`${BACKUP_USAGE}\n`);
    return 0;
  }
  if (args.length !== 1 || args[0] === '') return usageError(io, 'takes one argument: the file to write the backup to');
  const target = args[0]!;
  let storage;
  try {
    storage = loadConfig(env).storage;
  } catch (error) {
    if (error instanceof ConfigError) return usageError(io, `invalid configuration: ${error.message}`);
    throw error;
  }
  const backup = storeBackend(storage).backupOf?.(storage);
  if (!backup) return usageError(io, 'needs DATABASE_URL=sqlite:<file> naming the database file to back up');
  try {
    const { users, pages, source } = await backup(target);
    io.output.write(`backed up ${users} users (${pages} pages) from ${source} to ${target}\n`);
    return 0;
  } catch (error) {
    io.errors.write(`roster backup: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function usageError(io: Io, message: string): number {
  io.errors.write(`roster backup: ${message}\nRun 'roster backup --help' for usage.\n`);
  return 2;
}
