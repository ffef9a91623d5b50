/**
 * The room's memory of chat messages, for clients that ask for it (`?history=N`, `?since=<id>` on the
 * handshake URL): nothing of it reaches a client that does not ask. One process keeps the last
 * CHAT_HISTORY messages here, in memory; with REDIS_URL the Redis bus keeps them in a capped stream
 * instead (redis/history.ts), so that every instance serves the same history with the same ids.
 *
 * Ids are `<ms>-<seq>`, as Redis stream ids. In memory the first part is when the process started, so
 * a `since` from an earlier run of the process is older than anything kept: told so, not replayed.
 */
import { compareIds, encodeServerMessage, isMessageId, type ChatMessage } from '../protocol/chat-codec.js';

/** What a joining client asked for: the last `history` messages, or everything after `since`. */
export interface HistoryRequest {
  history?: number;
  since?: string;
}

/** A kept chat: its id, and the text of its replay frame, built once and shared by every replay. */
export interface StoredChat {
  readonly id: string;
  readonly payload: Buffer;
}

/** A chat as a replay sends it: with its id, marked as history. */
export function storedChat(id: string, message: ChatMessage): StoredChat {
  return { id, payload: Buffer.from(encodeServerMessage({ ...message, id, history: true })) };
}

/** What a client that asked is given after its welcome. */
export interface Recovery {
  /** Oldest first. */
  readonly entries: readonly StoredChat[];
  /** The position the client holds once it has them: the newest id of the history (undefined: unknown). */
  readonly lastId: string | undefined;
  /** With `since` only: false when the gap is older than the history (entries is then empty). */
  readonly recovered?: boolean;
}

export interface ChatHistory {
  /** How many messages are kept; a request for more gets this many. */
  readonly capacity: number;
  read(request: HistoryRequest): Recovery | Promise<Recovery>;
}

/**
 * What a handshake URL asks of the history: `?since=<id>` (recovery; wins over history), else
 * `?history=N` (a whole number; larger than the history kept gives all of it). Neither: undefined, and
 * the connection gets the contract's frames only. A `since` that is not an id is a gap, said so.
 */
export function historyRequest(url: string | undefined): HistoryRequest | undefined {
  const at = url?.indexOf('?') ?? -1;
  if (at < 0) return undefined;
  const query = new URLSearchParams(url!.slice(at + 1));
  const since = query.get('since');
  if (since !== null) return { since };
  const history = query.get('history');
  if (history !== null && /^\d{1,9}$/.test(history)) return { history: Number(history) };
  return undefined;
}

/**
 * Hands `done` what `history` has for `request`, at once when it is at hand (memory); a read that fails
 * (Redis away) is nothing replayed, the position unknown.
 */
export function readHistory(history: ChatHistory, request: HistoryRequest, done: (recovery: Recovery) => void): void {
  const unavailable = (): Recovery => ({
    entries: [],
    lastId: undefined,
    ...(request.since === undefined ? {} : { recovered: false }),
  });
  let read: Recovery | Promise<Recovery>;
  try {
    read = history.read(request);
  } catch {
    read = unavailable();
  }
  if (read instanceof Promise) read.then(done, () => done(unavailable()));
  else done(read);
}

/**
 * The ids a history holds, and what `since` means against them: `floor` is the newest id known to be
 * gone (or the origin, before anything is); every message after it is kept. A `since` from the floor
 * to the newest id is recovered exactly; anything else (older, newer, another run's) is a gap.
 */
export function recover(
  entries: readonly StoredChat[],
  floor: string,
  request: HistoryRequest,
  capacity: number,
): Recovery {
  const lastId = entries.length > 0 ? entries[entries.length - 1]!.id : floor;
  if (request.since !== undefined) {
    const since = request.since;
    if (!isMessageId(since) || compareIds(since, floor) < 0 || compareIds(since, lastId) > 0)
      return { entries: [], lastId, recovered: false };
    // Ids increase along the entries: the missed ones are a suffix.
    let from = entries.length;
    while (from > 0 && compareIds(entries[from - 1]!.id, since) > 0) from--;
    return { entries: entries.slice(from), lastId, recovered: true };
  }
  const count = Math.min(request.history ?? 0, capacity, entries.length);
  return { entries: count === 0 ? [] : entries.slice(entries.length - count), lastId };
}

/**
 * One process's history: the last `capacity` chat messages, and no more of them than fit in `maxBytes`
 * (CHAT_HISTORY_BYTES, counted on their replay frames), ids `<start ms>-<n>`. A ring: the slot of a
 * dropped message is overwritten or cleared, so nothing dropped stays reachable.
 */
export class MemoryHistory implements ChatHistory {
  readonly #epoch: number;
  #seq = 0;
  readonly #ring: (StoredChat | undefined)[];
  /** The ring index of the oldest kept message, how many are kept, and their bytes. */
  #start = 0;
  #count = 0;
  #bytes = 0;
  #floor: string;

  constructor(
    readonly capacity: number,
    readonly maxBytes = Infinity,
    epoch = Date.now(),
  ) {
    this.#epoch = epoch;
    this.#floor = `${epoch}-0`;
    this.#ring = new Array<StoredChat | undefined>(capacity).fill(undefined);
  }

  /** The bytes of the replay frames kept. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Keeps `message` and returns its id. */
  append(message: ChatMessage): string {
    const id = `${this.#epoch}-${++this.#seq}`;
    const stored = storedChat(id, message);
    if (this.#count === this.capacity) this.#dropOldest();
    this.#ring[(this.#start + this.#count) % this.capacity] = stored;
    this.#count++;
    this.#bytes += stored.payload.length;
    while (this.#bytes > this.maxBytes && this.#count > 0) this.#dropOldest();
    return id;
  }

  #dropOldest(): void {
    const oldest = this.#ring[this.#start]!;
    this.#ring[this.#start] = undefined;
    this.#start = (this.#start + 1) % this.capacity;
    this.#count--;
    this.#bytes -= oldest.payload.length;
    this.#floor = oldest.id;
  }

  read(request: HistoryRequest): Recovery {
    const entries: StoredChat[] = [];
    for (let i = 0; i < this.#count; i++) entries.push(this.#ring[(this.#start + i) % this.capacity]!);
    return recover(entries, this.#floor, request, this.capacity);
  }
}
