/** The three users present at start-up (contract): one admin and two users, created in this order. */
import type { UserService } from './service.js';

export const SEED_USERS = [
  { name: 'Ada Lovelace', email: 'ada.lovelace@example.com', role: 'admin' },
  { name: 'Grace Hopper', email: 'grace.hopper@example.com', role: 'user' },
  { name: 'Alan Turing', email: 'alan.turing@example.com', role: 'user' },
] as const;

/**
 * Creates the seed users in a store that holds none yet. A store that already holds users (a database
 * that outlived a restart, a store filled by a benchmark) is left as it is.
 */
export async function seedUsers(users: UserService): Promise<void> {
  const { pagination } = await users.list({ limit: '1' });
  if (pagination.total > 0) return;
  for (const seed of SEED_USERS) await users.create({ ...seed });
}
