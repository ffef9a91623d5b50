/**
 * The notice policy of a large room (CHAT_NOTICES_MAX_MEMBERS, docs/decisions.md "Join and leave
 * notices in a large room"), with real Roster processes and real WebSocket clients: a room that grows
 * past the threshold and shrinks back below it, on one instance and across two on Redis. Members hear
 * of each join while the room is at or below it, then coalesced notices (at most one of each kind a
 * second, saying how many, with the count when sent), then of each join and leave again; welcomes,
 * chat and the member list are unchanged, and the counts end where the member list does.
 */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { type ChatClient, eventually, Instance, request, roomUrl, WITHOUT_REDIS } from '../support/index.js';

const MAX = 3;
/** One event's notice, as the contract words it. */
const SINGLE = /^A user (joined|left) the chat$/;
/** A coalesced notice: how many joined or left. */
const COALESCED = /^(\d+) users? (joined|left) the chat$/;

interface Notice {
  type: 'user_join' | 'user_leave';
  /** How many events it stands for: 1 for the contract's own notice. */
  events: number;
  coalesced: boolean;
  count: number;
  at: number;
}

/** Every join and leave notice each client got, in order. */
const heard = new Map<ChatClient, Notice[]>();

function record(client: ChatClient): ChatClient {
  const notices: Notice[] = [];
  heard.set(client, notices);
  client.ws.on('message', (data) => {
    const message = JSON.parse(data.toString());
    if (message.type !== 'user_join' && message.type !== 'user_leave') return;
    const single = SINGLE.exec(message.message);
    const coalesced = COALESCED.exec(message.message);
    assert.ok(single || coalesced, `a notice worded neither way: ${data.toString()}`);
    notices.push({
      type: message.type,
      events: coalesced ? Number(coalesced[1]) : 1,
      coalesced: Boolean(coalesced),
      count: message.online_count,
      at: Date.parse(`${message.timestamp}Z`),
    });
  });
  return client;
}

async function join(instance: Instance): Promise<{ client: ChatClient; count: number }> {
  const { client, welcome } = await instance.join();
  record(client);
  return { client, count: Number(/(\d+) users? online/.exec(welcome.message)![1]) };
}

/** The notices `client` got from `from` on, once it has had `events` of `type` ending at `count`. */
async function settle(client: ChatClient, from: number, type: Notice['type'], events: number, count: number) {
  return eventually(
    () => {
      const since = heard.get(client)!.slice(from);
      const told = since.filter((n) => n.type === type).reduce((sum, n) => sum + n.events, 0);
      return told === events && since.at(-1)?.count === count ? since : undefined;
    },
    `${events} ${type} ending at ${count}, seen: ${JSON.stringify(heard.get(client)!.slice(from))}`,
    10_000,
  );
}

async function listed(instance: Instance): Promise<number> {
  const reply = await request(`${instance.api}/chat/members`);
  assert.equal(reply.status, 200);
  return reply.body.data.pagination.total as number;
}

/** The whole crossing, with members spread over `instances` in turn. */
async function crossing(t: TestContext, instances: Instance[]): Promise<void> {
  const on = (i: number) => instances[i % instances.length]!;
  // At or below MAX: each join told on its own, with its count.
  const first = (await join(on(0))).client;
  const members = [first];
  for (let count = 2; count <= MAX; count++) {
    const marks = members.map((member) => heard.get(member)!.length);
    const joined = await join(on(count - 1));
    // Across instances a welcome may not count a join still crossing Redis; the notices below do.
    if (instances.length === 1) assert.equal(joined.count, count);
    for (const [i, member] of members.entries()) await settle(member, marks[i]!, 'user_join', 1, count);
    members.push(joined.client);
  }
  for (const member of members)
    assert.ok(
      heard.get(member)!.every((n) => !n.coalesced),
      'below the threshold every join is told on its own',
    );

  // Past MAX: three joins at once, told as coalesced notices.
  const marks = members.map((member) => heard.get(member)!.length);
  const crowd = await Promise.all([3, 4, 5].map((i) => join(on(i))));
  if (instances.length === 1)
    assert.deepEqual(crowd.map((c) => c.count).sort(), [4, 5, 6], 'each welcome has the count with its joiner');
  for (const [i, member] of members.entries()) {
    const since = await settle(member, marks[i]!, 'user_join', 3, 6);
    assert.ok(since.length > 0 && since.every((n) => n.coalesced && n.type === 'user_join'), JSON.stringify(since));
    for (let k = 1; k < since.length; k++)
      assert.ok(
        since[k]!.at - since[k - 1]!.at >= 950,
        `two coalesced joins within a second: ${JSON.stringify(since)}`,
      );
  }
  members.push(...crowd.map((c) => c.client));
  const six = members.slice();

  // Chat is untouched: one message reaches every member once.
  const sender = six[5]!;
  sender.send({ type: 'chat', message: 'to the crowd' });
  await Promise.all(six.map((m) => m.next((message) => message.message === 'to the crowd')));
  await new Promise((resolve) => setTimeout(resolve, 200));
  for (const member of six)
    assert.ok(!member.messages.some((message) => message.message === 'to the crowd'), 'the chat came once');

  // Leaving while still past MAX: coalesced leaves; back at MAX, each leave told on its own again.
  const watcher = six[0]!;
  let mark = heard.get(watcher)!.length;
  await Promise.all([six[5]!.close(), six[4]!.close()]);
  const leaves = await settle(watcher, mark, 'user_leave', 2, 4);
  assert.ok(
    leaves.every((n) => n.coalesced),
    JSON.stringify(leaves),
  );
  mark = heard.get(watcher)!.length;
  await six[3]!.close();
  const [back] = await settle(watcher, mark, 'user_leave', 1, MAX);
  assert.deepEqual([back!.coalesced, back!.count], [false, MAX], 'at the threshold a leave is told on its own');
  mark = heard.get(watcher)!.length;
  await six[2]!.close();
  await settle(watcher, mark, 'user_leave', 1, MAX - 1);

  // Below it again: a join told on its own, to every member, with its count.
  const before = [six[0]!, six[1]!].map((member) => heard.get(member)!.length);
  const last = await join(on(6));
  assert.equal(last.count, MAX);
  for (const [i, member] of [six[0]!, six[1]!].entries()) {
    // The join's notice; a leave from the other instance may still have been crossing Redis before it.
    const since = await settle(member, before[i]!, 'user_join', 1, MAX);
    const joins = since.filter((notice) => notice.type === 'user_join');
    assert.deepEqual(
      joins.map((notice) => [notice.coalesced, notice.count]),
      [[false, MAX]],
      JSON.stringify(since),
    );
  }
  // Settled: every count the members last heard is what the member list says, on every instance.
  for (const instance of instances) assert.equal(await listed(instance), MAX);
  for (const member of [six[0]!, six[1]!]) assert.equal(heard.get(member)!.at(-1)!.count, MAX);
  t.diagnostic(`${instances.length} instance(s): ${JSON.stringify(heard.get(watcher)!.map((n) => n.events))}`);
}

describe('the notice policy of a large room (CHAT_NOTICES_MAX_MEMBERS)', () => {
  test('one instance: per-join notices, coalesced past the threshold, per-join again below it', async (t) => {
    const instance = await Instance.start(t, { CHAT_NOTICES_MAX_MEMBERS: String(MAX) });
    await crossing(t, [instance]);
  });

  test(
    'two instances on Redis: the same crossing, counts matching the member list',
    { skip: WITHOUT_REDIS, timeout: 60_000 },
    async (t) => {
      const url = roomUrl();
      const env = { REDIS_URL: url, CHAT_NOTICES_MAX_MEMBERS: String(MAX), CHAT_HISTORY: '0' };
      const instances = await Promise.all([Instance.start(t, env), Instance.start(t, env)]);
      await crossing(t, instances);
    },
  );
});
