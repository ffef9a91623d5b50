/**
 * The change feed as its tests drive it: every change read page by page, a storm of writes, and a
 * stream followed through cuts and resumes (sse.ts).
 */
import assert from 'node:assert/strict';
import { request } from './http.js';
import { SseClient } from './sse.js';
import { eventually } from './wait.js';

const FEED = '/users/changes';

export interface FeedChange {
  seq: number;
  type: string;
  id: string;
  user: { name: string } | null;
}

/** Every change after `since` (a cursor), page by page. */
export async function allChanges(api: string, since: string): Promise<FeedChange[]> {
  const changes: FeedChange[] = [];
  for (let cursor = since; ;) {
    const { status, body } = await request(`${api}${FEED}?since=${cursor}&limit=1000`);
    assert.equal(status, 200, JSON.stringify(body));
    changes.push(...body.data);
    if (body.next === cursor) return changes;
    cursor = body.next;
  }
}

export const epochOf = async (api: string) => ((await request(`${api}${FEED}`)).body.next as string).split('.')[0]!;

/**
 * `count` writes, `parallel` at a time: creates, then patches and deletes of what was created, each a
 * change (asserted): a patch or delete takes a user no other write of the storm has in flight, so a
 * patch never meets its user's delete (a 404, no change) and every test can count on `count` changes.
 */
export async function storm(api: string, count: number, parallel: number, prefix = 's'): Promise<string[]> {
  const ids: string[] = [];
  const busy = new Set<string>();
  let next = 0;
  const one = async (n: number) => {
    const kind = n % 4;
    const free = ids.filter((id) => !busy.has(id));
    if (kind < 2 || free.length === 0) {
      const { status, body } = await request(`${api}/users`, {
        method: 'POST',
        body: { name: `${prefix}${n}`, email: `${prefix}${n}@example.com` },
      });
      assert.equal(status, 201, JSON.stringify(body));
      ids.push(body.data.id);
      return;
    }
    const id = free[n % free.length]!;
    busy.add(id);
    if (kind === 3) ids.splice(ids.indexOf(id), 1);
    const { status, body } = await request(
      `${api}/users/${id}`,
      kind === 2 ? { method: 'PATCH', body: { name: `p${n}` } } : { method: 'DELETE' },
    );
    busy.delete(id);
    assert.equal(status, kind === 2 ? 200 : 204, JSON.stringify(body));
  };
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count) await one(next++);
    }),
  );
  return ids;
}

/**
 * Follows the feed of `apis` (in turn: a resume may go to another instance) during `writes`, cutting the
 * stream `cuts` times at random moments and resuming from its last id; then until `total` (the last seq).
 */
export async function cutAndResume(
  apis: string[],
  writes: Promise<unknown>,
  cuts: number,
  from: string,
  total: number,
): Promise<FeedChange[]> {
  const seen: FeedChange[] = [];
  let last = from;
  let done = false;
  void writes.then(() => (done = true));
  const follow = async (api: string, until: (stream: SseClient) => boolean) => {
    const stream = await SseClient.open(`${api}${FEED}`, { 'last-event-id': last });
    assert.equal(stream.status, 200);
    try {
      while (!until(stream) && !stream.ended) await new Promise((resolve) => setTimeout(resolve, 1));
    } finally {
      stream.cut();
    }
    for (const event of stream.events) {
      assert.equal(event.event, 'change', `no reset expected: ${event.data}`);
      seen.push(JSON.parse(event.data));
      last = event.id!;
    }
  };
  for (let cut = 0; cut < cuts; cut++) {
    const stop = Date.now() + Math.random() * (done ? 2 : 20);
    await follow(apis[cut % apis.length]!, () => Date.now() >= stop);
  }
  await writes;
  // On PostgreSQL a change is numbered just after its write's reply (postgres-changes.ts): wait for the last.
  await eventually(
    async () => Number((await request(`${apis[0]}${FEED}`)).body.next.split('.')[1]) >= total,
    `the head at ${total}`,
  );
  await follow(apis[0]!, (stream) => Number((stream.lastId ?? last).split('.')[1]) >= total);
  return seen;
}
