/**
 * The memory store's change log (users/changes.ts): a ring of the latest changes, appended by the store in
 * the same synchronous step as the write, so no reader can see one without the other. A change holds
 * the user object the store keeps (frozen, and replaced rather than mutated on update), so a change of
 * a user still current costs the change alone; a former version stays alive while its change is kept.
 * CHANGES_MAX times the worst case of both (config/policy.ts WORST_CASE_BYTES_PER_CHANGE) is taken off
 * the heap MAX_USERS is derived from. The epoch is new with every store: a restarted process starts a
 * new log, and a cursor of the old one is answered with a reset.
 */
import { randomBytes } from 'node:crypto';
import {
  ChangeListeners,
  DEFAULT_CHANGE_BOUNDS,
  passes,
  SCAN_MAX,
  type Change,
  type ChangeBounds,
  type ChangeFilter,
  type ChangeLog,
  type ChangeRead,
  type ChangeType,
} from '../../changes.js';
import type { User } from '../../schema.js';

export class MemoryChangeLog implements ChangeLog {
  /**
   * Lower-case hex, as the SQL stores' epochs: a cursor never starts with a dash, which a command line
   * takes for an option (`roster users watch --since -…` was a usage error one start in 64, with base64url).
   */
  readonly epoch = randomBytes(6).toString('hex');
  /** The kept changes, a ring: `#count` of them from `#start`; sequence numbers are consecutive. */
  readonly #ring: Change[] = [];
  /** When each was appended (ms), for CHANGES_MAX_AGE_SECONDS. */
  readonly #times: number[] = [];
  #start = 0;
  #count = 0;
  #head = 0;
  readonly #listeners = new ChangeListeners();

  constructor(
    readonly bounds: ChangeBounds = DEFAULT_CHANGE_BOUNDS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Appends one change, synchronously (the store calls it within its write), and tells the listeners. */
  append(type: ChangeType, id: string, user: User | null, roleBefore: string | null, at: string): void {
    const change: Change = Object.freeze({ seq: ++this.#head, type, id, user, roleBefore, at });
    const capacity = this.bounds.maxChanges;
    const time = this.now();
    if (this.#count < capacity) {
      const slot = (this.#start + this.#count) % capacity;
      this.#ring[slot] = change;
      this.#times[slot] = time;
      this.#count++;
    } else {
      this.#ring[this.#start] = change;
      this.#times[this.#start] = time;
      this.#start = (this.#start + 1) % capacity;
    }
    this.#expire(time);
    this.#listeners.tell();
  }

  async head(): Promise<number> {
    return this.#head;
  }

  async read(since: number, limit: number, filter?: ChangeFilter): Promise<ChangeRead> {
    this.#expire(this.now());
    const first = this.#head - this.#count + 1; // the oldest kept (head + 1 when none is)
    if (since > this.#head || since < first - 1) return { reset: true, head: this.#head };
    const changes: Change[] = [];
    const capacity = this.bounds.maxChanges;
    const end = Math.min(this.#head, since + SCAN_MAX);
    let next = since;
    while (next < end && changes.length < limit) {
      const change = this.#ring[(this.#start + (next + 1 - first)) % capacity]!;
      next++;
      if (passes(change, filter)) changes.push(change);
    }
    return { changes, next };
  }

  subscribe(listener: () => void): () => void {
    return this.#listeners.add(listener);
  }

  /** Drops the changes older than CHANGES_MAX_AGE_SECONDS, oldest first. */
  #expire(now: number): void {
    const capacity = this.bounds.maxChanges;
    while (this.#count > 0 && this.#times[this.#start]! < now - this.bounds.maxAgeMs) {
      this.#ring[this.#start] = undefined as unknown as Change; // let the user object go
      this.#start = (this.#start + 1) % capacity;
      this.#count--;
    }
  }
}
