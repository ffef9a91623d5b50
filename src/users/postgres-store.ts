/**
 * Users in PostgreSQL (migrations/001_users.sql), for several Roster instances sharing one database.
 * Every answer equals the memory store's (query.ts defines them); strings are stored through
 * postgres-text.ts so that SQL sorts and searches them as JavaScript does.
 *
 * Timestamps come from the database clock, not from the instance: strictly increasing within an
 * instance (roster_stamp, migrations/006); across instances they need not be, and a sequence (`seq`)
 * breaks ties, so creation order, (created_at, seq), is total and stable (migrations/004). No write
 * takes a row that every other write takes too: counts per role are spread over rows a writer finds
 * free (SKIP LOCKED). `insert` and `update` return the stamped record.
 *
 * Email uniqueness: of the users holding an email key, exactly one "claims" it, and a partial unique
 * index allows one claim per key. Creating a user is one INSERT that needs the claim, so when two
 * instances race to create the same email, one wins and the other gets `email_taken`. Updates that
 * change a user's email key, and removals, run in a transaction holding an advisory lock per key
 * involved, and pass the claim on to another holder when the claimer leaves.
 *
 * Lock order, which keeps these transactions from deadlocking one another: the advisory lock on the
 * user written, advisory locks on email keys, then user rows; a count row is only ever taken when no
 * one holds it.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import { sortedField, type ListParams, type ListResult } from './query.js';
import type { User } from './schema.js';
import { emailKey, type Changes, type NewUser, type UserStore } from './store.js';
import { EngineFaults } from '../engine-faults.js';
import {
  createPool,
  databaseBusy,
  databaseUnreachable,
  DatabaseHealth,
  isTimeout,
  isPoolExhausted,
  poolBusy,
  isTooLarge,
  isUnreachable,
  valueTooLarge,
} from './postgres-connection.js';
import { migrate } from './postgres-migrations.js';
import { anywherePattern, fromStored, likePattern, toStored } from './postgres-text.js';

const FORMAT = `'YYYY-MM-DD"T"HH24:MI:SS.US'`;
/** A user's columns as `Row`, from `table` (a prefix such as `users.` where a statement joins others). */
const columns = (table = '') =>
  `${table}id, ${table}name, ${table}email, ${table}role, to_char(${table}created_at, ${FORMAT}) AS created_at, to_char(${table}updated_at, ${FORMAT}) AS updated_at`;
/**
 * The timestamp of a write: the database's clock, UTC, microseconds, read through roster_stamp
 * (migrations/006) so that within one instance it strictly increases. `$n` is the instance's key.
 */
const stamp = (n: number) => `roster_stamp($${n})`;
/** Advisory lock on an email key (64-bit hash; a collision only makes two keys wait for each other). */
const KEY_LOCK = `pg_advisory_xact_lock(hashtextextended('roster.email:' || $1, 0))`;
/** Advisory lock on a user, taken first: while held, no one else changes the user's email key. */
const USER_LOCK = `pg_advisory_xact_lock(hashtextextended('roster.user:' || $1, 0))`;
/** Key of the session lock held while seeding, per schema. */
const SEED_LOCK = `hashtextextended('roster.seed:' || current_schema(), 0)`;
/** Offsets beyond this are past any table; PostgreSQL's bigint could not take page × limit at its largest. */
const MAX_OFFSET = 2 ** 62;
/** Attempts of a write that lost a race (a deadlock, an email claimed meanwhile) before giving up. */
const ATTEMPTS = 5;
/** Search totals an instance keeps (see list); past this many, the oldest is forgotten. */
const SEARCH_TOTALS = 1_000;

/**
 * Names of the statements that every pooled connection prepares once (parse and plan once, then only
 * bind and execute), by their text; the same text always gets the same name, as node-postgres requires.
 * Only statements whose best plan does not depend on the values are named: search is not (how many rows
 * a needle matches decides between walking an index and reading the matches), so PostgreSQL plans each
 * search for its needle. The texts named come from a fixed set (a list's filters and orders), so this
 * stays small.
 */
const statementNames = new Map<string, string>();

function prepared(text: string, values: unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `roster_${statementNames.size + 1}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}

/** A search's total as counted, and the number of changes to users (migration 005) it was counted after. */
interface SearchTotal {
  changes: string;
  total: number;
}

/** A user as stored: every field text, some of it escaped (postgres-text.ts). */
type Row = Record<keyof User, string>;

const userOf = (row: Row): User => ({
  id: fromStored(row.id),
  name: fromStored(row.name),
  email: fromStored(row.email),
  role: fromStored(row.role),
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** The columns derived from a user's email. */
const emailColumns = (email: string) => ({
  email: toStored(email),
  email_lower: toStored(email.toLowerCase()),
  email_key: toStored(emailKey(email)),
});

/** A write lost a race with another transaction and is tried again from the start. */
class Retry extends Error {}

export class PostgresUserStore implements UserStore {
  readonly health: DatabaseHealth;
  /** Every read decodes rows into new objects. */
  readonly stableObjects = false;
  /** By role and stored needle: totals this instance has counted (list). Oldest first. */
  readonly #searchTotals = new Map<string, SearchTotal>();
  /** This instance's key for roster_stamp (migrations/006): random, so other instances never share it. */
  readonly #instance = randomBytes(8).readBigInt64BE().toString();

  private constructor(
    private readonly pool: pg.Pool,
    private readonly database: { url: string },
    logger: Logger,
    private readonly faults: EngineFaults,
  ) {
    this.health = new DatabaseHealth(pool, logger);
  }

  /** Connects, applies pending migrations, and returns the store; fails when the database cannot be reached. */
  static async open(
    database: { url: string; poolSize: number },
    logger: Logger,
    faults = new EngineFaults(logger),
  ): Promise<PostgresUserStore> {
    const pool = createPool(database, faults);
    try {
      const applied = await migrate(pool);
      if (applied.length > 0) logger.info({ applied }, 'database migrations applied');
      return new PostgresUserStore(pool, database, logger, faults);
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
  }

  async get(id: string): Promise<User | undefined> {
    const { rows } = await this.#query<Row>(`SELECT ${columns()} FROM users WHERE id = $1`, [toStored(id)], true);
    return rows[0] && userOf(rows[0]);
  }

  async list(params: ListParams): Promise<ListResult> {
    const values: unknown[] = [];
    const filters: string[] = [];
    if (params.role !== undefined) {
      values.push(toStored(params.role));
      filters.push(`role = $${values.length}`);
    }
    let needle: string | undefined;
    if (params.search !== undefined) {
      needle = toStored(params.search.toLowerCase());
      const pattern = likePattern(needle);
      if (pattern !== undefined) {
        values.push(pattern);
        filters.push(`(name_lower LIKE $${values.length} OR email_lower LIKE $${values.length})`);
      } else {
        // LIKE finds the needle anywhere; only rows holding an escape need the alignment confirmed.
        values.push(anywherePattern(needle), needle);
        const [like, exact] = [`$${values.length - 1}`, `$${values.length}`];
        const aligned = (column: string) =>
          `(${column} LIKE ${like} AND (strpos(${column}, E'\\x01') = 0 OR roster_contains_aligned(${column}, ${exact})))`;
        filters.push(`(${aligned('name_lower')} OR ${aligned('email_lower')})`);
      }
    }
    const where = filters.length === 0 ? 'true' : filters.join(' AND ');
    values.push(params.limit, Math.min(params.offset, MAX_OFFSET));
    const [limit, offset] = [`$${values.length - 1}`, `$${values.length}`];
    // One statement, so the page and the total come from the same snapshot; the total is known even
    // when the page lies beyond the last user.
    const page = (total: string, named: boolean) =>
      this.#query<Row & { total: string | null; changes?: string; id: string | null }>(
        `SELECT t.*, ${columns('p.')}
         FROM (${total}) t
         LEFT JOIN LATERAL (
           SELECT id, name, email, role, created_at, updated_at, seq FROM users WHERE ${where}
           ORDER BY ${orderBy(params, '')} LIMIT ${limit} OFFSET ${offset}
         ) p ON true
         ORDER BY ${orderBy(params, 'p.')}`,
        values,
        named,
      );
    const usersOf = (rows: (Row & { id: string | null })[]) => rows.filter((row) => row.id !== null).map(userOf);
    if (needle === undefined) {
      // Without search, the total is the kept count per role (migration 002), not a count of the table,
      // beside each row of the page: one plain statement. Only a page past the last user, which has no
      // row to carry it, takes the joined statement above.
      const total = `SELECT coalesce(sum(users), 0) AS total FROM user_role_counts${params.role === undefined ? '' : ' WHERE role = $1'}`;
      const { rows } = await this.#query<Row & { total: string; id: string }>(
        `SELECT (${total}) AS total, ${columns('users.')} FROM users WHERE ${where}
         ORDER BY ${orderBy(params, 'users.')} LIMIT ${limit} OFFSET ${offset}`,
        values,
        true,
      );
      if (rows.length > 0) return { users: rows.map(userOf), total: Number(rows[0]!.total) };
      const { rows: past } = await page(total, true);
      return { users: usersOf(past), total: Number(past[0]!.total) };
    }
    // With search, the total is counted unless this instance counted it already after the same number
    // of changes to users (migration 005), read with the page: then it is the count of this snapshot.
    // Otherwise the page is read again with the count (a second statement, so that both come from one
    // snapshot); a statement without the count costs PostgreSQL less to plan.
    const key = JSON.stringify([params.role ?? null, needle]);
    const known = this.#searchTotals.get(key);
    const changes = 'SELECT coalesce(sum(changes), 0) AS changes FROM user_changes';
    if (known) {
      const { rows } = await page(changes, false);
      if (rows[0]!.changes === known.changes) return { users: usersOf(rows), total: known.total };
    }
    const { rows } = await page(
      `SELECT c.changes, (SELECT count(*) FROM users WHERE ${where}) AS total FROM (${changes}) c`,
      false,
    );
    const total = Number(rows[0]!.total);
    this.#rememberTotal(key, { changes: rows[0]!.changes!, total });
    return { users: usersOf(rows), total };
  }

  #rememberTotal(key: string, total: SearchTotal): void {
    this.#searchTotals.delete(key);
    if (this.#searchTotals.size >= SEARCH_TOTALS) this.#searchTotals.delete(this.#searchTotals.keys().next().value!);
    this.#searchTotals.set(key, total);
  }

  async insert(user: NewUser): Promise<User | 'email_taken'> {
    const email = emailColumns(user.email);
    const { rows } = await this.#query<Pick<Row, 'created_at'>>(
      `WITH now AS (SELECT ${stamp(8)} AS last)
       INSERT INTO users (id, name, email, role, created_at, updated_at, name_lower, email_lower, email_key, claims_email)
       SELECT $1, $2, $3, $4, now.last, now.last, $5, $6, $7, true FROM now
       ON CONFLICT (email_key) WHERE claims_email DO NOTHING
       RETURNING to_char(created_at, ${FORMAT}) AS created_at`,
      [
        toStored(user.id),
        toStored(user.name),
        email.email,
        toStored(user.role),
        toStored(user.name.toLowerCase()),
        email.email_lower,
        email.email_key,
        this.#instance,
      ],
      true,
    );
    if (!rows[0]) return 'email_taken';
    const { id, name, email: sent, role } = user;
    return { id, name, email: sent, role, created_at: rows[0].created_at, updated_at: rows[0].created_at };
  }

  async update(
    userId: string,
    changes: Changes,
    options: { uniqueEmail: boolean },
  ): Promise<User | 'not_found' | 'email_taken'> {
    // Ids are the service's UUIDs, but a path may carry anything (`%00`); stored form, like every string.
    const id = toStored(userId);
    if (changes.email === undefined && !options.uniqueEmail) return this.#updateKeepingEmail(id, changes);
    return this.#retrying(() =>
      this.#transaction((client) => this.#updateEmail(client, id, changes, options.uniqueEmail)),
    );
  }

  async remove(userId: string): Promise<boolean> {
    const id = toStored(userId);
    return this.#retrying(() =>
      this.#transaction(async (client) => {
        const held = await this.#lockUser(client, id, undefined);
        if (!held) return false;
        const heir = held.claims_email ? await this.#lockHeir(client, held.email_key, id) : undefined;
        await client.query('DELETE FROM users WHERE id = $1', [id]);
        if (heir) await client.query('UPDATE users SET claims_email = true WHERE id = $1', [heir]);
        return true;
      }),
    );
  }

  /**
   * Runs `work` while holding a lock of this schema that other instances' `exclusively` wait for: seeding
   * at start-up, so two instances starting together do not both find the table empty. Uses a
   * connection of its own, so `work` has the whole pool.
   */
  async #exclusively<T>(work: () => Promise<T>): Promise<T> {
    const client = new pg.Client({
      connectionString: this.database.url,
      application_name: 'roster',
      connectionTimeoutMillis: 2_000,
    });
    // Listening before connecting: the server may end this connection at any time while it waits.
    client.on('error', (error) => this.faults.report('database', error));
    await this.#guard(() => client.connect());
    try {
      await this.#guard(() => client.query(`SELECT pg_advisory_lock(${SEED_LOCK})`));
      return await work();
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** Under a lock of this schema that other instances take too, so instances starting together seed once. */
  async seed(users: readonly NewUser[]): Promise<boolean> {
    return this.#exclusively(async () => {
      if ((await this.count()) > 0) return false;
      for (const user of users) await this.insert(user);
      return true;
    });
  }

  async count(): Promise<number> {
    // The per-role counts that triggers keep (migration 002), not a scan of the table.
    const { rows } = await this.#query<{ total: string }>(
      'SELECT coalesce(sum(users), 0) AS total FROM user_role_counts',
      [],
    );
    return Number(rows[0]!.total);
  }

  async close(): Promise<void> {
    this.health.close();
    await this.pool.end();
  }

  /** The common update: no email change, no uniqueness check, one statement (the user's row only). */
  async #updateKeepingEmail(id: string, changes: Changes): Promise<User | 'not_found'> {
    const { rows } = await this.#query<Row>(
      `UPDATE users SET name = coalesce($2, name), name_lower = coalesce($3, name_lower), role = coalesce($4, role), updated_at = ${stamp(5)}
       WHERE users.id = $1
       RETURNING ${columns('users.')}`,
      [
        id,
        nullable(changes.name, toStored),
        nullable(changes.name, (name) => toStored(name.toLowerCase())),
        nullable(changes.role, toStored),
        this.#instance,
      ],
      true,
    );
    return rows[0] ? userOf(rows[0]) : 'not_found';
  }

  async #updateEmail(
    client: pg.PoolClient,
    id: string,
    changes: Changes,
    uniqueEmail: boolean,
  ): Promise<User | 'not_found' | 'email_taken'> {
    const email = changes.email === undefined ? undefined : emailColumns(changes.email);
    const held = await this.#lockUser(client, id, email?.email_key);
    if (!held) return 'not_found';
    const newKey = email?.email_key ?? held.email_key;
    const { rows: others } = await client.query<{ claims: boolean }>(
      'SELECT bool_or(claims_email) AS claims FROM users WHERE email_key = $1 AND id <> $2',
      [newKey, id],
    );
    const heldByOther = others[0]!.claims !== null;
    if (uniqueEmail && heldByOther) return 'email_taken';
    const moving = newKey !== held.email_key;
    const heir = moving && held.claims_email ? await this.#lockHeir(client, held.email_key, id) : undefined;
    const claims = moving ? !heldByOther : held.claims_email;
    let rows: Row[];
    try {
      ({ rows } = await client.query<Row>(
        `UPDATE users SET name = coalesce($2, name), name_lower = coalesce($3, name_lower), role = coalesce($4, role),
           email = coalesce($5, email), email_lower = coalesce($6, email_lower), email_key = $7, claims_email = $8, updated_at = ${stamp(9)}
         WHERE users.id = $1
         RETURNING ${columns('users.')}`,
        [
          id,
          nullable(changes.name, toStored),
          nullable(changes.name, (name) => toStored(name.toLowerCase())),
          nullable(changes.role, toStored),
          email?.email ?? null,
          email?.email_lower ?? null,
          newKey,
          claims,
          this.#instance,
        ],
      ));
    } catch (error) {
      // A user created meanwhile claimed the new key (creating takes no advisory lock).
      if (
        (error as { code?: string }).code === '23505' &&
        (error as { constraint?: string }).constraint === 'users_email_claim'
      ) {
        if (uniqueEmail) return 'email_taken';
        throw new Retry();
      }
      throw error;
    }
    if (heir) await client.query('UPDATE users SET claims_email = true WHERE id = $1', [heir]);
    return userOf(rows[0]!);
  }

  /**
   * Takes the user's advisory lock, which keeps its email key from changing under us (every write that
   * changes it holds that lock), then the locks of that key (and `newKey`), then the user's row.
   * Undefined when there is no such user.
   */
  async #lockUser(
    client: pg.PoolClient,
    id: string,
    newKey: string | undefined,
  ): Promise<{ email_key: string; claims_email: boolean } | undefined> {
    await client.query(`SELECT ${USER_LOCK}`, [id]);
    const { rows: seen } = await client.query<{ email_key: string }>('SELECT email_key FROM users WHERE id = $1', [id]);
    if (!seen[0]) return undefined;
    // Sorted, so that two transactions locking the same two keys take them in the same order.
    const keys = [...new Set([seen[0].email_key, newKey ?? seen[0].email_key])].sort();
    for (const key of keys) await client.query(`SELECT ${KEY_LOCK}`, [key]);
    const { rows } = await client.query<{ email_key: string; claims_email: boolean }>(
      'SELECT email_key, claims_email FROM users WHERE id = $1 FOR UPDATE',
      [id],
    );
    if (!rows[0]) return undefined;
    if (rows[0].email_key !== seen[0].email_key) throw new Retry(); // only by a write that ignored the user lock
    return rows[0];
  }

  /** The user (by creation order) that takes over the claim on `key` from `leaving`, locked; undefined if none. */
  async #lockHeir(client: pg.PoolClient, key: string, leaving: string): Promise<string | undefined> {
    const { rows } = await client.query<{ id: string }>(
      'SELECT id FROM users WHERE email_key = $1 AND id <> $2 ORDER BY created_at, seq LIMIT 1 FOR UPDATE',
      [key, leaving],
    );
    return rows[0]?.id;
  }

  /** One statement on a pooled connection; `named`: prepared once per connection (see `prepared`). */
  async #query<R extends pg.QueryResultRow>(
    text: string,
    values: unknown[],
    named = false,
  ): Promise<pg.QueryResult<R>> {
    return this.#guard(() => this.pool.query<R>(named ? prepared(text, values) : { text, values }));
  }

  async #transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#guard(() => this.pool.connect());
    let failure: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      failure = error as Error;
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      // After a failure the connection may be broken: the pool discards it.
      client.release(failure instanceof Retry ? undefined : failure);
    }
  }

  /** Runs a write again while it loses races (Retry, or a deadlock PostgreSQL broke by aborting it). */
  async #retrying<T>(write: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#guard(write);
      } catch (error) {
        const lostRace = error instanceof Retry || (error as { code?: string }).code === '40P01';
        if (!lostRace || attempt === ATTEMPTS) throw error;
      }
    }
  }

  /**
   * Outcomes feed the health check; a lost or unreachable database becomes a 503 for this request, a
   * value too large for an index a 422.
   */
  async #guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      const result = await work();
      this.health.succeeded();
      return result;
    } catch (error) {
      if (isTooLarge(error)) throw valueTooLarge(error);
      if (isTimeout(error)) throw databaseBusy();
      if (isPoolExhausted(error)) throw poolBusy();
      if (!isUnreachable(error)) throw error;
      this.health.failed(error);
      throw databaseUnreachable();
    }
  }
}

/**
 * ORDER BY of a list (query.ts): by the field, ties in creation order, (created_at, seq), also when
 * descending. id and (created_at, seq) are unique. Any other `sort` ties every user: creation order.
 */
function orderBy(params: ListParams, table: string): string {
  const direction = params.descending ? 'DESC' : 'ASC';
  const field = sortedField(params.sort);
  if (field === undefined) return `${table}created_at, ${table}seq`;
  if (field === 'id') return `${table}id ${direction}`;
  if (field === 'created_at') return `${table}created_at ${direction}, ${table}seq ${direction}`;
  return `${table}${field} ${direction}, ${table}created_at, ${table}seq`;
}

function nullable<T>(value: string | undefined, map: (value: string) => T): T | null {
  return value === undefined ? null : map(value);
}
