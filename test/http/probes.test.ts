/**
 * The orchestrators' probes on the REST port: /livez (alive: 200) and /readyz (200 only while the user
 * store is reachable and the instance is not shutting down; 503 in the error envelope otherwise).
 * Public under AUTH and never rate limited.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import type { Dependency, DependencyState } from '../../src/ops/health.js';
import { request, startRoster, type Running } from '../support/index.js';
import type { ServerParts } from '../../src/server.js';

async function roster(t: TestContext, env: Record<string, string> = {}, parts: ServerParts = {}): Promise<Running> {
  const running = await startRoster(env, parts);
  t.after(() => running.stop());
  return running;
}

/** A critical engine whose state the test sets, standing in for the database. */
class FakeDatabase implements Dependency {
  readonly name = 'database';
  readonly critical = true;
  current: DependencyState = { up: true };
  state(): DependencyState {
    return this.current;
  }
}

describe('probes: /livez and /readyz', () => {
  test('200 on a healthy instance, with the success envelope', async (t) => {
    const running = await roster(t);
    const live = await request(`${running.origin}/livez`);
    assert.equal(live.status, 200);
    assert.equal(live.body.status, 'success');
    const ready = await request(`${running.origin}/readyz`);
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body.data, { status: 'ready' });
  });

  test('the database down: /readyz 503 naming it, /livez still 200; back up: 200', async (t) => {
    const database = new FakeDatabase();
    const running = await roster(t, {}, { dependencies: [database] });
    database.current = { up: false, reason: 'connection refused' };
    const ready = await request(`${running.origin}/readyz`);
    assert.equal(ready.status, 503);
    assert.equal(ready.body.error.code, 'SERVICE_UNAVAILABLE');
    assert.deepEqual(ready.body.error.details, [{ field: 'database', message: 'down: connection refused' }]);
    assert.equal((await request(`${running.origin}/livez`)).status, 200);
    database.current = { up: true };
    assert.equal((await request(`${running.origin}/readyz`)).status, 200);
  });

  test('public with AUTH on, and exempt from RATE_LIMIT', async (t) => {
    const running = await roster(t, { AUTH: 'apikey', API_KEYS: 'k'.repeat(32), RATE_LIMIT: '2/minute' });
    for (let i = 0; i < 4; i++) {
      assert.equal((await request(`${running.origin}/livez`)).status, 200, `livez ${i}`);
      assert.equal((await request(`${running.origin}/readyz`)).status, 200, `readyz ${i}`);
    }
    assert.equal((await request(`${running.api}/users`)).status, 401, 'the users still need a key');
  });
});
