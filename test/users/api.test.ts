/** The user endpoints of the contract, black-box over real HTTP against a real server. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { request, startOn, TEST_STORES, TIMESTAMP, type Running, type TestStore } from '../support/index.js';

/** The suite against one store backend; `startRoster` starts Roster on a fresh store of it. */
function suite(store: TestStore): void {
  const startRoster = (env: Record<string, string> = {}) => startOn(store, env);
  const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  let roster: Running;
  before(async () => {
    roster = await startRoster();
  });
  after(() => roster.stop());

  /** A field that with its JSON still fits the default BODY_LIMIT (1 MiB). */
  const HUGE = 2 ** 20 - 1024;
  /** Text that does not compress (an index of PostgreSQL stores short values as they are, longer ones compressed). */
  const randomText = (length: number) => randomBytes(length).toString('base64url').slice(0, length);

  let sequence = 0;
  /** A fresh, unique email for each created user. */
  const email = () => `person${++sequence}.${Date.now()}@example.com`;
  const create = (body: unknown) => request(`${roster.api}/users`, { method: 'POST', body });
  const user = (id: string) => `${roster.api}/users/${id}`;

  async function createUser(fields: Record<string, unknown> = {}) {
    const response = await create({ name: 'Test Person', email: email(), ...fields });
    assert.equal(response.status, 201, response.text);
    return response.body.data;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  function assertValidationError(response: { status: number; body: any }, fields: string[]) {
    assert.equal(response.status, 422, JSON.stringify(response.body));
    assert.equal(response.body.status, 'error');
    assert.equal(response.body.error.code, 'VALIDATION_ERROR');
    assert.deepEqual(
      response.body.error.details.map((d: { field: string }) => d.field),
      fields,
    );
    for (const detail of response.body.error.details) assert.equal(typeof detail.message, 'string');
  }

  describe('seed users', () => {
    test('a fresh instance holds three users: one admin, two user, with generated fields', async () => {
      const fresh = await startRoster();
      try {
        const { status, body } = await request(`${fresh.api}/users`);
        assert.equal(status, 200);
        const users = body.data.users;
        assert.equal(users.length, 3);
        assert.equal(body.data.pagination.total, 3);
        assert.deepEqual(users.map((u: { role: string }) => u.role).sort(), ['admin', 'user', 'user']);
        assert.equal(new Set(users.map((u: { email: string }) => u.email.toLowerCase())).size, 3);
        for (const u of users) {
          assert.match(u.id, UUID_V4);
          assert.ok(u.name.length > 0);
          assert.match(u.created_at, TIMESTAMP);
          assert.equal(u.created_at, u.updated_at);
        }
        // Created in order: admin first; the default listing is newest first.
        assert.equal(users[2].role, 'admin');
        assert.ok(users[0].created_at > users[1].created_at && users[1].created_at > users[2].created_at);
      } finally {
        await fresh.stop();
      }
    });
  });

  describe('GET /api/v1/users/:id', () => {
    test('returns the user in the success envelope', async () => {
      const created = await createUser();
      const { status, body } = await request(user(created.id));
      assert.equal(status, 200);
      assert.equal(body.status, 'success');
      assert.equal(typeof body.message, 'string');
      assert.deepEqual(body.data, created);
    });

    test('unknown id: 404 USER_NOT_FOUND', async () => {
      const { status, body } = await request(user('00000000-0000-4000-8000-000000000000'));
      assert.equal(status, 404);
      assert.equal(body.status, 'error');
      assert.equal(body.error.code, 'USER_NOT_FOUND');
      assert.equal(typeof body.error.message, 'string');
      assert.equal(body.error.details, undefined);
    });

    for (const odd of ['%00', 'x'.repeat(8000), '%E2%9C%93', 'a%2Fb', '%20', "'%20OR%201=1"]) {
      test(`odd id ${odd.slice(0, 12)}: 404 USER_NOT_FOUND`, async () => {
        const { status, body } = await request(user(odd));
        assert.equal(status, 404);
        assert.equal(body.status, 'error');
        assert.equal(body.error.code, 'USER_NOT_FOUND');
      });
    }

    test('a path that climbs out with ..: 404 envelope', async () => {
      // fetch resolves the dot segments itself, so this asks for /api/v1/: no such route.
      const { status, body } = await request(user('..'));
      assert.equal(status, 404);
      assert.equal(body.error.code, 'NOT_FOUND');
    });
  });

  describe('POST /api/v1/users', () => {
    test('creates: 201, generated id, role defaults to user, equal timestamps', async () => {
      const address = email();
      const { status, body } = await create({ name: 'Katherine Johnson', email: address });
      assert.equal(status, 201);
      assert.equal(body.status, 'success');
      assert.equal(typeof body.message, 'string');
      const created = body.data;
      assert.match(created.id, UUID_V4);
      assert.equal(created.name, 'Katherine Johnson');
      assert.equal(created.email, address);
      assert.equal(created.role, 'user');
      assert.match(created.created_at, TIMESTAMP);
      assert.equal(created.created_at, created.updated_at);
      assert.deepEqual(Object.keys(created).sort(), ['created_at', 'email', 'id', 'name', 'role', 'updated_at']);
      assert.deepEqual((await request(user(created.id))).body.data, created);
    });

    test('an explicit role is kept', async () => {
      assert.equal((await createUser({ role: 'admin' })).role, 'admin');
    });

    test('id, timestamps and unknown keys from the client are ignored, never stored', async () => {
      const created = await createUser({
        id: 'mine',
        created_at: '1999-01-01T00:00:00.000000',
        extra: 'x',
        nested: { a: 1 },
      });
      assert.notEqual(created.id, 'mine');
      assert.notEqual(created.created_at, '1999-01-01T00:00:00.000000');
      assert.equal(created.extra, undefined);
      const stored = (await request(user(created.id))).body.data;
      assert.deepEqual(Object.keys(stored).sort(), ['created_at', 'email', 'id', 'name', 'role', 'updated_at']);
    });

    test('timestamps strictly increase with creation order, and updates move on from there', async () => {
      const stamps: string[] = [];
      for (let i = 0; i < 20; i++) stamps.push((await createUser()).created_at);
      for (let i = 1; i < stamps.length; i++)
        assert.ok(stamps[i]! > stamps[i - 1]!, `${stamps[i]} after ${stamps[i - 1]}`);
      const concurrent = await Promise.all(Array.from({ length: 20 }, () => createUser()));
      assert.equal(new Set(concurrent.map((u) => u.created_at)).size, 20);
      assert.ok(concurrent.every((u) => u.created_at > stamps[stamps.length - 1]!));
    });

    test('missing fields: 422 with one detail per missing field, saying it is required', async () => {
      const both = await create({});
      assertValidationError(both, ['name', 'email']);
      for (const detail of both.body.error.details) assert.match(detail.message, /required/);
      assertValidationError(await create({ name: 'Only Name' }), ['email']);
      assertValidationError(await create({ email: email() }), ['name']);
    });

    test('a key counts as missing only when absent: null and "" are present but invalid', async () => {
      const response = await create({ name: null, email: '' });
      assertValidationError(response, ['name', 'email']);
      assert.doesNotMatch(response.body.error.details[0].message, /required/);
    });

    test('required keys are reported before formats', async () => {
      assertValidationError(await create({ name: 123 }), ['email']);
    });

    test('wrong types and formats: 422 naming each bad field', async () => {
      assertValidationError(await create({ name: 123, email: {}, role: [] }), ['name', 'email', 'role']);
      assertValidationError(await create({ name: '   ', email: email() }), ['name']);
      assertValidationError(await create({ name: 'x'.repeat(201), email: email() }), ['name']);
      assertValidationError(await create({ name: 'Fine', email: 'not-an-email' }), ['email']);
      assertValidationError(await create({ name: 'Fine', email: 'a@b' }), ['email']);
      assertValidationError(await create({ name: 'Fine', email: `${'a'.repeat(250)}@example.com` }), ['email']);
      assertValidationError(await create({ name: 'Fine', email: email(), role: 'superuser' }), ['role']);
      assertValidationError(await create({ name: 'Fine', email: email(), role: null }), ['role']);
      assertValidationError(await create({ name: true, email: 5 }), ['name', 'email']);
    });

    test('length bounds count every character stored, surrounding white space included, as code points', async () => {
      await createUser({ name: ` ${'x'.repeat(198)} ` });
      await createUser({ name: '😀'.repeat(200) });
      assertValidationError(await create({ name: '😀'.repeat(201), email: email() }), ['name']);
      // White space is not counted toward the minimum (a name is not blank), but it is stored, so it counts
      // toward the maximum: padding cannot store more than the bound.
      assertValidationError(await create({ name: `  ${'x'.repeat(200)}  `, email: email() }), ['name']);
      assertValidationError(await create({ name: 'Fine', email: ` ${'a'.repeat(242)}@example.com` }), ['email']);
      await createUser({ email: `${'a'.repeat(242)}@example.com` });
    });

    test('a field padded with white space to nearly BODY_LIMIT: 422 naming it, nothing stored', async () => {
      const before = (await request(`${roster.api}/users?limit=1`)).body.data.pagination.total;
      const response = await create({ name: `Ada${' '.repeat(HUGE / 2)}`, email: `${' '.repeat(HUGE / 4)}${email()}` });
      assertValidationError(response, ['name', 'email']);
      assert.match(response.body.error.details[0].message, /^name must be a string of at most 200 characters/);
      assert.equal((await request(`${roster.api}/users?limit=1`)).body.data.pagination.total, before);
    });

    test('duplicate email: 409 EMAIL_EXISTS, also across letter case and surrounding spaces', async () => {
      const address = email();
      await createUser({ email: address });
      for (const variant of [address, address.toUpperCase(), `  ${address}  `]) {
        const { status, body } = await create({ name: 'Dup', email: variant });
        assert.equal(status, 409, variant);
        assert.equal(body.error.code, 'EMAIL_EXISTS');
      }
    });

    test('the stored email keeps the case the client sent', async () => {
      const address = `Mixed.Case.${Date.now()}@Example.COM`;
      assert.equal((await createUser({ email: address })).email, address);
    });

    test('validation comes before uniqueness', async () => {
      const address = email();
      await createUser({ email: address });
      assertValidationError(await create({ name: 42, email: address }), ['name']);
    });

    test('__proto__ and constructor keys never pollute a prototype or reach the user', async () => {
      const body = `{"name":"Proto","email":"${email()}","__proto__":{"polluted":"yes","role":"admin"},"constructor":{"prototype":{"polluted":"yes"}}}`;
      const response = await request(`${roster.api}/users`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(response.status, 201, response.text);
      assert.equal(response.body.data.role, 'user');
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(response.body.data.polluted, undefined);
    });

    test('concurrent creates with one new email: exactly one 201, the rest 409', async () => {
      const address = email();
      const results = await Promise.all(Array.from({ length: 50 }, () => create({ name: 'Racer', email: address })));
      assert.equal(results.filter((r) => r.status === 201).length, 1);
      assert.equal(results.filter((r) => r.status === 409).length, 49);
    });

    test('unicode names round-trip byte for byte', async () => {
      for (const name of ['Zoë 😀👩🏽‍💻', 'עברית مرحبا', 'e\u0301 combining', 'zero\u200Bwidth\u200D', '\uFEFFbom']) {
        const created = await createUser({ name });
        assert.equal(created.name, name);
        assert.equal((await request(user(created.id))).body.data.name, name);
      }
    });
  });

  describe('PUT /api/v1/users/:id', () => {
    test('replaces name, email and role; role resets to user when omitted; updated_at refreshed', async () => {
      const admin = await createUser({ role: 'admin' });
      const address = email();
      const { status, body } = await request(user(admin.id), {
        method: 'PUT',
        body: { name: 'Renamed', email: address },
      });
      assert.equal(status, 200);
      assert.equal(body.status, 'success');
      assert.equal(body.data.id, admin.id);
      assert.equal(body.data.name, 'Renamed');
      assert.equal(body.data.email, address);
      assert.equal(body.data.role, 'user');
      assert.equal(body.data.created_at, admin.created_at);
      assert.match(body.data.updated_at, TIMESTAMP);
      assert.ok(body.data.updated_at > admin.updated_at);
      assert.deepEqual((await request(user(admin.id))).body.data, body.data);
    });

    test('an explicit role is applied', async () => {
      const plain = await createUser();
      const { body } = await request(user(plain.id), {
        method: 'PUT',
        body: { name: 'N', email: plain.email, role: 'admin' },
      });
      assert.equal(body.data.role, 'admin');
    });

    test('existence is checked before the body: 404 for an unknown id, even with a bad body', async () => {
      for (const body of [{}, { name: 1 }, [1]]) {
        const response = await request(user('no-such-user'), { method: 'PUT', body });
        assert.equal(response.status, 404);
        assert.equal(response.body.error.code, 'USER_NOT_FOUND');
      }
    });

    test('missing and invalid fields: 422, record unchanged', async () => {
      const existing = await createUser();
      assertValidationError(await request(user(existing.id), { method: 'PUT', body: { name: 'Only' } }), ['email']);
      assertValidationError(await request(user(existing.id), { method: 'PUT', body: {} }), ['name', 'email']);
      assertValidationError(await request(user(existing.id), { method: 'PUT', body: { name: '', email: 'bad' } }), [
        'name',
        'email',
      ]);
      assert.deepEqual((await request(user(existing.id))).body.data, existing);
    });

    test('a field past its bound (a 1 MiB name, a 3 000-character email): 422 naming it, record unchanged', async () => {
      const existing = await createUser();
      const body = { name: `  ${'x'.repeat(HUGE - 4096)}  `, email: `${'e'.repeat(2990)}@example.com` };
      assertValidationError(await request(user(existing.id), { method: 'PUT', body }), ['name', 'email']);
      assert.deepEqual((await request(user(existing.id))).body.data, existing);
    });

    test('no email uniqueness check by default', async () => {
      const first = await createUser();
      const second = await createUser();
      const response = await request(user(second.id), { method: 'PUT', body: { name: 'Same', email: first.email } });
      assert.equal(response.status, 200);
      assert.equal(response.body.data.email, first.email);
      // Creating with that email still conflicts.
      assert.equal((await create({ name: 'Third', email: first.email })).status, 409);
    });
  });

  describe('PATCH /api/v1/users/:id', () => {
    test('changes only the fields present; others and unknown keys are ignored; updated_at refreshed', async () => {
      const existing = await createUser({ role: 'admin' });
      const { status, body } = await request(user(existing.id), {
        method: 'PATCH',
        body: { name: 'Patched', id: 'hijack', created_at: 'x', extra: true },
      });
      assert.equal(status, 200);
      assert.equal(body.status, 'success');
      assert.deepEqual(
        { ...body.data, updated_at: undefined },
        { ...existing, name: 'Patched', updated_at: undefined },
      );
      assert.ok(body.data.updated_at > existing.updated_at);
      assert.equal(body.data.created_at, existing.created_at);
      assert.deepEqual((await request(user(existing.id))).body.data, body.data);
    });

    test('an empty body changes nothing but updated_at', async () => {
      const existing = await createUser();
      const { body } = await request(user(existing.id), { method: 'PATCH', body: {} });
      assert.deepEqual({ ...body.data, updated_at: '' }, { ...existing, updated_at: '' });
      assert.ok(body.data.updated_at > existing.updated_at);
    });

    test('no validation of formats by default: values stored as sent', async () => {
      const existing = await createUser();
      const { status, body } = await request(user(existing.id), {
        method: 'PATCH',
        body: { email: 'not-an-email', role: 'superuser', name: '' },
      });
      assert.equal(status, 200);
      assert.equal(body.data.email, 'not-an-email');
      assert.equal(body.data.role, 'superuser');
      assert.equal(body.data.name, '');
    });

    test('any string is stored up to the create bounds: 200, 254 and 64 characters, white space included', async () => {
      const existing = await createUser();
      const body = { name: ` ${'😀'.repeat(198)} `, email: ' '.repeat(254), role: 'r'.repeat(64) };
      const { status, body: reply } = await request(user(existing.id), { method: 'PATCH', body });
      assert.equal(status, 200, JSON.stringify(reply));
      assert.deepEqual([reply.data.name, reply.data.email, reply.data.role], [body.name, body.email, body.role]);
    });

    test('a field past its bound: 422 naming each, with the bound; nothing stored', async () => {
      const existing = await createUser();
      const response = await request(user(existing.id), {
        method: 'PATCH',
        body: { name: 'x'.repeat(201), email: '😀'.repeat(255), role: 'r'.repeat(65) },
      });
      assertValidationError(response, ['name', 'email', 'role']);
      assert.deepEqual(
        response.body.error.details.map((detail: { message: string }) => detail.message),
        [
          'name must be a string of at most 200 characters',
          'email must be a string of at most 254 characters',
          'role must be a string of at most 64 characters',
        ],
      );
      assert.deepEqual((await request(user(existing.id))).body.data, existing);
    });

    test('a 1 MiB name, or a 3 000-character name or email, is refused with 422, never stored (nor a 500)', async () => {
      const existing = await createUser();
      for (const body of [
        { name: 'n'.repeat(HUGE) },
        { name: randomText(3000) },
        { email: `${randomText(2990)}@example.com` },
        { role: 'r'.repeat(HUGE) },
      ]) {
        const response = await request(user(existing.id), { method: 'PATCH', body });
        assertValidationError(response, Object.keys(body));
      }
      assert.deepEqual((await request(user(existing.id))).body.data, existing);
      // Existence still comes first.
      assert.equal(
        (await request(user('no-such-user'), { method: 'PATCH', body: { name: 'n'.repeat(HUGE) } })).status,
        404,
      );
    });

    test('a non-string field: 422 naming it', async () => {
      const existing = await createUser();
      assertValidationError(await request(user(existing.id), { method: 'PATCH', body: { name: 5, role: ['admin'] } }), [
        'name',
        'role',
      ]);
      assertValidationError(await request(user(existing.id), { method: 'PATCH', body: { email: null } }), ['email']);
    });

    test('existence is checked first: 404 for an unknown id, even with a bad body', async () => {
      const response = await request(user('no-such-user'), { method: 'PATCH', body: { name: 5 } });
      assert.equal(response.status, 404);
      assert.equal(response.body.error.code, 'USER_NOT_FOUND');
    });

    test('concurrent patches of one user never mix two requests', async () => {
      const existing = await createUser();
      const bodies = Array.from({ length: 40 }, (_, i) => ({ name: `Name ${i}`, email: `mix${i}@example.com` }));
      await Promise.all(bodies.map((body) => request(user(existing.id), { method: 'PATCH', body })));
      const final = (await request(user(existing.id))).body.data;
      const index = Number(final.name.split(' ')[1]);
      assert.equal(final.email, `mix${index}@example.com`);
    });
  });

  describe('DELETE /api/v1/users/:id', () => {
    test('204 with an empty body; later reads and deletes give 404', async () => {
      const existing = await createUser();
      const response = await fetch(user(existing.id), { method: 'DELETE' });
      assert.equal(response.status, 204);
      assert.equal(await response.text(), '');
      assert.equal((await request(user(existing.id))).status, 404);
      const again = await request(user(existing.id), { method: 'DELETE' });
      assert.equal(again.status, 404);
      assert.equal(again.body.error.code, 'USER_NOT_FOUND');
    });

    test('after an update changes an email, the old one is free and the new one taken', async () => {
      const existing = await createUser();
      const moved = email();
      assert.equal(
        (await request(user(existing.id), { method: 'PATCH', body: { email: moved.toUpperCase() } })).status,
        200,
      );
      assert.equal((await create({ name: 'Takes old', email: existing.email })).status, 201);
      assert.equal((await create({ name: 'Takes new', email: ` ${moved} ` })).status, 409);
    });

    test('the email of a deleted user can be used again', async () => {
      const existing = await createUser();
      await request(user(existing.id), { method: 'DELETE' });
      await createUser({ email: existing.email });
    });

    test('a JSON content type with an empty body is fine', async () => {
      const existing = await createUser();
      const response = await fetch(user(existing.id), {
        method: 'DELETE',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(response.status, 204);
    });
  });

  describe('strict validation mode', () => {
    let strict: Running;
    before(async () => {
      strict = await startRoster({ STRICT_VALIDATION: 'true' });
    });
    after(() => strict.stop());

    const make = async (fields: Record<string, unknown> = {}) =>
      (await request(`${strict.api}/users`, { method: 'POST', body: { name: 'Strict', email: email(), ...fields } }))
        .body.data;

    test('PATCH applies the create rules to the fields present', async () => {
      const existing = await make();
      const bad = await request(`${strict.api}/users/${existing.id}`, {
        method: 'PATCH',
        body: { email: 'nope', role: 'superuser' },
      });
      assertValidationError(bad, ['email', 'role']);
      const good = await request(`${strict.api}/users/${existing.id}`, { method: 'PATCH', body: { role: 'admin' } });
      assert.equal(good.status, 200);
    });

    test("PUT and PATCH refuse an email held by another user with 409; keeping one's own is fine", async () => {
      const first = await make();
      const second = await make();
      const put = await request(`${strict.api}/users/${second.id}`, {
        method: 'PUT',
        body: { name: 'X', email: first.email.toUpperCase() },
      });
      assert.equal(put.status, 409);
      assert.equal(put.body.error.code, 'EMAIL_EXISTS');
      const patch = await request(`${strict.api}/users/${second.id}`, {
        method: 'PATCH',
        body: { email: ` ${first.email}` },
      });
      assert.equal(patch.status, 409);
      const own = await request(`${strict.api}/users/${second.id}`, {
        method: 'PUT',
        body: { name: 'X', email: second.email },
      });
      assert.equal(own.status, 200);
    });
  });

  describe('configurable roles', () => {
    test('ROLES adds allowed roles', async () => {
      const custom = await startRoster({ ROLES: 'admin,user,moderator' });
      try {
        const ok = await request(`${custom.api}/users`, {
          method: 'POST',
          body: { name: 'Mod', email: email(), role: 'moderator' },
        });
        assert.equal(ok.status, 201);
        assert.equal(ok.body.data.role, 'moderator');
        const bad = await request(`${custom.api}/users`, {
          method: 'POST',
          body: { name: 'Mod', email: email(), role: 'owner' },
        });
        assert.equal(bad.status, 422);
      } finally {
        await custom.stop();
      }
    });
  });
}

for (const store of TEST_STORES) {
  describe(`the user endpoints (${store.name} store)`, { skip: store.skip }, () => suite(store));
}
