/**
 * Test helpers, the entry of the test support kit: a real Roster on ephemeral ports (REST and chat),
 * driven over real sockets. The kit's parts live in test/support/ and are re-exported here.
 */
import { once } from 'node:events';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { WebSocket } from 'ws';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { CHAT_MESSAGES, SERVER_MESSAGE_BY_TYPE } from '../src/protocol/chat-messages.js';

export { startRoster, usePostgresStore, useSqliteStore, type Running } from './support/roster.js';
export { RosterProcess, type Exit, type LogLine } from './support/roster-process.js';
export { until, within } from './support/wait.js';

export interface JsonResponse {
  status: number;
  headers: Headers;
  /** Parsed JSON body, or undefined when the body is empty. */
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

/** One HTTP request; a plain object body is sent as JSON, a string body as is. */
export async function request(
  url: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<JsonResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined;
  if (typeof options.body === 'string') body = options.body;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(url, { method: options.method ?? 'GET', headers, body });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    text,
    body: text.length > 0 ? JSON.parse(text) : undefined,
  };
}

/** Each server message's JSON Schema, as the AsyncAPI document publishes it (web/src/chat-messages.ts). */
const frameAjv = new Ajv2020({ strict: true, allErrors: true });
const validateFrame = Object.fromEntries(
  Object.entries(SERVER_MESSAGE_BY_TYPE).map(([type, key]) => [type, frameAjv.compile(CHAT_MESSAGES[key].payload)]),
);

/** Why `message` is not a server message of the AsyncAPI document, or undefined when it is one. */
export function frameProblem(message: unknown): string | undefined {
  const type = (message as { type?: unknown } | null)?.type;
  const validate = typeof type === 'string' ? validateFrame[type] : undefined;
  if (!validate) return `no server message has type ${JSON.stringify(type)}`;
  return validate(message) ? undefined : frameAjv.errorsText(validate.errors);
}

/**
 * A WebSocket client that records every message it receives, parsed as JSON. Every frame is checked
 * against its message schema of the AsyncAPI document: one that is not fails the test (`next` rejects),
 * so the document cannot drift from the wire.
 */
export class ChatClient {
  readonly messages: any[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
  readonly ws: WebSocket;
  #waiters: { predicate: (m: any) => boolean; resolve: (m: any) => void }[] = []; // eslint-disable-line @typescript-eslint/no-explicit-any
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
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  next(predicate: (message: any) => boolean, timeoutMs = 5000): Promise<any> {
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

  /** Closes and waits for the close handshake; resolves with the close code. */
  async close(): Promise<number> {
    if (this.invalidFrame) throw this.invalidFrame;
    if (this.ws.readyState === WebSocket.CLOSED) return 1005;
    const closed = once(this.ws, 'close');
    this.ws.close();
    const [code] = await closed;
    return code as number;
  }
}

/** Resolves with the close code and reason the server sent. */
export async function closeOf(ws: WebSocket): Promise<{ code: number; reason: string }> {
  const [code, reason] = await once(ws, 'close');
  return { code: code as number, reason: String(reason) };
}

/** A log destination for startRoster's `logTo` that keeps every JSON line it receives. */
export function captureLog(): { lines: Record<string, unknown>[]; logTo: Writable } {
  const lines: Record<string, unknown>[] = [];
  const logTo = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { lines, logTo };
}

/** A port that was free a moment ago: nothing listens there. */
export async function freePort(): Promise<number> {
  const server = createTcpServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
