/**
 * The history the instances share: a capped Redis stream, each chat added and published with its id in
 * one script, so every instance numbers it the same (history.ts tells what the ids mean).
 */
import { compareIds, contractChat, decodeServerMessage, isMessageId } from '../../protocol/chat-codec.js';
import type { SharedHistory, SharedMessage } from '../bus.js';
import { storedChat, type HistoryRequest, type Recovery, type StoredChat } from '../history.js';
import type { BusLink } from './redis-channel.js';
import type { StreamEntry } from './redis-scripts.js';

export class RedisHistory implements SharedHistory {
  readonly capacity: number;
  readonly #link: BusLink;
  /** CHAT_HISTORY_BYTES: at most this many bytes of messages in the stream, and of frames kept here. */
  readonly #bytes: number;
  readonly #stream: string;
  /** Replay frames of history entries read, by id (#chatsOf), and their bytes. */
  readonly #frames = new Map<string, StoredChat>();
  #frameBytes = 0;

  constructor(link: BusLink, capacity: number, bytes: number) {
    this.#link = link;
    this.capacity = capacity;
    this.#bytes = bytes;
    this.#stream = `${link.keys}history`;
  }

  publishChat(message: SharedMessage, localCount: number): boolean {
    const { pub, channel, id } = this.#link;
    const envelope = { i: id, n: localCount, m: message };
    // One more than CHAT_HISTORY: the oldest entry kept is the floor of recovery (history.ts).
    const maxlen = this.capacity + 1;
    return this.#link.send(
      envelope,
      (text) =>
        pub.rosterChat(
          this.#stream,
          maxlen,
          JSON.stringify(message),
          channel,
          // Published with the id the script gave the chat: `"s":"<id>"` goes before the envelope's end.
          `${text.slice(0, -1)},"s":"`,
          '"}',
          `${this.#stream}-bytes`,
          this.#bytes,
        ),
      false,
      true,
    );
  }

  async read(request: HistoryRequest): Promise<Recovery> {
    const since = request.since;
    if (since !== undefined && !isMessageId(since)) return { entries: [], lastId: undefined, recovered: false };
    const { pub } = this.#link;
    if (pub.status !== 'ready') throw new Error('chat bus down');
    const count = Math.min(request.history ?? 0, this.capacity);
    const [first, last, entries] = (await pub.rosterRead(
      this.#stream,
      since === undefined ? 'h' : 's',
      since ?? count + 1,
    )) as [StreamEntry[], StreamEntry[], StreamEntry[]];
    const firstId = first[0]?.[0];
    const lastId = last[0]?.[0];
    if (since === undefined)
      return { entries: count === 0 ? [] : this.#chatsOf(entries.reverse()).slice(-count), lastId };
    if (
      firstId === undefined ||
      lastId === undefined ||
      compareIds(since, firstId) < 0 ||
      compareIds(since, lastId) > 0
    ) {
      return { entries: [], lastId, recovered: false };
    }
    return { entries: this.#chatsOf(entries), lastId, recovered: true };
  }

  /**
   * The chat messages of stream entries (the origin marker and anything else left out), oldest first.
   * Each one's replay frame is built once and kept (up to CHAT_HISTORY_BYTES, oldest out first), so
   * replays running at once share their Buffers as in memory; the read itself is transient.
   */
  #chatsOf(entries: readonly StreamEntry[]): StoredChat[] {
    const chats: StoredChat[] = [];
    for (const [id, fields] of entries) {
      const cached = this.#frames.get(id);
      if (cached) {
        chats.push(cached);
        continue;
      }
      const at = fields.indexOf('m');
      if (at < 0 || at % 2 !== 0) continue;
      const message = decodeServerMessage(fields[at + 1]!);
      if (message?.type !== 'chat') continue;
      const stored = storedChat(id, contractChat(message));
      chats.push(stored);
      this.#frames.set(id, stored);
      this.#frameBytes += stored.payload.length;
      for (const [oldest, kept] of this.#frames) {
        if (this.#frameBytes <= this.#bytes) break;
        this.#frames.delete(oldest);
        this.#frameBytes -= kept.payload.length;
      }
    }
    return chats;
  }
}
