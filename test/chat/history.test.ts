/**
 * History and recovery on one instance (CHAT_HISTORY, in memory), over real sockets: a client that asks
 * gets its replay after the welcome, marked, then live messages with ids; a client that reconnects with
 * `since` gets exactly what it missed; a gap older than the history is said, with no partial replay;
 * and a client that does not ask gets the contract's frames, byte for byte.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { historyRequest } from '../../src/chat/history.js';
import { compareIds } from '../../src/protocol/chat-codec.js';
import {
  barrier,
  ChatClient,
  Listening,
  Opcode,
  request,
  Scope,
  SECRET,
  startRoster,
  textMessage,
  texts,
  token,
  within,
  type Message,
} from '../support/index.js';

/** Ids strictly increasing along `messages`. */
function assertIncreasing(messages: Message[]): void {
  for (let i = 1; i < messages.length; i++) {
    assert.ok(compareIds(messages[i - 1].id, messages[i].id) < 0, `id ${messages[i].id} after ${messages[i - 1].id}`);
  }
}

describe('chat history and recovery, one instance', () => {
  test(
    'a client dropped during a burst of 1 000 and back with since has all 1 000, in order, none twice',
    { timeout: 60_000 },
    async (t) => {
      const scope = await Scope.start({ CHAT_HISTORY: '1000' });
      t.after(() => scope.dispose());
      const sender = await scope.client();
      const first = new Listening(`${scope.wsUrl}/?history=0`, { dropAfter: 300 });
      const start = await first.until((m) => m.type === 'history');
      assert.equal(start.count, 0);
      const sent = texts('burst', 1000);
      for (const text of sent) sender.send({ type: 'chat', message: text });
      await within(first.closed, 10_000, 'the listener to drop after 300 messages');
      const seen = first.chats();
      assert.equal(seen.length, 300, 'dropped after 300 of the burst');

      const back = new Listening(`${scope.wsUrl}/?since=${encodeURIComponent(seen.at(-1).id)}`);
      t.after(() => back.terminate());
      await back.until((m) => m.type === 'chat' && m.message === 'burst-999');
      const end = back.messages.find((m) => m.type === 'history');
      assert.equal(end.recovered, true);
      assert.ok(end.count > 0, 'some of it replayed');
      const all = [...seen, ...back.chats()];
      assert.deepEqual(
        all.map((m) => m.message),
        sent,
        'all 1 000, in order, none twice',
      );
      assertIncreasing(all);
      // The replayed ones are marked; the live ones are not.
      const replayed = back.chats().slice(0, end.count);
      assert.ok(replayed.every((m) => m.history === true));
      assert.ok(
        back
          .chats()
          .slice(end.count)
          .every((m) => m.history === undefined),
      );
    },
  );

  test('history=N: the last N after the welcome, marked, then the end of the replay with the position', async (t) => {
    const scope = await Scope.start({ CHAT_HISTORY: '5' });
    t.after(() => scope.dispose());
    const sender = await scope.client();
    const watcher = new Listening(`${scope.wsUrl}/?history=0`);
    t.after(() => watcher.terminate());
    await watcher.until((m) => m.type === 'history');
    for (const text of texts('m', 10)) sender.send({ type: 'chat', message: text });
    await watcher.until((m) => m.message === 'm-9');
    const ids = watcher.chats().map((m) => m.id as string);

    const late = new Listening(`${scope.wsUrl}/?history=3`);
    t.after(() => late.terminate());
    await late.until((m) => m.type === 'history');
    assert.deepEqual(
      late.messages.map((m) => [m.type, m.message ?? null, m.history ?? null]),
      [
        ['system', late.messages[0].message, null],
        ['chat', 'm-7', true],
        ['chat', 'm-8', true],
        ['chat', 'm-9', true],
        ['history', null, null],
      ],
    );
    assert.deepEqual(
      late.chats().map((m) => m.id),
      ids.slice(7),
    );
    const end = late.messages.at(-1);
    assert.deepEqual(Object.keys(end), ['type', 'count', 'last_id', 'timestamp']);
    assert.equal(end.count, 3);
    assert.equal(end.last_id, ids[9]);

    // More than is kept: all that is kept (5).
    const greedy = new Listening(`${scope.wsUrl}/?history=500`);
    t.after(() => greedy.terminate());
    await greedy.until((m) => m.type === 'history');
    assert.deepEqual(
      greedy.chats().map((m) => m.message),
      texts('m', 10).slice(5),
    );
  });

  test('since: exactly the missed ones while they are kept; a gap older than the history, or an unknown id, is said and nothing replayed', async (t) => {
    const scope = await Scope.start({ CHAT_HISTORY: '5' });
    t.after(() => scope.dispose());
    const sender = await scope.client();
    const watcher = new Listening(`${scope.wsUrl}/?history=0`);
    t.after(() => watcher.terminate());
    const origin = (await watcher.until((m) => m.type === 'history')).last_id as string;
    for (const text of texts('m', 10)) sender.send({ type: 'chat', message: text });
    await watcher.until((m) => m.message === 'm-9');
    const ids = watcher.chats().map((m) => m.id as string);

    const since = async (id: string) => {
      const client = new Listening(`${scope.wsUrl}/?since=${encodeURIComponent(id)}`);
      t.after(() => client.terminate());
      const end = await client.until((m) => m.type === 'history');
      return { end, chats: client.chats().map((m) => m.message) };
    };
    // Kept: m-5 … m-9; m-4 is the newest one gone, so whoever saw it misses nothing that is gone.
    const atFloor = await since(ids[4]!);
    assert.deepEqual([atFloor.end.recovered, atFloor.end.count, atFloor.chats], [true, 5, texts('m', 10).slice(5)]);
    assert.deepEqual((await since(ids[7]!)).chats, ['m-8', 'm-9']);
    const upToDate = await since(ids[9]!);
    assert.deepEqual([upToDate.end.recovered, upToDate.end.count, upToDate.chats], [true, 0, []]);
    for (const gap of [ids[3]!, origin, '1-1', 'not-an-id', `${Date.now() + 10_000_000}-0`]) {
      const { end, chats } = await since(gap);
      assert.deepEqual([end.recovered, end.count, chats], [false, 0, []], `since=${gap}`);
      assert.equal(end.last_id, ids[9]);
    }
  });

  test('a client that does not ask gets the contract’s frames, byte for byte, while others ask', async (t) => {
    const scope = await Scope.start({ CHAT_HISTORY: '50' });
    t.after(() => scope.dispose());
    const plain = await scope.raw();
    const asking = new Listening(`${scope.wsUrl}/?history=10`);
    await asking.until((m) => m.type === 'history');
    const sender = await scope.client('/?since=0-0');
    sender.send({ type: 'chat', message: 'hello' });
    sender.send('not json');
    await plain.nextMessage((m) => m.message === 'not json');
    asking.terminate();
    await plain.nextMessage((m) => m.type === 'user_leave' && m.online_count === 2);
    const KEYS: Record<string, string[]> = {
      system: ['type', 'message', 'timestamp'],
      user_join: ['type', 'message', 'online_count', 'timestamp'],
      user_leave: ['type', 'message', 'online_count', 'timestamp'],
      chat: ['type', 'from', 'message', 'timestamp'],
    };
    const frames = plain.frames.filter((frame) => frame.opcode === Opcode.text);
    const seen = frames.map((frame) => {
      const text = frame.payload.toString('utf8');
      const message = textMessage(frame);
      assert.deepEqual(Object.keys(message), KEYS[message.type as string], text);
      assert.equal(text, JSON.stringify(message), 'compact JSON, nothing else');
      assert.deepEqual([frame.fin, frame.rsv, frame.masked], [true, 0, false]);
      return message.type === 'chat' ? `chat:${message.message as string}` : (message.type as string);
    });
    assert.deepEqual(seen, ['system', 'user_join', 'user_join', 'chat:hello', 'chat:not json', 'user_leave']);
    // The asking ones did get ids.
    assert.ok(asking.chats().every((m) => typeof m.id === 'string'));
  });

  test('CHAT_HISTORY=0: asking changes nothing, the frames are the contract’s', async (t) => {
    const scope = await Scope.start({ CHAT_HISTORY: '0' });
    t.after(() => scope.dispose());
    const asking = new Listening(`${scope.wsUrl}/?history=10`);
    t.after(() => asking.terminate());
    const sender = await scope.client();
    sender.send({ type: 'chat', message: 'x' });
    await asking.until((m) => m.message === 'x');
    await barrier(sender, []);
    assert.deepEqual(
      asking.messages.map((m) => m.type),
      ['system', 'user_join', 'chat'],
    );
    assert.deepEqual(Object.keys(asking.chats()[0]), ['type', 'from', 'message', 'timestamp']);
  });

  test('the handshake URL: since wins over history; history must be a whole number', () => {
    assert.equal(historyRequest('/'), undefined);
    assert.equal(historyRequest('/?history=abc'), undefined);
    assert.deepEqual(historyRequest('/?history=7'), { history: 7 });
    assert.deepEqual(historyRequest('/chat?history=7&since=1-2'), { since: '1-2' });
  });

  test('the member list: this process’s room, paginated like the user list', async (t) => {
    const scope = await Scope.start();
    t.after(() => scope.dispose());
    const clients = [];
    for (let i = 0; i < 5; i++) clients.push(await scope.client());
    const ids = (await scope.running.server.chat.localMembers()).map((m) => m.id);
    const page = await request(`${scope.running.api}/chat/members?limit=2&page=2`);
    assert.equal(page.status, 200);
    assert.equal(page.body.status, 'success');
    assert.deepEqual(page.body.data.pagination, { total: 5, page: 2, limit: 2, pages: 3 });
    assert.deepEqual(
      page.body.data.members.map((m: Message) => m.id),
      ids.slice(2, 4),
    );
    assert.deepEqual(Object.keys(page.body.data.members[0]), ['id', 'connected_at']);
    assert.equal((await request(`${scope.running.api}/chat/members?limit=0`)).status, 422);
    await clients[0]!.close();
    // The client's close can complete a moment before the server has counted the member out.
    const deadline = Date.now() + 3000;
    let listed: string[] = [];
    for (;;) {
      const after = await request(`${scope.running.api}/chat/members`);
      listed = after.body.data.members.map((m: Message) => m.id);
      if (listed.length === ids.length - 1 || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.deepEqual(listed, ids.slice(1));
    const docs = await request(`${scope.running.api}/docs`);
    assert.ok(docs.body.data.endpoints.some((e: Message) => e.path === '/api/v1/chat/members' && e.method === 'GET'));
    const openapi = await request(`${scope.running.origin}/api/v1/openapi.json`);
    assert.equal(openapi.status, 200);
    assert.equal(openapi.body.paths['/api/v1/chat/members'].get.tags[0], 'chat');
  });

  test('the member list under AUTH: a reader’s credential, and the principal’s name', async (t) => {
    const KEY = 'k3y-0123456789abcdef';
    const scope = await Scope.start({ AUTH: 'apikey', API_KEYS: KEY });
    t.after(() => scope.dispose());
    await scope.client(`/?api_key=${KEY}`);
    assert.equal((await request(`${scope.running.api}/chat/members`)).status, 401);
    const listed = await request(`${scope.running.api}/chat/members`, { headers: { 'X-API-Key': KEY } });
    assert.equal(listed.status, 200);
    assert.equal(listed.body.data.pagination.total, 1);
    assert.equal(typeof listed.body.data.members[0].name, 'string');
  });

  // docs/decisions.md, "Who may see who is in the chat": the list tells a reader no more than joining
  // the room would (names in join notices, ids in chat frames), and the two together, which is the
  // point of an authenticated chat: who said what. Anonymous callers get 401; without AUTH there are
  // no names to tell.
  test('the member list maps a chat frame’s from to the name its join notice told, for readers only', async (t) => {
    const running = await startRoster({ AUTH: 'jwt', JWT_SECRET: SECRET });
    t.after(() => running.stop());
    const ada = await ChatClient.connect(`${running.wsUrl}/?access_token=${await token({ sub: 'a', name: 'Ada' })}`);
    t.after(() => ada.close());
    const bob = await ChatClient.connect(`${running.wsUrl}/?access_token=${await token({ sub: 'b', name: 'Bob' })}`);
    t.after(() => bob.close());
    const joined = await ada.next((m) => m.type === 'user_join');
    bob.send({ type: 'chat', message: 'hello' });
    const said = await ada.next((m) => m.type === 'chat');
    assert.equal((await request(`${running.api}/chat/members`)).status, 401, 'not to anonymous callers');
    const reader = { authorization: `Bearer ${await token({ sub: 'r', name: 'Reader', role: 'user' })}` };
    const members = (await request(`${running.api}/chat/members`, { headers: reader })).body.data.members as {
      id: string;
      name?: string;
    }[];
    assert.deepEqual(
      members.map((member) => member.name),
      ['Ada', 'Bob'],
    );
    assert.equal(members.find((member) => member.id === said.from)?.name, joined.name, 'Bob said it, as his join told');

    const open = await startRoster();
    t.after(() => open.stop());
    const someone = await ChatClient.connect(open.wsUrl);
    t.after(() => someone.close());
    const anonymous = (await request(`${open.api}/chat/members`)).body.data.members as Record<string, unknown>[];
    assert.equal(anonymous.length, 1);
    assert.equal('name' in anonymous[0]!, false, 'without AUTH, no names');
  });
});
