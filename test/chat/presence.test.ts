/**
 * Presence that stays true across real Roster processes on one Redis: an instance killed with SIGKILL
 * while members join and leave elsewhere (and on it) has each of its members' leaves told once, to
 * every member left, by one survivor, the counts ending at the members actually connected; one
 * stopped with SIGTERM tells its members' leaves itself, at once.
 *
 * CHAT_KILL_ROUNDS (default 1) repeats the kill round, each with fresh processes and a room of its own.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Redis } from 'ioredis';
import {
  ChatClient,
  Instance,
  REDIS_URL,
  request,
  roomUrl,
  startRoster,
  WITHOUT_REDIS,
  type Message,
} from '../support/index.js';

const ROUNDS = Number(process.env.CHAT_KILL_ROUNDS ?? 1);
/** Members on the instance that is killed. */
const N = 5;
/** Members that join and leave on the survivors meanwhile. */
const CHURN = 6;

/** The member list's total on `instance` (GET /api/v1/chat/members). */
async function listed(instance: { api: string }): Promise<number> {
  const reply = await request(`${instance.api}/chat/members`);
  assert.equal(reply.status, 200);
  return reply.body.data.pagination.total as number;
}

function notices(client: ChatClient, type: 'user_join' | 'user_leave'): Message[] {
  return client.messages.filter((m) => m.type === type);
}

describe('presence across processes', { skip: WITHOUT_REDIS }, () => {
  for (let round = 1; round <= ROUNDS; round++) {
    test(
      `round ${round}/${ROUNDS}: kill -9 of an instance with ${N} members during churn: ${N} leaves each, once, counts true`,
      { timeout: 60_000 },
      async (t) => {
        const env = { REDIS_URL: roomUrl() };
        const [a, b, c] = await Promise.all([Instance.start(t, env), Instance.start(t, env), Instance.start(t, env)]);
        const { client: oa } = await a.join();
        const { client: ob } = await b.join();
        for (let i = 0; i < N; i++) await c.join();
        const total = N + 2;
        await Promise.all([oa, ob].map((o) => o.next((m) => m.type === 'user_join' && m.online_count === total)));
        assert.equal(await listed(a), total);
        for (const o of [oa, ob]) o.messages.length = 0;

        // Members come and go on A and B, and some knock on C, while C is killed.
        const churn = (async () => {
          for (let i = 0; i < CHURN; i++) {
            const { client } = await (i % 2 === 0 ? a : b).join();
            await client.close();
          }
        })();
        const knocking = [0, 1, 2].map(() => {
          const client = new ChatClient(c.wsUrl);
          client.ws.on('error', () => {});
          c.clients.push(client);
          return client;
        });
        assert.deepEqual(await c.exit('SIGKILL'), { code: null, signal: 'SIGKILL' });
        await churn;

        // The reaper deletes C's member list in the script that tells its leaves: once it is gone from the
        // list, every leave is published. A chat from A after that reaches both after all of them.
        while ((await listed(a)) !== 2) await new Promise((resolve) => setTimeout(resolve, 100)); // expiry has no event to wait for
        assert.equal(await listed(b), 2);
        oa.send({ type: 'chat', message: 'after the reaper' });
        await Promise.all([oa, ob].map((o) => o.next((m) => m.message === 'after the reaper', 10_000)));

        for (const o of [oa, ob]) {
          const joins = notices(o, 'user_join');
          const leaves = notices(o, 'user_leave');
          // Members of C whose join was told before the kill (the knocking ones, maybe) are told leaving too.
          const joinedOnC = joins.length - CHURN;
          assert.ok(joinedOnC >= 0 && joinedOnC <= knocking.length, `${joins.length} joins`);
          assert.equal(leaves.length, N + CHURN + joinedOnC, 'each leave once: N of C, and the churn');
          // Every notice moves the count by one, from the room before the kill to the members connected.
          const counts = o.messages
            .filter((m) => m.type === 'user_join' || m.type === 'user_leave')
            .map((m) => [m.type, m.online_count]);
          let expected = total;
          for (const [type, count] of counts) {
            expected += type === 'user_join' ? 1 : -1;
            assert.equal(count, expected, JSON.stringify(counts));
          }
          assert.equal(expected, 2, 'oa and ob are left');
        }
        // Newcomers are welcomed with the true count (B has heard A's newcomer before its own arrives).
        const { welcome: onA } = await a.join();
        assert.match(onA.message as string, /\b3 users online/);
        await ob.next((m) => m.type === 'user_join' && m.online_count === 3);
        const { welcome: onB } = await b.join();
        assert.match(onB.message as string, /\b4 users online/);
      },
    );
  }

  test('a SIGTERM tells its members’ leaves at once, counting down', { timeout: 60_000 }, async (t) => {
    const env = { REDIS_URL: roomUrl() };
    const [a, d] = await Promise.all([Instance.start(t, env), Instance.start(t, env)]);
    const { client: oa } = await a.join();
    for (let i = 0; i < 3; i++) await d.join();
    await oa.next((m) => m.type === 'user_join' && m.online_count === 4);
    oa.messages.length = 0;
    assert.deepEqual(await d.exit('SIGTERM'), { code: 0, signal: null });
    // Told by D itself before it exits (no wait for an expiry): the list is already down to oa.
    assert.equal(await listed(a), 1);
    oa.send({ type: 'chat', message: 'barrier' });
    await oa.next((m) => m.message === 'barrier');
    assert.deepEqual(
      notices(oa, 'user_leave').map((m) => m.online_count),
      [3, 2, 1],
    );
  });
});

describe('the reaper and a record Redis cannot read', { skip: WITHOUT_REDIS }, () => {
  test(
    'a dead instance whose member record holds a lone surrogate is reaped all the same',
    { timeout: 30_000 },
    async (t) => {
      const url = roomUrl();
      const running = await startRoster({ REDIS_URL: url });
      const redis = new Redis(REDIS_URL!);
      t.after(async () => {
        await running.stop();
        redis.disconnect();
      });
      // An instance killed with a member whose name JSON.stringify wrote as an escaped lone surrogate
      // (cjson refuses `\ud800`), beside a member whose record is fine; its alive key long expired.
      const keys = `${new URL(url).searchParams.get('keyPrefix')}chat:`;
      const since = new Date().toISOString();
      await redis.hset(
        `${keys}members:ghost`,
        'member-ok',
        JSON.stringify({ seq: 1, since, name: 'Fine' }),
        'member-bad',
        JSON.stringify({ seq: 2, since, name: '\ud800' }),
      );
      await redis.sadd(`${keys}instances`, 'ghost');
      const client = await ChatClient.connect(running.wsUrl);
      t.after(() => client.close());
      assert.equal(await listed(running), 3, 'the two members of the ghost are listed until reaped');
      // The bus reaps on every heartbeat (1 s): within a few, the ghost's members are gone, bad one too.
      const deadline = Date.now() + 10_000;
      while ((await listed(running)) !== 1 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(await listed(running), 1, 'only the member actually connected is listed');
      assert.equal(await redis.exists(`${keys}members:ghost`), 0, 'the members of the ghost are gone from Redis');
      assert.equal(await redis.sismember(`${keys}instances`, 'ghost'), 0, 'and the ghost from the instances');
    },
  );
});
