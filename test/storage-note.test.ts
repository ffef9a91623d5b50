/** At start-up Roster says in one plain line where users live, and how to keep them. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { captureLog, startRoster } from './support/index.js';

async function storageNote(env: Record<string, string>): Promise<unknown> {
  const { lines, logTo } = captureLog();
  const roster = await startRoster({ LOG_LEVEL: 'info', ...env }, { logTo });
  await roster.stop();
  const listening = lines.findIndex((line) => line.msg === 'Roster is listening');
  assert.ok(listening >= 0);
  return lines.slice(listening + 1).find((line) => typeof line.msg === 'string' && /users/i.test(line.msg as string))
    ?.msg;
}

test('start-up says users live in memory, are lost on exit, and names DATABASE_URL', async () => {
  assert.equal(
    await storageNote({}),
    'Users live in memory and are lost when Roster stops; set DATABASE_URL to keep them in PostgreSQL or SQLite',
  );
});

test('start-up on SQLite names the file, or says an in-memory database is lost on exit', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'roster-note-'));
  try {
    const file = join(dir, 'users.db');
    assert.equal(
      await storageNote({ DATABASE_URL: `sqlite:${file}` }),
      `Users are kept in the SQLite file ${file} (DATABASE_URL)`,
    );
    assert.equal(
      await storageNote({ DATABASE_URL: 'sqlite::memory:' }),
      'Users are kept in an in-memory SQLite database and are lost when Roster stops (DATABASE_URL)',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
