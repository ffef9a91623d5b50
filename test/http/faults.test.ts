/** An unexpected fault: 500 INTERNAL_ERROR in the envelope, no internal detail in the body, all of it in the log. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryUserStore } from '../../src/users/stores/memory/memory-store.js';
import { captureLog, request, startRoster } from '../support/index.js';

/** A working store whose list breaks once told to, as a database might. */
class BrokenListStore extends MemoryUserStore {
  broken = false;

  override async list(...args: Parameters<MemoryUserStore['list']>): ReturnType<MemoryUserStore['list']> {
    if (this.broken) throw new Error('connection to 10.0.0.7 lost: password=hunter2');
    return super.list(...args);
  }
}

test('a fault inside the service: 500 INTERNAL_ERROR, detail only in the log, service still up', async () => {
  const { lines, logTo } = captureLog();
  const store = new BrokenListStore();
  const roster = await startRoster({ LOG_LEVEL: 'error' }, { store, logTo });
  store.broken = true;
  try {
    const response = await request(`${roster.api}/users`);
    assert.equal(response.status, 500);
    assert.equal(response.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.deepEqual(response.body, {
      status: 'error',
      error: { code: 'INTERNAL_ERROR', message: response.body.error.message },
    });
    assert.doesNotMatch(response.text, /hunter2|10\.0\.0\.7|Error:|at /);

    const logged = lines.find((line) => line.level === 50 && JSON.stringify(line).includes('hunter2'));
    assert.ok(logged, `the detail is logged: ${JSON.stringify(lines)}`);
    assert.match(JSON.stringify(logged), /"stack"/);

    // Other operations still work.
    assert.equal((await request(`${roster.api}/health`)).status, 200);
    const users = await request(`${roster.api}/users`, {
      method: 'POST',
      body: { name: 'After', email: 'after@example.com' },
    });
    assert.equal(users.status, 201);
  } finally {
    await roster.stop();
  }
});
