/**
 * The change feed's words on the wire (docs/rest-api.md "Live changes"): cursors, a change as JSON, and
 * the Server-Sent Events frames. A change's JSON is made once per read and, for streams, its frame
 * once per change whatever the number of streams (change-streams.ts).
 */
import type { Change } from '../users/changes.js';
import { etagOf } from './conditional.js';
import { freshUserJson } from './routes/user-json.js';

/** A cursor: `<epoch>.<seq>`. The epoch is the log's (users/changes.ts); seq at most 2^53 - 1. */
export const CURSOR_PATTERN = '^[A-Za-z0-9_-]{1,64}\\.[0-9]{1,16}$';
const CURSOR = new RegExp(CURSOR_PATTERN);

/** What a cursor says: a place in this epoch's log, one the log cannot serve (`foreign`), or nothing readable. */
export type Since = { seq: number } | 'foreign' | 'malformed';

/** Reads a cursor of the log of `epoch`. */
export function sinceOf(text: string, epoch: string): Since {
  if (!CURSOR.test(text)) return 'malformed';
  const dot = text.indexOf('.');
  const seq = Number(text.slice(dot + 1));
  if (!Number.isSafeInteger(seq)) return 'malformed';
  return text.slice(0, dot) === epoch ? { seq } : 'foreign';
}

export const cursorOf = (epoch: string, seq: number): string => `${epoch}.${seq}`;

/**
 * A change as the feed writes it, as JSON text: the user's JSON as the reads write it (user-json.ts),
 * made anew rather than kept in the reads' cache, as a write's reply is.
 */
export function changeJson(epoch: string, change: Change): string {
  const { user } = change;
  return (
    `{"seq":${change.seq},"cursor":"${cursorOf(epoch, change.seq)}","type":"${change.type}",` +
    `"id":${JSON.stringify(change.id)},"user":${user ? freshUserJson(user) : 'null'},` +
    `"etag":${user ? JSON.stringify(etagOf(user)) : 'null'},"at":${JSON.stringify(change.at)}}`
  );
}

/** A page of the JSON form: the changes and the cursor to read on from. */
export function pageJson(epoch: string, changes: readonly Change[], next: number): string {
  let data = '';
  for (let index = 0; index < changes.length; index++)
    data += (index === 0 ? '' : ',') + changeJson(epoch, changes[index]!);
  return `{"data":[${data}],"next":"${cursorOf(epoch, next)}"}`;
}

/** The event of one change (its JSON is one line: JSON text holds no raw line break). */
export const changeFrame = (epoch: string, change: Change): Buffer =>
  Buffer.from(`id: ${cursorOf(epoch, change.seq)}\nevent: change\ndata: ${changeJson(epoch, change)}\n\n`);

/** The event that says the cursor cannot be served: reload, then follow from `head`. */
export function resetFrame(epoch: string, head: number): Buffer {
  const cursor = cursorOf(epoch, head);
  return Buffer.from(`id: ${cursor}\nevent: reset\ndata: {"next":"${cursor}"}\n\n`);
}

/** What a stream starts with: how long a browser's EventSource waits before reconnecting. */
export const RETRY_FRAME = Buffer.from('retry: 2000\n\n');
/** A comment, every HEARTBEAT_MS, so that proxies and clients see the stream alive. */
export const HEARTBEAT_FRAME = Buffer.from(': heartbeat\n\n');
export const HEARTBEAT_MS = 15_000;
