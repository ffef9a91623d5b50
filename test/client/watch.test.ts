/**
 * The typed client's watch of the user change feed (src/protocol/client/changes.ts) against a real
 * Roster (the resume on each store), through a TCP relay that can drop its connections: a watch resumes after a drop from its last
 * cursor (the changes written while it was away arrive, in order, none twice), a reset is handed over as
 * an item with the cursor to go on from, and an abort ends the iteration.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { createRosterClient, type WatchItem, type WatchOptions, type WatchState } from '../../src/protocol/index.js';
import {
  eventually,
  request,
  rosterFor,
  startOn,
  TcpProxy,
  targetOf,
  TEST_MS,
  TEST_STORES,
  within,
  type Running,
} from '../support/index.js';

/** A watch of `api` running in the background: what it yielded, the states it went through, how it ended. */
function watching(api: string, options: WatchOptions) {
  const items: WatchItem[] = [];
  const states: WatchState[] = [];
  const stop = new AbortController();
  const client = createRosterClient({ url: api });
  const ended = (async () => {
    for await (const item of client.watchUsers({
      backoff: { initialMs: 50, maxMs: 200, jitter: 0 },
      ...options,
      signal: stop.signal,
      onState: (state) => states.push(state),
    }))
      items.push(item);
  })();
  ended.catch(() => undefined);
  const changes = () => items.flatMap((item) => (item.kind === 'change' ? [item.change] : []));
  return { items, states, stop, ended, changes, client };
}

async function relayTo(t: TestContext, roster: Running): Promise<TcpProxy> {
  const proxy = await TcpProxy.start(targetOf(roster.origin, 80));
  t.after(() => proxy.close());
  return proxy;
}

/** The head cursor of the feed (a page without `since`). */
async function head(api: string): Promise<string> {
  const reply = await request(`${api}/users/changes`);
  assert.equal(reply.status, 200, reply.text);
  return reply.body.next as string;
}

const create = async (api: string, n: number) => {
  const reply = await request(`${api}/users`, {
    method: 'POST',
    body: { name: `Watched ${n}`, email: `w${n}@example.com` },
  });
  assert.equal(reply.status, 201, reply.text);
  return reply.body.data.id as string;
};

describe('watchUsers', () => {
  for (const store of TEST_STORES)
    test(
      `resumes after the connection drops: what was written meanwhile arrives, in order, none twice (${store.name})`,
      { timeout: TEST_MS, skip: store.skip },
      async (t) => {
        const roster = await startOn(store, { SHUTDOWN_TIMEOUT_MS: '2000' });
        t.after(() => roster.stop());
        const proxy = await relayTo(t, roster);
        const since = await head(roster.api);
        const watch = watching(`http://127.0.0.1:${proxy.port}/api/v1`, { since });
        t.after(() => watch.stop.abort());
        const first = await create(roster.api, 1);
        await eventually(() => watch.changes().length === 1, 'the first change');
        assert.deepEqual(
          watch.changes().map((c) => [c.type, c.id]),
          [['created', first]],
        );

        proxy.cut();
        await eventually(() => watch.states.some((s) => s.state === 'retrying'), 'the watch to see the drop');
        const second = await create(roster.api, 2);
        assert.equal(
          (await request(`${roster.api}/users/${first}`, { method: 'PATCH', body: { name: 'Renamed' } })).status,
          200,
        );
        assert.equal((await request(`${roster.api}/users/${second}`, { method: 'DELETE' })).status, 204);
        proxy.restore();

        await eventually(() => watch.changes().length >= 4, 'the changes written during the drop', 10_000);
        const log = (await request(`${roster.api}/users/changes?since=${encodeURIComponent(since)}`)).body.data as {
          cursor: string;
        }[];
        assert.deepEqual(
          watch.changes().map((c) => c.cursor),
          log.map((c) => c.cursor),
          'the watch saw the log: each change once, in order',
        );
        assert.deepEqual(
          watch.changes().map((c) => [c.type, c.id]),
          [
            ['created', first],
            ['created', second],
            ['updated', first],
            ['deleted', second],
          ],
        );
        assert.equal(watch.changes()[2]!.user?.name, 'Renamed');
        assert.equal(watch.changes()[3]!.user, null);
        assert.ok(watch.states.filter((s) => s.state === 'open').length >= 2, 'opened again after the drop');
      },
    );

  test('without since: starts at the head, and sees a change written right after', { timeout: TEST_MS }, async (t) => {
    const roster = await rosterFor(t);
    await create(roster.api, 1); // before the watch: not in it
    const watch = watching(roster.api, {});
    t.after(() => watch.stop.abort());
    await eventually(() => watch.states.some((s) => s.state === 'open'), 'the stream to open');
    const id = await create(roster.api, 2);
    await eventually(() => watch.changes().length === 1, 'the change after the start');
    assert.equal(watch.changes()[0]!.id, id);
  });

  test(
    'a cursor the feed cannot serve is a reset item with the head cursor, and the watch goes on from it',
    { timeout: TEST_MS },
    async (t) => {
      const roster = await rosterFor(t);
      const current = await head(roster.api);
      const foreign = `x${current.split('.')[0]}.1`; // another log's epoch
      const watch = watching(roster.api, { since: foreign });
      t.after(() => watch.stop.abort());
      const reset = await eventually(() => watch.items.find((item) => item.kind === 'reset'), 'the reset item');
      assert.equal(reset.kind, 'reset');
      const id = await create(roster.api, 1);
      await eventually(() => watch.changes().length === 1, 'a change after the reset');
      assert.equal(watch.changes()[0]!.id, id);
      assert.equal(watch.items[0]!.kind, 'reset', 'the reset comes first, never after a silent gap');

      const page = await watch.client.changesPage({ since: foreign });
      assert.equal(page.response.status, 410);
      assert.equal(page.error?.error.code, 'CHANGES_RESET');
      assert.equal(typeof page.reset, 'string', 'the 410 names the cursor to go on from');
    },
  );

  test('an abort ends the iteration, without an error', { timeout: TEST_MS }, async (t) => {
    const roster = await rosterFor(t);
    const watch = watching(roster.api, { since: await head(roster.api) });
    await eventually(() => watch.states.some((s) => s.state === 'open'), 'the stream to open');
    watch.stop.abort();
    await within(watch.ended, 2_000, 'the watch to end on abort');
    const proxy = await relayTo(t, roster);
    const waiting = watching(`http://127.0.0.1:${proxy.port}/api/v1`, {
      since: await head(roster.api),
      backoff: { initialMs: 60_000 },
    });
    proxy.cut();
    await eventually(() => waiting.states.some((s) => s.state === 'retrying'), 'the watch to wait before reconnecting');
    waiting.stop.abort();
    await within(waiting.ended, 2_000, 'a watch waiting to reconnect to end on abort');
  });

  test('a refused credential ends the watch with a WatchError naming it', { timeout: TEST_MS }, async (t) => {
    const roster = await rosterFor(t, { AUTH: 'apikey', API_KEYS: 'watch-test-key-0123456789' });
    const watch = watching(roster.api, { since: 'a.1' });
    await assert.rejects(within(watch.ended, 5_000, 'the watch to fail'), (error: Error) => {
      assert.equal(error.name, 'WatchError');
      assert.match(error.message, /^401 UNAUTHORIZED/);
      return true;
    });
  });
});
