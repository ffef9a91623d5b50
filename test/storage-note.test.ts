/** At start-up Roster says in one plain line where users live, and how to keep them. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { captureLog, startRoster } from './helpers.js';

test('start-up says users live in memory, are lost on exit, and names DATABASE_URL', async () => {
  const { lines, logTo } = captureLog();
  const roster = await startRoster({ LOG_LEVEL: 'info' }, { logTo });
  await roster.stop();
  const listening = lines.findIndex((line) => line.msg === 'Roster is listening');
  assert.ok(listening >= 0);
  const note = lines
    .slice(listening + 1)
    .find((line) => typeof line.msg === 'string' && /users/i.test(line.msg as string));
  assert.equal(
    note?.msg,
    'Users live in memory and are lost when Roster stops; set DATABASE_URL to keep them in PostgreSQL',
  );
});
