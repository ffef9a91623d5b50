/**
 * What the terminal chat client shows a person: server messages read defensively (the client may talk
 * to any server) and formatted as one line each, and the bookkeeping that tells the client's own chats
 * apart from everyone else's. Everything here is pure or self-contained, so it is tested as units.
 */
import type { ServerMessage } from '../protocol/chat-codec.js';
import { shortId } from '../protocol/sender-id.js';

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
      // Replayed from the room's history (said before this connection joined): marked with a `~`.
      return `${message.history ? '~' : ''}[${formatClock(message.timestamp, options.timeZone)}] ${who}: ${printable(message.message)}`;
    }
    case 'history':
      if (message.recovered === false)
        return '* some messages were missed while disconnected: older than the history the room keeps';
      if (message.recovered === true)
        return `* ${message.count} missed ${message.count === 1 ? 'message' : 'messages'} recovered`;
      return message.count > 0
        ? `* (the last ${message.count} ${message.count === 1 ? 'message' : 'messages'} above, marked ~)`
        : undefined;
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
  const millis = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(timestamp)
    ? Date.parse(hasOffset ? timestamp : `${timestamp}Z`)
    : NaN;
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

/** What each close code means, in words (RFC 6455 section 7.4.1, and Roster's own use of them). */
const CLOSE_MEANINGS: Record<number, string> = {
  1000: 'the session ended normally',
  1001: 'the server is shutting down or restarting',
  1002: 'protocol error: the server received a malformed frame',
  1003: 'the server does not accept this kind of data (binary frames)',
  1005: 'closed without a status code',
  1006: 'the connection dropped without a close frame: the server stopped or the network failed',
  1007: 'a message was not valid UTF-8',
  1008: "refused by the server's policy (a rate limit, or the credential expired)",
  1009: 'a message was larger than the server accepts, WS_MAX_PAYLOAD on Roster',
  1010: 'the server lacks an extension the client required',
  1011: 'the server hit an unexpected error',
  1012: 'the server is restarting',
  1013: 'the server is overloaded, or this client read too slowly; try again later',
  1014: 'a gateway in between got a bad answer from the server',
  1015: 'the TLS handshake failed',
};

/** A close code in words: `1009 Message too big (a message was larger than …)`, the server's reason included. */
export function describeClose(code: number, reason = ''): string {
  const meaning =
    CLOSE_MEANINGS[code] ??
    (code >= 4000 && code <= 4999
      ? "a code of the server's own application"
      : code >= 3000 && code <= 3999
        ? 'a code registered by a library or framework'
        : 'an unknown code');
  return `${code}${reason ? ` ${printable(reason)}` : ''} (${meaning})`;
}

/**
 * Close codes after which connecting again may well work: the server went away (restart, crash, a
 * dropped network) or was briefly overloaded. Other codes are about what this client sent or is
 * allowed (1002, 1003, 1007, 1008, 1009, application codes): connecting again would end the same way.
 */
export function worthReconnecting(code: number): boolean {
  return (
    code === 1001 || code === 1005 || code === 1006 || code === 1011 || code === 1012 || code === 1013 || code === 1014
  );
}

/**
 * Whether a typed line is a command (`/name`, one word of letters): a line such as `/usr/bin is full`
 * is a message. `//text` sends `/text`.
 */
export function commandOf(line: string): string | undefined {
  const word = line.trim();
  return /^\/[A-Za-z][\w-]*$/.test(word) ? word.toLowerCase() : undefined;
}

/**
 * Text safe to write to a terminal: control characters (C0 but tab, DEL, C1) are shown as `\xHH`, so
 * another user's message cannot move the cursor, recolour the terminal or fake a line of its own.
 */
export function printable(text: string): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
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
  #pending: string[] = [];
  #id: string | undefined;
  /** The ids of this client's earlier connections (after reconnecting), still its own in a replay. */
  readonly #earlier = new Set<string>();

  /** A new connection (a new id): chats still waiting to come back are given up on. */
  reset(): void {
    if (this.#id !== undefined) this.#earlier.add(this.#id);
    this.#id = undefined;
    this.#pending = [];
  }

  /** Whether a replayed chat was this client's (it learns nothing from one). */
  wasMine(from: string): boolean {
    return from === this.#id || this.#earlier.has(from);
  }

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
