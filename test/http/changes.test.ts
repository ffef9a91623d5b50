/**
 * The change feed's wire format (docs/rest-api.md "Live changes"), rule by rule, through real sockets on
 * the memory store: JSON pages, the long poll, Server-Sent Events, filters, resets, hostile cursors,
 * AUTH, a client that does not read, the per-address and per-client caps, RATE_LIMIT and shutdown.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import {
  API_KEY_ADMIN,
  eventually,
  LogWatch,
  API_KEY_READER,
  request,
  SseClient,
  startRoster,
  within,
  type Running,
} from '../support/index.js';

const FEED = '/users/changes';

async function roster(t: TestContext, env: Record<string, string> = {}): Promise<Running> {
  const running = await startRoster(env);
  t.after(() => running.stop());
  return running;
}

/** The feed's epoch, and the head's cursor (`next` of a page asked for without `since`). */
async function headOf(api: string, headers: Record<string, string> = {}): Promise<{ epoch: string; head: string }> {
  const { body } = await request(`${api}${FEED}`, { headers });
  return { epoch: body.next.split('.')[0], head: body.next };
}

const create = (api: string, name: string, headers: Record<string, string> = {}) =>
  request(`${api}/users`, { method: 'POST', body: { name, email: `${name}@example.com` }, headers });

describe('change feed: JSON pages', () => {
  test('without since: no change, and the head as next; from <epoch>.0: every change, oldest first', async (t) => {
    const { api } = await roster(t);
    const { epoch, head } = await headOf(api);
    assert.equal(head, `${epoch}.3`); // the three seed users
    const empty = await request(`${api}${FEED}`);
    assert.deepEqual(empty.body.data, []);
    const all = await request(`${api}${FEED}?since=${epoch}.0`);
    assert.equal(all.status, 200);
    assert.match(all.headers.get('content-type')!, /^application\/json/);
    assert.deepEqual(
      all.body.data.map((change: { seq: number; cursor: string }) => [change.seq, change.cursor]),
      [1, 2, 3].map((seq) => [seq, `${epoch}.${seq}`]),
    );
    assert.equal(all.body.next, `${epoch}.3`);
    const one = await request(`${api}${FEED}?since=${epoch}.0&limit=1`);
    assert.equal(one.body.data.length, 1);
    assert.equal(one.body.next, `${epoch}.1`);
  });

  test('a change carries the user as GET returns it and its ETag; a delete carries neither', async (t) => {
    const { api } = await roster(t);
    const { head } = await headOf(api);
    const created = await create(api, 'ada');
    const id = created.body.data.id;
    await request(`${api}/users/${id}`, { method: 'PATCH', body: { role: 'admin' } });
    const got = await request(`${api}/users/${id}`);
    await request(`${api}/users/${id}`, { method: 'DELETE' });
    const { body } = await request(`${api}${FEED}?since=${head}`);
    assert.deepEqual(
      body.data.map((change: { type: string }) => change.type),
      ['created', 'updated', 'deleted'],
    );
    const [, updated, deleted] = body.data;
    assert.deepEqual(updated.user, got.body.data);
    assert.equal(updated.etag, got.headers.get('etag'));
    assert.equal(updated.at, got.body.data.updated_at);
    assert.deepEqual([deleted.id, deleted.user, deleted.etag], [id, null, null]);
  });

  test('a long poll answers as soon as a change comes; with none, empty at its deadline', async (t) => {
    const { api } = await roster(t);
    const { head } = await headOf(api);
    const polled = request(`${api}${FEED}?since=${head}&wait=30`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await create(api, 'grace');
    const { body } = await within(polled, 10_000, 'the long poll');
    assert.equal(body.data[0].user.name, 'grace');
    const idle = await request(`${api}${FEED}?since=${body.next}&wait=1`);
    assert.deepEqual([idle.body.data, idle.body.next], [[], body.next]);
  });

  test('role keeps changes whose role before or after is it; id follows one user', async (t) => {
    const { api } = await roster(t);
    const { head } = await headOf(api);
    const a = (await create(api, 'a')).body.data.id;
    const b = (await create(api, 'b')).body.data.id;
    await request(`${api}/users/${a}`, { method: 'PATCH', body: { role: 'admin' } });
    await request(`${api}/users/${a}`, { method: 'PATCH', body: { role: 'user' } });
    const admin = await request(`${api}${FEED}?since=${head}&role=admin`);
    assert.equal(admin.body.data.length, 2); // to admin, and back from it
    assert.equal(admin.body.next, `${head.split('.')[0]}.${Number(head.split('.')[1]) + 4}`);
    const onlyB = await request(`${api}${FEED}?since=${head}&id=${b}`);
    assert.deepEqual(
      onlyB.body.data.map((change: { id: string }) => change.id),
      [b],
    );
  });

  test('limit is clamped to 1000', async (t) => {
    const { api } = await roster(t);
    const { epoch } = await headOf(api);
    const { status, body } = await request(`${api}${FEED}?since=${epoch}.0&limit=99999999999999999999`);
    assert.equal(status, 200);
    assert.equal(body.data.length, 3);
  });
});

describe('change feed: cursors it cannot serve', () => {
  const reset = (status: number, body: { error: { code: string; details: { field: string }[] } }) => {
    assert.equal(status, 410);
    assert.equal(body.error.code, 'CHANGES_RESET');
    assert.equal(body.error.details[0]!.field, 'since');
  };

  test('a foreign epoch, a future seq and one older than the log keeps: 410 with the head to follow', async (t) => {
    const { api } = await roster(t, { CHANGES_MAX: '5' });
    const { epoch } = await headOf(api);
    for (let i = 0; i < 6; i++) await create(api, `u${i}`);
    const { head } = await headOf(api);
    assert.equal(head, `${epoch}.9`);
    for (const since of ['someotherlog.3', `${epoch}.10`, `${epoch}.9007199254740991`, `${epoch}.0`, `${epoch}.3`]) {
      const { status, body, headers } = await request(`${api}${FEED}?since=${since}`);
      reset(status, body);
      assert.equal(headers.get('roster-changes-cursor'), head, since);
    }
    // The oldest kept is 5: from 4 on, nothing is missing.
    const kept = await request(`${api}${FEED}?since=${epoch}.4`);
    assert.deepEqual(
      kept.body.data.map((change: { seq: number }) => change.seq),
      [5, 6, 7, 8, 9],
    );
  });

  test('malformed since, Last-Event-ID or wait: 422 naming the parameter', async (t) => {
    const { api } = await roster(t);
    const { epoch } = await headOf(api);
    const bad = ['abc', `${epoch}.-1`, `${epoch}.1.2`, `${epoch}.`, `.1`, `${epoch}.9007199254740992`, `${epoch}.1e3`];
    for (const since of bad) {
      const { status, body } = await request(`${api}${FEED}?since=${encodeURIComponent(since)}`);
      assert.equal(status, 422, since);
      assert.equal(body.error.details[0].field, 'since', since);
    }
    const stream = await SseClient.open(`${api}${FEED}`, { 'last-event-id': 'nonsense' });
    assert.equal(stream.status, 422);
    for (const wait of ['61', '-1', 'soon']) {
      const { status, body } = await request(`${api}${FEED}?wait=${wait}`);
      assert.deepEqual([status, body.error.details[0].field], [422, 'wait'], wait);
    }
  });
});

describe('change feed: Server-Sent Events', () => {
  test('retry first, then one event per change with its cursor as id; the usual headers', async (t) => {
    const { api } = await roster(t);
    const { epoch } = await headOf(api);
    const stream = await SseClient.open(`${api}${FEED}?since=${epoch}.1`);
    t.after(() => stream.cut());
    assert.equal(stream.status, 200);
    assert.match(stream.headers['content-type']!, /^text\/event-stream/);
    assert.equal(stream.headers['x-content-type-options'], 'nosniff');
    assert.ok(stream.headers['x-request-id']);
    await create(api, 'live');
    await stream.waitFor(3);
    assert.equal(stream.retry, 2000);
    assert.deepEqual(
      stream.events.map((event) => [event.event, event.id]),
      [2, 3, 4].map((seq) => ['change', `${epoch}.${seq}`]),
    );
    assert.equal(stream.changes[2]!.user && (stream.changes[2]!.user as { name: string }).name, 'live');
  });

  test('Last-Event-ID wins over since; a foreign one gets a reset event, then the stream follows', async (t) => {
    const { api } = await roster(t);
    const { epoch, head } = await headOf(api);
    const resumed = await SseClient.open(`${api}${FEED}?since=${epoch}.0`, { 'last-event-id': `${epoch}.2` });
    t.after(() => resumed.cut());
    await resumed.waitFor(1);
    assert.deepEqual(
      resumed.changes.map((change) => change.seq),
      [3],
    );
    const foreign = await SseClient.open(`${api}${FEED}`, { 'last-event-id': 'elsewhere.2' });
    t.after(() => foreign.cut());
    await foreign.waitFor(1);
    assert.deepEqual(foreign.events[0], { id: head, event: 'reset', data: JSON.stringify({ next: head }) });
    await create(api, 'after');
    await foreign.waitFor(2);
    assert.equal(foreign.events[1]!.id, `${epoch}.4`);
  });

  test('a stream that does not read is closed at CHANGES_MAX_BACKLOG; the others get everything', async (t) => {
    const log = new LogWatch();
    const running = await startRoster({ CHANGES_MAX_BACKLOG: '64KiB', LOG_LEVEL: 'warn' }, { logTo: log.stream });
    t.after(() => running.stop());
    const { api } = running;
    const { head } = await headOf(api);
    const idle = await SseClient.open(`${api}${FEED}?since=${head}`);
    const reader = await SseClient.open(`${api}${FEED}?since=${head}`);
    t.after(() => (idle.cut(), reader.cut()));
    idle.stopReading();
    const dropped = log.until(/does not read/, 600_000);
    let closed = false;
    void dropped.then(() => (closed = true));
    const name = 'n'.repeat(190);
    let written = 0;
    // Until the server gives up on it: the socket buffers of both ends (a few MiB) fill first.
    for (; !closed && written < 40_000; written++) await create(api, `${name}${written}`);
    await within(dropped, 1000, 'the idle stream closed');
    for (let more = 0; more < 10; more++, written++) await create(api, `${name}${written}`);
    await reader.waitFor(written, 30_000);
    assert.equal(new Set(reader.changes.map((change) => change.seq)).size, written);
    // The idle client, reading again, finds its stream ended short of the last changes.
    idle.resume();
    await eventually(() => idle.ended, 'the idle stream ends once read', 30_000);
    assert.ok(idle.events.length < written);
  });

  test('streams count against the per-address connection cap: the one past it is refused', async (t) => {
    const { api } = await roster(t, { MAX_CONNECTIONS_PER_ADDRESS: '3' });
    const open: SseClient[] = [];
    for (let i = 0; i < 3; i++) open.push(await SseClient.open(`${api}${FEED}`));
    t.after(() => open.forEach((stream) => stream.cut()));
    await assert.rejects(SseClient.open(`${api}${FEED}`), /ECONNRESET|socket hang up/);
    open[0]!.cut();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const again = await SseClient.open(`${api}${FEED}`);
    assert.equal(again.status, 200);
    again.cut();
  });

  test('streams per client are capped: the one past it gets 429 with Retry-After, the others go on', async (t) => {
    const { api } = await roster(t, { CHANGES_MAX_STREAMS_PER_CLIENT: '3' });
    const open: SseClient[] = [];
    for (let i = 0; i < 3; i++) open.push(await SseClient.open(`${api}${FEED}`));
    t.after(() => open.forEach((stream) => stream.cut()));
    const refused = await within(
      request(`${api}${FEED}`, { headers: { accept: 'text/event-stream' } }),
      10_000,
      'the fourth stream request',
    );
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 'TOO_MANY_CONNECTIONS');
    assert.equal(refused.headers.get('retry-after'), '2');
    await create(api, 'capped');
    for (const stream of open) await stream.waitFor(1);
    assert.deepEqual(
      open.map((stream) => stream.changes.map((change) => change.type)),
      open.map(() => ['created']),
    );
    // A stream that ends gives its place back.
    open[0]!.cut();
    await eventually(async () => {
      const again = await SseClient.open(`${api}${FEED}`);
      again.cut();
      return again.status === 200;
    }, 'a stream once one has ended');
  });

  test('RATE_LIMIT counts a stream as one request, however long it stays open', async (t) => {
    const { api } = await roster(t, { RATE_LIMIT: '3/minute' });
    const stream = await SseClient.open(`${api}${FEED}`);
    t.after(() => stream.cut());
    assert.equal(stream.status, 200);
    assert.equal((await request(`${api}${FEED}`)).status, 200);
    assert.equal((await request(`${api}${FEED}`)).status, 200);
    const over = await request(`${api}${FEED}`);
    assert.equal(over.status, 429);
    assert.equal(over.body.error.code, 'RATE_LIMITED');
  });

  test('shutdown ends the streams at once; it does not wait for them', async () => {
    const running = await startRoster({ SHUTDOWN_TIMEOUT_MS: '30000' });
    const stream = await SseClient.open(`${running.api}${FEED}`);
    await within(running.stop(), 10_000, 'shutdown with a stream open');
    assert.ok(stream.ended || (await new Promise((resolve) => setTimeout(() => resolve(stream.ended), 500))));
  });
});

describe('change feed: AUTH', () => {
  test('needs a reader, as the list does: 401 without a credential, 200 for a reader', async (t) => {
    const { api } = await roster(t, { AUTH: 'apikey', API_KEYS: `${API_KEY_ADMIN}:admin,${API_KEY_READER}` });
    assert.equal((await request(`${api}${FEED}`)).status, 401);
    assert.equal((await SseClient.open(`${api}${FEED}`)).status, 401);
    const reader = { 'x-api-key': API_KEY_READER };
    assert.equal((await request(`${api}${FEED}`, { headers: reader })).status, 200);
    const stream = await SseClient.open(`${api}${FEED}`, reader);
    assert.equal(stream.status, 200);
    await create(api, 'keyed', { 'x-api-key': API_KEY_ADMIN });
    await stream.waitFor(1);
    stream.cut();
  });
});
