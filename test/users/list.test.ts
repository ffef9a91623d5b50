/** GET /api/v1/users: role filter, search, sort, order and pagination, over real HTTP. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request, startOn, TEST_STORES, type Running, type TestStore } from '../support/index.js';

/** The suite against one store backend; `startRoster` starts Roster on a fresh store of it. */
function suite(store: TestStore): void {
  const startRoster = (env: Record<string, string> = {}) => startOn(store, env);
  let roster: Running;
  /** Names in creation order: the 3 seeds, then these. */
  const PEOPLE = [
    { name: 'Zed Zimmer', email: 'zed@corp.example', role: 'admin' },
    { name: 'amy Archer', email: 'amy@corp.example', role: 'user' },
    { name: 'Bob Baker', email: 'BOB@Home.example', role: 'user' },
    { name: 'Cleo Corp', email: 'cleo@elsewhere.example', role: 'admin' },
  ];

  before(async () => {
    roster = await startRoster({ MAX_PAGE_SIZE: '5' });
    for (const person of PEOPLE) {
      const response = await request(`${roster.api}/users`, { method: 'POST', body: person });
      assert.equal(response.status, 201);
    }
  });
  after(() => roster.stop());

  const list = async (query = '') => {
    const response = await request(`${roster.api}/users${query}`);
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.status, 'success');
    return response.body.data as {
      users: { name: string; role: string; created_at: string }[];
      pagination: Record<string, number>;
    };
  };
  const names = async (query: string) => (await list(query)).users.map((u) => u.name);

  describe('list', () => {
    test('defaults: page 1, limit 20 clamped to MAX_PAGE_SIZE, newest first', async () => {
      const data = await list();
      assert.deepEqual(data.pagination, { total: 7, page: 1, limit: 5, pages: 2 });
      assert.deepEqual(data.users.map((u) => u.name).slice(0, 4), [
        'Cleo Corp',
        'Bob Baker',
        'amy Archer',
        'Zed Zimmer',
      ]);
      const stamps = data.users.map((u) => u.created_at);
      assert.deepEqual([...stamps].sort().reverse(), stamps);
    });

    test('limit above the maximum is clamped and reported, however large', async () => {
      assert.equal((await list('?limit=500')).pagination.limit, 5);
      assert.equal((await list('?limit=99999999999999999999999999999')).pagination.limit, 5);
      assert.equal((await list('?limit=007')).pagination.limit, 5);
    });

    test('a page far beyond the last is empty, and reported as asked', async () => {
      const data = await list('?page=999999999999999');
      assert.deepEqual(data.users, []);
      assert.equal(data.pagination.page, 999999999999999);
    });

    test('pages: items (page-1)*limit up to page*limit, pages = ceil(total/limit)', async () => {
      const all = (await list('?order=asc&limit=5')).users.map((u) => u.name);
      const pageTwo = await list('?order=asc&limit=2&page=2');
      assert.deepEqual(pageTwo.pagination, { total: 7, page: 2, limit: 2, pages: 4 });
      assert.deepEqual(
        pageTwo.users.map((u) => u.name),
        all.slice(2, 4),
      );
      const last = await list('?order=asc&limit=2&page=4');
      assert.equal(last.users.length, 1);
      const beyond = await list('?limit=2&page=99');
      assert.deepEqual(beyond.users, []);
      assert.equal(beyond.pagination.page, 99);
      assert.equal(beyond.pagination.total, 7);
    });

    test('role filter keeps exact matches only', async () => {
      const admins = await list('?role=admin');
      assert.equal(admins.pagination.total, 3);
      assert.ok(admins.users.every((u) => u.role === 'admin'));
      assert.equal((await list('?role=ADMIN')).pagination.total, 0);
      assert.equal((await list('?role=')).pagination.total, 0);
    });

    test('search: name or email contains, case-insensitive', async () => {
      assert.deepEqual(await names('?search=ARCHER'), ['amy Archer']);
      assert.deepEqual(await names('?search=home.EXAMPLE'), ['Bob Baker']);
      assert.deepEqual(await names('?search=corp&order=asc'), ['Zed Zimmer', 'amy Archer', 'Cleo Corp']);
      const none = await list('?search=nobody-here');
      assert.deepEqual(none.pagination, { total: 0, page: 1, limit: 5, pages: 0 });
    });

    test('role filter, then search, then sort, then slice', async () => {
      const data = await list('?role=admin&search=corp&sort=name&order=asc&limit=1&page=2');
      assert.deepEqual(data.pagination, { total: 2, page: 2, limit: 1, pages: 2 });
      assert.deepEqual(
        data.users.map((u) => u.name),
        ['Zed Zimmer'],
      );
    });

    test('sort by name: code-point order, desc by default, anything else ascending', async () => {
      const asc = await names('?sort=name&order=asc&role=user');
      assert.deepEqual(
        asc,
        [...asc].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      );
      assert.deepEqual(await names('?sort=name&role=user'), [...asc].reverse());
      assert.deepEqual(await names('?sort=name&order=ASCENDING&role=user'), asc);
      assert.deepEqual(await names('?sort=name&order=DESC&role=user'), asc);
    });

    test('sort by a field no user has keeps creation order', async () => {
      const byCreation = await names('?order=asc&limit=5');
      assert.deepEqual(await names('?sort=shoe_size&limit=5'), byCreation);
      assert.deepEqual(await names('?sort=__proto__&limit=5'), byCreation);
    });

    for (const [query, field] of [
      ['?page=abc', 'page'],
      ['?page=0', 'page'],
      ['?page=-1', 'page'],
      ['?page=1.5', 'page'],
      ['?page=1e309', 'page'],
      ['?page=', 'page'],
      ['?page=1&page=2', 'page'],
      ['?limit=abc', 'limit'],
      ['?limit=0', 'limit'],
      ['?limit=-1', 'limit'],
      ['?limit=1.5', 'limit'],
      ['?limit=1e309', 'limit'],
      ['?page=1234567890123456', 'page'],
    ] as const) {
      test(`${query}: 422 VALIDATION_ERROR naming ${field}`, async () => {
        const { status, body } = await request(`${roster.api}/users${query}`);
        assert.equal(status, 422);
        assert.equal(body.error.code, 'VALIDATION_ERROR');
        assert.deepEqual(
          body.error.details.map((d: { field: string }) => d.field),
          [field],
        );
      });
    }

    test('both page and limit bad: both named', async () => {
      const { body } = await request(`${roster.api}/users?page=x&limit=y`);
      assert.deepEqual(body.error.details.map((d: { field: string }) => d.field).sort(), ['limit', 'page']);
    });
  });

  describe('cursor (after) and Link: rel="next"', () => {
    /**
     * The pages of a walk from `query`, following each Link rel="next" (root-relative) until none. A
     * cursor that does not move on (a page naming its own cursor again) would be followed forever: no
     * walk of the list's users has more pages than users + 2, so one that does fails at once.
     */
    const walk = async (query: string) => {
      const pages: { users: { name: string }[]; pagination: Record<string, number>; link: string | null }[] = [];
      for (let url: string | undefined = `${roster.api}/users${query}`; url !== undefined;) {
        const most = pages.length === 0 ? 1 : pages[0]!.pagination.total! + 2;
        assert.ok(pages.length < most, `the walk from ${query} does not end: ${pages.length} pages, at ${url}`);
        const response = await request(url);
        assert.equal(response.status, 200, response.text);
        const link = response.headers.get('link');
        pages.push({ ...response.body.data, link });
        const next = link === null ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
        if (link !== null) assert.ok(next?.startsWith('/api/v1/users?'), link);
        url = next === undefined ? undefined : new URL(next, roster.api).href;
      }
      return pages;
    };
    const allNames = async (query: string) => [
      ...(await names(`${query}&limit=5&page=1`)),
      ...(await names(`${query}&limit=5&page=2`)),
    ];

    test("a walk by Link visits every user once, in the list's order; the last page has no Link", async () => {
      for (const query of [
        '?sort=name&order=asc',
        '?sort=email',
        '?sort=role&order=asc',
        '?sort=created_at',
        '?sort=nope',
      ]) {
        const pages = await walk(`${query}&limit=2`);
        assert.deepEqual(
          pages.flatMap((page) => page.users.map((user) => user.name)),
          await allNames(query),
          query,
        );
        assert.equal(pages.length, 4, `${query}: 7 users by 2`);
        assert.equal(pages.at(-1)!.link, null, `${query}: no Link on the last page`);
        for (const page of pages.slice(0, -1)) assert.notEqual(page.link, null);
        // The first page was asked by number; the others by cursor, which have none.
        assert.deepEqual(pages[0]!.pagination, { total: 7, page: 1, limit: 2, pages: 4 });
        for (const page of pages.slice(1)) assert.deepEqual(page.pagination, { total: 7, page: 0, limit: 2, pages: 4 });
      }
    });

    test('the next URL keeps role, search, sort, order and limit as sent, and drops page', async () => {
      const query = '?role=user&search=%20&sort=name&order=asc&limit=1&page=1';
      const pages = await walk(query);
      const next = new URL(/^<([^>]+)>/.exec(pages[0]!.link!)![1]!, roster.api);
      assert.deepEqual([...next.searchParams.keys()].sort(), ['after', 'limit', 'order', 'role', 'search', 'sort']);
      assert.equal(next.searchParams.get('search'), ' ');
      assert.equal(next.searchParams.get('role'), 'user');
      assert.deepEqual(
        pages.flatMap((page) => page.users.map((user) => user.name)),
        await names('?role=user&search=%20&sort=name&order=asc&limit=5'),
      );
      assert.ok(pages.length > 2);
    });

    test('the same next page asked in other words: each Link keeps its own request’s parameters', async () => {
      // The default order is descending creation, so these four ask for one list and one next page:
      // the same cursor, with the parameters each request sent (the server keeps the last Link made).
      const queries = ['?limit=3', '?order=desc&limit=3', '?sort=created_at&order=desc&limit=3', '?limit=3'];
      const links: URL[] = [];
      for (const query of queries) {
        const link = (await request(`${roster.api}/users${query}`)).headers.get('link')!;
        links.push(new URL(/^<([^>]+)>/.exec(link)![1]!, roster.api));
      }
      assert.deepEqual(
        links.map((next) => [...next.searchParams.keys()].join()),
        ['limit,after', 'order,limit,after', 'sort,order,limit,after', 'limit,after'],
      );
      assert.equal(new Set(links.map((next) => next.searchParams.get('after'))).size, 1);
      const other = (await request(`${roster.api}/users?limit=4`)).headers.get('link')!;
      assert.notEqual(
        new URL(/^<([^>]+)>/.exec(other)![1]!, roster.api).searchParams.get('after'),
        links[0]!.searchParams.get('after'),
      );
    });

    test('a page that no user follows has no Link, by page number too', async () => {
      const response = await request(`${roster.api}/users?limit=5&page=2`);
      assert.equal(response.headers.get('link'), null);
      assert.notEqual((await request(`${roster.api}/users?limit=5&page=1`)).headers.get('link'), null);
    });

    test('a cursor altered, malformed, or of another list, and after with page: 422 VALIDATION_ERROR naming the parameter', async () => {
      const first = await request(`${roster.api}/users?sort=name&order=asc&limit=2&role=user`);
      const after = new URL(/^<([^>]+)>/.exec(first.headers.get('link')!)![1]!, roster.api).searchParams.get('after')!;
      const flipped = `${after.slice(0, 3)}${after[3] === 'A' ? 'B' : 'A'}${after.slice(4)}`;
      const cases: [string, string][] = [
        [`?sort=name&order=asc&limit=2&role=user&after=nonsense`, 'after'],
        [`?sort=name&order=asc&limit=2&role=user&after=${encodeURIComponent(flipped)}`, 'after'],
        [`?sort=name&order=asc&limit=2&role=user&after=${after.slice(0, -1)}`, 'after'],
        [`?sort=email&order=asc&limit=2&role=user&after=${after}`, 'after'],
        [`?sort=name&limit=2&role=user&after=${after}`, 'after'],
        [`?sort=name&order=asc&limit=2&role=admin&after=${after}`, 'after'],
        [`?sort=name&order=asc&limit=2&after=${after}`, 'after'],
        [`?sort=name&order=asc&limit=2&role=user&search=a&after=${after}`, 'after'],
        [`?sort=name&order=asc&limit=2&role=user&page=2&after=${after}`, 'page'],
        [`?after=`, 'after'],
      ];
      for (const [query, field] of cases) {
        const { status, body } = await request(`${roster.api}/users${query}`);
        assert.equal(status, 422, query);
        assert.equal(body.status, 'error');
        assert.equal(body.error.code, 'VALIDATION_ERROR', query);
        assert.deepEqual(
          body.error.details.map((d: { field: string }) => d.field),
          [field],
          query,
        );
      }
      // The same cursor with another limit is still this list's.
      const other = await request(`${roster.api}/users?sort=name&order=asc&limit=3&role=user&after=${after}`);
      assert.equal(other.status, 200, other.text);
    });
  });
}

for (const store of TEST_STORES) {
  describe(`the list operation (${store.name} store)`, { skip: store.skip }, () => suite(store));
}
