/**
 * Chat clients of the tests, over `ws`: one that records every message it receives and checks each
 * against the AsyncAPI document (schemas.ts), the close a server sent, and a handshake whose outcome,
 * accepted or refused, is read in full.
 */
import { once } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { WebSocket, type ClientOptions } from 'ws';
import { frameProblem } from './schemas.js';
import { within } from './wait.js';

/** A chat message as a test reads it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Message = any;

/**
 * A WebSocket client that records every message it receives, parsed as JSON. Every frame is checked
 * against its message schema of the AsyncAPI document: one that is not fails the test (`next` rejects),
 * so the document cannot drift from the wire.
 */
export class ChatClient {
  readonly messages: Message[] = [];
  readonly ws: WebSocket;
  #waiters: { predicate: (m: Message) => boolean; resolve: (m: Message) => void }[] = [];
  /** The first frame off the AsyncAPI document, if any. */
  invalidFrame: Error | undefined;

  constructor(url: string) {
    this.ws = new WebSocket(url);
    this.ws.on('message', (data) => {
      const message = JSON.parse(data.toString());
      const problem = frameProblem(message);
      if (problem && !this.invalidFrame)
        this.invalidFrame = new Error(`frame off the AsyncAPI document: ${data.toString()}: ${problem}`);
      this.messages.push(message);
      this.#waiters = this.#waiters.filter((waiter) => {
        if (!waiter.predicate(message)) return true;
        waiter.resolve(message);
        return false;
      });
    });
  }

  /** Connects and waits for the welcome `system` message. */
  static async connect(url: string): Promise<ChatClient> {
    const client = new ChatClient(url);
    await client.next((m) => m.type === 'system');
    return client;
  }

  /** Resolves with the first message (already received or coming) that matches. */
  next(predicate: (message: Message) => boolean, timeoutMs = 5000): Promise<Message> {
    if (this.invalidFrame) return Promise.reject(this.invalidFrame);
    const seen = this.messages.find(predicate);
    if (seen) {
      this.messages.splice(this.messages.indexOf(seen), 1);
      return Promise.resolve(seen);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out waiting for a message; got ${JSON.stringify(this.messages)}`)),
        timeoutMs,
      );
      this.#waiters.push({
        predicate,
        resolve: (message) => {
          clearTimeout(timer);
          this.messages.splice(this.messages.indexOf(message), 1);
          resolve(message);
        },
      });
    });
  }

  send(value: unknown): void {
    this.ws.send(typeof value === 'string' ? value : JSON.stringify(value));
  }

  /** Closes and waits for the close handshake; resolves with the close code, rejects after `ms`. */
  async close(ms = 5000): Promise<number> {
    if (this.invalidFrame) throw this.invalidFrame;
    if (this.ws.readyState === WebSocket.CLOSED) return 1005;
    const closed = once(this.ws, 'close');
    this.ws.close();
    const [code] = await within(closed, ms, 'the close handshake');
    return code as number;
  }
}

/**
 * Resolves with the close code and reason the server sent; rejects if the connection is still open
 * `ms` after the call (a close that never comes fails the test in seconds, not at the runner's timeout).
 */
export async function closeOf(ws: WebSocket, ms = 10_000): Promise<{ code: number; reason: string }> {
  const [code, reason] = await within(once(ws, 'close'), ms, 'the connection to close');
  return { code: code as number, reason: String(reason) };
}

export interface Handshake {
  /** 101 when accepted. */
  status: number;
  headers: IncomingMessage['headers'];
  text: string;
  /** The open connection when accepted (the caller closes it), with the messages received so far. */
  ws?: WebSocket;
  messages: Record<string, unknown>[];
}

/** Opens a chat connection and reports the outcome: accepted (with the welcome), or refused with status, headers and body. */
export async function handshake(url: string, options: ClientOptions = {}): Promise<Handshake> {
  const ws = new WebSocket(url, options);
  const messages: Record<string, unknown>[] = [];
  ws.on('message', (data) => messages.push(JSON.parse(String(data)) as Record<string, unknown>));
  ws.on('error', () => {});
  const outcome = await within(
    Promise.race([
      once(ws, 'unexpected-response').then(([, response]) => response as IncomingMessage),
      once(ws, 'open').then(() => undefined),
    ]),
    5000,
    'the handshake outcome',
  );
  if (outcome === undefined) {
    await within(
      new Promise<void>((resolve) => {
        const check = () => (messages.some((m) => m.type === 'system') ? resolve() : setTimeout(check, 5));
        check();
      }),
      5000,
      'the welcome',
    );
    return { status: 101, headers: {}, text: '', ws, messages };
  }
  let text = '';
  outcome.setEncoding('utf8');
  for await (const chunk of outcome) text += chunk as string;
  ws.terminate();
  return { status: outcome.statusCode ?? 0, headers: outcome.headers, text, messages };
}
