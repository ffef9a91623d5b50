/**
 * The SQLite store's reader threads (sqlite-readers.ts) closed at any moment, in a child process so that
 * an abort shows as its exit status: a store closed while its readers are still loading the native
 * module once aborted the whole process ("FATAL ERROR: Error::New napi_get_last_error_info").
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const STORE = fileURLToPath(new URL('../../../../src/users/stores/sqlite/sqlite-store.js', import.meta.url));

test('a store closed while its readers start, 40 times over, leaves the process alive', () => {
  const folder = mkdtempSync(join(tmpdir(), 'roster-readers-'));
  try {
    // Each round: a search (which starts the readers) not awaited, then the store closed at once; the
    // last line is printed only if the process is still there.
    const script = `
      const { SqliteUserStore } = await import(${JSON.stringify(STORE)});
      const { pino } = await import('pino');
      for (let round = 0; round < 40; round++) {
        const store = await SqliteUserStore.open({ path: ${JSON.stringify(join(folder, 'r.db'))} }, pino({ level: 'silent' }));
        const reading = store.list({ offset: 0, limit: 10, search: 'zz' + round, sort: 'name', descending: false }).catch(() => {});
        if (round % 2 === 1) await new Promise((resolve) => setTimeout(resolve, round % 7));
        await store.close();
        await reading;
      }
      console.log('alive');
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 90_000,
    });
    assert.equal(child.status, 0, `exit ${child.status} ${child.signal ?? ''}\n${child.stderr.slice(-2000)}`);
    assert.match(child.stdout, /alive/);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});
