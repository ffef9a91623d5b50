/**
 * A storm of joins across instances on one Redis: every pair of members gets exactly one `user_join`,
 * to whichever of the two joined first in the room's order (the order Redis relays the joins in). So
 * with N clients the per-client counts of `user_join` are 0, 1, …, N−1, each once, summing to
 * N(N−1)/2. Two clients joining on two instances within one Redis round trip are the race: each
 * instance tells its own member's join at once, and without one order both would hear of the other.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { barrier, ChatClient, roomUrl, startRoster, until, within, WITHOUT_REDIS } from '../support/index.js';

const INSTANCES = 3;
const CLIENTS = 240;
const ROUNDS = 2;

async function startRoom(t: TestContext): Promise<string[]> {
  const url = roomUrl();
  const urls: string[] = [];
  for (let i = 0; i < INSTANCES; i++) {
    // One address for every client: no cap per address (256 by default) in the way of the storm.
    const running = await startRoster({
      REDIS_URL: url,
      SHUTDOWN_TIMEOUT_MS: '2000',
      MAX_CONNECTIONS_PER_ADDRESS: '0',
    });
    t.after(() => running.stop());
    urls.push(running.wsUrl);
  }
  return urls;
}

describe('joins across instances', { skip: WITHOUT_REDIS }, () => {
  for (let round = 1; round <= ROUNDS; round++) {
    test(
      `${CLIENTS} clients joining at once on ${INSTANCES} instances: one user_join per pair (round ${round})`,
      { timeout: 120_000 },
      async (t) => {
        const urls = await startRoom(t);
        const joins = new Map<ChatClient, number>();
        const clients = Array.from({ length: CLIENTS }, (_, k) => {
          const client = new ChatClient(urls[k % INSTANCES]!);
          client.ws.on('error', () => {});
          joins.set(client, 0);
          client.ws.on('message', (data) => {
            if ((JSON.parse(data.toString()) as { type: string }).type === 'user_join')
              joins.set(client, joins.get(client)! + 1);
          });
          return client;
        });
        t.after(() => {
          for (const client of clients) client.ws.terminate();
        });
        await within(
          Promise.all(clients.map((client) => client.next((m) => m.type === 'system', 60_000))),
          60_000,
          'every welcome',
        );
        const expected = (CLIENTS * (CLIENTS - 1)) / 2;
        const total = () => [...joins.values()].reduce((sum, count) => sum + count, 0);
        // Fewer never come: the assertions below then say how many are missing.
        await until(`${expected} user_join notices`, () => total() >= expected, 30_000).catch(() => {});
        // A chat from each instance after every join was published: each instance's notices so far are
        // out once its chat has reached everyone, so nothing is still on its way.
        for (let i = 0; i < INSTANCES; i++) await within(barrier(clients[i]!, clients), 30_000, 'the barrier');
        for (const client of clients) if (client.invalidFrame) throw client.invalidFrame;

        const counts = [...joins.values()].sort((a, b) => a - b);
        assert.equal(total(), expected, `one notice per pair: ${total() - expected} more than N(N−1)/2`);
        assert.deepEqual(
          counts,
          Array.from({ length: CLIENTS }, (_, k) => k),
        );
      },
    );
  }
});
