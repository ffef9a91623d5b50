/**
 * The chat protocol of the contract, and the one codec of its messages: JSON objects in WebSocket text
 * frames. The server writes with it and reads client text with it (src/chat/room.ts), the Redis bus
 * reads other instances' messages with it, and both clients, the terminal one and the browser
 * console, build and read with it. Pure functions over strings: no DOM, no Node, no socket.
 */

/**
 * The messages, as the AsyncAPI document (/api/v1/asyncapi.json) describes them: types generated from
 * its JSON Schemas (client/chat-types.ts, `npm run client:types`), which chat-messages.ts holds with
 * what each field means.
 */
import type { ClientMessage, ServerMessage } from './client/chat-types.js';

export type { ClientMessage, ServerMessage } from './client/chat-types.js';

/** A chat message as the server sends it. */
export type ChatMessage = Extract<ServerMessage, { type: 'chat' }>;

/**
 * Message ids are `<milliseconds>-<sequence>` (Redis stream ids; the same form in memory), ordered as
 * two numbers. Negative when `a` comes before `b`; NaN when either is not an id.
 */
export function compareIds(a: string, b: string): number {
  const x = idParts(a);
  const y = idParts(b);
  if (!x || !y) return NaN;
  return x[0] - y[0] || x[1] - y[1];
}

export function isMessageId(text: string): boolean {
  return idParts(text) !== undefined;
}

function idParts(id: string): [number, number] | undefined {
  const match = /^(\d{1,15})-(\d{1,15})$/.exec(id);
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

/**
 * The chat `url` with the query a client adds to opt in: `history` recent messages when it joins, or
 * everything since `since` (the last id it saw) when it reconnects. `url` as it is when it asks for
 * neither.
 */
export function withHistoryQuery(
  url: string,
  options: { history?: number | undefined; since?: string | undefined },
): string {
  const query =
    options.since !== undefined
      ? `since=${encodeURIComponent(options.since)}`
      : options.history !== undefined
        ? `history=${Math.max(0, Math.floor(options.history))}`
        : '';
  return query === '' ? url : `${url}${url.includes('?') ? '&' : '?'}${query}`;
}

/**
 * How deep a non-string `message` may nest (`[[…]]`, `{"a":{…}}`) to be sent on as its JSON text.
 * JSON.parse takes any depth, but writing the value back out recurses once per level: a 10 KB frame of
 * 5 000 brackets would overflow the stack. Real messages are strings; 32 levels is plenty for the rest.
 */
export const MAX_MESSAGE_DEPTH = 32;

/** What a client's text frame asks for; `refuse`: a frame the room will not take (the connection is closed, 1008). */
export type ClientIntent =
  { kind: 'ping' } | { kind: 'chat'; message: string } | { kind: 'ignore' } | { kind: 'refuse'; reason: string };

export function parseClientText(text: string): ClientIntent {
  const value = parseJson(text);
  // Not JSON: the raw text is the chat message (contract rule 4).
  if (value === undefined) return { kind: 'chat', message: text };
  const type =
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as { type?: unknown }).type
      : undefined;
  if (type === 'ping') return { kind: 'ping' };
  if (type === 'chat') {
    const message = (value as { message?: unknown }).message;
    if (nestedDeeperThan(message, MAX_MESSAGE_DEPTH))
      return { kind: 'refuse', reason: `Chat message nested deeper than ${MAX_MESSAGE_DEPTH} levels` };
    return { kind: 'chat', message: messageText(message) };
  }
  // Valid JSON of any other type (or none): no reply, no broadcast (contract rule 3).
  return { kind: 'ignore' };
}

/**
 * The `message` of a chat: the string sent, or the empty string when absent (contract); `null` counts
 * as absent, since JSON has no other way to say "no message". Any other non-string value is sent on as
 * its JSON text, so the outgoing `message` is always the string the protocol table promises.
 */
function messageText(message: unknown): string {
  if (message === undefined || message === null) return '';
  return typeof message === 'string' ? message : JSON.stringify(message);
}

/** Whether `value` nests objects or arrays more than `limit` deep; an explicit stack, since recursion is the danger. */
function nestedDeeperThan(value: unknown, limit: number): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 1 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (typeof item.value !== 'object' || item.value === null) continue;
    if (item.depth > limit) return true;
    for (const child of Object.values(item.value)) stack.push({ value: child, depth: item.depth + 1 });
  }
  return false;
}

/** A server message as it travels: one JSON text. */
export function encodeServerMessage(message: ServerMessage): string {
  return JSON.stringify(message);
}

/** A client message as it travels. */
export function encodeClientMessage(message: ClientMessage): string {
  return JSON.stringify(message);
}

/**
 * A server message read back: a JSON object of one of the contract's types with the fields that type
 * carries (a missing timestamp reads as ''); anything else is undefined, never trusted. `name` is kept
 * where the type may carry it. The same reading for every reader: a client of any server, and an
 * instance reading another's messages from the bus.
 */
export function decodeServerMessage(text: string): ServerMessage | undefined {
  return serverMessageOf(parseJson(text));
}

/** `text` parsed as JSON; undefined (which JSON cannot say) when it is not JSON. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A chat with only the contract's fields (its `id` and `history` are for the clients that asked). */
export function contractChat({ from, message, timestamp }: ChatMessage): ChatMessage {
  return { type: 'chat', from, message, timestamp };
}

/** As decodeServerMessage, for a value already parsed (a message inside a bus envelope). */
export function serverMessageOf(value: unknown): ServerMessage | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const fields = value as Record<string, unknown>;
  const timestamp = typeof fields.timestamp === 'string' ? fields.timestamp : '';
  const { message, online_count: onlineCount, from, name, id, history, count, last_id: lastId, recovered } = fields;
  const named = typeof name === 'string' ? { name } : {};
  switch (fields.type) {
    case 'system':
      return typeof message === 'string' ? { type: 'system', message, ...named, timestamp } : undefined;
    case 'user_join':
      return typeof message === 'string' && typeof onlineCount === 'number'
        ? { type: 'user_join', message, ...named, online_count: onlineCount, timestamp }
        : undefined;
    case 'user_leave':
      return typeof message === 'string' && typeof onlineCount === 'number'
        ? { type: 'user_leave', message, online_count: onlineCount, timestamp }
        : undefined;
    case 'chat':
      return typeof message === 'string' && typeof from === 'string'
        ? {
            type: 'chat',
            from,
            message,
            timestamp,
            ...(typeof id === 'string' ? { id } : {}),
            ...(history === true ? { history } : {}),
          }
        : undefined;
    case 'pong':
      return { type: 'pong', timestamp };
    case 'history':
      return typeof count === 'number'
        ? {
            type: 'history',
            count,
            ...(typeof lastId === 'string' ? { last_id: lastId } : {}),
            ...(typeof recovered === 'boolean' ? { recovered } : {}),
            timestamp,
          }
        : undefined;
    default:
      return undefined;
  }
}

/**
 * A client's place in the room's history, across its reconnections: the first connection asks for the
 * last `history` messages, every later one for what it missed (`since` the last id it saw). `accept`
 * takes in each message and says whether to show it: a chat whose id is not past the last one seen is
 * a repeat (the server does not send one; a client checks anyway).
 */
export class ChatPosition {
  #lastId: string | undefined;

  constructor(readonly history: number) {}

  get lastId(): string | undefined {
    return this.#lastId;
  }

  /** `url` with the query of the next connection. */
  url(url: string): string {
    return withHistoryQuery(url, this.#lastId === undefined ? { history: this.history } : { since: this.#lastId });
  }

  accept(message: ServerMessage): boolean {
    if (message.type === 'history') {
      if (message.last_id !== undefined) this.#lastId = message.last_id;
      return true;
    }
    if (message.type !== 'chat' || message.id === undefined) return true;
    if (this.#lastId !== undefined && !(compareIds(message.id, this.#lastId) > 0)) return false;
    this.#lastId = message.id;
    return true;
  }

  /** A new session (another user, say): the next connection asks for recent history again. */
  reset(): void {
    this.#lastId = undefined;
  }
}
