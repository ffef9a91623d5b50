/**
 * The typed client (src/protocol/client), generated from the OpenAPI and AsyncAPI documents, against a live
 * Roster over real sockets: every operation of the OpenAPI document is a method named by its
 * operationId, and each is called here with its success and, where it has one, an error reply in the
 * shared `ErrorEnvelope`; the chat is joined, spoken to and pinged through the same module.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  connectChat,
  createRosterClient,
  type ErrorEnvelope,
  type OperationName,
  type RosterClient,
  type ServerMessage,
  type User,
  type UserList,
} from '../../src/protocol/client/index.js';
import { redirectingApi, startRoster, within, type Running } from '../support/index.js';

const WAIT_MS = 10_000;

/** The error envelope of a reply the client typed as one, after checking its status. */
function refused(reply: { error?: ErrorEnvelope; response: Response }, status: number, code: string): ErrorEnvelope {
  assert.equal(reply.response.status, status);
  assert.ok(reply.error, `a ${status} carries the error envelope`);
  const envelope: ErrorEnvelope = reply.error;
  assert.equal(envelope.status, 'error');
  assert.equal(envelope.error.code, code);
  assert.equal(typeof envelope.error.message, 'string');
  return envelope;
}

describe('the client generated from the OpenAPI document, against a live Roster', () => {
  let roster: Running;
  let client: RosterClient;
  before(async () => {
    roster = await startRoster({ ROLES: 'admin,user', STRICT_VALIDATION: 'true' });
    client = createRosterClient({ url: roster.api });
  });
  after(() => roster.stop());

  test('its methods are exactly the operationIds of the served document (but HEAD and OPTIONS)', async () => {
    const { data } = await client.getOpenApi();
    const doc = data as { paths: Record<string, Record<string, { operationId: string }>> };
    const served = Object.values(doc.paths)
      .flatMap((item) => Object.values(item).map((operation) => operation.operationId))
      .filter((id) => !id.endsWith('Head') && !id.startsWith('options'))
      .sort();
    // walkUsers is listUsers, page after page; changesPage and watchUsers are listUserChanges, as a page
    // with a 410's cursor and as its event stream.
    const composed = new Set(['http', 'walkUsers', 'changesPage', 'watchUsers']);
    const methods: OperationName[] = Object.keys(client)
      .filter((key) => !composed.has(key))
      .sort() as OperationName[];
    assert.deepEqual(methods, served);
  });

  test('walkUsers: every page of a list by its Link rel="next", then none; a refused page ends the walk', async () => {
    for (let n = 0; n < 5; n++)
      assert.equal(
        (await client.createUser({ name: `Walk ${n}`, email: `walk${n}@example.com` })).response.status,
        201,
      );
    const query = { search: 'walk', sort: 'name', order: 'asc', limit: 2 };
    const pages: string[][] = [];
    for await (const page of client.walkUsers(query)) {
      assert.equal(page.response.status, 200);
      pages.push(page.data!.data.users.map((user) => user.name));
      // A cursor that does not move on would be followed forever: 5 users make at most 5 + 2 pages.
      assert.ok(pages.length <= 5 + 2, `the walk does not end: ${JSON.stringify(pages.slice(-3))}`);
    }
    assert.deepEqual(pages, [['Walk 0', 'Walk 1'], ['Walk 2', 'Walk 3'], ['Walk 4']]);
    const refusedPages = [];
    for await (const page of client.walkUsers({ ...query, after: 'not-a-cursor' })) {
      refusedPages.push(page);
      assert.ok(refusedPages.length <= 1, 'a refused page ends the walk');
    }
    assert.equal(refusedPages.length, 1);
    refused(refusedPages[0]!, 422, 'VALIDATION_ERROR');
    for (let n = 0; n < 5; n++) {
      const { data } = await client.listUsers({ search: `walk${n}@` });
      assert.equal((await client.deleteUser(data!.data.users[0]!.id)).response.status, 204);
    }
  });

  test('walkUsers throws when a page\'s Link: rel="next" names a page the walk has read already', async () => {
    for (let n = 0; n < 3; n++)
      assert.equal(
        (await client.createUser({ name: `Cycle ${n}`, email: `cycle${n}@example.com` })).response.status,
        201,
      );
    const query = { search: 'cycle', sort: 'name', order: 'asc', limit: 1 } as const;
    const second = (await client.listUsers(query)).response.headers.get('link')!;
    assert.match(second, /rel="next"/);
    // A fetch (standing for a proxy gone wrong) that gives every reply the first page's next link.
    const looping = createRosterClient({
      url: roster.api,
      fetch: async (request) => {
        const reply = await fetch(request);
        const headers = new Headers(reply.headers);
        headers.set('link', second);
        return new Response(await reply.arrayBuffer(), { status: reply.status, headers });
      },
    });
    const names: string[] = [];
    await assert.rejects(
      (async () => {
        for await (const page of looping.walkUsers(query)) {
          names.push(...page.data!.data.users.map((user) => user.name));
          assert.ok(names.length <= 3, `the walk does not end: ${names.join(', ')}`);
        }
      })(),
      /Link: rel="next" names a page this walk has read already \(.*after=/,
    );
    assert.deepEqual(names, ['Cycle 0', 'Cycle 1']);
    for (let n = 0; n < 3; n++) {
      const { data } = await client.listUsers({ search: `cycle${n}@` });
      assert.equal((await client.deleteUser(data!.data.users[0]!.id)).response.status, 204);
    }
  });

  test('createUser, getUser, replaceUser, updateUser, deleteUser: each reply and its errors', async () => {
    const created = await client.createUser({ name: 'Grace Hopper', email: 'grace@example.com', role: 'admin' });
    assert.equal(created.response.status, 201);
    const grace: User = created.data!.data;
    assert.equal(created.data!.status, 'success');
    assert.deepEqual([grace.name, grace.email, grace.role], ['Grace Hopper', 'grace@example.com', 'admin']);
    assert.match(grace.id, /^[0-9a-f-]{36}$/);

    refused(await client.createUser({ name: 'Again', email: 'GRACE@example.com' }), 409, 'EMAIL_EXISTS');
    const invalid = refused(await client.createUser({ name: '', email: 'not-an-email' }), 422, 'VALIDATION_ERROR');
    assert.deepEqual(invalid.error.details?.map((detail) => detail.field).sort(), ['email', 'name']);

    const read = await client.getUser(grace.id);
    assert.equal(read.response.status, 200);
    assert.deepEqual(read.data!.data, grace);
    refused(await client.getUser('00000000-0000-4000-8000-000000000000'), 404, 'USER_NOT_FOUND');

    const replaced = await client.replaceUser(grace.id, { name: 'Grace B. Hopper', email: 'gbh@example.com' });
    assert.equal(replaced.response.status, 200);
    assert.deepEqual([replaced.data!.data.name, replaced.data!.data.role], ['Grace B. Hopper', 'user']);
    refused(await client.replaceUser(grace.id, { name: 'No email' } as never), 422, 'VALIDATION_ERROR');

    const updated = await client.updateUser(grace.id, { role: 'admin' });
    assert.equal(updated.response.status, 200);
    assert.deepEqual([updated.data!.data.email, updated.data!.data.role], ['gbh@example.com', 'admin']);
    refused(await client.updateUser(grace.id, { role: 'pilot' }), 422, 'VALIDATION_ERROR');

    const deleted = await client.deleteUser(grace.id);
    assert.equal(deleted.response.status, 204);
    assert.equal(deleted.data, undefined);
    refused(await client.deleteUser(grace.id), 404, 'USER_NOT_FOUND');
    refused(await client.getUser(grace.id), 404, 'USER_NOT_FOUND');
  });

  test("a role of another Roster's ROLES: the client sends it, that Roster accepts it", async (t) => {
    const other = await startRoster({ ROLES: 'admin,user,auditor' });
    t.after(() => other.stop());
    const created = await createRosterClient({ url: other.origin }).createUser({
      name: 'Audrey Auditor',
      email: 'audrey@example.com',
      role: 'auditor',
    });
    assert.equal(created.response.status, 201);
    assert.equal(created.data!.data.role, 'auditor');
    refused(
      await client.createUser({ name: 'Audrey', email: 'audrey@example.com', role: 'auditor' }),
      422,
      'VALIDATION_ERROR',
    );
  });

  test('listUsers with role, search, sort, order and pages', async () => {
    for (const [name, role] of [
      ['Zed Listed', 'user'],
      ['Amy Listed', 'admin'],
      ['Bob Listed', 'admin'],
    ] as const)
      assert.equal(
        (await client.createUser({ name, email: `${name.split(' ')[0]!.toLowerCase()}@listed.example`, role })).response
          .status,
        201,
      );
    const admins = await client.listUsers({ role: 'admin', search: 'listed', sort: 'name', order: 'asc' });
    assert.equal(admins.response.status, 200);
    const list: UserList = admins.data!.data;
    assert.deepEqual(
      list.users.map((user) => user.name),
      ['Amy Listed', 'Bob Listed'],
    );
    assert.deepEqual(list.pagination, { total: 2, page: 1, limit: 20, pages: 1 });

    const second = await client.listUsers({ search: 'LISTED', sort: 'name', order: 'desc', page: 2, limit: 1 });
    assert.deepEqual(
      second.data!.data.users.map((user) => user.name),
      ['Bob Listed'],
    );
    assert.deepEqual(second.data!.data.pagination, { total: 3, page: 2, limit: 1, pages: 3 });
    refused(await client.listUsers({ page: 0 }), 422, 'VALIDATION_ERROR');
  });

  test('getHealth, getDocs, getOpenApi, getAsyncApi, getLiveness, getReadiness, getMetrics', async () => {
    const health = await client.getHealth();
    assert.equal(health.response.status, 200);
    assert.equal(health.data!.data.status, 'healthy');
    assert.equal(typeof health.data!.data.instance, 'string');

    const docs = await client.getDocs();
    assert.ok(docs.data!.data.endpoints.some((endpoint) => endpoint.path === '/api/v1/users/<id>'));

    const openapi = await client.getOpenApi();
    assert.equal((openapi.data as { openapi?: string }).openapi, '3.1.0');
    const asyncapi = await client.getAsyncApi();
    assert.equal((asyncapi.data as { asyncapi?: string }).asyncapi, '3.0.0');

    assert.deepEqual((await client.getLiveness()).data!.data, { status: 'alive' });
    assert.deepEqual((await client.getReadiness()).data!.data, { status: 'ready' });

    const metrics = await client.getMetrics();
    assert.equal(metrics.response.status, 200);
    assert.match(String(metrics.data), /^roster_http_requests_total\{/m);
  });

  test('listChatMembers and the chat, through connectChat: welcome, chat echo, pong', async () => {
    const heard: ServerMessage[] = [];
    let wake: () => void = () => undefined;
    const next = async (type: ServerMessage['type']) => {
      for (;;) {
        const found = heard.find((message) => message.type === type);
        if (found) return found;
        await within(new Promise<void>((resolve) => (wake = resolve)), WAIT_MS, `a ${type} message`);
      }
    };
    const chat = await connectChat(roster.wsUrl, (message) => {
      heard.push(message);
      wake();
    });
    try {
      assert.match((await next('system')).type, /^system$/);
      const members = await client.listChatMembers({ page: 1, limit: 10 });
      assert.equal(members.response.status, 200);
      assert.equal(members.data!.data.pagination.total, 1);

      assert.equal(chat.send({ type: 'chat', message: 'hello from the typed client' }), true);
      const echo = await next('chat');
      assert.ok(echo.type === 'chat');
      assert.equal(echo.message, 'hello from the typed client');
      assert.equal(echo.from, members.data!.data.members[0]!.id);

      assert.equal(chat.send({ type: 'ping' }), true);
      assert.match((await next('pong')).timestamp, /^\d{4}-\d{2}-\d{2}T/);
    } finally {
      chat.close();
    }
    refused(await client.listChatMembers({ limit: 0 }), 422, 'VALIDATION_ERROR');
  });
});

describe('the client and redirects', () => {
  test('with headers (a credential), a redirect is refused and nothing reaches its target; without, it is followed', async (t) => {
    const { url, seen } = await redirectingApi(t);
    const keyed = createRosterClient({ url, headers: { 'x-api-key': 'secret-key-0123456789' } });
    await assert.rejects(keyed.getUser('u-1'), /fetch failed|redirect/);
    assert.deepEqual(seen, [], 'the key went nowhere else');
    const anonymous = createRosterClient({ url });
    assert.equal((await anonymous.getUser('u-1')).response.status, 404, 'followed');
    assert.deepEqual(seen, [undefined]);
  });
});
