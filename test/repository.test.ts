/**
 * What the README has people keep beside the project never lands in the repository: `.env` (settings
 * with secrets, read by `node --env-file=.env`) and SQLite databases with their -wal, -shm and .lock
 * files and backups (personal data). Checked with git itself, on the names the README uses.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function isGitCheckout(): boolean {
  try {
    execFileSync('git', ['rev-parse', '--git-dir'], { cwd: ROOT, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test(
  '.gitignore keeps out .env and the SQLite files the README suggests',
  { skip: isGitCheckout() ? false : 'not a git checkout: nothing to ignore files for' },
  () => {
    const secrets = ['.env', '.env.production', 'roster.db', 'roster.db-wal', 'roster.db-shm', 'roster.db.lock'];
    const backups = ['backups/roster-2026-11-22.db', 'data/roster.db'];
    for (const name of [...secrets, ...backups]) {
      // check-ignore exits 0 when the path is ignored, 1 when it is not.
      const status = (() => {
        try {
          execFileSync('git', ['check-ignore', '--no-index', '-q', name], { cwd: ROOT, stdio: 'ignore' });
          return 0;
        } catch (error) {
          return (error as { status: number }).status;
        }
      })();
      assert.equal(status, 0, `${name} is ignored`);
    }
  },
);
