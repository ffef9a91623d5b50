/**
 * What the README has people keep beside the project never lands in the repository: `.env` (settings
 * with secrets, read by `node --env-file=.env`) and SQLite databases with their -wal, -shm and .lock
 * files and backups (personal data). Checked with git itself, on the names the README uses.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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
    // SQLite's rollback journal of the lock file, there while Roster runs (connection.ts's SqliteLock).
    const running = ['roster.db.lock-journal', 'data/roster.db.lock-journal'];
    const backups = ['backups/roster-2026-11-22.db', 'data/roster.db'];
    // Build output and its staging folders; node_modules also as a symlink (a path git sees as a file).
    const built = ['dist/src/main.js', 'dist.next/src/main.js', 'dist.old/src/main.js', 'node_modules'];
    for (const name of [...secrets, ...running, ...backups, ...built]) {
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

test('.dockerignore keeps secrets, databases, backups and build output out of the build context', () => {
  const patterns = new Set(
    readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#')),
  );
  // Docker anchors a pattern at the context's root; `**/` reaches into folders.
  for (const pattern of ['.env', '.env.*', '*.db*', '**/*.db*', 'data', 'backups', 'node_modules', 'dist', 'dist.next'])
    assert.ok(patterns.has(pattern), `.dockerignore lists ${pattern}`);
});

test("every dependency with an install script is decided in package.json's allowScripts", () => {
  // Undecided, npm ci ends with an install-scripts warning a newcomer must judge (@scarf/scarf, from the
  // Spectral development dependency, only reports telemetry: denied).
  const read = (file: string) => JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as Record<string, unknown>;
  const { allowScripts = {} } = read('package.json') as { allowScripts?: Record<string, boolean> };
  const { packages } = read('package-lock.json') as { packages: Record<string, { hasInstallScript?: boolean }> };
  const scripted = Object.entries(packages)
    .filter(([path, entry]) => path !== '' && entry.hasInstallScript)
    .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
  assert.ok(scripted.length > 0, 'the lock file marks install scripts (hasInstallScript)');
  for (const name of scripted) assert.equal(typeof allowScripts[name], 'boolean', `allowScripts decides ${name}`);
  assert.equal(allowScripts['@scarf/scarf'], false, 'telemetry: denied');
});
