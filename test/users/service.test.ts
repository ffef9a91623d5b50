/**
 * UserService (src/users/service.ts): the contract's rules in one place, checked against the memory
 * store without HTTP: the role default, ids, existence before validation, email uniqueness, paging,
 * MAX_USERS and the seed.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RosterError } from '../../src/errors.js';
import { DEFAULT_ROLE } from '../../src/config/roles.js';
import { userSchemas } from '../../src/users/schema.js';
import { SEED_USERS } from '../../src/users/seed.js';
import { UserService, type UserServiceOptions } from '../../src/users/service.js';
import { MemoryUserStore } from '../../src/users/stores/memory/memory-store.js';
import { createUserValidator } from '../../src/users/validation.js';

const ROLES = ['admin', 'user', 'moderator'];
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function service(options: Partial<UserServiceOptions> = {}): UserService {
  const strict = options.strict ?? false;
  return new UserService(new MemoryUserStore(), createUserValidator(userSchemas(ROLES, strict)), {
    maxPageSize: 100,
    strict,
    ...options,
  });
}

/** Runs `work`, which must throw a RosterError of `code`; returns it. */
async function refused(work: () => Promise<unknown>, code: string): Promise<RosterError> {
  const error = await work().then(
    () => assert.fail(`expected ${code}, got success`),
    (error: unknown) => error,
  );
  assert.ok(error instanceof RosterError, String(error));
  assert.equal(error.code, code);
  return error;
}

describe('UserService', () => {
  test('create gives a UUID v4, stamps both times alike, and the default role when none is sent', async () => {
    const users = service();
    const user = await users.create({ name: 'Ada', email: 'ada@example.com' });
    assert.match(user.id, UUID_V4);
    assert.equal(user.role, DEFAULT_ROLE);
    assert.equal(user.updated_at, user.created_at);
    assert.deepEqual(await users.get(user.id), user);
    assert.equal((await users.create({ name: 'Mod', email: 'mod@example.com', role: 'moderator' })).role, 'moderator');
  });

  test('create refuses an email held by another user, whatever its case and surrounding space', async () => {
    const users = service();
    await users.create({ name: 'Ada', email: 'ada@example.com' });
    await refused(() => users.create({ name: 'Ada Again', email: '  ADA@Example.com ' }), 'EMAIL_EXISTS');
  });

  test('create names every missing required field before any bad format', async () => {
    const error = await refused(() => service().create({ role: 'nobody' }), 'VALIDATION_ERROR');
    assert.deepEqual(
      error.details?.map((detail) => detail.field),
      ['name', 'email'],
    );
  });

  test('replace and update: a missing user is 404 before an invalid body is 422', async () => {
    const users = service();
    const { id } = await users.create({ name: 'Ada', email: 'ada@example.com' });
    await refused(() => users.replace('no-such-id', { name: '' }), 'USER_NOT_FOUND');
    await refused(() => users.update('no-such-id', { name: 42 }), 'USER_NOT_FOUND');
    await refused(() => users.replace(id, { name: '' }), 'VALIDATION_ERROR');
    await refused(() => users.update(id, { name: 42 }), 'VALIDATION_ERROR');
  });

  test('replace resets the role to the default when omitted; update changes only what it is sent', async () => {
    const users = service();
    const created = await users.create({ name: 'Ada', email: 'ada@example.com', role: 'admin' });
    const updated = await users.update(created.id, { name: 'Ada L.', unknown: 'ignored' });
    assert.deepEqual({ ...updated, updated_at: created.updated_at }, { ...created, name: 'Ada L.' });
    assert.ok(updated.updated_at > created.updated_at);
    assert.equal(Object.hasOwn(updated, 'unknown'), false);
    const replaced = await users.replace(created.id, { name: 'Ada', email: 'ada@example.com' });
    assert.equal(replaced.role, DEFAULT_ROLE);
  });

  test('an email held by another: allowed on update by default, refused in strict mode', async () => {
    for (const strict of [false, true]) {
      const users = service({ strict });
      await users.create({ name: 'Ada', email: 'ada@example.com' });
      const grace = await users.create({ name: 'Grace', email: 'grace@example.com' });
      const update = users.update(grace.id, { email: 'ADA@example.com' });
      if (strict) await refused(() => update, 'EMAIL_EXISTS');
      else assert.equal((await update).email, 'ADA@example.com');
    }
  });

  test('remove: gone afterwards, and a second remove is 404', async () => {
    const users = service();
    const { id } = await users.create({ name: 'Ada', email: 'ada@example.com' });
    await users.remove(id);
    await refused(() => users.get(id), 'USER_NOT_FOUND');
    await refused(() => users.remove(id), 'USER_NOT_FOUND');
  });

  test('list: page 1 and 20 a page by default, a larger limit clamped to the maximum page size', async () => {
    const users = service({ maxPageSize: 3 });
    for (let i = 0; i < 7; i++) await users.create({ name: `User ${i}`, email: `user${i}@example.com` });
    const first = await users.list({});
    assert.deepEqual(first.pagination, { total: 7, page: 1, limit: 3, pages: 3 });
    const last = await users.list({ page: '3', limit: '1000', sort: 'name', order: 'asc' });
    assert.deepEqual(last.pagination, { total: 7, page: 3, limit: 3, pages: 3 });
    assert.deepEqual(
      last.users.map((user) => user.name),
      ['User 6'],
    );
    assert.equal((await service().list({})).pagination.limit, 20);
  });

  test('MAX_USERS: a create past the cap is refused with 507, and storage reports the count', async () => {
    const users = service({ maxUsers: 2 });
    await users.create({ name: 'One', email: 'one@example.com' });
    await users.create({ name: 'Two', email: 'two@example.com' });
    const error = await refused(
      () => users.create({ name: 'Three', email: 'three@example.com' }),
      'INSUFFICIENT_STORAGE',
    );
    assert.equal(error.status, 507);
    assert.deepEqual(await users.storage(), { users: 2, capacity: 2 });
    assert.equal(await service().storage(), undefined);
  });

  test('seed: the three seed users, in order, into an empty store only', async () => {
    const users = service();
    await users.seed();
    await users.seed();
    const { users: seeded, pagination } = await users.list({ sort: 'created_at', order: 'asc' });
    assert.equal(pagination.total, SEED_USERS.length);
    assert.deepEqual(
      seeded.map(({ name, email, role }) => ({ name, email, role })),
      SEED_USERS.map(({ name, email, role }) => ({ name, email, role })),
    );
  });
});
