/**
 * The chat tests' Roster: one per test with the clients it opened (all torn down in `dispose`), a
 * crowd of connected clients, a barrier that proves what did NOT arrive without sleeping, and the chat
 * door alone on the test's own thread.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { TestContext } from 'node:test';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { WebSocket } from 'ws';
import { ChatRoom } from '../../src/chat/room.js';
import type { ChatProtection } from '../../src/chat/handshake.js';
import { createChatServer } from '../../src/chat/ws-server.js';
import { loadConfig } from '../../src/config/index.js';
import { chatMetrics } from '../../src/ops/metrics.js';
import { ChatClient } from './chat-client.js';
import { RawClient } from './raw-client.js';
import { startRoster, type Running } from './roster.js';

/** One Roster plus everything a test connected to it. */
export class Scope {
  readonly clients: ChatClient[] = [];
  readonly sockets: WebSocket[] = [];
  readonly raws: RawClient[] = [];

  private constructor(readonly running: Running) {}

  static async start(env: Record<string, string> = {}): Promise<Scope> {
    // A short shutdown timeout so that a client that never answers the 1001 close cannot slow the suite.
    return new Scope(await startRoster({ SHUTDOWN_TIMEOUT_MS: '2000', ...env }));
  }

  get wsUrl(): string {
    return this.running.wsUrl;
  }

  get port(): number {
    return this.running.wsPort;
  }

  /** Number of members the server's room holds right now (white-box cross-check, asked of the chat thread). */
  roomSize(): Promise<number> {
    return this.running.server.chat.size();
  }

  /** A connected ChatClient (welcome already received and consumed). */
  async client(path = ''): Promise<ChatClient> {
    const client = new ChatClient(this.wsUrl + path);
    this.clients.push(client);
    client.ws.on('error', () => {});
    await client.next((m) => m.type === 'system');
    return client;
  }

  /** A `ws` socket with custom options, tracked for teardown. */
  socket(options: ConstructorParameters<typeof WebSocket>[2] = {}, path = ''): WebSocket {
    const ws = new WebSocket(this.wsUrl + path, options);
    ws.on('error', () => {});
    this.sockets.push(ws);
    return ws;
  }

  async raw(options: { path?: string } = {}): Promise<RawClient> {
    const client = await RawClient.connect(this.port, options);
    this.raws.push(client);
    return client;
  }

  track(raw: RawClient): RawClient {
    this.raws.push(raw);
    return raw;
  }

  async dispose(): Promise<void> {
    for (const client of this.clients) client.ws.terminate();
    for (const ws of this.sockets) ws.terminate();
    for (const raw of this.raws) raw.destroy();
    await this.running.stop();
  }
}

/**
 * Connects `n` clients one after another, waiting until every earlier one has seen each join, then
 * forgets the join notices: on return every client's `messages` is empty and the room holds `n`.
 */
export async function crowd(scope: Scope, n: number): Promise<ChatClient[]> {
  const clients: ChatClient[] = [];
  for (let i = 0; i < n; i++) {
    const client = await scope.client();
    await Promise.all(clients.map((other) => other.next((m) => m.type === 'user_join' && m.online_count === i + 1)));
    clients.push(client);
  }
  for (const client of clients) assert.deepEqual(client.messages, [], 'no message beyond welcome and joins');
  return clients;
}

/**
 * Sends a uniquely tagged chat from `sender` and waits until every client in `everyone` has it. The
 * server writes to each connection in order, so anything a client would have got from earlier input is
 * already in its `messages` once the barrier arrives. The barrier itself is consumed.
 */
export async function barrier(sender: ChatClient, everyone: ChatClient[]): Promise<void> {
  const tag = `barrier-${randomUUID()}`;
  sender.send({ type: 'chat', message: tag });
  await Promise.all(everyone.map((client) => client.next((m) => m.type === 'chat' && m.message === tag)));
}

/** The TCP socket under a `ws` client, for abrupt disconnects. */
export function tcpOf(ws: WebSocket): Socket {
  return (ws as unknown as { _socket: Socket })._socket;
}

/** Resolves when `ws` has received `count` more protocol pings. */
export function pings(ws: WebSocket, count: number, timeoutMs = 3000): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = 0;
    const timer = setTimeout(
      () => reject(new Error(`only ${seen} of ${count} pings within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onPing = () => {
      if (++seen < count) return;
      clearTimeout(timer);
      ws.off('ping', onPing);
      resolve();
    };
    ws.on('ping', onPing);
  });
}

/**
 * The chat door on the test's own thread, for tests that reach inside the room (a member that
 * throws, a handler that fails): the same ChatRoom and createChatServer the chat thread runs
 * (src/chat/worker.ts), on a free port, with its metrics. Real sockets all the same.
 */
export async function chatInThread(
  t: TestContext,
  env: Record<string, string> = {},
  protection: ChatProtection = {},
): Promise<InThreadChat> {
  const config = loadConfig({ WS_PORT: '0', ...env });
  const registry = new Registry();
  const room = new ChatRoom({}, undefined, {
    history: config.chat.history,
    historyBytes: config.chat.historyBytes,
    maxPayload: config.chat.maxPayload,
    maxBacklog: config.chat.maxBacklog,
  });
  const server = createChatServer(config.chat, room, pino({ level: 'silent' }), chatMetrics(registry), protection);
  const { port } = await server.listen(0, '127.0.0.1');
  t.after(() => server.close(1000));
  return { room, port, wsUrl: `ws://127.0.0.1:${port}`, metrics: () => registry.metrics() };
}

export interface InThreadChat {
  room: ChatRoom;
  port: number;
  wsUrl: string;
  metrics(): Promise<string>;
}
