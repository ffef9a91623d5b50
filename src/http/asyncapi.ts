/**
 * The chat as an AsyncAPI 3.0 document, served at /api/v1/asyncapi.json: the channel (the room, any
 * path of the chat port), its WebSocket binding, and every message with its JSON Schema and an example
 * (src/protocol/chat-messages.ts, the schemas the chat tests check every frame against). Operations are
 * the service's view: it sends the server messages and receives the client's.
 */
import { CHAT_MESSAGES, type ChatMessageKey } from '../protocol/chat-messages.js';
import { API_VERSION } from './openapi.js';

export interface ChatAddress {
  /** CHAT_PUBLIC_URL, when the chat is reached through a proxy. */
  publicUrl?: string | undefined;
  host: string;
  /** The chat port bound. */
  port: number;
  tls: boolean;
}

export function asyncApiDocument(chat: ChatAddress): Record<string, unknown> {
  const server = (() => {
    if (chat.publicUrl && /^wss?:\/\//.test(chat.publicUrl)) {
      const url = new URL(chat.publicUrl);
      return { host: url.host, pathname: url.pathname, protocol: url.protocol.replace(':', '') };
    }
    const host = chat.host === '0.0.0.0' || chat.host === '::' ? 'localhost' : chat.host;
    return { host: `${host}:${chat.port}`, protocol: chat.tls ? 'wss' : 'ws' };
  })();
  const messages: Record<string, object> = {};
  const operations: Record<string, object> = {};
  for (const key of Object.keys(CHAT_MESSAGES) as ChatMessageKey[]) {
    const { name, title, summary, payload, example, sender } = CHAT_MESSAGES[key];
    const examples = [{ name: `${key}Example`, payload: example }];
    messages[key] = { name, title, summary, contentType: 'application/json', payload, examples };
    const action = sender === 'server' ? 'send' : 'receive';
    operations[`${action}${key[0]!.toUpperCase()}${key.slice(1)}`] = {
      action,
      title,
      summary,
      channel: { $ref: '#/channels/room' },
      messages: [{ $ref: `#/channels/room/messages/${key}` }],
    };
  }
  return {
    asyncapi: '3.0.0',
    info: {
      title: 'Roster chat',
      version: API_VERSION,
      description:
        'One chat room over WebSocket: JSON objects in text frames. Every message from the service has a `type` and a `timestamp`. ' +
        'Valid JSON of another type is ignored; text that is not JSON is a chat message of that text. With AUTH on, the handshake ' +
        'carries the same credentials as the REST API. History and recovery are opt-in (CHAT_HISTORY): a handshake URL with ' +
        '`?history=N` gets the last N chat messages after its welcome, `?since=<id>` exactly those after that id, each marked ' +
        '`history: true`, then a `history` message; only such a client sees message ids. ' +
        'Large rooms (opt-in, CHAT_NOTICES_MAX_MEMBERS): while the room has more members than that, a `user_join` or ' +
        '`user_leave` is a coalesced notice: it stands for every join (or leave) its instance heard of since its last ' +
        'one, at most one of each kind a second, its message says how many ("37 users joined the chat"), it carries ' +
        'no `name`, and its `online_count` is the count when it was sent. Welcomes, chat and counts are unchanged.',
      license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
    },
    defaultContentType: 'application/json',
    servers: { roster: { ...server, description: "This Roster's chat port (WS_PORT, or CHAT_PUBLIC_URL)" } },
    channels: {
      room: {
        address: '/',
        title: 'The room',
        description: 'The one chat room; any path of the chat port reaches it',
        messages,
        bindings: {
          ws: {
            method: 'GET',
            query: {
              type: 'object',
              properties: {
                history: {
                  type: 'string',
                  pattern: '^\\d+$',
                  description: 'Opt in: the last N chat messages of the history after the welcome',
                },
                since: {
                  type: 'string',
                  description: 'Opt in: the chat messages after this id (the last one seen); wins over history',
                },
              },
            },
            bindingVersion: '0.1.0',
          },
        },
      },
    },
    operations,
  };
}
