/**
 * The contract every UserStore must meet, as one suite that each implementation runs against itself
 * (STYLE.md: one shared contract suite per interface). `list` is checked against the pure query
 * functions, which are the definition of the list semantics.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { createClock } from '../../src/clock.js';
import { queryUsers, type ListParams } from '../../src/users/query.js';
import type { User } from '../../src/users/schema.js';
import type { UserStore } from '../../src/users/store.js';

export function userStoreContract(name: string, makeStore: () => Promise<UserStore>): void {
  describe(`UserStore contract: ${name}`, () => {
    const clock = createClock();
    const newUser = (fields: Partial<User> = {}): User => {
      const now = clock.next();
      return { id: randomUUID(), name: 'Store Test', email: `${randomUUID()}@example.com`, role: 'user', created_at: now, updated_at: now, ...fields };
    };
    const withStore = (body: (store: UserStore) => Promise<void>) => async () => {
      const store = await makeStore();
      try {
        await body(store);
      } finally {
        await store.close();
      }
    };

    test('get of an unknown id is undefined', withStore(async (store) => {
      assert.equal(await store.get('nope'), undefined);
    }));

    test('insert then get returns an equal record', withStore(async (store) => {
      const user = newUser();
      assert.equal(await store.insert(user), 'ok');
      assert.deepEqual(await store.get(user.id), user);
    }));

    test('insert refuses an email held by another user, by letter case and surrounding spaces', withStore(async (store) => {
      const user = newUser({ email: 'Taken@Example.com' });
      await store.insert(user);
      for (const email of ['Taken@Example.com', 'taken@example.com', '  TAKEN@EXAMPLE.COM ']) {
        assert.equal(await store.insert(newUser({ email })), 'email_taken', email);
      }
      const { total } = await store.list({ sort: 'created_at', descending: true, offset: 0, limit: 100 });
      assert.equal(total, 1);
    }));

    test('update applies the changes, keeps the rest, and reports unknown ids', withStore(async (store) => {
      const user = newUser({ role: 'admin' });
      await store.insert(user);
      const updated_at = clock.next();
      const result = await store.update(user.id, { name: 'Renamed', updated_at }, { uniqueEmail: false });
      assert.deepEqual(result, { ...user, name: 'Renamed', updated_at });
      assert.deepEqual(await store.get(user.id), result);
      assert.equal(await store.update('nope', { updated_at }, { uniqueEmail: false }), 'not_found');
    }));

    test('update with uniqueEmail refuses another user\'s email but allows one\'s own', withStore(async (store) => {
      const first = newUser();
      const second = newUser();
      await store.insert(first);
      await store.insert(second);
      const updated_at = clock.next();
      assert.equal(await store.update(second.id, { email: ` ${first.email.toUpperCase()}`, updated_at }, { uniqueEmail: true }), 'email_taken');
      assert.deepEqual(await store.get(second.id), second);
      const own = await store.update(second.id, { email: second.email.toUpperCase(), updated_at }, { uniqueEmail: true });
      assert.equal((own as User).email, second.email.toUpperCase());
    }));

    test('update without uniqueEmail may share an email; insert then still refuses it', withStore(async (store) => {
      const first = newUser();
      const second = newUser();
      await store.insert(first);
      await store.insert(second);
      const shared = await store.update(second.id, { email: first.email, updated_at: clock.next() }, { uniqueEmail: false });
      assert.equal((shared as User).email, first.email);
      assert.equal(await store.insert(newUser({ email: first.email })), 'email_taken');
      // Moving one of the two away keeps the email held by the other.
      await store.update(first.id, { email: 'moved@example.com', updated_at: clock.next() }, { uniqueEmail: false });
      assert.equal(await store.insert(newUser({ email: first.email })), 'email_taken');
    }));

    test('an email given up by update or remove can be taken again', withStore(async (store) => {
      const user = newUser({ email: 'old@example.com' });
      await store.insert(user);
      await store.update(user.id, { email: 'new@example.com', updated_at: clock.next() }, { uniqueEmail: false });
      assert.equal(await store.insert(newUser({ email: 'OLD@example.com' })), 'ok');
      assert.equal(await store.insert(newUser({ email: 'new@example.com' })), 'email_taken');
      assert.equal(await store.remove(user.id), true);
      assert.equal(await store.insert(newUser({ email: 'new@example.com' })), 'ok');
    }));

    test('remove reports whether there was a user, and the user is gone', withStore(async (store) => {
      const user = newUser();
      await store.insert(user);
      assert.equal(await store.remove(user.id), true);
      assert.equal(await store.get(user.id), undefined);
      assert.equal(await store.remove(user.id), false);
    }));

    test('list equals the pure query over the same users, for every kind of query', withStore(async (store) => {
      const names = ['Ada', 'ada', 'Émile', 'Zoë', 'bob', '😀 Smile', 'Bob', 'carol', 'Dave', 'eve'];
      const users: User[] = [];
      for (let i = 0; i < 40; i++) {
        const user = newUser({ name: `${names[i % names.length]} ${i % 7}`, email: `u${i}@${i % 3 ? 'corp' : 'home'}.example`, role: i % 4 ? 'user' : 'admin' });
        users.push(user);
        await store.insert(user);
      }
      // Some updates, so updated_at and the stored order of fields differ from creation.
      for (const user of users.slice(0, 10)) {
        const changed = await store.update(user.id, { role: 'admin', updated_at: clock.next() }, { uniqueEmail: false });
        users[users.indexOf(user)] = changed as User;
      }
      const queries: Partial<ListParams>[] = [
        {},
        { descending: false },
        { role: 'admin' },
        { role: 'nobody' },
        { search: 'ADA' },
        { search: 'corp' },
        { search: '😀' },
        { role: 'user', search: 'b' },
        { sort: 'name', descending: false },
        { sort: 'name' },
        { sort: 'email', descending: false },
        { sort: 'updated_at' },
        { sort: 'role', descending: false },
        { sort: 'no_such_field' },
        { offset: 5, limit: 7 },
        { offset: 35, limit: 10 },
        { offset: 100, limit: 10 },
        { role: 'admin', sort: 'name', descending: false, offset: 2, limit: 3 },
      ];
      for (const query of queries) {
        const params: ListParams = { sort: 'created_at', descending: true, offset: 0, limit: 100, ...query };
        assert.deepEqual(await store.list(params), queryUsers(users, params), JSON.stringify(query));
      }
    }));
  });
}
