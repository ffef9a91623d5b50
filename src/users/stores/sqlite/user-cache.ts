/**
 * The SQLite store's decoded users, by rowid (created_at), never stale: the store is the file's only
 * writer and replaces or drops an entry at every write of its user. Reads then fetch only rowids from
 * the indexes, and hand out the same frozen object until the user changes, as the memory store does,
 * so the reply cache keeps each user's JSON (http/routes/user-json.ts). When the count or the bytes
 * (heap-size.ts) would pass their bound, it starts again empty.
 */
import { getHeapStatistics } from 'node:v8';
import { userBytes } from '../../heap-size.js';
import type { User } from '../../schema.js';

/** Users kept decoded in memory at most (a few MB for typical users). */
const SQLITE_CACHED_USERS = 20_000;
/**
 * And the most heap they may take, counted as heap-size.ts does: a 32nd of the heap limit (128 MiB on a
 * 4 GiB heap, 8 MiB on 256 MiB), so that however large the users' fields, the cache never crowds the heap.
 */
export const SQLITE_CACHED_BYTES = Math.floor(getHeapStatistics().heap_size_limit / 32);

export class UserCache {
  readonly #users = new Map<number, { user: User; bytes: number }>();
  #bytes = 0;

  constructor(readonly maxBytes: number) {}

  /** The heap the cached users take, as heap-size.ts counts it; never more than `maxBytes`. */
  get bytes(): number {
    return this.#bytes;
  }

  get(rowid: number): User | undefined {
    return this.#users.get(rowid)?.user;
  }

  /** Keeps `user`, frozen, as the one of `rowid`, unless it alone would pass the bound; returns it. */
  set(rowid: number, user: User): User {
    Object.freeze(user);
    this.delete(rowid);
    const bytes = userBytes(user);
    if (bytes > this.maxBytes) return user;
    if (this.#users.size >= SQLITE_CACHED_USERS || this.#bytes + bytes > this.maxBytes) this.clear();
    this.#users.set(rowid, { user, bytes });
    this.#bytes += bytes;
    return user;
  }

  delete(rowid: number): void {
    const entry = this.#users.get(rowid);
    if (entry === undefined) return;
    this.#users.delete(rowid);
    this.#bytes -= entry.bytes;
  }

  clear(): void {
    this.#users.clear();
    this.#bytes = 0;
  }
}
