/**
 * Hardening of the REST port: hostile input over real sockets, each test ending with
 * the shared health check (health 200, a chat round trip, the users planted before the attack intact).
 * Cases already covered in test/http and test/users (malformed JSON, JSON that is not an object, wrong
 * content type, body and Content-Length over the limit, bad page/limit, unknown routes and methods) are
 * not repeated here; the concurrency cases are, at 200 simultaneous requests instead of their 50 or 40.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  assertCommonHeaders,
  assertErrorEnvelope,
  assertValidationError,
  plainRequest,
  prototypeSnapshot,
  rawHttp,
  request,
  startHardened as startHardenedOn,
  TEST_STORES,
  USER_KEYS,
  within,
  type Hardened,
  type HttpExchange,
  type JsonResponse,
  type TestStore,
  type UserRecord,
} from '../support/index.js';

/** The suite against one store backend. */
function suite(store: TestStore): void {
  /** startHardened on a fresh store of this backend, dropped when it stops. */
  const startHardened = async (env: Record<string, string> = {}): Promise<Hardened> => {
    const fresh = await store.fresh();
    const hardened = await startHardenedOn({ ...fresh.env, ...env }).catch(async (error: unknown) => {
      await fresh.drop();
      throw error;
    });
    return {
      ...hardened,
      stop: async () => {
        try {
          await hardened.stop();
        } finally {
          await fresh.drop();
        }
      },
    };
  };
  let roster: Hardened;
  /** The same service with STRICT_VALIDATION=true. */
  let strict: Hardened;
  const prototypeBefore = prototypeSnapshot();

  before(async () => {
    [roster, strict] = await Promise.all([startHardened(), startHardened({ STRICT_VALIDATION: 'true' })]);
  });
  after(async () => {
    await Promise.all([roster.stop(), strict.stop()]);
  });

  const api = () => roster.running.api;
  const restPort = (server: Hardened = roster) => Number(new URL(server.running.origin).port);
  const email = (label = 'user') => `${label}.${randomUUID()}@example.com`;
  const JSON_TYPE = { 'content-type': 'application/json' };

  /** Sends a JSON text body as is (so that it may hold what a JS object literal cannot, like `__proto__`). */
  function send(server: Hardened, method: string, path: string, body?: string): Promise<JsonResponse> {
    return request(`${server.running.api}${path}`, { method, body, headers: body === undefined ? {} : JSON_TYPE });
  }

  async function createUser(server: Hardened = roster, fields: Record<string, unknown> = {}): Promise<UserRecord> {
    const response = await send(
      server,
      'POST',
      '/users',
      JSON.stringify({ name: 'Victim', email: email('victim'), ...fields }),
    );
    assert.equal(response.status, 201, response.text);
    return response.body.data as UserRecord;
  }

  async function fetchUser(server: Hardened, id: string): Promise<UserRecord> {
    const response = await send(server, 'GET', `/users/${id}`);
    assert.equal(response.status, 200, response.text);
    return response.body.data as UserRecord;
  }

  /** The fields a client writes; updated_at moves on every successful update, so it is left out. */
  const writable = (user: UserRecord) => ({
    id: user.id,
    name: user.name,
    email: user.email,
    role: user.role,
    created_at: user.created_at,
  });

  /** A raw HTTP/1.1 request with exactly these bytes in its request line, answered and closed. */
  function raw(
    server: Hardened,
    method: string,
    target: string,
    options: { headers?: string; body?: string } = {},
  ): Promise<HttpExchange> {
    const body = options.body ?? '';
    const framing =
      body.length > 0 ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` : '';
    const head = `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n${framing}${options.headers ?? ''}\r\n`;
    return rawHttp(restPort(server), Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body, 'utf8')]), 5000);
  }

  /** Writes `text` and returns everything the server sent until it closed the connection. */
  async function exchangeUntilClose(port: number, text: string): Promise<string> {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.end(text);
    await within(once(socket, 'close'), 5000, 'the server to close');
    return received;
  }

  describe('deeply nested JSON (50 000 levels) never crashes the service', () => {
    const LEVELS = 50_000;
    const arrays = '['.repeat(LEVELS) + ']'.repeat(LEVELS);
    const objects = '{"a":'.repeat(LEVELS) + '1' + '}'.repeat(LEVELS);
    const unclosedArrays = '['.repeat(LEVELS);
    const unclosedObjects = '{"a":'.repeat(LEVELS);

    test("as the whole body of POST, PUT and PATCH: 400 INVALID_BODY / INVALID_JSON, or the contract's reply to an object with an unknown key", async () => {
      const victim = await createUser();
      const path = { POST: '/users', PUT: `/users/${victim.id}`, PATCH: `/users/${victim.id}` };
      for (const method of ['POST', 'PUT', 'PATCH'] as const) {
        const what = (shape: string) => `${method} with ${shape} as the body`;
        assertErrorEnvelope(
          await send(roster, method, path[method], arrays),
          { status: 400, code: 'INVALID_BODY' },
          what('nested arrays'),
        );
        assertErrorEnvelope(
          await send(roster, method, path[method], unclosedArrays),
          { status: 400, code: 'INVALID_JSON' },
          what('unclosed arrays'),
        );
        assertErrorEnvelope(
          await send(roster, method, path[method], unclosedObjects),
          { status: 400, code: 'INVALID_JSON' },
          what('unclosed objects'),
        );
        // An object whose only key is unknown: missing name and email on create and full update; a
        // partial update that changes nothing (unknown keys are ignored).
        const response = await send(roster, method, path[method], objects);
        if (method === 'PATCH') {
          assert.equal(response.status, 200, response.text);
          assert.deepEqual(writable(response.body.data), writable(victim));
          assert.deepEqual(Object.keys(response.body.data).sort(), USER_KEYS);
        } else {
          assertValidationError(response, ['name', 'email'], what('nested objects'));
        }
      }
      assert.deepEqual(writable(await fetchUser(roster, victim.id)), writable(victim));
      await roster.check();
    });

    test('as an unknown field: ignored, the write succeeds and stores only the known fields', async () => {
      for (const deep of [arrays, objects]) {
        const address = email('deep');
        const created = await send(roster, 'POST', '/users', `{"name":"Deep","email":"${address}","extra":${deep}}`);
        assert.equal(created.status, 201, created.text);
        const user = created.body.data as UserRecord;
        assert.deepEqual(Object.keys(user).sort(), USER_KEYS);
        assert.deepEqual([user.name, user.email, user.role], ['Deep', address, 'user']);

        const put = await send(
          roster,
          'PUT',
          `/users/${user.id}`,
          `{"name":"Deeper","email":"${address}","role":"admin","extra":${deep}}`,
        );
        assert.equal(put.status, 200, put.text);
        assert.deepEqual([put.body.data.name, put.body.data.role], ['Deeper', 'admin']);

        const patch = await send(roster, 'PATCH', `/users/${user.id}`, `{"name":"Deepest","extra":${deep}}`);
        assert.equal(patch.status, 200, patch.text);
        assert.equal(patch.body.data.name, 'Deepest');
        assert.deepEqual(await fetchUser(roster, user.id), patch.body.data);
      }
      await roster.check();
    });

    test('as the value of name, email or role: 422 VALIDATION_ERROR naming that field, nothing changed', async () => {
      const victim = await createUser();
      for (const deep of [arrays, objects]) {
        assertValidationError(await send(roster, 'POST', '/users', `{"name":${deep},"email":"${email()}"}`), ['name']);
        assertValidationError(await send(roster, 'POST', '/users', `{"name":"N","email":${deep}}`), ['email']);
        assertValidationError(
          await send(roster, 'PUT', `/users/${victim.id}`, `{"name":"N","email":"${email()}","role":${deep}}`),
          ['role'],
        );
        assertValidationError(await send(roster, 'PATCH', `/users/${victim.id}`, `{"email":${deep}}`), ['email']);
        assertValidationError(
          await send(strict, 'POST', '/users', `{"name":"N","email":"${email()}","role":${deep}}`),
          ['role'],
        );
      }
      assert.deepEqual(await fetchUser(roster, victim.id), victim);
      await roster.check();
      await strict.check();
    });
  });

  describe('wrong field types: 422 VALIDATION_ERROR naming each bad field', () => {
    const BAD: [string, string][] = [
      ['123', 'a number'],
      ['1.5', 'a fraction'],
      ['{}', 'an object'],
      ['{"a":"x"}', 'an object with a key'],
      ['[]', 'an array'],
      ['["admin"]', 'an array of a string'],
      ['null', 'null'],
      ['true', 'a boolean'],
    ];
    const FIELDS = ['name', 'email', 'role'] as const;
    /** A valid body with `field` replaced by the JSON text `value`. */
    const bodyWith = (field: string, value: string) => {
      const valid: Record<string, string> = { name: '"Typed"', email: `"${email('typed')}"`, role: '"user"' };
      valid[field] = value;
      return `{${Object.entries(valid)
        .map(([key, text]) => `"${key}":${text}`)
        .join(',')}}`;
    };
    const allBad = (value: string) => `{"name":${value},"email":${value},"role":${value}}`;

    test('on create (POST)', async () => {
      const before = (await send(roster, 'GET', '/users?limit=1')).body.data.pagination.total;
      for (const [value, kind] of BAD) {
        for (const field of FIELDS)
          assertValidationError(
            await send(roster, 'POST', '/users', bodyWith(field, value)),
            [field],
            `POST ${field}: ${kind}`,
          );
        assertValidationError(
          await send(roster, 'POST', '/users', allBad(value)),
          ['name', 'email', 'role'],
          `POST all three: ${kind}`,
        );
      }
      assert.equal(
        (await send(roster, 'GET', '/users?limit=1')).body.data.pagination.total,
        before,
        'nothing was created',
      );
      await roster.check();
    });

    test('on full update (PUT), default and strict: the record is unchanged', async () => {
      for (const server of [roster, strict]) {
        const victim = await createUser(server);
        for (const [value, kind] of BAD) {
          for (const field of FIELDS) {
            assertValidationError(
              await send(server, 'PUT', `/users/${victim.id}`, bodyWith(field, value)),
              [field],
              `PUT ${field}: ${kind}`,
            );
          }
          assertValidationError(
            await send(server, 'PUT', `/users/${victim.id}`, allBad(value)),
            ['name', 'email', 'role'],
            `PUT all three: ${kind}`,
          );
        }
        assert.deepEqual(await fetchUser(server, victim.id), victim);
        await server.check();
      }
    });

    test('on partial update (PATCH), default and strict: the record is unchanged', async () => {
      for (const server of [roster, strict]) {
        const victim = await createUser(server);
        for (const [value, kind] of BAD) {
          for (const field of FIELDS) {
            assertValidationError(
              await send(server, 'PATCH', `/users/${victim.id}`, `{"${field}":${value}}`),
              [field],
              `PATCH ${field}: ${kind}`,
            );
            // A good field beside the bad one does not get through either.
            const other = field === 'name' ? '"email":"other@example.com"' : '"name":"Other"';
            assertValidationError(
              await send(server, 'PATCH', `/users/${victim.id}`, `{${other},"${field}":${value}}`),
              [field],
              `PATCH ${field} + a good field: ${kind}`,
            );
          }
          assertValidationError(
            await send(server, 'PATCH', `/users/${victim.id}`, allBad(value)),
            ['name', 'email', 'role'],
            `PATCH all three: ${kind}`,
          );
        }
        assert.deepEqual(await fetchUser(server, victim.id), victim);
        await server.check();
      }
    });
  });

  describe('__proto__, constructor and prototype keys never pollute a prototype', () => {
    const POISON = '{"polluted":"yes","role":"admin","name":"Hijacked","isAdmin":true}';
    /** Bodies carrying the keys at the top, nested in objects, in arrays, and deep down. */
    const carriers = (fields: string) => [
      `{${fields},"__proto__":${POISON}}`,
      `{"__proto__":${POISON},${fields}}`,
      `{${fields},"constructor":{"prototype":${POISON}}}`,
      `{${fields},"prototype":${POISON}}`,
      `{${fields},"constructor":${POISON}}`,
      `{${fields},"extra":{"__proto__":${POISON},"constructor":{"prototype":${POISON}},"prototype":${POISON}}}`,
      `{${fields},"list":[{"__proto__":${POISON}},[{"constructor":{"prototype":${POISON}}}],{"prototype":${POISON}}]}`,
      `{${fields},"a":{"b":{"c":{"d":{"__proto__":{"__proto__":${POISON}}}}}}}`,
      `{${fields},"__proto__":{"constructor":{"prototype":${POISON}}},"constructor":{"__proto__":${POISON}}}`,
    ];

    function assertClean(user: UserRecord, what: string): void {
      assert.deepEqual(Object.keys(user).sort(), USER_KEYS, `${what}: only the user's fields`);
      assert.notEqual(user.name, 'Hijacked', what);
      assert.equal(({} as Record<string, unknown>).polluted, undefined, `${what}: Object.prototype polluted`);
      assert.equal(({} as Record<string, unknown>).isAdmin, undefined, `${what}: Object.prototype polluted`);
      assert.deepEqual(prototypeSnapshot(), prototypeBefore, `${what}: Object.prototype changed`);
    }

    test('in bodies of POST, PUT and PATCH (default and strict): a normal answer, nothing extra stored', async () => {
      for (const server of [roster, strict]) {
        for (const carrier of carriers('"name":"Proto","email":"EMAIL"')) {
          const fresh = () => carrier.replace('EMAIL', email('proto'));
          const created = await send(server, 'POST', '/users', fresh());
          assert.equal(created.status, 201, `${carrier}: ${created.text}`);
          assert.equal(created.body.data.role, 'user', carrier);
          assertClean(created.body.data, `POST ${carrier}`);

          const id = created.body.data.id as string;
          const put = await send(server, 'PUT', `/users/${id}`, fresh().replace('"name":"Proto"', '"name":"Put"'));
          assert.equal(put.status, 200, `${carrier}: ${put.text}`);
          assert.deepEqual([put.body.data.name, put.body.data.role], ['Put', 'user']);
          assertClean(put.body.data, `PUT ${carrier}`);

          const patch = await send(
            server,
            'PATCH',
            `/users/${id}`,
            carrier.replace('"email":"EMAIL"', '"role":"user"'),
          );
          assert.equal(patch.status, 200, `${carrier}: ${patch.text}`);
          assert.deepEqual([patch.body.data.name, patch.body.data.role], ['Proto', 'user']);
          assertClean(patch.body.data, `PATCH ${carrier}`);
          assertClean(await fetchUser(server, id), `GET after ${carrier}`);
        }
        // A PATCH of nothing but poison changes nothing a client can write.
        const victim = await createUser(server);
        for (const body of carriers('"x":1')) {
          const patch = await send(server, 'PATCH', `/users/${victim.id}`, body);
          assert.equal(patch.status, 200, `${body}: ${patch.text}`);
          assert.deepEqual(writable(patch.body.data), writable(victim), body);
        }
        // A fresh user, created after all of it, has only its own fields.
        const fresh = await createUser(server);
        assertClean(await fetchUser(server, fresh.id), 'a fresh user');
        assert.equal(fresh.role, 'user');
        await server.check();
      }
    });

    test('in query strings: a normal answer, nothing polluted', async () => {
      const listIds = async (query = '') => {
        const list = await send(roster, 'GET', `/users?limit=100${query}`);
        assert.equal(list.status, 200, `${query}: ${list.text}`);
        return {
          total: list.body.data.pagination.total as number,
          ids: (list.body.data.users as UserRecord[]).map((u) => u.id),
        };
      };
      const queries = [
        '__proto__[x]=1',
        'constructor[prototype][x]=1',
        '__proto__=x',
        '__proto__=x&__proto__=y',
        '__proto__[polluted]=yes&constructor[prototype][polluted]=yes&prototype[polluted]=yes',
        '__proto__.polluted=yes',
        'constructor=1&prototype=2&hasOwnProperty=3&toString=4&valueOf=5',
        '%5F%5Fproto%5F%5F%5Bpolluted%5D=yes',
      ];
      for (const query of queries) {
        assert.deepEqual(await listIds(`&${query}`), await listIds(), `${query} lists what a plain list does`);
        assert.equal((await send(roster, 'GET', `/health?${query}`)).status, 200, query);
        assert.equal((await send(roster, 'GET', `/users/${roster.baseline[0]!.id}?${query}`)).status, 200, query);
        const created = await send(
          roster,
          'POST',
          `/users?${query}`,
          JSON.stringify({ name: 'Query', email: email('query') }),
        );
        assert.equal(created.status, 201, `${query}: ${created.text}`);
        assertClean(created.body.data, `POST ?${query}`);
        assert.equal(({} as Record<string, unknown>).x, undefined, query);
      }
      // As values: sorting and filtering by prototype names are answered like any other field or role.
      const { total } = await listIds();
      for (const name of ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty']) {
        const sorted = await send(roster, 'GET', `/users?sort=${name}&limit=100`);
        assert.equal(sorted.status, 200, `sort=${name}: ${sorted.text}`);
        assert.equal(sorted.body.data.pagination.total, total, `sort=${name}`);
        const filtered = await send(roster, 'GET', `/users?role=${name}&search=${name}`);
        assert.equal(filtered.status, 200, `role=${name}: ${filtered.text}`);
        assert.equal(filtered.body.data.pagination.total, 0);
      }
      assert.deepEqual(prototypeSnapshot(), prototypeBefore);
      const fresh = await createUser();
      assertClean(await fetchUser(roster, fresh.id), 'a fresh user');
      await roster.check();
    });
  });

  describe('odd ids in the path: 404 in the envelope', () => {
    const ODD_IDS: [string, string][] = [
      ['..', 'dot-dot'],
      ['.', 'dot'],
      ['%2e%2e', 'encoded dot-dot'],
      ['%2E%2E%2F%2E%2E%2Fetc%2Fpasswd', 'encoded traversal'],
      ['..%2F..%2F..%2Fapi%2Fv1%2Fhealth', 'traversal to a real route'],
      ['%00', 'NUL'],
      ['a%00b', 'NUL inside'],
      ['%F0%9F%98%80', 'an emoji'],
      ['%E2%80%AE%E2%80%8B%EF%BB%BF', 'RLO, zero-width space, BOM'],
      ['%D8%A7%D9%84%D8%B9%D8%B1%D8%A8%D9%8A%D8%A9', 'Arabic'],
      ['a%2Fb', 'an encoded slash'],
      ['%2F..%2F', 'encoded slashes around dot-dot'],
      ['%5C..%5C', 'encoded backslashes'],
      ['%252e%252e', 'double-encoded dot-dot'],
      ['%20', 'a space'],
      ['%0D%0ASet-Cookie:%20x=1', 'encoded CRLF'],
      ['x'.repeat(10_000), 'a 10 000-character id'],
      ['%F0%9F%98%80'.repeat(500), '500 encoded emoji'],
    ];

    test('GET, PUT, PATCH and DELETE with odd ids: 404 USER_NOT_FOUND or NOT_FOUND, JSON content type, nothing touched', async () => {
      const [first] = roster.baseline as [UserRecord];
      const ids: [string, string][] = [
        ...ODD_IDS,
        [`${first.id}%00`, 'a real id then NUL'],
        [`${first.id}%2F`, 'a real id then an encoded slash'],
        [`${first.id}%20`, 'a real id then a space'],
        [`${first.id}%2F..`, 'a real id, slash, dot-dot'],
        [first.id.toUpperCase(), 'a real id in upper case'],
        [`%2e%2e%2F${first.id}`, 'dot-dot then a real id'],
      ];
      const body = JSON.stringify({ name: 'Odd', email: email('odd') });
      for (const [id, kind] of ids) {
        for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
          const response = await raw(roster, method, `/api/v1/users/${id}`, {
            body: method === 'PUT' || method === 'PATCH' ? body : '',
          });
          const error = assertErrorEnvelope(
            response,
            { status: 404, code: ['USER_NOT_FOUND', 'NOT_FOUND'] },
            `${method} ${kind}`,
          );
          assert.equal(response.headers['set-cookie'], undefined, `${method} ${kind}: no header smuggled in`);
          assert.ok(error.message.length < 500, `${method} ${kind}: the message does not echo the whole id`);
        }
      }
      await roster.check();
    });

    test("through fetch as well (a real client's encoding)", async () => {
      for (const id of ['..%2F', '%00', '😀', 'ℌ𝔢𝔩𝔩𝔬', 'a/b'.replace('/', '%2F'), 'x'.repeat(10_000)]) {
        const response = await request(`${api()}/users/${id}`);
        assertErrorEnvelope(response, { status: 404, code: ['USER_NOT_FOUND', 'NOT_FOUND'] }, `GET ${id.slice(0, 20)}`);
      }
      await roster.check();
    });
  });

  describe('unicode names round-trip byte-exact', () => {
    const NAMES = [
      'Zoë Ünlü Ærøskøbing',
      '😀',
      '👨‍👩‍👧‍👦 family (ZWJ sequence)',
      '👩🏽‍💻 👋🏿 🧑🏻‍🤝‍🧑🏿 skin tones',
      '🏳️‍🌈 🇯🇵 🏴󠁧󠁢󠁳󠁣󠁴󠁿 flags and tag sequences',
      'مرحبا بالعالم',
      'שָׁלוֹם עֲלֵיכֶם',
      'mixed עברית and English ومرحبا',
      '\u200Fمرحبا\u200E with RLM and LRM',
      'file\u202Egnp.exe (RLO)',
      'e\u0301 decomposed',
      'é precomposed',
      'Z̴̡̪̫͖a̷̛̯͚l̸̢̰g̶̱̈o̵͇̐ combining marks',
      'zero\u200Bwidth space',
      'zero\u200Dwidth joiner',
      'zero\u200Cwidth non-joiner',
      '\uFEFFBOM first',
      'BOM\uFEFF inside',
      '𠀀𠀁 𪚥 𰀀 astral CJK',
      '中文名字 日本語 한국어',
      'नमस्ते க்ஷ',
      '𝕳𝖊𝖑𝖑𝖔 mathematical',
      'Ａｄａ fullwidth',
      'ǅ ǈ ǋ titlecase digraphs',
      'İstanbul straße ẞ ΣΊΣΥΦΟΣ',
      'line\u2028separator\u2029paragraph',
      'tab\tnew\nline',
      'nul\u0000inside',
      '  surrounding spaces  ',
      '\uFFFD replacement and \uFFFF noncharacter',
    ];

    function assertSameName(actual: string, expected: string, what: string): void {
      assert.equal(actual, expected, what);
      assert.ok(Buffer.from(actual, 'utf8').equals(Buffer.from(expected, 'utf8')), `${what}: same UTF-8 bytes`);
    }

    test('through create, get, list, PUT and PATCH', async () => {
      const created: UserRecord[] = [];
      for (const [index, name] of NAMES.entries()) {
        const post = await send(roster, 'POST', '/users', JSON.stringify({ name, email: email('unicode') }));
        assert.equal(post.status, 201, `${JSON.stringify(name)}: ${post.text}`);
        assertSameName(post.body.data.name, name, `create ${JSON.stringify(name)}`);
        assertSameName((await fetchUser(roster, post.body.data.id)).name, name, `get ${JSON.stringify(name)}`);
        created.push(post.body.data);

        // PUT to the next name, PATCH back to this one.
        const next = NAMES[(index + 1) % NAMES.length]!;
        const put = await send(
          roster,
          'PUT',
          `/users/${post.body.data.id}`,
          JSON.stringify({ name: next, email: post.body.data.email }),
        );
        assert.equal(put.status, 200, put.text);
        assertSameName(put.body.data.name, next, `PUT ${JSON.stringify(next)}`);
        assertSameName(
          (await fetchUser(roster, post.body.data.id)).name,
          next,
          `get after PUT ${JSON.stringify(next)}`,
        );
        const patch = await send(roster, 'PATCH', `/users/${post.body.data.id}`, JSON.stringify({ name }));
        assert.equal(patch.status, 200, patch.text);
        assertSameName(patch.body.data.name, name, `PATCH ${JSON.stringify(name)}`);
      }
      // The list returns every one of them as stored.
      const listed = new Map<string, string>();
      for (let page = 1; ; page++) {
        const list = await send(roster, 'GET', `/users?limit=100&page=${page}&sort=name&order=asc`);
        assert.equal(list.status, 200);
        for (const user of list.body.data.users as UserRecord[]) listed.set(user.id, user.name);
        if (page >= list.body.data.pagination.pages) break;
      }
      for (const [index, user] of created.entries())
        assertSameName(listed.get(user.id)!, NAMES[index]!, `list ${JSON.stringify(NAMES[index])}`);
      // Precomposed and decomposed forms stay distinct (no normalisation).
      assert.notEqual(listed.get(created[10]!.id), listed.get(created[11]!.id)!.replace(' precomposed', ' decomposed'));
      await roster.check();
    });

    test('the same name sent as \\u escapes and as raw UTF-8 is stored identically', async () => {
      for (const name of NAMES) {
        const escaped = JSON.stringify({ name, email: email('escaped') }).replace(
          /[\u0080-\uffff]/g,
          (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
        );
        assert.match(escaped, /^[\x20-\x7e]*$/, 'an ASCII-only body');
        const response = await send(roster, 'POST', '/users', escaped);
        assert.equal(response.status, 201, response.text);
        assertSameName(response.body.data.name, name, `escaped ${JSON.stringify(name)}`);
      }
      await roster.check();
    });

    test('search finds unicode names by a part of them', async () => {
      const name = `Søren 👩🏽‍💻 Kierkegaard ${randomUUID()}`;
      const user = await createUser(roster, { name });
      const found = await request(`${api()}/users?search=${encodeURIComponent('ren 👩🏽‍💻 kier')}`);
      assert.equal(found.status, 200);
      assert.ok(found.body.data.users.some((u: UserRecord) => u.id === user.id && u.name === name));
      await roster.check();
    });
  });

  describe('email uniqueness cannot be bypassed', () => {
    /** Creates `existing`, then tries every variant; returns those not refused with 409 EMAIL_EXISTS. */
    async function bypasses(server: Hardened, existing: string, variants: string[]): Promise<string[]> {
      const created = await send(server, 'POST', '/users', JSON.stringify({ name: 'Original', email: existing }));
      assert.equal(created.status, 201, created.text);
      const through: string[] = [];
      for (const variant of variants) {
        const response = await send(server, 'POST', '/users', JSON.stringify({ name: 'Copycat', email: variant }));
        if (response.status === 409)
          assertErrorEnvelope(response, { status: 409, code: 'EMAIL_EXISTS' }, JSON.stringify(variant));
        else
          through.push(`${JSON.stringify(variant)} got ${response.status} although ${JSON.stringify(existing)} exists`);
      }
      return through;
    }

    /** Every variant of `existing` is refused with 409 EMAIL_EXISTS (all are tried, all failures reported). */
    async function assertTaken(server: Hardened, existing: string, variants: string[]): Promise<void> {
      assert.deepEqual(await bypasses(server, existing, variants), []);
    }

    test('by letter case', async () => {
      const local = `case.${randomUUID().slice(0, 8)}`;
      await assertTaken(roster, `${local}@example.com`, [
        `${local.toUpperCase()}@EXAMPLE.COM`,
        `${local}@Example.Com`,
        `${local[0]!.toUpperCase()}${local.slice(1)}@example.com`,
      ]);
      await assertTaken(roster, `${local}.MIXED@Example.ORG`, [`${local}.mixed@example.org`]);
      await roster.check();
    });

    test('by surrounding white space: every character String.prototype.trim removes', async () => {
      // docs/decisions.md: uniqueness compares "after trimming surrounding white space"; the service trims
      // with String.prototype.trim, which removes these (ECMAScript WhiteSpace and LineTerminator).
      const spaces = [
        ' ',
        '  ',
        '\t',
        '\t\t',
        '\n',
        '\r\n',
        '\v',
        '\f',
        '\u00A0',
        '\u1680',
        '\u2003',
        '\u200A',
        '\u2028',
        '\u2029',
        '\u202F',
        '\u205F',
        '\u3000',
        '\uFEFF',
      ];
      const address = `spaces.${randomUUID().slice(0, 8)}@example.com`;
      const variants = spaces.flatMap((space) => [
        `${space}${address}`,
        `${address}${space}`,
        `${space}${address}${space}`,
      ]);
      variants.push(`\t ${address.toUpperCase()} \r\n`);
      await assertTaken(roster, address, variants);
      // And the other way round: the first one stored had the spaces.
      const padded = `padded.${randomUUID().slice(0, 8)}@example.com`;
      await assertTaken(roster, `\t ${padded}\u3000`, [padded, padded.toUpperCase(), ` ${padded} `]);
      await roster.check();
    });

    test('by unicode case variants the JavaScript lower case already folds', async () => {
      const tag = randomUUID().slice(0, 8);
      await assertTaken(roster, `émile.zoë.${tag}@exämple.com`, [
        `ÉMILE.ZOË.${tag.toUpperCase()}@EXÄMPLE.COM`,
        `Émile.Zoë.${tag}@Exämple.com`,
      ]);
      await assertTaken(roster, `иван.${tag}@пример.рф`, [`ИВАН.${tag}@ПРИМЕР.РФ`, `Иван.${tag}@Пример.рф`]);
      await assertTaken(roster, `kelvin.${tag}@example.com`, [`\u212Aelvin.${tag}@example.com`]); // KELVIN SIGN lower-cases to k
      await assertTaken(roster, `straße.${tag}@example.com`, [`STRAẞE.${tag}@example.com`]); // capital sharp s
      // A capital sigma at the end of a word lower-cases to the final form ς.
      await assertTaken(roster, `${tag}.αθηνας@example.gr`, [`${tag}.ΑΘΗΝΑΣ@example.gr`]);
      await roster.check();
    });

    test('by unicode case variants that need full case folding (ß/SS, ſ/s, final sigma)', async () => {
      // Each variant is the other's upper case ('straße'.toUpperCase() === 'STRASSE'), so they are the
      // same email compared case-insensitively (Unicode default caseless matching, CaseFolding.txt).
      const tag = randomUUID().slice(0, 8);
      const through = [
        ...(await bypasses(roster, `straße.${tag}@example.com`, [
          `STRASSE.${tag}@EXAMPLE.COM`,
          `strasse.${tag}@example.com`,
        ])),
        ...(await bypasses(roster, `sam.${tag}@example.com`, [`ſam.${tag}@example.com`])), // LATIN SMALL LETTER LONG S, upper case S
        ...(await bypasses(roster, `${tag}.ΟΔΟΣ@example.gr`, [`${tag}.οδοσ@example.gr`])), // 'οδοσ'.toUpperCase() === 'ΟΔΟΣ'
      ];
      await roster.check();
      assert.deepEqual(through, [], 'email uniqueness bypassed by a case variant');
    });

    test("strict mode: PUT and PATCH cannot take another user's email through case or spaces either", async () => {
      const owner = await createUser(strict);
      const other = await createUser(strict);
      for (const variant of [
        owner.email.toUpperCase(),
        `\t${owner.email} `,
        `\u00A0${owner.email.toUpperCase()}\u3000`,
      ]) {
        const put = await send(strict, 'PUT', `/users/${other.id}`, JSON.stringify({ name: 'Other', email: variant }));
        assertErrorEnvelope(put, { status: 409, code: 'EMAIL_EXISTS' }, `PUT ${JSON.stringify(variant)}`);
        const patch = await send(strict, 'PATCH', `/users/${other.id}`, JSON.stringify({ email: variant }));
        assertErrorEnvelope(patch, { status: 409, code: 'EMAIL_EXISTS' }, `PATCH ${JSON.stringify(variant)}`);
      }
      assert.deepEqual(await fetchUser(strict, other.id), other);
      await strict.check();
    });
  });

  describe('concurrency', () => {
    test('200 simultaneous creates of one new email (in varied case and spacing), each on its own connection: exactly one 201 and 199 409', async () => {
      const address = `race.${randomUUID()}@example.com`;
      const variants = [address, address.toUpperCase(), ` ${address}`, `${address}\t`, address.replace('race', 'RACE')];
      const responses = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          plainRequest(`${api()}/users`, {
            method: 'POST',
            headers: JSON_TYPE,
            body: JSON.stringify({ name: `Racer ${i}`, email: variants[i % variants.length] }),
            timeoutMs: 15_000,
          }),
        ),
      );
      const statuses = responses.map((r) => r.status);
      assert.equal(statuses.filter((status) => status === 201).length, 1, `statuses: ${statuses.join(',')}`);
      assert.equal(statuses.filter((status) => status === 409).length, 199);
      for (const response of responses.filter((r) => r.status === 409))
        assertErrorEnvelope(response, { status: 409, code: 'EMAIL_EXISTS' });
      const found = await send(roster, 'GET', `/users?search=${encodeURIComponent(address.slice(5, 30))}`);
      assert.equal(found.body.data.pagination.total, 1, 'one user holds the email');
      await roster.check();
    });

    test("200 simultaneous PUTs and PATCHes of one user: the result is always one request's fields, never a mix", async () => {
      for (const server of [roster, strict]) {
        const victim = await createUser(server);
        const tag = randomUUID().slice(0, 8);
        const responses = await Promise.all(
          Array.from({ length: 200 }, (_, i) => {
            const fields = {
              name: `Writer ${i}`,
              email: `writer.${i}.${tag}@example.com`,
              role: i % 2 ? 'admin' : 'user',
            };
            return send(server, i % 3 === 0 ? 'PUT' : 'PATCH', `/users/${victim.id}`, JSON.stringify(fields));
          }),
        );
        // On PostgreSQL a write that finds every pooled connection busy for too long (a loaded machine)
        // is refused with 503 and Retry-After before it touches the record: a clean refusal, not a mix.
        const applied = new Set<number>();
        for (const response of responses) {
          if (response.status === 503 && store.name === 'postgres') {
            assert.equal(response.body.error.code, 'SERVICE_UNAVAILABLE', response.text);
            assert.ok(response.headers.get('retry-after'), 'a 503 says when to retry');
            continue;
          }
          assert.equal(response.status, 200, response.text);
          // Each reply is the record as that request left it: its own three fields together.
          const index = Number(/^Writer (\d+)$/.exec(response.body.data.name)?.[1]);
          assert.equal(response.body.data.email, `writer.${index}.${tag}@example.com`);
          assert.equal(response.body.data.role, index % 2 ? 'admin' : 'user');
          applied.add(index);
        }
        assert.ok(applied.size > 0, 'at least one write was applied');
        const final = await fetchUser(server, victim.id);
        const index = Number(/^Writer (\d+)$/.exec(final.name)?.[1]);
        assert.ok(
          applied.has(index),
          `the final record is a write that was answered 200, not a refused one (${index})`,
        );
        assert.deepEqual(
          [final.email, final.role],
          [`writer.${index}.${tag}@example.com`, index % 2 ? 'admin' : 'user'],
        );
        assert.deepEqual([final.id, final.created_at], [victim.id, victim.created_at]);
        await server.check();
      }
    });
  });

  describe('a 100 KB query string or header: a clean refusal or a clean 200, and the service keeps serving', () => {
    const HUNDRED_KB = 100 * 1024;

    function assertCleanOutcome(response: HttpExchange | JsonResponse, what: string): void {
      if (response.status === 200) {
        const headers = response.headers instanceof Headers ? Object.fromEntries(response.headers) : response.headers;
        assert.equal(headers['content-type'], 'application/json; charset=utf-8', what);
        assertCommonHeaders(headers, what);
        return;
      }
      // 422: a search longer than SEARCH_MAX_LENGTH.
      assertErrorEnvelope(response, { status: [400, 414, 422, 431] }, what);
    }

    test('a 100 KB query string, raw and through fetch', async () => {
      const queries = [
        `search=${'a'.repeat(HUNDRED_KB)}`,
        `role=${'%F0%9F%98%80'.repeat(HUNDRED_KB / 12)}`,
        Array.from({ length: HUNDRED_KB / 10 }, (_, i) => `k${i}=vvvvv`)
          .join('&')
          .slice(0, HUNDRED_KB),
        `page=${'9'.repeat(HUNDRED_KB)}`,
      ];
      for (const query of queries) {
        assertCleanOutcome(await raw(roster, 'GET', `/api/v1/users?${query}`), `raw GET ${query.slice(0, 20)}…`);
        assertCleanOutcome(
          await raw(roster, 'POST', `/api/v1/users?${query}`, {
            body: JSON.stringify({ name: 'Q', email: email('q') }),
          }),
          `raw POST ${query.slice(0, 20)}…`,
        );
        assertCleanOutcome(await request(`${api()}/users?${query}`), `fetch GET ${query.slice(0, 20)}…`);
      }
      // Just under Node's 16 KiB header limit, a long query is served: a role filter of any length; a
      // search as long as the longest field (SEARCH_MAX_LENGTH), and a longer one is 422.
      const served = await raw(roster, 'GET', `/api/v1/users?role=${'b'.repeat(15_000)}&search=${'b'.repeat(256)}`);
      assert.equal(served.status, 200, served.body);
      assert.equal(JSON.parse(served.body).data.pagination.total, 0);
      const refused = await raw(roster, 'GET', `/api/v1/users?search=${'b'.repeat(15_000)}`);
      assert.equal(refused.status, 422, refused.body);
      await roster.check();
    });

    test('a 100 KB header: one big header, a big cookie, or thousands of small headers', async () => {
      const big = 'h'.repeat(HUNDRED_KB);
      const headerSets = [
        `X-Big: ${big}\r\n`,
        `Cookie: session=${big}\r\n`,
        `User-Agent: ${big}\r\n`,
        Array.from({ length: 2000 }, (_, i) => `X-Many-${i}: ${'m'.repeat(40)}\r\n`).join(''),
        Array.from({ length: 2000 }, () => `X-Same: ${'s'.repeat(40)}\r\n`).join(''),
      ];
      for (const headers of headerSets) {
        assertCleanOutcome(await raw(roster, 'GET', '/api/v1/users', { headers }), `GET with ${headers.slice(0, 12)}…`);
        assertCleanOutcome(
          await raw(roster, 'POST', '/api/v1/users', {
            headers,
            body: JSON.stringify({ name: 'H', email: email('h') }),
          }),
          `POST with ${headers.slice(0, 12)}…`,
        );
      }
      assertCleanOutcome(await request(`${api()}/users`, { headers: { 'x-big': big } }), 'fetch with a 100 KB header');
      await roster.check();
    });

    test('several at once, alongside normal requests', async () => {
      const attacks = Array.from({ length: 20 }, (_, i) =>
        raw(roster, 'GET', `/api/v1/users?search=${'c'.repeat(HUNDRED_KB)}`, {
          headers: i % 2 ? `X-Big: ${'d'.repeat(HUNDRED_KB)}\r\n` : '',
        }),
      );
      const normal = Array.from({ length: 20 }, () => request(`${api()}/health`));
      for (const response of await Promise.all(attacks)) assertCleanOutcome(response, 'concurrent 100 KB request');
      for (const response of await Promise.all(normal)) assert.equal(response.status, 200);
      await roster.check();
    });
  });

  describe('response headers on every kind of reply', () => {
    test('no X-Powered-By, X-Content-Type-Options: nosniff, and application/json; charset=utf-8 on every body', async () => {
      const victim = await createUser();
      const taken = roster.baseline[1]!.email;
      const replies: [string, number, () => Promise<HttpExchange>][] = [
        ['list', 200, () => raw(roster, 'GET', '/api/v1/users')],
        ['get', 200, () => raw(roster, 'GET', `/api/v1/users/${victim.id}`)],
        ['health', 200, () => raw(roster, 'GET', '/api/v1/health')],
        ['docs', 200, () => raw(roster, 'GET', '/api/v1/docs')],
        [
          'create',
          201,
          () => raw(roster, 'POST', '/api/v1/users', { body: JSON.stringify({ name: 'H', email: email('h') }) }),
        ],
        [
          'put',
          200,
          () =>
            raw(roster, 'PUT', `/api/v1/users/${victim.id}`, {
              body: JSON.stringify({ name: 'H', email: victim.email }),
            }),
        ],
        ['patch', 200, () => raw(roster, 'PATCH', `/api/v1/users/${victim.id}`, { body: '{"name":"P"}' })],
        ['invalid JSON', 400, () => raw(roster, 'POST', '/api/v1/users', { body: '{bad' })],
        ['JSON not an object', 400, () => raw(roster, 'POST', '/api/v1/users', { body: '[1]' })],
        ['malformed URL', 400, () => raw(roster, 'GET', '/api/v1/users/%zz')],
        ['garbage request line', 400, () => rawHttp(restPort(), 'NOT HTTP AT ALL\r\n\r\n')],
        [
          'HTTP/1.1 without Host',
          400,
          () => rawHttp(restPort(), 'GET /api/v1/health HTTP/1.1\r\nConnection: close\r\n\r\n'),
        ],
        ['unknown user', 404, () => raw(roster, 'GET', '/api/v1/users/nobody')],
        ['unknown route', 404, () => raw(roster, 'GET', '/nowhere')],
        ['wrong method', 405, () => raw(roster, 'DELETE', '/api/v1/users')],
        ['unknown method', 405, () => raw(roster, 'PROPFIND', '/api/v1/users')],
        ['CONNECT', 405, () => rawHttp(restPort(), 'CONNECT /api/v1/users HTTP/1.1\r\nHost: x\r\n\r\n')],
        [
          'duplicate email',
          409,
          () => raw(roster, 'POST', '/api/v1/users', { body: JSON.stringify({ name: 'D', email: taken }) }),
        ],
        [
          'declared body too large',
          413,
          () =>
            raw(roster, 'POST', '/api/v1/users', {
              headers: 'Content-Type: application/json\r\nContent-Length: 99999999\r\n',
            }),
        ],
        [
          'wrong content type',
          415,
          () =>
            rawHttp(
              restPort(),
              'POST /api/v1/users HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi',
            ),
        ],
        ['validation', 422, () => raw(roster, 'POST', '/api/v1/users', { body: '{"name":1}' })],
        ['bad page', 422, () => raw(roster, 'GET', '/api/v1/users?page=0')],
        [
          'headers too large',
          431,
          () => raw(roster, 'GET', '/api/v1/health', { headers: `X-Big: ${'x'.repeat(100_000)}\r\n` }),
        ],
      ];
      for (const [kind, status, send] of replies) {
        const response = await send();
        assert.equal(response.status, status, `${kind}: ${response.statusLine} ${response.body}`);
        assertCommonHeaders(response.headers, kind);
        assert.equal(response.headers['content-type'], 'application/json; charset=utf-8', kind);
        JSON.parse(response.body);
        if (status >= 400) assertErrorEnvelope(response, { status }, kind);
      }
      // HEAD and 204: no body, the same security headers.
      const headFetch = await fetch(`${api()}/health`, { method: 'HEAD' });
      assert.equal(headFetch.status, 200);
      assertCommonHeaders(Object.fromEntries(headFetch.headers), 'HEAD');
      assert.equal(headFetch.headers.get('content-type'), 'application/json; charset=utf-8');
      // A HEAD request the HTTP parser refuses gets its 400 without a body too.
      const refusedHead = await exchangeUntilClose(
        restPort(),
        'HEAD /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Bad: \u0001\r\n\r\n',
      );
      assert.match(refusedHead, /^HTTP\/1\.1 400 /);
      assert.match(refusedHead, /\r\nContent-Type: application\/json; charset=utf-8\r\n/i);
      assert.match(refusedHead, /\r\nX-Content-Type-Options: nosniff\r\n/i);
      assert.ok(refusedHead.endsWith('\r\n\r\n'), `no body after the head: ${JSON.stringify(refusedHead)}`);
      const deleted = await raw(roster, 'DELETE', `/api/v1/users/${victim.id}`);
      assert.equal(deleted.status, 204);
      assertCommonHeaders(deleted.headers, 'DELETE 204');
      assert.equal(deleted.body, '');
      await roster.check();
    });
  });
}

for (const store of TEST_STORES) {
  describe(`REST hardening (${store.name} store)`, { skip: store.skip }, () => suite(store));
}
