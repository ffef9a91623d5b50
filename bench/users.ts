/**
 * The benchmark's users: the same N users for every server, derived from the user's index alone (a
 * seeded PRNG per index), so a server child can generate a million of them without shipping data over
 * IPC, and the parent can name any user's id without generating the others.
 */
import type { User } from '../src/users/schema.js';

const SEED = 0x5eed_2024;
const ADMIN_SHARE = 0.1;
/** Users are created 1 ms apart from this instant on, with random microseconds: strictly increasing, all in the past. */
const FIRST_CREATED_MS = Date.UTC(2024, 0, 1);

const FIRST_NAMES = [
  'Olivia',
  'Liam',
  'Emma',
  'Noah',
  'Amelia',
  'Oliver',
  'Sophia',
  'Elijah',
  'Charlotte',
  'James',
  'Ava',
  'William',
  'Isabella',
  'Benjamin',
  'Mia',
  'Lucas',
  'Evelyn',
  'Henry',
  'Harper',
  'Theodore',
  'Aisha',
  'Mohammed',
  'Fatima',
  'Omar',
  'Priya',
  'Arjun',
  'Ananya',
  'Rohan',
  'Mei',
  'Wei',
  'Hiroshi',
  'Yuki',
  'Sakura',
  'Kenji',
  'Min-jun',
  'Seo-yeon',
  'José',
  'María',
  'Lucía',
  'Mateo',
  'Sofía',
  'Diego',
  'Camila',
  'João',
  'Beatriz',
  'Chiara',
  'Giulia',
  'Lorenzo',
  'Zoë',
  'Chloé',
  'Léa',
  'Hugo',
  'Björn',
  'Astrid',
  'Freya',
  'Sven',
  'Ingrid',
  'Olga',
  'Dmitri',
  'Katarzyna',
  'Piotr',
  'Chidi',
  'Ngozi',
  'Kwame',
  'Amara',
  'Tariq',
  'Leila',
  'Yusuf',
  'Nadia',
  'Santiago',
];

const LAST_NAMES = [
  'Smith',
  'Johnson',
  'Williams',
  'Brown',
  'Jones',
  'Garcia',
  'Miller',
  'Davis',
  'Rodriguez',
  'Martinez',
  'Hernandez',
  'Lopez',
  'Gonzalez',
  'Wilson',
  'Anderson',
  'Thomas',
  'Taylor',
  'Moore',
  'Jackson',
  'Martin',
  'Lee',
  'Perez',
  'Thompson',
  'White',
  'Harris',
  'Sanchez',
  'Clark',
  'Ramirez',
  'Lewis',
  'Robinson',
  'Walker',
  'Young',
  'Allen',
  'King',
  'Wright',
  'Scott',
  'Torres',
  'Nguyen',
  'Hill',
  'Flores',
  'Okafor',
  'Mensah',
  'Haddad',
  'Khan',
  'Patel',
  'Sharma',
  'Iyer',
  'Tanaka',
  'Suzuki',
  'Watanabe',
  'Kim',
  'Park',
  'Chen',
  'Wang',
  'Zhang',
  'Müller',
  'Schmidt',
  'Schneider',
  'Fischer',
  'Weber',
  'Rossi',
  'Russo',
  'Ferrari',
  'Dubois',
  'Lefèvre',
  'Moreau',
  'Novak',
  'Kowalski',
  'Ivanova',
  'Petrov',
  'Andersson',
  'Lindqvist',
  'Nilsson',
  'Eriksen',
  'Hansen',
  'Silva',
  'Santos',
  'Oliveira',
  'Costa',
  "O'Brien",
];

const DOMAINS = ['example.com', 'example.org', 'example.net', 'mail.example.com', 'corp.example.org'];

/**
 * A search term that matches a few per cent of the users: the last names Hansen and Eriksen (and
 * nothing else in the name lists or domains), about 2.5 %.
 */
export const SEARCH_TERM = 'sen';

/** Email local parts are plain ASCII: diacritics dropped, apostrophes and spaces removed. */
function emailPart(name: string): string {
  return name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/[^A-Za-z-]/g, '')
    .toLowerCase();
}

const FIRST_EMAIL = FIRST_NAMES.map(emailPart);
const LAST_EMAIL = LAST_NAMES.map(emailPart);

/** mulberry32: a small, fast 32-bit PRNG; good enough to vary names and ids. */
function mulberry32(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

function hex32(value: number): string {
  return HEX[value >>> 24]! + HEX[(value >>> 16) & 0xff]! + HEX[(value >>> 8) & 0xff]! + HEX[value & 0xff]!;
}

/**
 * A version-4-shaped UUID. The first 32 bits are a bijection of the index (an odd multiplier and an
 * xor-shift are both invertible modulo 2^32), so ids are unique by construction; the rest is random.
 */
function uuid(index: number, next: () => number): string {
  let head = Math.imul(index ^ SEED, 0x9e3779b1);
  head ^= head >>> 16;
  const b = hex32(next());
  const c = hex32((next() & 0x3fffffff) | 0x80000000); // the variant bits: 10xx
  const d = hex32(next());
  return `${hex32(head >>> 0)}-${b.slice(0, 4)}-4${b.slice(5, 8)}-${c.slice(0, 4)}-${c.slice(4, 8)}${d}`;
}

/** `YYYY-MM-DDTHH:MM:SS` of the last second formatted, reused for the thousand users created within it. */
let cachedSecond = { start: NaN, text: '' };

/** `YYYY-MM-DDTHH:MM:SS.ffffff` (UTC, no offset), as Roster writes timestamps. */
function timestampAt(micros: number): string {
  const start = Math.floor(micros / 1_000_000);
  if (start !== cachedSecond.start) cachedSecond = { start, text: new Date(start * 1000).toISOString().slice(0, 19) };
  return `${cachedSecond.text}.${String(micros - start * 1_000_000).padStart(6, '0')}`;
}

function pick<T>(list: readonly T[], random: number): T {
  return list[random % list.length]!;
}

/**
 * The user with this index (0-based). Users with higher indexes were created later. The user is
 * written as JSON and parsed, so that its strings are flat and its own, as if it had come in through
 * the API; built by concatenation they would be ropes and slices, and distort the store's memory
 * figures. (The name lists hold no character that JSON would need escaped.) As in Roster, updated_at
 * is the same string as created_at.
 */
export function benchUser(index: number): User {
  const next = mulberry32(Math.imul(index + 1, 0x85ebca6b) ^ SEED);
  const id = uuid(index, next);
  const first = next() % FIRST_NAMES.length;
  const last = next() % LAST_NAMES.length;
  const middle = next() % 100 < 30 ? ` ${String.fromCharCode(65 + (next() % 26))}.` : '';
  const created = timestampAt((FIRST_CREATED_MS + index) * 1000 + (next() % 1000));
  const email = `${FIRST_EMAIL[first]!}.${LAST_EMAIL[last]!}${index}@${pick(DOMAINS, next())}`;
  const role = next() / 2 ** 32 < ADMIN_SHARE ? 'admin' : 'user';
  const user = JSON.parse(
    `{"id":"${id}","name":"${FIRST_NAMES[first]!}${middle} ${LAST_NAMES[last]!}","email":"${email}","role":"${role}","created_at":"${created}"}`,
  ) as Omit<User, 'updated_at'>;
  return Object.assign(user, { updated_at: user.created_at });
}

/** The ids of `count` users picked at random (with a fixed seed) among the first `total`. */
export function idPool(total: number, count: number): string[] {
  const next = mulberry32(SEED ^ total);
  return Array.from({ length: Math.min(count, total) }, () => benchUser(next() % total).id);
}

/**
 * How many of the first `total` users `?search=term` must find, by the contract's rule: the term is a
 * case-insensitive substring of the name or of the email. Counted from the generated users, so a
 * server's `total` is checked against the users themselves rather than against another server.
 */
export function searchMatches(total: number, term: string = SEARCH_TERM): number {
  const needle = term.toLowerCase();
  let count = 0;
  for (let index = 0; index < total; index++) {
    const user = benchUser(index);
    if (user.name.toLowerCase().includes(needle) || user.email.toLowerCase().includes(needle)) count++;
  }
  return count;
}
