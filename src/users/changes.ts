/**
 * The change log every store keeps (docs/decisions.md "Live changes"): one numbered change per create,
 * update and delete, appended in the same atomic step as the write itself (the memory store's
 * synchronous step, the SQL stores' transaction), so a change is in the log exactly when it is in the
 * store. Sequence numbers only grow within an epoch: the log's life, new when it starts over (a memory
 * store's start, a SQL log created or restored behind its own head). Bounded by count and by age; a
 * reader asking for changes the log no longer keeps is told so (`reset`), never handed a gap.
 */
import type { User } from './schema.js';

export type ChangeType = 'created' | 'updated' | 'deleted';

export interface Change {
  /** Its place in the log: greater than every change before it in this epoch. */
  readonly seq: number;
  readonly type: ChangeType;
  /** The user's id. */
  readonly id: string;
  /** The user as written; null for a delete. */
  readonly user: User | null;
  /** The user's role before the change (null for a create), for the `role` filter. */
  readonly roleBefore: string | null;
  /** When: the user's `updated_at` for a create or update, the store's clock for a delete. */
  readonly at: string;
}

/** Which changes a reader follows: those of users with this role before or after, or of this one user. */
export interface ChangeFilter {
  role?: string | undefined;
  id?: string | undefined;
}

export type ChangeRead =
  | {
      /** The changes after `since` that pass the filter, oldest first, at most `limit`. */
      changes: Change[];
      /** Where the next read starts: the last change looked at, whether it passed the filter or not. */
      next: number;
    }
  | {
      /** `since` cannot be served without a gap (older than the log keeps, or ahead of its head): start over at `head`. */
      reset: true;
      head: number;
    };

export interface ChangeLog {
  /** This log's life (the cursor's first part): a short id, without a dot. */
  readonly epoch: string;
  /** The sequence number of the latest change readers may see (0 before the first). */
  head(): Promise<number>;
  /**
   * The changes after `since` (a sequence number of this epoch), oldest first. The read looks at no
   * more than a bounded number of changes, so a filter matching none still answers promptly, with
   * `next` past what it looked at.
   */
  read(since: number, limit: number, filter?: ChangeFilter): Promise<ChangeRead>;
  /**
   * Calls `listener` whenever the head may have moved: at once after a write in this process, and on a
   * SQL store also when another instance's write is seen. Returns how to stop.
   */
  subscribe(listener: () => void): () => void;
}

/** Whether a change passes a reader's filter. */
export function passes(change: Change, filter: ChangeFilter | undefined): boolean {
  if (filter === undefined) return true;
  if (filter.id !== undefined && change.id !== filter.id) return false;
  if (filter.role !== undefined && change.user?.role !== filter.role && change.roleBefore !== filter.role) return false;
  return true;
}

/** The most changes one read looks at, matching or not: a bound on the work of a filtered read. */
export const SCAN_MAX = 10_000;

/** The listeners of a log, told after each write. */
export class ChangeListeners {
  readonly #listeners = new Set<() => void>();

  add(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  tell(): void {
    for (const listener of this.#listeners) listener();
  }
}

/** How long the log keeps changes, at most (CHANGES_MAX, CHANGES_MAX_AGE_SECONDS). */
export interface ChangeBounds {
  maxChanges: number;
  maxAgeMs: number;
}

export const DEFAULT_CHANGE_BOUNDS: ChangeBounds = { maxChanges: 10_000, maxAgeMs: 86_400_000 };
