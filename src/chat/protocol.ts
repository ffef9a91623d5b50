/**
 * The chat protocol of the contract: JSON objects in WebSocket text frames. Server messages are a
 * discriminated union; client text is parsed at the edge into one of three intents.
 */

export type ServerMessage =
  // `name`: the authenticated principal's name (system: the welcome's addressee; user_join: who
  // joined), only when authentication is on.
  | { type: 'system'; message: string; name?: string; timestamp: string }
  | { type: 'user_join'; message: string; name?: string; online_count: number; timestamp: string }
  | { type: 'user_leave'; message: string; online_count: number; timestamp: string }
  | { type: 'chat'; from: string; message: string; timestamp: string }
  | { type: 'pong'; timestamp: string };

/** What a client's text frame asks for. */
export type ClientIntent = { kind: 'ping' } | { kind: 'chat'; message: string } | { kind: 'ignore' };

export function parseClientText(text: string): ClientIntent {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Not JSON: the raw text is the chat message (contract rule 4).
    return { kind: 'chat', message: text };
  }
  const type = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as { type?: unknown }).type : undefined;
  if (type === 'ping') return { kind: 'ping' };
  if (type === 'chat') return { kind: 'chat', message: messageText((value as { message?: unknown }).message) };
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
