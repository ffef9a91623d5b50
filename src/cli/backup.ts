/**
 * `roster backup <file>`: an online copy of the SQLite database of DATABASE_URL, taken with SQLite's
 * backup API while the service keeps serving (WAL: a reader never blocks the service's writes). The
 * copy is a consistent snapshot: pages changed by the service during the copy make SQLite start over.
 * It is written beside the target and renamed into place, so the target is either the whole copy or
 * not there at all.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { ConfigError, loadConfig } from '../config/index.js';
import { createPrivateFile } from '../users/private-file.js';

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
  let sqlite;
  try {
    sqlite = loadConfig(env).sqlite;
  } catch (error) {
    if (error instanceof ConfigError) return usageError(io, `invalid configuration: ${error.message}`);
    throw error;
  }
  if (!sqlite || sqlite.path === ':memory:')
    return usageError(io, 'needs DATABASE_URL=sqlite:<file> naming the database file to back up');
  if (existsSync(target)) {
    io.errors.write(`roster backup: ${target} exists already; name a new file\n`);
    return 1;
  }
  if (!existsSync(sqlite.path)) {
    io.errors.write(`roster backup: there is no database at ${sqlite.path}\n`);
    return 1;
  }
  // Loaded here, not at the top: every `roster` command imports this file.
  const { default: Database } = await import('better-sqlite3');
  const partial = `${target}.partial-${process.pid}`;
  let source;
  try {
    // Not the service's lock: a reader beside it. Read-write so that it can join the WAL.
    source = new Database(sqlite.path, { fileMustExist: true, timeout: 5_000 });
    // Personal data: the copy is its owner's only, as the database is (users/private-file.ts).
    createPrivateFile(partial);
    // After the first step, the rest in one step: the snapshot is then taken in one read transaction.
    const { totalPages } = await source.backup(partial, {
      progress: ({ remainingPages }) => Math.max(remainingPages, 100),
    });
    source.close();
    source = undefined;
    const copy = new Database(partial, { fileMustExist: true });
    let users: number;
    try {
      const check = copy.pragma('quick_check', { simple: true });
      if (check !== 'ok') throw new Error(`the copy failed its integrity check: ${String(check)}`);
      users = copy.prepare('SELECT count(*) FROM users').pluck().get() as number;
    } finally {
      copy.close();
    }
    renameSync(partial, target);
    io.output.write(`backed up ${users} users (${totalPages} pages) from ${sqlite.path} to ${target}\n`);
    return 0;
  } catch (error) {
    source?.close();
    rmSync(partial, { force: true });
    io.errors.write(`roster backup: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function usageError(io: Io, message: string): number {
  io.errors.write(`roster backup: ${message}\nRun 'roster backup --help' for usage.\n`);
  return 2;
}
