/** The three users present at start-up (contract): one admin and two users, created in this order. */
export const SEED_USERS = [
  { name: 'Ada Lovelace', email: 'ada.lovelace@example.com', role: 'admin' },
  { name: 'Grace Hopper', email: 'grace.hopper@example.com', role: 'user' },
  { name: 'Alan Turing', email: 'alan.turing@example.com', role: 'user' },
] as const;
