/**
 * The chat protocol's messages as JSON Schemas (draft 2020-12), one per message: the AsyncAPI document
 * (src/http/asyncapi.ts, served at /api/v1/asyncapi.json) publishes them, the chat tests check every
 * frame the service sends against them, and the types of chat-codec.ts are what they describe. Pure
 * data: the browser console and the server load the same module.
 */

const TIMESTAMP = {
  type: 'string',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{6}$',
  description: 'When the service sent it: UTC, ISO 8601 without offset, microseconds',
} as const;
const TEXT = { type: 'string' } as const;
const COUNT = {
  type: 'integer',
  minimum: 0,
  description: 'Connections in the room after this event (all instances)',
} as const;
const NAME = { type: 'string', description: "The authenticated principal's name; only with AUTH on" } as const;
const MESSAGE_ID = {
  type: 'string',
  pattern: '^\\d{1,15}-\\d{1,15}$',
  description:
    "A chat message's position in the room's history (`<ms>-<seq>`, increasing); only to a client that asked for history",
} as const;

/** One message: its name in the document, who sends it, its JSON Schema and one example. */
export interface ChatMessageSpec {
  readonly name: string;
  readonly title: string;
  readonly summary: string;
  readonly sender: 'server' | 'client';
  /**
   * Whom the service sends a server message to: every member of the room (on every instance: the
   * instances share exactly these), or one connection.
   */
  readonly audience?: 'room' | 'connection';
  readonly payload: Readonly<Record<string, unknown>>;
  readonly example: Readonly<Record<string, unknown>>;
}

/** What a message that counts the room requires. */
const COUNTED = ['message', 'online_count', 'timestamp'];

const object = (type: string, properties: Record<string, unknown>, required: string[]) => ({
  ...lenient(type, properties, required),
  additionalProperties: false,
});

/** A client message: other keys are allowed (and ignored). */
function lenient(type: string, properties: Record<string, unknown>, required: string[] = []) {
  return { type: 'object', properties: { type: { const: type }, ...properties }, required: ['type', ...required] };
}

export const CHAT_MESSAGES = {
  system: {
    name: 'system',
    title: 'Welcome',
    summary: 'Sent to a connection once it joined: the welcome, with how many are online',
    sender: 'server',
    audience: 'connection',
    payload: object('system', { message: TEXT, name: NAME, timestamp: TIMESTAMP }, ['message', 'timestamp']),
    example: {
      type: 'system',
      message: 'Welcome to the chat! 2 users online.',
      timestamp: '2026-11-22T10:15:30.123456',
    },
  },
  userJoin: {
    name: 'user_join',
    title: 'Someone joined',
    summary: 'Sent to everyone else when a connection joins',
    sender: 'server',
    audience: 'room',
    payload: object('user_join', { message: TEXT, name: NAME, online_count: COUNT, timestamp: TIMESTAMP }, COUNTED),
    example: {
      type: 'user_join',
      message: 'A user joined the chat',
      online_count: 2,
      timestamp: '2026-11-22T10:15:30.123456',
    },
  },
  userLeave: {
    name: 'user_leave',
    title: 'Someone left',
    summary: 'Sent to everyone still there when a connection leaves',
    sender: 'server',
    audience: 'room',
    payload: object('user_leave', { message: TEXT, online_count: COUNT, timestamp: TIMESTAMP }, COUNTED),
    example: {
      type: 'user_leave',
      message: 'A user left the chat',
      online_count: 1,
      timestamp: '2026-11-22T10:15:31.123456',
    },
  },
  chatOut: {
    name: 'chat',
    title: 'Chat message (to everyone)',
    summary: 'A chat message, broadcast to every connection, the sender included',
    sender: 'server',
    audience: 'room',
    payload: object(
      'chat',
      {
        from: { type: 'string', description: "The sender's connection id" },
        message: TEXT,
        timestamp: TIMESTAMP,
        id: MESSAGE_ID,
        history: {
          const: true,
          description: 'Replayed from the history (said before this connection joined); only to a client that asked',
        },
      },
      ['from', 'message', 'timestamp'],
    ),
    example: {
      type: 'chat',
      from: '5b0e7c1a-9f3d-4e2b-8a61-2c4d6e8f0a1b',
      message: 'hi',
      timestamp: '2026-11-22T10:15:32.123456',
    },
  },
  history: {
    name: 'history',
    title: 'End of the replay',
    summary:
      'Only to a client that asked (handshake URL ?history=N or ?since=<id>): after the replayed chat messages, how many there were and the position now held',
    sender: 'server',
    audience: 'connection',
    payload: object(
      'history',
      {
        count: { type: 'integer', minimum: 0, description: 'Chat messages replayed' },
        last_id: {
          ...MESSAGE_ID,
          description:
            'The newest id of the history: reconnect with ?since= it (absent when the history could not be read)',
        },
        recovered: {
          type: 'boolean',
          description: 'With ?since= only: false when the gap is older than the history kept (nothing was replayed)',
        },
        timestamp: TIMESTAMP,
      },
      ['count', 'timestamp'],
    ),
    example: {
      type: 'history',
      count: 3,
      last_id: '1763900000000-42',
      recovered: true,
      timestamp: '2026-11-22T10:15:34.123456',
    },
  },
  pong: {
    name: 'pong',
    title: 'Pong',
    summary: 'The answer to a ping, to its sender only',
    sender: 'server',
    audience: 'connection',
    payload: object('pong', { timestamp: TIMESTAMP }, ['timestamp']),
    example: { type: 'pong', timestamp: '2026-11-22T10:15:33.123456' },
  },
  chatIn: {
    name: 'chat',
    title: 'Chat message (from a client)',
    summary: 'A chat message to broadcast; a text frame that is not JSON is taken as a chat message of that text',
    sender: 'client',
    payload: lenient('chat', {
      message: { type: 'string', description: 'The text; absent or null is the empty string' },
    }),
    example: { type: 'chat', message: 'hi' },
  },
  ping: {
    name: 'ping',
    title: 'Ping',
    summary: 'An application-level ping: the service answers pong to the sender only',
    sender: 'client',
    payload: lenient('ping', {}),
    example: { type: 'ping' },
  },
} as const satisfies Record<string, ChatMessageSpec>;

export type ChatMessageKey = keyof typeof CHAT_MESSAGES;

type RoomMessageKey = {
  [K in ChatMessageKey]: (typeof CHAT_MESSAGES)[K] extends { audience: 'room' } ? K : never;
}[ChatMessageKey];

/** The `type` of each message the whole room hears: what the instances of one room tell each other. */
export type RoomMessageType = (typeof CHAT_MESSAGES)[RoomMessageKey]['name'];

export const ROOM_MESSAGE_TYPES: ReadonlySet<string> = new Set(
  Object.values(CHAT_MESSAGES).flatMap((spec) => ('audience' in spec && spec.audience === 'room' ? [spec.name] : [])),
);

/** The server message keys by their `type` on the wire. */
export const SERVER_MESSAGE_BY_TYPE: Readonly<Record<string, ChatMessageKey>> = Object.fromEntries(
  (Object.keys(CHAT_MESSAGES) as ChatMessageKey[])
    .filter((key) => CHAT_MESSAGES[key].sender === 'server')
    .map((key) => [CHAT_MESSAGES[key].name, key]),
);
