/**
 * What the terminal chat client shows a person: server messages read defensively (the client may talk
 * to any server) and formatted as one line each, and the bookkeeping that tells the client's own chats
 * apart from everyone else's. Everything here is pure or self-contained, so it is tested as units.
 */
import type { ServerMessage } from '../chat/codec.js';
import { shortId } from '../../web/src/sender-id.js';

/** Server messages are read with the chat's one codec (chat/codec.ts): shown raw when it does not know them. */
export { decodeServerMessage as parseServerMessage } from '../chat/codec.js';

export interface FormatOptions {
  /** The chat is one this client sent: it is marked `(you)`. */
  mine?: boolean;
  /** IANA time zone of the clock shown, e.g. `UTC`; the local time zone when absent. */
  timeZone?: string;
}

/**
 * One line for a person, or `undefined` for a `pong` (whose line, the round trip, only the sender of
 * the ping can write: see `formatPong`).
 *
 *   * Welcome to the chat! 2 users online.
 *   * a user joined (3 online)
 *   * a user left (2 online)
 *   [10:15:30] 3f2a9c1b: hello
 *   [10:15:31] 8d0e77aa (you): hi
 */
export function formatServerMessage(message: ServerMessage, options: FormatOptions = {}): string | undefined {
  switch (message.type) {
    case 'system':
      return `* ${printable(message.message)}`;
    case 'user_join':
      return `* a user joined (${message.online_count} online)`;
    case 'user_leave':
      return `* a user left (${message.online_count} online)`;
    case 'chat': {
      const who = `${printable(shortId(message.from))}${options.mine ? ' (you)' : ''}`;
      return `[${formatClock(message.timestamp, options.timeZone)}] ${who}: ${printable(message.message)}`;
    }
    case 'pong':
      return undefined;
  }
}

/** The line for text from the server that is not a message the client understands. */
export function formatUnknown(text: string): string {
  return `* (unrecognised message) ${printable(text)}`;
}

/** The line for the answer to `/ping`. */
export function formatPong(roundTripMs: number): string {
  return `* pong in ${Math.max(0, Math.round(roundTripMs))} ms`;
}

/**
 * `HH:MM:SS` (24-hour) of a server timestamp in the given time zone (local by default). The contract's
 * timestamps are UTC without an offset, so one without an offset is read as UTC. `--:--:--` when the
 * timestamp cannot be read.
 */
export function formatClock(timestamp: string, timeZone?: string): string {
  const hasOffset = /(?:Z|[+-]\d{2}:?\d{2})$/i.test(timestamp);
  const millis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(timestamp) ? Date.parse(hasOffset ? timestamp : `${timestamp}Z`) : NaN;
  if (Number.isNaN(millis)) return '--:--:--';
  const parts = new Intl.DateTimeFormat('en-GB', {
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
    timeZone,
  }).formatToParts(new Date(millis));
  const part = (type: Intl.DateTimeFormatPartTypes): string => parts.find((p) => p.type === type)?.value ?? '--';
  return `${part('hour')}:${part('minute')}:${part('second')}`;
}

/** A sender's id as shown, by the rule the browser console uses too (web/src/sender-id.ts). */
export { shortId };

/**
 * Text safe to write to a terminal: control characters (C0 but tab, DEL, C1) are shown as `\xHH`, so
 * another user's message cannot move the cursor, recolour the terminal or fake a line of its own.
 */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * Tells this client's own chats apart from the others'. The server's `from` is the sending connection's
 * id, which a client is never told; but the server echoes every chat to its sender too, in the order
 * sent. So the client remembers the texts it sent, oldest first, and the first incoming chat whose text
 * equals the oldest one still unanswered is taken as its own echo: its `from` is then this client's id,
 * and from there on `from` alone decides. (Should another user send the very same text first, in the
 * instant before the echo, the client would take that user's id for its own; nothing in the protocol
 * can rule that out.)
 *
 * `pending` also tells when everything sent has come back, which is what leaving at end of input waits for.
 */
export class OwnChats {
  readonly #pending: string[] = [];
  #id: string | undefined;

  /** This client's connection id, once learnt. */
  get id(): string | undefined {
    return this.#id;
  }

  /** How many sent chats have not come back yet. */
  get pending(): number {
    return this.#pending.length;
  }

  /** Records a chat text just sent. */
  sent(text: string): void {
    this.#pending.push(text);
  }

  /** Whether an incoming chat is this client's own (learning the client's id from the first one). */
  isMine(from: string, message: string): boolean {
    if (this.#id === undefined) {
      if (this.#pending.length === 0 || this.#pending[0] !== message) return false;
      this.#id = from;
    } else if (from !== this.#id) {
      return false;
    }
    const index = this.#pending.indexOf(message);
    if (index >= 0) this.#pending.splice(index, 1);
    return true;
  }
}
