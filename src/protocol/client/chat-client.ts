/**
 * Roster's chat room, typed from its AsyncAPI document: the messages of chat-types.ts (generated from
 * /api/v1/asyncapi.json by `npm run client:types`), written and read by the chat's one codec
 * (../chat-codec.ts). It works over any WebSocket with the standard interface: the browser's, Node's
 * global one, or the `ws` package's (which `roster chat` uses for its handshake errors).
 */
import { decodeServerMessage, encodeClientMessage, withHistoryQuery } from '../chat-codec.js';
import type { ClientMessage, ServerMessage } from './chat-types.js';

export type * from './chat-types.js';

/** What the client needs of a WebSocket. */
export interface ChatSocket {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void;
  addEventListener(type: 'open' | 'close' | 'error', listener: () => void): void;
}

const OPEN = 1;

/** The chat URL with the opt-in query: the last `history` messages on joining, or all `since` an id. */
export function chatUrl(url: string, options: { history?: number; since?: string } = {}): string {
  return withHistoryQuery(url, options);
}

/** Sends one message; false when the socket is not open. */
export function sendMessage(socket: Pick<ChatSocket, 'readyState' | 'send'>, message: ClientMessage): boolean {
  if (socket.readyState !== OPEN) return false;
  socket.send(encodeClientMessage(message));
  return true;
}

/** A text frame from the service as one of its messages, or undefined when it is none. */
export function readMessage(text: string): ServerMessage | undefined {
  return decodeServerMessage(text);
}

/**
 * Calls `listener` with every message the service sends on `socket`, and the text it came in;
 * frames that are not one of its messages (binary, or JSON of no known shape) are left out.
 */
export function onMessage(socket: ChatSocket, listener: (message: ServerMessage, text: string) => void): void {
  socket.addEventListener('message', (event) => {
    if (typeof event.data !== 'string') return;
    const message = readMessage(event.data);
    if (message) listener(message, event.data);
  });
}

export interface ChatSession {
  readonly socket: ChatSocket;
  send(message: ClientMessage): boolean;
  close(): void;
}

/**
 * Joins the room at `url` (ws: or wss:), resolving once the socket is open; `listener` hears every
 * message from then on, the welcome (`system`) first. Rejects when the socket closes before opening.
 */
export function connectChat(
  url: string,
  listener: (message: ServerMessage) => void = () => undefined,
  options: { history?: number; since?: string; WebSocket?: new (url: string) => ChatSocket } = {},
): Promise<ChatSession> {
  const Socket = options.WebSocket ?? (globalThis.WebSocket as unknown as new (url: string) => ChatSocket);
  const socket = new Socket(chatUrl(url, options));
  onMessage(socket, listener);
  return new Promise((resolve, reject) => {
    socket.addEventListener('open', () =>
      resolve({ socket, send: (message) => sendMessage(socket, message), close: () => socket.close(1000) }),
    );
    socket.addEventListener('close', () => reject(new Error(`the chat at ${url} closed before it opened`)));
  });
}
