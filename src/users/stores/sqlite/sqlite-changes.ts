/**
 * The SQLite store's change log (users/changes.ts; table of migrations/sqlite/007): the store appends
 * inside each write's transaction (`append`), so the change commits or rolls back with the user.
 * Retention trims in the write path, a few rows at a time: by count (the rows CHANGES_MAX behind the
 * new one) and by age (at most TRIM_BATCH rows older than CHANGES_MAX_AGE_SECONDS per write, and a
 * timer for a log nobody writes to). One process owns the file, so the listeners are this process's.
 */
import type Database from 'better-sqlite3';
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
import { ownFields } from '../../fields.js';
import type { User } from '../../schema.js';

/** Rows trimmed for age at most per write (or per tick of the timer): a write never pays for a backlog. */
const TRIM_BATCH = 64;
const TRIM_EVERY_MS = 60_000;

interface ChangeRow {
  seq: number;
  type: ChangeType;
  id: string;
  user: string | null;
  role_before: string | null;
  at: string;
}

export class SqliteChangeLog implements ChangeLog {
  readonly epoch: string;
  readonly #listeners = new ChangeListeners();
  readonly #timer: NodeJS.Timeout;

  constructor(
    private readonly statement: (sql: string) => Database.Statement,
    readonly bounds: ChangeBounds = DEFAULT_CHANGE_BOUNDS,
    private readonly now: () => number = Date.now,
  ) {
    this.epoch = statement('SELECT epoch FROM change_log_epoch').pluck().get() as string;
    this.#timer = setInterval(() => {
      try {
        this.#trimByAge();
      } catch {
        // A disk refusing writes: the next write (or tick) trims instead.
      }
    }, TRIM_EVERY_MS).unref();
  }

  /** Appends one change; call inside the write's transaction, then `told()` once it committed. */
  append(type: ChangeType, id: string, user: User | null, roleBefore: string | null, at: string): void {
    const { lastInsertRowid } = this.statement(
      'INSERT INTO change_log (type, id, user, role, role_before, at, appended) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ).run(type, id, user ? JSON.stringify(user) : null, user?.role ?? null, roleBefore, at, this.now());
    this.statement('DELETE FROM change_log WHERE seq <= ?').run(Number(lastInsertRowid) - this.bounds.maxChanges);
    this.#trimByAge();
  }

  /** Tells the listeners, after a write's transaction committed. */
  told(): void {
    this.#listeners.tell();
  }

  async head(): Promise<number> {
    return this.#head();
  }

  async read(since: number, limit: number, filter?: ChangeFilter): Promise<ChangeRead> {
    const head = this.#head();
    const first = (this.statement('SELECT min(seq) FROM change_log').pluck().get() as number | null) ?? head + 1;
    if (since > head || since < first - 1) return { reset: true, head };
    const bound = Math.min(head, since + SCAN_MAX);
    const rows = this.statement(
      'SELECT seq, type, id, user, role_before, at FROM change_log WHERE seq > @since AND seq <= @bound ' +
        'AND (@id IS NULL OR id = @id) AND (@role IS NULL OR role = @role OR role_before = @role) ORDER BY seq LIMIT @limit',
    ).all({ since, bound, id: filter?.id ?? null, role: filter?.role ?? null, limit }) as ChangeRow[];
    const changes = rows.map(changeOf);
    return { changes, next: rows.length === limit ? rows.at(-1)!.seq : bound };
  }

  subscribe(listener: () => void): () => void {
    return this.#listeners.add(listener);
  }

  close(): void {
    clearInterval(this.#timer);
  }

  #head(): number {
    return (
      (this.statement("SELECT seq FROM sqlite_sequence WHERE name = 'change_log'").pluck().get() as
        number | undefined) ?? 0
    );
  }

  /**
   * The oldest TRIM_BATCH rows, by seq (the primary key: a seek, never a scan), those of them past the
   * age. Rows are appended in time order, so the old ones are at the front; a filter on `appended`
   * alone has no index to use and read the whole log on every write.
   */
  #trimByAge(): void {
    this.statement(
      'DELETE FROM change_log WHERE seq IN (SELECT seq FROM change_log ORDER BY seq LIMIT ?) AND appended < ?',
    ).run(TRIM_BATCH, this.now() - this.bounds.maxAgeMs);
  }
}

function changeOf(row: ChangeRow): Change {
  const user = row.user === null ? null : Object.freeze(ownFields(JSON.parse(row.user) as User));
  return { seq: row.seq, type: row.type, id: row.id, user, roleBefore: row.role_before, at: row.at };
}
