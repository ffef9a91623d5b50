/**
 * Open connections (or streams) per key, each counted until its `close`: the one count behind
 * MAX_CONNECTIONS_PER_ADDRESS (connection-guard.ts) and CHANGES_MAX_STREAMS_PER_CLIENT
 * (http/routes/change-routes.ts). A key with none open holds no entry.
 */
import type { EventEmitter } from 'node:events';

export class OpenCounts {
  readonly #open = new Map<string, number>();

  /** How many `key` holds open now. */
  of(key: string): number {
    return this.#open.get(key) ?? 0;
  }

  /** Counts one more for `key` until `closing` emits 'close'. */
  hold(key: string, closing: EventEmitter): void {
    this.#open.set(key, this.of(key) + 1);
    closing.once('close', () => {
      const left = this.of(key) - 1;
      if (left > 0) this.#open.set(key, left);
      else this.#open.delete(key);
    });
  }
}
