/**
 * Redis ending Roster's connections from its side (`CLIENT KILL TYPE normal` for the publisher,
 * `CLIENT KILL TYPE pubsub` for the subscriber), again and again while two real Roster processes chat:
 * neither process exits, the chat goes on locally throughout, and the fan-out across instances resumes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Instance, REDIS_URL, roomUrl, WITHOUT_REDIS } from '../support/index.js';

const ROUNDS = 30;

describe('Redis kills the chat bus connections', { skip: WITHOUT_REDIS }, () => {
  test(
    `${ROUNDS} rounds of CLIENT KILL (normal and pubsub): processes live, local chat goes on, fan-out resumes`,
    { timeout: 120_000 },
    async (t) => {
      const url = roomUrl();
      const [a, b] = await Promise.all([Instance.start(t, { REDIS_URL: url }), Instance.start(t, { REDIS_URL: url })]);
      const { client: a1 } = await a.join();
      const { client: a2 } = await a.join();
      const { client: b1 } = await b.join();
      const admin = new Redis(REDIS_URL!);
      t.after(() => admin.quit());

      /** Both instances' connections of `type` are back (each has one publisher and one subscriber). */
      const reconnected = async (type: string) => {
        const name = type === 'normal' ? 'roster-chat-pub' : 'roster-chat-sub';
        for (const deadline = Date.now() + 5_000; ;) {
          const list = String(await admin.call('CLIENT', 'LIST', 'TYPE', type));
          if (list.split('\n').filter((line) => line.includes(` name=${name} `)).length >= 2) return;
          assert.ok(Date.now() < deadline, `the ${name} connections did not come back within 5 s`);
          await delay(20);
        }
      };

      let killed = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const type = round % 2 === 0 ? 'normal' : 'pubsub';
        await reconnected(type);
        // SKIPME yes (the default) spares the admin connection that asks.
        killed += Number(await admin.call('CLIENT', 'KILL', 'TYPE', type));
        const text = `round ${round} after killing ${type}`;
        a1.send({ type: 'chat', message: text });
        // Local delivery never waits for Redis.
        await a2.next((m) => m.type === 'chat' && m.message === text, 2_000);
        await delay(20);
      }
      assert.ok(killed >= 2 * ROUNDS, `only ${killed} connections were killed`);
      for (const instance of [a, b]) {
        assert.equal(instance.child.exitCode, null, 'a Roster process exited');
        assert.equal(instance.child.signalCode, null, 'a Roster process was killed');
      }

      // The bus reconnects by itself: a message from A reaches B again (sent until one arrives, since one
      // sent while the subscriber was still re-subscribing is lost by design: at most once).
      const deadline = Date.now() + 10_000;
      for (let attempt = 0; ; attempt++) {
        const text = `resumed ${attempt}`;
        a1.send({ type: 'chat', message: text });
        const arrived = await b1
          .next((m) => m.type === 'chat' && m.message === text, 500)
          .then(
            () => true,
            () => false,
          );
        if (arrived) break;
        assert.ok(Date.now() < deadline, 'the fan-out across instances did not resume within 10 s');
      }
      // And back: B to A.
      b1.send({ type: 'chat', message: 'from b' });
      await a1.next((m) => m.type === 'chat' && m.message === 'from b', 5_000);
      const health = (await fetch(`${a.api}/health`).then((r) => r.json())) as {
        data: { checks: Record<string, string> };
      };
      assert.equal(health.data.checks.chat_bus, 'up');
    },
  );
});
