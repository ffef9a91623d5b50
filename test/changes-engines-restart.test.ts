/**
 * The change feed across restarts of the real PostgreSQL and then the real Redis (issue 44: "clients
 * resume, nothing lost"): two instances on one database (and Redis as their chat bus); instance A's
 * feed followed by the typed client's `watchUsers` and by a raw stream that is cut while PostgreSQL is
 * down and resumes with Last-Event-ID; writes through both instances all along, each 503 tried again
 * (creates with their Idempotency-Key). In the end every write that got its 2xx is in what each
 * follower received, with the ETag it answered, in seq order, nothing twice, and no reset: the log
 * dropped nothing. Runs only where this machine can restart the engines (support/engines.ts).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { createRosterClient, type WatchItem, type WatchState } from '../src/protocol/index.js';
import {
  allChanges,
  engineRestartsSkip,
  freshSchema,
  Instance,
  pgReady,
  redisReady,
  request,
  restartPostgres,
  restartRedis,
  roomUrl,
  SseClient,
  until,
  type FeedChange,
} from './support/index.js';

const FEED = '/users/changes';

/** A write that got its 2xx: the user's id and the ETag the reply gave. */
interface Acked {
  id: string;
  etag: string;
  what: string;
}

/** One write, sent again after a 503 or a lost connection until it gets an answer of another kind. */
async function persist(url: string, init: Parameters<typeof request>[1], what: string) {
  for (let attempt = 0; ; attempt++) {
    const reply = await request(url, { ...init, timeoutMs: 20_000 }).catch(() => undefined);
    if (reply !== undefined && reply.status !== 503) {
      assert.ok(reply.status < 300, `${what}: ${reply.status} ${reply.text}`);
      return reply;
    }
    assert.ok(attempt < 200, `${what}: still refused after ${attempt} attempts`);
    await delay(100);
  }
}

/**
 * A raw SSE follower of `api`'s feed from `since`: reconnects (with its last id as Last-Event-ID) each
 * time its stream ends, until `stop()`; `cut()` drops the current stream as a network failure would.
 */
function rawFollower(api: string, since: string) {
  const events: { id: string | undefined; event: string; data: string }[] = [];
  let last = since;
  let current: SseClient | undefined;
  let stopped = false;
  let reconnects = 0;
  const running = (async () => {
    while (!stopped) {
      current = await SseClient.open(`${api}${FEED}`, { 'last-event-id': last }).catch(() => undefined);
      while (current && !current.ended && !stopped) await delay(20);
      for (const event of current?.events ?? []) {
        events.push(event);
        if (event.id !== undefined) last = event.id;
      }
      current?.cut();
      if (!stopped) {
        reconnects++;
        await delay(200);
      }
    }
  })();
  return {
    events,
    get reconnects() {
      return reconnects;
    },
    /** The last id received, counting the open stream's. */
    get lastId() {
      return current?.lastId ?? last;
    },
    cut: () => current?.cut(),
    stop: async () => {
      stopped = true;
      await running;
    },
  };
}

/** The changes' checks: in seq order, none twice, no reset, every acked write there with its ETag. */
function assertComplete(
  who: string,
  items: { type: string; change?: FeedChange & { etag: string | null } }[],
  acked: Acked[],
  log: FeedChange[],
) {
  assert.deepEqual(
    items.filter((item) => item.type !== 'change').map((item) => item.type),
    [],
    `${who}: no reset (the log dropped nothing)`,
  );
  const seqs = items.map((item) => item.change!.seq);
  for (let i = 1; i < seqs.length; i++)
    assert.ok(seqs[i]! > seqs[i - 1]!, `${who}: seq ${seqs[i]} after ${seqs[i - 1]}`);
  assert.deepEqual(
    seqs,
    log.map((change) => change.seq),
    `${who}: exactly the log, in order, nothing twice`,
  );
  const versions = new Set(items.map((item) => `${item.change!.id} ${item.change!.etag}`));
  assert.deepEqual(
    acked.filter((write) => !versions.has(`${write.id} ${write.etag}`)).map((write) => write.what),
    [],
    `${who}: every acknowledged write received`,
  );
}

describe('the change feed across PostgreSQL and Redis restarts', { skip: engineRestartsSkip() }, () => {
  test(
    'followers of one instance get every write made through two, nothing twice, no reset',
    { timeout: 180_000 },
    async (t) => {
      const schema = await freshSchema();
      t.after(async () => {
        await until('PostgreSQL back for the clean-up', pgReady);
        await schema.drop();
      });
      const bus = roomUrl();
      const a = await Instance.start(t, { DATABASE_URL: schema.url, REDIS_URL: bus });
      const b = await Instance.start(t, { DATABASE_URL: schema.url, REDIS_URL: bus });
      const since = (await request(`${a.api}${FEED}`)).body.next as string;

      // Follower 1: the typed client's watch, reconnecting after 100-400 ms.
      const watching = new AbortController();
      const watched: WatchItem[] = [];
      const states: WatchState[] = [];
      const watch = (async () => {
        const client = createRosterClient({ url: a.api });
        const options = {
          since,
          signal: watching.signal,
          backoff: { initialMs: 100, maxMs: 400 },
          onState: (s: WatchState) => states.push(s),
        };
        for await (const item of client.watchUsers(options)) watched.push(item);
      })();
      // Follower 2: a raw stream, cut while PostgreSQL is down.
      const raw = rawFollower(a.api, since);

      const acked: Acked[] = [];
      let stop = false;
      const writer = async (n: number) => {
        for (let i = 0; !stop; i++) {
          const api = (n + i) % 2 === 0 ? b.api : a.api;
          const key = randomUUID();
          const created = await persist(
            `${api}/users`,
            {
              method: 'POST',
              headers: { 'idempotency-key': `"${key}"` },
              body: { name: `W ${n} ${i}`, email: `w${n}.${i}.${key}@example.com` },
            },
            `create ${n}.${i}`,
          );
          const id = created.body.data.id as string;
          acked.push({ id, etag: created.headers.get('etag')!, what: `create ${n}.${i}` });
          const other = api === a.api ? b.api : a.api;
          const patched = await persist(
            `${other}/users/${id}`,
            { method: 'PATCH', body: { name: `P ${n} ${i}` } },
            `patch ${n}.${i}`,
          );
          acked.push({ id, etag: patched.headers.get('etag')!, what: `patch ${n}.${i}` });
          await delay(5);
        }
      };
      const writing = Promise.all([writer(0), writer(1)]);
      try {
        await until('writes under way', () => acked.length >= 40);
        let restarted = false;
        const restarting = restartPostgres().finally(() => (restarted = true));
        await until('PostgreSQL down', () => restarted || !pgReady(), 20_000);
        raw.cut();
        await restarting;
        await until('PostgreSQL accepting connections again', pgReady);
        const afterPg = acked.length;
        await until('writes going on after the PostgreSQL restart', () => acked.length >= afterPg + 40, 30_000);

        await restartRedis();
        await until(
          'the chat bus up again',
          async () => (await request(`${a.api}/health`)).body?.data?.checks?.chat_bus === 'up',
        );
        const afterRedis = acked.length;
        await until('writes going on after the Redis restart', () => acked.length >= afterRedis + 40, 30_000);
      } finally {
        stop = true;
        await writing;
      }

      // The whole log since the start, as instance B pages it: the followers must reach its last change.
      const log = await allChanges(b.api, since);
      const last = log.at(-1)!.seq;
      const seqOf = (cursor: string | undefined) => Number(cursor?.split('.')[1] ?? 0);
      try {
        await until(
          'the watch at the last change',
          () => watched.some((item) => item.kind === 'change' && item.change.seq >= last),
          15_000,
        );
        await until('the raw follower at the last change', () => seqOf(raw.lastId) >= last, 15_000);
      } finally {
        watching.abort();
        await watch;
        await raw.stop();
      }

      assertComplete(
        'watchUsers',
        watched.map((item) => (item.kind === 'change' ? { type: 'change', change: item.change } : { type: item.kind })),
        acked,
        log,
      );
      assertComplete(
        'raw stream',
        raw.events.map((event) =>
          event.event === 'change' ? { type: 'change', change: JSON.parse(event.data) } : { type: event.event },
        ),
        acked,
        log,
      );
      // A write retried after its answer was lost may be in the log twice (a PATCH has no key): at least one each.
      const ids = new Set(acked.map((write) => write.id));
      assert.ok(log.length >= acked.length, `${log.length} changes for ${acked.length} writes`);
      assert.deepEqual(
        log.filter((change) => !ids.has(change.id)),
        [],
        'no change of a user this test did not write',
      );
      const retrying = states.filter((s) => s.state === 'retrying').length;
      t.diagnostic(
        `${acked.length} writes, ${log.length} changes; watch reconnects ${retrying}, raw ${raw.reconnects}`,
      );
      assert.ok(raw.reconnects >= 1, 'the raw stream was cut and resumed');
      assert.ok(redisReady() && pgReady(), 'both engines up');
    },
  );
});
