/**
 * Three real Roster processes (`node dist/src/main.js`) on one Redis: a chat message reaches the members
 * of all three, notices carry the room-wide count, an instance killed with SIGKILL stops counting within
 * seconds, and one stopped with SIGTERM is counted out at once (its members' leaves are told).
 *
 * Every wait is bounded; every child is killed when its test ends, whatever the outcome.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { Instance, request, roomUrl, within, WITHOUT_REDIS } from '../support/index.js';

/**
 * How soon a killed instance is counted out: its 4 s liveness key expires and the next reaper run, every
 * second, tells its members' leaves (docs/storage.md, *Redis*); the rest is room for a busy machine.
 */
const KILLED_GONE_MS = 10_000;

describe('several Roster processes on one Redis', { skip: WITHOUT_REDIS }, () => {
  test(
    'share one room: fan-out, room-wide counts, a killed instance counted out within seconds, a stopped one at once',
    { timeout: 60_000 },
    async (t) => {
      const url = roomUrl();
      const [a, b, c] = await Promise.all([
        Instance.start(t, { REDIS_URL: url }),
        Instance.start(t, { REDIS_URL: url }),
        Instance.start(t, { REDIS_URL: url }),
      ]);

      const { client: a1 } = await a.join();
      const { client: b1 } = await b.join();
      assert.equal((await a1.next((m) => m.type === 'user_join')).online_count, 2);
      const { client: c1 } = await c.join();
      // Redis hands every instance B's join before C's, so A has both when it counts C's.
      assert.equal((await a1.next((m) => m.type === 'user_join')).online_count, 3);
      assert.equal((await b1.next((m) => m.type === 'user_join' && m.online_count === 3)).online_count, 3);

      c1.send({ type: 'chat', message: 'hello from C' });
      const copies = await Promise.all(
        [a1, b1, c1].map((client) => client.next((m) => m.type === 'chat' && m.message === 'hello from C')),
      );
      for (const copy of copies) assert.deepEqual(copy, copies[2]);

      // SIGKILL: no goodbye, no leave notices; C's member stops counting once C's count expires.
      const killed = Date.now();
      assert.deepEqual(await c.exit('SIGKILL'), { code: null, signal: 'SIGKILL' });
      // A newcomer counts a1, b1 and itself (and c1, until C expires); a probe that just left may still
      // be counted for a moment too, so each instance's count is watched until it settles.
      for (const instance of [a, b]) {
        let count = await instance.welcomeCount();
        while (count !== 3) {
          assert.ok(
            Date.now() - killed < KILLED_GONE_MS,
            `the killed instance still counts after ${KILLED_GONE_MS} ms (count ${count})`,
          );
          await delay(250); // expiry has no event to wait for: look again shortly
          count = await instance.welcomeCount();
        }
      }
      a1.send('after the kill');
      await b1.next((m) => m.message === 'after the kill');

      // SIGTERM: b1 gets 1001 and A hears its leave at once, with the room-wide count.
      b1.messages.length = 0;
      const closed = once(b1.ws, 'close');
      const stopping = Date.now();
      assert.deepEqual(await b.exit('SIGTERM'), { code: 0, signal: null });
      // As prompt as without Redis (tens of ms here): closing the bus adds a QUIT round trip, not seconds.
      const stoppedIn = Date.now() - stopping;
      assert.ok(stoppedIn < 1_500, `SIGTERM with Redis ended the process in ${stoppedIn} ms`);
      assert.equal(((await within(closed, 5000, 'b1 closed')) as [number])[0], 1001);
      // b1's leave is A's news of B's last count (0), and B's goodbye follows: only a1 is left.
      const left = await a1.next((m) => m.type === 'user_leave' && m.online_count === 1);
      assert.equal(left.online_count, 1);

      const health = await request(`${a.api}/health`);
      assert.equal(health.status, 200);
      assert.equal(health.body.data.status, 'healthy');
    },
  );
});
