/**
 * The PostgreSQL store's change log (users/changes.ts; migrations/postgres/010), shared by every
 * instance on the database. A trigger appends each change, unnumbered, in the write's own transaction;
 * roster_sequence_changes() numbers the committed ones in commit order, one instance at a time (see
 * the migration for why a number drawn at insert would let a reader skip a change).
 *
 * This instance numbers right after each of its writes (on the next turn, off the write's path), again
 * at once when another instance held the numbering lock (its run may have started before our commit),
 * and every FALLBACK_MS whatever happens: so a change is numbered even when the instance that made it
 * died just after its commit. Other instances' changes are learnt by LISTEN (a connection of its own,
 * reconnecting), and by that same timer when a notification is lost (the connection was down).
 */
import pg from 'pg';
import type { Logger } from 'pino';
import {
  ChangeListeners,
  DEFAULT_CHANGE_BOUNDS,
  SCAN_MAX,
  type Change,
  type ChangeBounds,
  type ChangeFilter,
  type ChangeLog,
  type ChangeRead,
  type ChangeType,
} from '../../changes.js';
import type { EngineFaults } from '../../../ops/engine-faults.js';
import { fromStored, toStored } from '../sql/stored-text.js';
import type { Query } from './postgres-connection.js';
import { columns, FORMAT, fromRow, type Row } from './postgres-rows.js';

/** The poll that stands in for a lost notification, and numbers what a dead instance left unnumbered. */
const FALLBACK_MS = 1_000;
/** How soon to try again when another instance held the numbering lock. */
const BUSY_RETRY_MS = 5;
/** Changes numbered per run at most. */
const BATCH = 1000;
/** How long to wait before listening again once the LISTEN connection is lost. */
const RECONNECT_MS = 1_000;

interface ChangeRow {
  seq: number;
  type: ChangeType;
  id: string;
  role_before: string | null;
  at: string;
  user_row: Row | null;
}

const READ = `
  SELECT m.head::float8 AS head, (SELECT min(seq) FROM change_log)::float8 AS first,
    (SELECT coalesce(json_agg(r ORDER BY r.seq), '[]'::json) FROM (
       SELECT c.seq, c.type, c.id, c.role_before, to_char(c.at, ${FORMAT}) AS at,
         (SELECT to_jsonb(x) FROM (SELECT ${columns('u.')} FROM jsonb_populate_record(NULL::users, c.user_row) u) x
          WHERE c.user_row IS NOT NULL) AS user_row
       FROM change_log c
       WHERE c.seq > $1 AND c.seq <= least(m.head, $1 + ${SCAN_MAX})
         AND ($2::text IS NULL OR c.id = $2) AND ($3::text IS NULL OR c.role = $3 OR c.role_before = $3)
       ORDER BY c.seq LIMIT $4) r) AS rows
  FROM change_log_meta m`;

export class PostgresChangeLog implements ChangeLog {
  readonly #listeners = new ChangeListeners();
  /** The head last told to the listeners. */
  #told: number;
  #running = false;
  #again = false;
  #closed = false;
  readonly #timer: NodeJS.Timeout;
  #listener: pg.Client | undefined;
  #reconnect: NodeJS.Timeout | undefined;

  private constructor(
    readonly epoch: string,
    head: number,
    private readonly query: Query,
    private readonly database: { url: string; bounds: ChangeBounds; channel: string },
    private readonly faults: EngineFaults,
    private readonly logger: Logger,
  ) {
    this.#told = head;
    this.#timer = setInterval(() => this.written(), FALLBACK_MS).unref();
    this.#listen();
  }

  static async open(
    query: Query,
    database: { url: string; bounds?: ChangeBounds | undefined },
    faults: EngineFaults,
    logger: Logger,
  ): Promise<PostgresChangeLog> {
    const { rows } = await query<{ epoch: string; head: number; schema: string }>(
      'SELECT epoch, head::float8 AS head, current_schema() AS schema FROM change_log_meta',
      [],
    );
    const bounds = database.bounds ?? DEFAULT_CHANGE_BOUNDS;
    // The channel of this schema's log: notifications are per database, and schemas share one.
    const channel = `roster_changes.${rows[0]!.schema}`;
    return new PostgresChangeLog(
      rows[0]!.epoch,
      rows[0]!.head,
      query,
      { url: database.url, bounds, channel },
      faults,
      logger,
    );
  }

  async head(): Promise<number> {
    const { rows } = await this.query<{ head: number }>('SELECT head::float8 AS head FROM change_log_meta', [], true);
    return rows[0]!.head;
  }

  async read(since: number, limit: number, filter?: ChangeFilter): Promise<ChangeRead> {
    const id = filter?.id === undefined ? null : toStored(filter.id);
    const role = filter?.role === undefined ? null : toStored(filter.role);
    const { rows } = await this.query<{ head: number; first: number | null; rows: ChangeRow[] }>(
      READ,
      [since, id, role, limit],
      true,
    );
    const { head, first, rows: found } = rows[0]!;
    if (since > head || since < (first ?? head + 1) - 1) return { reset: true, head };
    const changes = found.map(changeOf);
    return { changes, next: found.length === limit ? found.at(-1)!.seq : Math.min(head, since + SCAN_MAX) };
  }

  subscribe(listener: () => void): () => void {
    return this.#listeners.add(listener);
  }

  /** After a write of this instance committed (and on the timer): numbers what is committed. */
  written(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    setImmediate(() => void this.#sequence());
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    clearTimeout(this.#reconnect);
    await this.#listener?.end().catch(() => undefined);
  }

  async #sequence(): Promise<void> {
    try {
      for (;;) {
        this.#again = false;
        const { rows } = await this.query<{ head: number; busy: boolean }>(
          "SELECT head::float8 AS head, busy FROM roster_sequence_changes($1, $2 * interval '1 millisecond', $3)",
          [this.database.bounds.maxChanges, this.database.bounds.maxAgeMs, BATCH],
          true,
        );
        this.#heard(rows[0]!.head);
        // Busy: another run (or a full batch) may have left changes unnumbered; look again shortly.
        if (rows[0]!.busy && !this.#closed) await new Promise((resolve) => setTimeout(resolve, BUSY_RETRY_MS));
        if (rows[0]!.busy) this.#again = true;
        if (!this.#again || this.#closed) break;
      }
    } catch (error) {
      // The database is away: the store's own requests report it; the timer tries again.
      this.logger.debug({ err: error }, 'change log: numbering failed');
    } finally {
      this.#running = false;
    }
  }

  /** A head seen (numbered here, notified, or polled): the listeners hear of one that moved. */
  #heard(head: number): void {
    if (head <= this.#told) return;
    this.#told = head;
    this.#listeners.tell();
  }

  /** LISTEN on a connection of its own; lost, it is made again after RECONNECT_MS (the timer covers the gap). */
  #listen(): void {
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.database.url, application_name: 'roster-changes' });
    this.#listener = client;
    let retried = false;
    const retry = (error?: unknown) => {
      if (error) this.faults.report('database', error, { log: false });
      if (retried || this.#closed) return;
      retried = true;
      client.end().catch(() => undefined);
      this.#reconnect = setTimeout(() => this.#listen(), RECONNECT_MS);
      this.#reconnect.unref();
    };
    client.on('error', retry);
    client.on('end', () => retry());
    client.on('notification', (message) => {
      if (message.channel === this.database.channel) this.#heard(Number(message.payload));
    });
    client
      .connect()
      .then(() => client.query(`LISTEN ${pg.escapeIdentifier(this.database.channel)}`))
      // Listening again after a gap: what was notified meanwhile is fetched by the next numbering.
      .then(() => this.written(), retry);
  }
}

function changeOf(row: ChangeRow): Change {
  const user = row.user_row === null ? null : Object.freeze(fromRow(row.user_row));
  return {
    seq: Number(row.seq),
    type: row.type,
    id: fromStored(row.id),
    user,
    roleBefore: row.role_before === null ? null : fromStored(row.role_before),
    at: row.at,
  };
}
