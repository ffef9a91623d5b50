/**
 * `roster backup` (src/cli/backup.ts): a real SQLite file, served by an open store meanwhile, backed up
 * and opened again as a store of its own; and the refusals, each with its exit status.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, describe, test } from 'node:test';
import { pino } from 'pino';
import { backupCommand } from '../../src/cli/backup.js';
import { loadConfig } from '../../src/config/index.js';
import { openStore } from '../../src/users/stores/registry.js';

const folder = mkdtempSync(join(tmpdir(), 'roster-backup-'));
after(() => rmSync(folder, { recursive: true, force: true }));

/** backupCommand with its output and errors captured. */
async function backup(args: string[], env: Record<string, string>) {
  let output = '';
  let errors = '';
  const sink = (into: (text: string) => void) =>
    new Writable({
      write(chunk, _encoding, done) {
        into(String(chunk));
        done();
      },
    });
  const code = await backupCommand(
    args,
    { output: sink((text) => (output += text)), errors: sink((text) => (errors += text)) },
    env,
  );
  return { code, output, errors };
}

const open = (url: string) =>
  openStore(loadConfig({ DATABASE_URL: url }).storage, { logger: pino({ level: 'silent' }) });

describe('roster backup', () => {
  test('copies a database in use to a new file, which opens as a store holding the same users', async () => {
    const database = join(folder, 'live.db');
    const target = join(folder, 'copy.db');
    const live = await open(`sqlite:${database}`);
    try {
      await live.store.seed([
        { id: 'a', name: 'Ada Lovelace', email: 'ada@example.com', role: 'admin' },
        { id: 'b', name: 'Grace Hopper', email: 'grace@example.com', role: 'user' },
      ]);
      const result = await backup([target], { DATABASE_URL: `sqlite:${database}` });
      assert.equal(result.code, 0, result.errors);
      assert.match(result.output, new RegExp(`^backed up 2 users \\(\\d+ pages\\) from ${database} to ${target}\\n$`));
      assert.equal(statSync(target).mode & 0o777, 0o600);
      const listed = await live.store.list({ sort: 'created_at', descending: false, offset: 0, limit: 10 });
      const copy = await open(`sqlite:${target}`);
      try {
        assert.deepEqual(
          await copy.store.list({ sort: 'created_at', descending: false, offset: 0, limit: 10 }),
          listed,
        );
      } finally {
        await copy.store.close();
      }
    } finally {
      await live.store.close();
    }
  });

  test('makes the missing folder of the target, as the service makes its database folder', async () => {
    const database = join(folder, 'foldered.db');
    const target = join(folder, 'backups', 'daily', 'roster.db');
    await (await open(`sqlite:${database}`)).store.close();
    const result = await backup([target], { DATABASE_URL: `sqlite:${database}` });
    assert.equal(result.code, 0, result.errors);
    assert.equal(statSync(target).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(join(folder, 'backups', 'daily')), ['roster.db'], 'no partial file left');
  });

  test('a target it cannot write: exit 1, an error naming the target, never the partial file', async () => {
    const database = join(folder, 'unwritable.db');
    await (await open(`sqlite:${database}`)).store.close();
    // A folder in the way of the file: fails for root too (chmod would not).
    const blocker = join(folder, 'blocker');
    writeFileSync(blocker, 'a file, not a folder');
    const target = join(blocker, 'roster.db');
    const result = await backup([target], { DATABASE_URL: `sqlite:${database}` });
    assert.equal(result.code, 1);
    assert.match(result.errors, /^roster backup: .+\n$/);
    assert.doesNotMatch(result.errors, /partial/);
    assert.equal(existsSync(target), false);
  });

  test('refuses a target that exists, and leaves it as it was (exit 1)', async () => {
    const database = join(folder, 'kept.db');
    const target = join(folder, 'taken.db');
    await (await open(`sqlite:${database}`)).store.close();
    writeFileSync(target, 'mine');
    const result = await backup([target], { DATABASE_URL: `sqlite:${database}` });
    assert.equal(result.code, 1);
    assert.equal(result.errors, `roster backup: ${target} exists already; name a new file\n`);
    assert.equal(readFileSync(target, 'utf8'), 'mine');
  });

  test('a database file that is not there: exit 1, and no copy', async () => {
    const missing = join(folder, 'missing.db');
    const target = join(folder, 'never.db');
    const result = await backup([target], { DATABASE_URL: `sqlite:${missing}` });
    assert.equal(result.code, 1);
    assert.equal(result.errors, `roster backup: there is no database at ${missing}\n`);
    assert.equal(existsSync(target), false);
  });

  test('a store that cannot be backed up, or no file named: exit 2 with the usage hint', async () => {
    const envs: Record<string, string>[] = [
      {},
      { DATABASE_URL: 'sqlite::memory:' },
      { DATABASE_URL: 'postgres://127.0.0.1/none' },
    ];
    for (const env of envs) {
      const result = await backup([join(folder, 'x.db')], env);
      assert.equal(result.code, 2, JSON.stringify(env));
      assert.match(result.errors, /^roster backup: needs DATABASE_URL=sqlite:<file>/);
    }
    const none = await backup([], { DATABASE_URL: `sqlite:${join(folder, 'live.db')}` });
    assert.equal(none.code, 2);
    assert.match(none.errors, /takes one argument/);
  });
});
