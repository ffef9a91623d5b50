/**
 * The roles Roster relies on (src/config/roles.ts) and what the configuration makes of them: ROLES'
 * default holds every required role, and a ROLES without one of them is refused.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { ADMIN_ROLE, DEFAULT_ROLE, REQUIRED_ROLES } from '../src/config/roles.js';
import { SEED_USERS } from '../src/users/seed.js';

test('the required roles are the admin role and the default role, and the seed users hold both', () => {
  assert.deepEqual([...REQUIRED_ROLES].sort(), [ADMIN_ROLE, DEFAULT_ROLE].sort());
  assert.deepEqual([...new Set(SEED_USERS.map((user) => user.role))].sort(), [...REQUIRED_ROLES].sort());
});

test("ROLES' default is exactly the required roles", () => {
  assert.deepEqual([...loadConfig({}).roles].sort(), [...REQUIRED_ROLES].sort());
});

test('a ROLES without a required role is refused; with them and more, accepted', () => {
  for (const missing of REQUIRED_ROLES) {
    const roles = [...REQUIRED_ROLES.filter((role) => role !== missing), 'moderator'].join(',');
    assert.throws(() => loadConfig({ ROLES: roles }), ConfigError, `ROLES=${roles}`);
  }
  assert.deepEqual(loadConfig({ ROLES: [...REQUIRED_ROLES, 'moderator'].join(',') }).roles, [
    ...REQUIRED_ROLES,
    'moderator',
  ]);
});
