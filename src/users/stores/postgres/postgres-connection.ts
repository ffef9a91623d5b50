/**
 * The connection to PostgreSQL: a bounded pool, the line between "the database is unreachable" (503,
 * try again) and a fault of Roster's own (500), and the `database` entry of the health check.
 *
 * Nothing waits on a dead database for long: connecting gives up after CONNECT_TIMEOUT_MS and a query
 * after QUERY_TIMEOUT_MS, and each failure becomes a 503 `SERVICE_UNAVAILABLE` for that request. The
 * pool opens fresh connections as requests need them, so Roster recovers when the database returns;
 * while it is down, a light probe keeps checking, so health turns back to up without traffic too.
 */
import pg from 'pg';
import type { Logger } from 'pino';
import { RosterError, tryAgainShortly, validationFailed, type FieldDetail } from '../../../errors.js';
import type { EngineFaults } from '../../../ops/engine-faults.js';
import { ProbedDependency } from '../../../ops/health.js';

/** Giving up on opening a connection (or on waiting for a free one in the pool). */
const CONNECT_TIMEOUT_MS = 2_000;
/** The server cancels a statement running longer than this; the client gives up a little later. */
const STATEMENT_TIMEOUT_MS = 5_000;
const QUERY_TIMEOUT_MS = 6_000;
/** How often the probe asks `SELECT 1` while the database is down. */
const PROBE_INTERVAL_MS = 1_000;

/**
 * `work` in one transaction on `client`, which is released after: a client that failed may have lost
 * its connection, so the pool discards it rather than reuse it, unless `sound` says the failure left it so.
 */
export async function inTransaction<T>(
  client: pg.PoolClient,
  work: (client: pg.PoolClient) => Promise<T>,
  sound: (failure: Error) => boolean = () => false,
): Promise<T> {
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
    client.release(failure === undefined || sound(failure) ? undefined : failure);
  }
}

export function createPool(database: { url: string; poolSize: number }, faults: EngineFaults): pg.Pool {
  const pool = new pg.Pool({
    // Settings given in the URL (application_name, options=-c search_path=…) take precedence over these.
    connectionString: database.url,
    application_name: 'roster',
    max: database.poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    keepAlive: true,
    // Run on each new connection before the pool hands it out (pg-pool awaits it, where a 'connect'
    // listener's statement would overlap the first checkout's, which pg@9 will refuse).
    async onConnect(client) {
      // A connection the server ends (a restart, pg_terminate_backend, a failover) emits 'error' on its
      // client, whether idle in the pool or checked out between two statements of a transaction; the
      // pool listens only while a client is idle. Unheard, the event would end the process, so every
      // client gets a listener for its whole life. The statement it was serving fails by itself (503),
      // and the pool discards the client when it is released with that error.
      client.on('error', (error) => faults.report('database', error));
      // No JIT compilation: it is for long analytical queries. A page's prepared statement is planned
      // once without its LIMIT and OFFSET (a generic plan), whose estimated cost passes jit_above_cost,
      // and every execution then compiled its expressions again: 300 to 600 ms for a page that takes
      // one. If it fails, the pool ends the connection and the checkout that asked for it fails.
      await client.query('SET jit = off');
    },
  });
  // The pool re-emits an idle client's error here; the client's own listener has reported it already.
  pool.on('error', () => {});
  return pool;
}

/** Node's errors for a connection that cannot be made or was lost. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);
/**
 * PostgreSQL's: connection exceptions (class 08), the server shutting down or terminating the backend
 * (57P01–57P03), too many connections (53300).
 */
const SERVER_CODES = /^(08...|57P0[123]|53300)$/;
/**
 * node-postgres reports its own timeouts and lost connections by message only. A connect that timed
 * out says "Connection terminated due to connection timeout"; "timeout exceeded when trying to connect"
 * is something else (isPoolExhausted).
 */
const DRIVER_MESSAGES = /Connection terminated|not queryable|Connection ended|Cannot use a pool after calling end/i;

/**
 * A statement that ran out of time: cancelled by statement_timeout (57014), or given up by the client
 * (query_timeout). The database answers, it is just busy: 503 with Retry-After for that request, and
 * health stays as it is.
 */
export function isTimeout(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  return (error as { code?: unknown }).code === '57014' || /Query read timeout/i.test(error.message);
}

/**
 * pg-pool's words for a request that waited past connectionTimeoutMillis for a free connection: every
 * connection of the pool was in use (a burst, say, of writes to one row, which take turns). The
 * database answers; this instance is busy. 503 with Retry-After for that request, and health stays as
 * it is: marking the database down would send a load balancer's traffic away for a burst.
 */
export function isPoolExhausted(error: unknown): boolean {
  return error instanceof Error && /^timeout exceeded when trying to connect$/i.test(error.message);
}

export const poolBusy = (): RosterError => tryAgainShortly('Every database connection is in use; try again shortly');

export const databaseBusy = (): RosterError =>
  tryAgainShortly('The database did not answer in time; try again shortly');

export function isUnreachable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || SERVER_CODES.test(code))) return true;
  if (error instanceof AggregateError) return error.errors.some(isUnreachable); // e.g. ::1 and 127.0.0.1 both refused
  return DRIVER_MESSAGES.test(error.message);
}

/**
 * PostgreSQL refused a value as too large for what holds it (54000, program_limit_exceeded), e.g.
 * `index row size 3024 exceeds btree version 4 maximum 2704 for index "users_name"`. The request's
 * data is at fault, not the database, and nothing was stored: 422, not a 500 nor a 503. The field
 * bounds (users/fields.ts `maxLength`) keep the API's values well below any such limit; this is
 * the answer should one be reached anyway.
 */
export function isTooLarge(error: unknown): boolean {
  return error instanceof Error && (error as { code?: unknown }).code === '54000';
}

/** The user field an index or column of `users` is about, by its name (migrations/: `users_<field>…`). */
const FIELD_OF_INDEX = /^users_(name|email|role)(?:_|$)/;

export function valueTooLarge(error: unknown): RosterError {
  const index = (error as { constraint?: unknown }).constraint;
  const field = typeof index === 'string' ? FIELD_OF_INDEX.exec(index)?.[1] : undefined;
  const details: FieldDetail[] = field ? [{ field, message: `${field} is too large to store` }] : [];
  return validationFailed(details);
}

export const databaseUnreachable = (): RosterError => tryAgainShortly('The database is unreachable; try again shortly');

/**
 * The `database` dependency (critical: no users without it): down from the statement that found the
 * database unreachable, probed with `SELECT 1` every PROBE_INTERVAL_MS until it answers.
 */
export class DatabaseHealth extends ProbedDependency {
  constructor(pool: pg.Pool, logger: Logger) {
    super('database', true, {
      logger,
      probe: () => pool.query('SELECT 1'),
      intervalMs: PROBE_INTERVAL_MS,
      reasonOf,
      messages: { down: 'the database is unreachable', up: 'the database is reachable again' },
      probeAtOnce: true,
    });
    // A broken idle connection may be the first sign of a database going away; the probe tells.
    pool.on('error', (error) => {
      if (isUnreachable(error)) this.failed(error);
    });
  }
}

/** Why the database is down, for the health reply: the error code where there is one (a message may name hosts). */
function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return `unreachable (${code})`;
  return error instanceof Error ? error.message : String(error);
}

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

/** Runs one statement; `named`: prepared once per connection (see `prepared`). */
export type Query = <R extends pg.QueryResultRow>(
  text: string,
  values: unknown[],
  named?: boolean,
) => Promise<pg.QueryResult<R>>;

/** Statements on the pool, or on one connection (a transaction's). */
export const queryOn =
  (on: pg.Pool | pg.PoolClient): Query =>
  (text, values, named) =>
    on.query(named ? prepared(text, values) : { text, values });
