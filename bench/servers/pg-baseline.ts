/**
 * Benchmark child: the PostgreSQL baseline. A minimal `node:http` server over `pg`, on the
 * same schema and users as Roster on PostgreSQL (it reads and writes Roster's tables in the run's
 * schema, which Roster has migrated and filled). One handler per bench scenario, each one plain
 * parameterised statement, named so that every pooled connection prepares it once: what an
 * experienced PostgreSQL developer would write for these requests on this schema. Replies carry
 * Roster's JSON shapes; like the Map baseline (http-baseline.ts) it validates only what the shapes
 * need. The stored-text escapes of src/users/stores/sql/stored-text.ts are not applied: the bench's users hold none.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { emailKey } from '../../src/users/store.js';
import { answerParent, measureFill, memoryNow } from '../ipc.js';
import { failure, notFound, pageOf, serveBaseline, success, type Reply } from './baseline-http.js';
import type { HttpBaselineStarted } from './http-baseline.js';

/** `url`: the run's schema (search_path in it); `poolSize`: Roster's default pool, for a like-for-like pair. */
export type PgBaselineCommand = { cmd: 'start'; users: number; url: string; poolSize: number } | { cmd: 'memory' };

const FORMAT = `'YYYY-MM-DD"T"HH24:MI:SS.US'`;
const COLUMNS = `id, name, email, role, to_char(created_at, ${FORMAT}) AS created_at, to_char(updated_at, ${FORMAT}) AS updated_at`;
const NOW = `clock_timestamp() AT TIME ZONE 'UTC'`;

/**
 * Sorts the bench asks for; anything else is answered in the default order. Qualified: a bare
 * `created_at` in ORDER BY would name the output column, the to_char text, which no index sorts (a
 * first version sorted the whole table that way on every page).
 */
const ORDER = {
  newest: 'users.created_at DESC, users.seq DESC',
  name: 'users.name ASC, users.created_at, users.seq',
} as const;

/**
 * The statements. A list returns its page with the total beside each row: without search the total
 * is the kept per-role count (migration 002's table, the schema's way to count users); with search it
 * is counted, once, from the matches the page is also taken from.
 */
const SQL = {
  get: `SELECT ${COLUMNS} FROM users WHERE id = $1`,
  page: (order: string) =>
    `SELECT (SELECT coalesce(sum(users), 0) FROM user_role_counts) AS total, ${COLUMNS}
     FROM users ORDER BY ${order} LIMIT $1 OFFSET $2`,
  rolePage: `SELECT (SELECT coalesce(sum(users), 0) FROM user_role_counts WHERE role = $1) AS total, ${COLUMNS}
     FROM users WHERE role = $1 ORDER BY ${ORDER.newest} LIMIT $2 OFFSET $3`,
  searchPage: `WITH matches AS MATERIALIZED (
       SELECT id, name, email, role, created_at, updated_at, seq FROM users
       WHERE name_lower LIKE $1 OR email_lower LIKE $1)
     SELECT (SELECT count(*) FROM matches) AS total, ${COLUMNS}
     FROM matches ORDER BY matches.created_at DESC, matches.seq DESC LIMIT $2 OFFSET $3`,
  create: `INSERT INTO users (id, name, email, role, created_at, updated_at, name_lower, email_lower, email_key, claims_email)
     VALUES ($1, $2, $3, $4, ${NOW}, ${NOW}, $5, $6, $7, true)
     ON CONFLICT (email_key) WHERE claims_email DO NOTHING
     RETURNING ${COLUMNS}`,
  patch: `UPDATE users SET name = coalesce($2, name), name_lower = coalesce($3, name_lower), role = coalesce($4, role),
       updated_at = ${NOW}
     WHERE id = $1 RETURNING ${COLUMNS}`,
};

let pool: pg.Pool;

type Row = Record<string, string>;

const user = ({ id, name, email, role, created_at, updated_at }: Row) => ({
  id,
  name,
  email,
  role,
  created_at,
  updated_at,
});

async function list(query: URLSearchParams): Promise<Reply> {
  const asked = pageOf(query);
  if (Array.isArray(asked)) return asked;
  const { page, size } = asked;
  const offset = (page - 1) * size;
  const role = query.get('role');
  const search = query.get('search');
  if (role !== null && search !== null) return [400, failure('UNSUPPORTED', 'role with search: not a bench scenario')];
  let statement: pg.QueryConfig;
  if (search !== null) {
    const pattern = `%${search.toLowerCase().replace(/[\\%_]/g, '\\$&')}%`;
    statement = { name: 'search-page', text: SQL.searchPage, values: [pattern, size, offset] };
  } else if (role !== null) {
    statement = { name: 'role-page', text: SQL.rolePage, values: [role, size, offset] };
  } else {
    const byName = query.get('sort') === 'name' && query.get('order') === 'asc';
    statement = {
      name: byName ? 'name-page' : 'newest-page',
      text: SQL.page(byName ? ORDER.name : ORDER.newest),
      values: [size, offset],
    };
  }
  const { rows } = await pool.query<Row>(statement);
  // A page past the last user has no row to carry the total; the bench never asks for one.
  const total = Number(rows[0]?.total ?? 0);
  const pagination = { total, page, limit: size, pages: Math.ceil(total / size) };
  return [200, success('Users retrieved', { users: rows.map(user), pagination })];
}

async function get(id: string): Promise<Reply> {
  const { rows } = await pool.query<Row>({ name: 'get', text: SQL.get, values: [id] });
  return rows[0] ? [200, success('User retrieved', user(rows[0]))] : notFound;
}

async function create(body: Record<string, unknown>): Promise<Reply> {
  const { name, email, role } = body;
  if (typeof name !== 'string' || typeof email !== 'string')
    return [422, failure('VALIDATION_ERROR', 'name and email are required')];
  const { rows } = await pool.query<Row>({
    name: 'create',
    text: SQL.create,
    values: [
      randomUUID(),
      name,
      email,
      typeof role === 'string' ? role : 'user',
      name.toLowerCase(),
      email.toLowerCase(),
      emailKey(email),
    ],
  });
  return rows[0]
    ? [201, success('User created', user(rows[0]))]
    : [409, failure('EMAIL_EXISTS', 'Email already exists')];
}

async function patch(id: string, body: Record<string, unknown>): Promise<Reply> {
  const text = (field: string) => (typeof body[field] === 'string' ? body[field] : null);
  const name = text('name');
  const { rows } = await pool.query<Row>({
    name: 'patch',
    text: SQL.patch,
    values: [id, name, name?.toLowerCase() ?? null, text('role')],
  });
  return rows[0] ? [200, success('User updated', user(rows[0]))] : notFound;
}

answerParent<PgBaselineCommand>(async (command) => {
  if (command.cmd === 'memory') return memoryNow();
  // The users are Roster's, stored before this starts: nothing to fill.
  const fill = await measureFill(() => {
    pool = new pg.Pool({ connectionString: command.url, max: command.poolSize });
    pool.on('error', () => {});
  });
  const port = await serveBaseline({ get, list, create, patch });
  const result: HttpBaselineStarted = { port, ...fill };
  return result;
});
