/**
 * Users in PostgreSQL (migrations/postgres/001_users.sql), for several Roster instances sharing one database.
 * Every answer equals the memory store's (query.ts defines them); strings are stored through
 * sql/stored-text.ts and written as rows.ts lays them out, so that SQL sorts and searches them as
 * JavaScript does.
 *
 * Timestamps come from the database clock, not from the instance: strictly increasing within an
 * instance (roster_stamp, migrations/postgres/006); across instances they need not be, and a sequence (`seq`)
 * breaks ties, so creation order, (created_at, seq), is total and stable (migrations/postgres/004). No write
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
 * one holds it. The trigger that keeps the search needles' counts (migrations/postgres/009) then takes their
 * lock shared; only registering a needle takes it exclusive, holding nothing else, and gives up after
 * a short wait (list.ts), so a write waits for it at most that long.
 */
import type { ChangeBounds } from '../../changes.js';
import { PostgresChangeLog } from './postgres-changes.js';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Logger } from 'pino';
import type { ListParams, ListResult } from '../../query.js';
import type { User } from '../../schema.js';
import {
  CHANGED,
  type Changed,
  type Changes,
  type Expected,
  type Keep,
  type NewUser,
  type UserStore,
} from '../../store.js';
import { PostgresIdempotencyKeys } from './postgres-idempotency-keys.js';
import { EngineFaults } from '../../../ops/engine-faults.js';
import {
  createPool,
  databaseBusy,
  databaseUnreachable,
  DatabaseHealth,
  inTransaction,
  isDataException,
  isTimeout,
  isPoolExhausted,
  poolBusy,
  isTooLarge,
  isUnreachable,
  queryOn,
  valueRefused,
  valueTooLarge,
  type Query,
} from './postgres-connection.js';
import { migrate } from './postgres-migrations.js';
import { toStored } from '../sql/stored-text.js';
import { ownFields } from '../../fields.js';
import { PostgresList, type Transaction } from './postgres-list.js';
import type { KeyBounds } from '../../idempotency-keys.js';
import { columns, FORMAT, fromRow, INSERT_COLUMNS, toRow, updateSet, type Row } from './postgres-rows.js';
import { emailColumns, isExpected, KEY_LOCK, restamp, SEED_LOCK, stamp, USER_LOCK } from './postgres-sql.js';

/** Attempts of a write that lost a race (a deadlock, an email claimed meanwhile) before giving up. */
const ATTEMPTS = 5;

/** The SET clauses of the two updates: without the email ($2 on), and with it. */
const KEEPING_EMAIL = updateSet(2, false);
const WITH_EMAIL = updateSet(2, true);

/** A user's row as a write that changes its email (or removes it) holds it locked. */
interface Locked {
  email_key: string;
  claims_email: boolean;
  updated_at: string;
}

/** Whether a write's If-Match versions (store.ts: Expected) miss the locked row. */
const changedSince = (held: Locked, expected: Expected | undefined) =>
  expected !== undefined && !expected.includes(held.updated_at);

/** A write lost a race with another transaction and is tried again from the start. */
class Retry extends Error {}

export class PostgresUserStore implements UserStore {
  readonly health: DatabaseHealth;
  readonly keys: PostgresIdempotencyKeys;
  /** Every write's change, appended by a trigger in the write's transaction (postgres-changes.ts); set by open. */
  changes!: PostgresChangeLog;
  /** This instance's key for roster_stamp (migrations/postgres/006): random, so other instances never share it. */
  readonly #instance = randomBytes(8).readBigInt64BE().toString();
  readonly #list: PostgresList;
  /** One statement on a pooled connection (connection.ts: Query). */
  readonly #query: Query;
  /** Statements in one transaction on one connection, its outcome fed to health like any statement's. */
  readonly #inTransaction: Transaction;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly database: { url: string; keyBounds?: KeyBounds | undefined },
    logger: Logger,
    private readonly faults: EngineFaults,
  ) {
    this.health = new DatabaseHealth(pool, logger);
    const onPool = queryOn(pool);
    this.#query = (text, values, named) => this.#guard(() => onPool(text, values, named));
    this.#inTransaction = (work) => this.#guard(() => this.#transaction((client) => work(queryOn(client))));
    this.#list = new PostgresList(this.#query, this.#inTransaction);
    this.keys = new PostgresIdempotencyKeys(this.#query, database.keyBounds);
  }

  /** Connects, applies pending migrations, and returns the store; fails when the database cannot be reached. */
  static async open(
    database: { url: string; poolSize: number; keyBounds?: KeyBounds | undefined; changeBounds?: ChangeBounds },
    logger: Logger,
    faults = new EngineFaults(logger),
  ): Promise<PostgresUserStore> {
    const pool = createPool(database, faults);
    try {
      const applied = await migrate(pool);
      if (applied.length > 0) logger.info({ applied }, 'database migrations applied');
      const store = new PostgresUserStore(pool, database, logger, faults);
      store.changes = await PostgresChangeLog.open(
        store.#query,
        { url: database.url, bounds: database.changeBounds },
        faults,
        logger,
      );
      // Changes left by writes of instances gone, or by migration 010 (every user there was): not waited for.
      void store.#list.grams.fold();
      return store;
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
  }

  async get(id: string): Promise<User | undefined> {
    const { rows } = await this.#query<Row>(`SELECT ${columns()} FROM users WHERE id = $1`, [toStored(id)], true);
    return rows[0] && fromRow(rows[0]);
  }

  async list(params: ListParams): Promise<ListResult> {
    return this.#list.list(params);
  }

  async insert(user: NewUser, keep?: Keep): Promise<User | 'email_taken'> {
    this.#list.grams.wrote(); // each write adds changes to the search grams (migration 010), folded now and then
    const stored = await this.#insert(user, keep);
    if (stored !== 'email_taken') this.changes.written();
    return stored;
  }

  async #insert(user: NewUser, keep?: Keep): Promise<User | 'email_taken'> {
    if (!keep) return this.#insertRow(this.#query, user);
    // A keyed create (store.ts: Keep): the claim's row locked first, so nothing is inserted once the
    // claim is no longer this request's; then the user and its reply, committed together.
    return this.#inTransaction(async (query) => {
      await this.keys.lock(query, keep.claim);
      const stored = await this.#insertRow(query, user);
      if (stored !== 'email_taken') await this.keys.keep(query, keep.claim, keep.replyOf(stored));
      return stored;
    });
  }

  /** The INSERT of a user, one statement: `email_taken` when another user claims its email key. */
  async #insertRow(query: Query, user: NewUser): Promise<User | 'email_taken'> {
    const row = toRow(user);
    const { rows } = await query<{ created_at: string }>(
      `WITH now AS (SELECT ${stamp(row.length + 1)} AS last)
       INSERT INTO users (${INSERT_COLUMNS.join(', ')}, created_at, updated_at, claims_email)
       SELECT ${row.map((_, at) => `$${at + 1}`).join(', ')}, now.last, now.last, true FROM now
       ON CONFLICT (email_key) WHERE claims_email DO NOTHING
       RETURNING to_char(created_at, ${FORMAT}) AS created_at`,
      [...row, this.#instance],
      true,
    );
    if (!rows[0]) return 'email_taken';
    return ownFields({ ...user, created_at: rows[0].created_at, updated_at: rows[0].created_at });
  }

  async update(
    userId: string,
    changes: Changes,
    options: { uniqueEmail: boolean; expected?: Expected },
  ): Promise<User | 'not_found' | 'email_taken' | Changed> {
    // Ids are the service's UUIDs, but a path may carry anything (`%00`); stored form, like every string.
    const id = toStored(userId);
    this.#list.grams.wrote();
    const updated =
      changes.email === undefined && !options.uniqueEmail
        ? await this.#updateKeepingEmail(id, changes, options.expected)
        : await this.#retrying(() =>
            this.#transaction((client) =>
              this.#updateEmail(client, id, changes, options.uniqueEmail, options.expected),
            ),
          );
    if (typeof updated === 'object') this.changes.written();
    return updated;
  }

  async remove(userId: string, options: { expected?: Expected } = {}): Promise<boolean | Changed> {
    const id = toStored(userId);
    this.#list.grams.wrote();
    const removed = await this.#retrying(() =>
      this.#transaction(async (client) => {
        const held = await this.#lockUser(client, id, undefined);
        if (!held) return false;
        // The row is locked (FOR UPDATE): its updated_at cannot change before the DELETE.
        if (changedSince(held, options.expected)) return CHANGED;
        const heir = held.claims_email ? await this.#lockHeir(client, held.email_key, id) : undefined;
        await client.query('DELETE FROM users WHERE id = $1', [id]);
        if (heir) await client.query('UPDATE users SET claims_email = true WHERE id = $1', [heir]);
        return true;
      }),
    );
    if (removed === true) this.changes.written();
    return removed;
  }

  /**
   * Seeds while holding a lock of this schema that other instances' seeding waits for, so that two
   * instances starting together do not both find the table empty. The lock is held on a connection of
   * its own, so the inserts have the whole pool.
   */
  async seed(users: readonly NewUser[]): Promise<boolean> {
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
      if ((await this.count()) > 0) return false;
      for (const user of users) await this.insert(user);
      return true;
    } finally {
      await client.end().catch(() => undefined);
    }
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
    await this.#list.grams.stop();
    await this.changes.close();
    this.health.close();
    await this.pool.end();
  }

  /** The common update: no email change, no uniqueness check, one statement (the user's row only). */
  async #updateKeepingEmail(
    id: string,
    changes: Changes,
    expected: Expected | undefined,
  ): Promise<User | 'not_found' | Changed> {
    const set = KEEPING_EMAIL.values(changes);
    const at = set.length + 2;
    // If-Match is part of the UPDATE's WHERE: checked on the row as locked by the write itself (under
    // READ COMMITTED, a write that waited for another's rechecks it on the row that one left).
    const { rows } = await this.#query<Row>(
      `UPDATE users SET ${KEEPING_EMAIL.sql}, updated_at = ${restamp(at)}
       WHERE users.id = $1${expected === undefined ? '' : ` AND ${isExpected(at + 1)}`}
       RETURNING ${columns('users.')}`,
      expected === undefined ? [id, ...set, this.#instance] : [id, ...set, this.#instance, expected],
      true,
    );
    if (rows[0]) return fromRow(rows[0]);
    if (expected === undefined) return 'not_found';
    // Only on refusal: was it missing, or changed?
    const { rows: found } = await this.#query('SELECT 1 FROM users WHERE id = $1', [id], true);
    return found.length === 0 ? 'not_found' : CHANGED;
  }

  async #updateEmail(
    client: pg.PoolClient,
    id: string,
    changes: Changes,
    uniqueEmail: boolean,
    expected: Expected | undefined,
  ): Promise<User | 'not_found' | 'email_taken' | Changed> {
    const email = changes.email === undefined ? undefined : emailColumns(changes.email);
    const held = await this.#lockUser(client, id, email?.email_key);
    if (!held) return 'not_found';
    if (changedSince(held, expected)) return CHANGED;
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
      const set = WITH_EMAIL.values(changes);
      const at = set.length + 2;
      ({ rows } = await client.query<Row>(
        `UPDATE users SET ${WITH_EMAIL.sql}, email_key = $${at}, claims_email = $${at + 1}, updated_at = ${restamp(at + 2)}
         WHERE users.id = $1
         RETURNING ${columns('users.')}`,
        [id, ...set, newKey, claims, this.#instance],
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
    return fromRow(rows[0]!);
  }

  /**
   * Takes the user's advisory lock, which keeps its email key from changing under us (every write that
   * changes it holds that lock), then the locks of that key (and `newKey`), then the user's row.
   * Undefined when there is no such user.
   */
  async #lockUser(client: pg.PoolClient, id: string, newKey: string | undefined): Promise<Locked | undefined> {
    await client.query(`SELECT ${USER_LOCK}`, [id]);
    const { rows: seen } = await client.query<{ email_key: string }>('SELECT email_key FROM users WHERE id = $1', [id]);
    if (!seen[0]) return undefined;
    // Sorted, so that two transactions locking the same two keys take them in the same order.
    const keys = [...new Set([seen[0].email_key, newKey ?? seen[0].email_key])].sort();
    for (const key of keys) await client.query(`SELECT ${KEY_LOCK}`, [key]);
    const { rows } = await client.query<Locked>(
      `SELECT email_key, claims_email, to_char(updated_at, ${FORMAT}) AS updated_at FROM users WHERE id = $1 FOR UPDATE`,
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

  async #transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#guard(() => this.pool.connect());
    return inTransaction(client, work, (failure) => failure instanceof Retry); // a lost race breaks nothing
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
   * value too large for an index, or one the database refuses (class 22), a 422.
   */
  async #guard<T>(work: () => Promise<T>): Promise<T> {
    try {
      const result = await work();
      this.health.succeeded();
      return result;
    } catch (error) {
      if (isTooLarge(error)) throw valueTooLarge(error);
      if (isDataException(error)) throw valueRefused();
      if (isTimeout(error)) throw databaseBusy();
      if (isPoolExhausted(error)) throw poolBusy();
      if (!isUnreachable(error)) throw error;
      this.health.failed(error);
      throw databaseUnreachable();
    }
  }
}
