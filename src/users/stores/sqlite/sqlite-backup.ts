/**
 * An online copy of the SQLite database, taken with SQLite's backup API while the service keeps
 * serving (WAL: a reader never blocks the service's writes). The copy is a consistent snapshot: pages
 * changed by the service during the copy make SQLite start over. It is written beside the target and
 * renamed into place, so the target is either the whole copy or not there at all. Its folder is made
 * if missing (as the service makes its database's), and an error names the target, never that
 * internal partial file.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { BackedUp } from '../backend.js';
import { createPrivateFile } from './private-file.js';

export async function backup(path: string, target: string): Promise<BackedUp> {
  if (existsSync(target)) throw new Error(`${target} exists already; name a new file`);
  if (!existsSync(path)) throw new Error(`there is no database at ${path}`);
  const partial = `${target}.partial-${process.pid}`;
  let source;
  try {
    mkdirSync(dirname(resolve(target)), { recursive: true });
    // Not the service's lock: a reader beside it. Read-write so that it can join the WAL.
    source = new Database(path, { fileMustExist: true, timeout: 5_000 });
    // Personal data: the copy is its owner's only, as the database is (private-file.ts).
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
    return { users, pages: totalPages, source: path };
  } catch (error) {
    source?.close();
    try {
      rmSync(partial, { force: true });
    } catch {
      // nothing there to remove (its folder is not one): the error that matters is the one below
    }
    // The partial file is this function's own business: a reader acts on the target's name.
    if (error instanceof Error && error.message.includes(partial))
      throw new Error(error.message.replaceAll(partial, target), { cause: error });
    throw error;
  }
}
