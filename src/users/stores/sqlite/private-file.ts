/**
 * Files that hold personal data (the SQLite database, and its backups) are created readable by their
 * owner only. SQLite creates a new database with 0644 (less the umask) and gives its -wal and -shm
 * files the database file's own mode, so creating the database file first, empty and 0600, is enough
 * for all three. An existing file keeps its mode: an operator may have chosen another on purpose (a
 * group that reads backups), and Roster does not loosen or override it.
 */
import { closeSync, constants, openSync } from 'node:fs';

const PRIVATE_MODE = 0o600;

/** Creates `path` empty with mode 0600 unless it exists; an existing file is left as it is. */
export function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, PRIVATE_MODE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}
