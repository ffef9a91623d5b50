import { ADMIN_ROLE, DEFAULT_ROLE } from '../config/roles.js';

/** The three users present at start-up (contract): one admin and two users, created in this order. */
export const SEED_USERS = [
  { name: 'Ada Lovelace', email: 'ada.lovelace@example.com', role: ADMIN_ROLE },
  { name: 'Grace Hopper', email: 'grace.hopper@example.com', role: DEFAULT_ROLE },
  { name: 'Alan Turing', email: 'alan.turing@example.com', role: DEFAULT_ROLE },
] as const;
