/**
 * The chat thread: the whole chat door (the `ws` server, the room, its history and outbox, the bus
 * and presence) on an event loop of its own, started by thread.ts, which it answers by message
 * (thread-protocol.ts); who owns what is docs/architecture.md's "Two threads, one owner per state".
 */
import type { AddressInfo } from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { createAuthenticator } from '../edge/authenticator.js';
import { addressOf, trustedPeer } from '../edge/client-identity.js';
import { EngineFaults } from '../ops/engine-faults.js';
import { RosterError } from '../errors.js';
import { chatMetrics, NO_CHAT_METRICS } from '../ops/metrics.js';
import type { RedisBus } from './redis/redis-bus.js';
import { ChatRoom } from './room.js';
import type { ChatThreadData, ErrorShape, FromChat, Questions, ToChat } from './thread-protocol.js';
import type { HandshakeLimiter } from './handshake.js';
import { createChatServer } from './ws-server.js';

const port = parentPort!;
const { config, chatBus } = workerData as ChatThreadData;
const tell = (message: FromChat) => port.postMessage(message);

const logger = pino({ level: config.logLevel }, { write: (line: string) => tell({ type: 'log', line }) });

/** Error events of the bus's connections: counted by the REST thread, which owns the metric. */
class ToldFaults extends EngineFaults {
  override report(engine: 'database' | 'chat_bus', error: unknown, options: { log?: boolean } = {}): void {
    super.report(engine, error, options);
    if (engine === 'chat_bus') tell({ type: 'fault', engine });
  }
}

const bus: RedisBus | undefined = config.redis
  ? new (await import('./redis/redis-bus.js')).RedisBus(
      config.redis.url,
      logger,
      {
        history: config.chat.history,
        historyBytes: config.chat.historyBytes,
        ...chatBus,
        onState: () => tellBusState(),
      },
      new ToldFaults(logger),
    )
  : undefined;

// The bus's state, told to the REST thread's health check as it changes.
let lastBusState = '';
function tellBusState(): void {
  if (!bus) return;
  const state = bus.state();
  const text = JSON.stringify(state);
  if (text === lastBusState) return;
  lastBusState = text;
  tell({ type: 'bus', state });
}

const room = new ChatRoom(
  { deliveryFailed: (member, error) => logger.warn({ err: error, id: member.id }, 'chat delivery failed') },
  bus,
  {
    history: config.chat.history,
    historyBytes: config.chat.historyBytes,
    maxPayload: config.chat.maxPayload,
    maxBacklog: config.chat.maxBacklog,
    noticesMaxMembers: config.chat.noticesMaxMembers,
  },
);

const registry = new Registry();
const metrics = config.metrics ? chatMetrics(registry) : NO_CHAT_METRICS;

/** The one rate limiter lives on the REST thread: each handshake's check is asked of it. */
let nextLimit = 0;
const limits = new Map<number, (refusal: ErrorShape | undefined) => void>();
const ask =
  (check: 'spent' | 'refusal') =>
  (key: string): Promise<RosterError | undefined> =>
    new Promise((resolve) => {
      const id = ++nextLimit;
      limits.set(id, (refusal) =>
        resolve(
          refusal && new RosterError(refusal.code, refusal.message, refusal.headers && { headers: refusal.headers }),
        ),
      );
      tell({ type: 'limit', id, check, key });
    });
const limiter: HandshakeLimiter | undefined = config.rateLimit
  ? { spent: ask('spent'), refusal: ask('refusal') }
  : undefined;

let restPort = config.port;
const chat = createChatServer(config.chat, room, logger, metrics, {
  tls: config.tls,
  origins: config.corsOrigins,
  restPort: () => restPort,
  authenticator: createAuthenticator(config.auth),
  limiter,
  messageLimit: config.rateLimit,
  addressOf: config.trustProxy === false ? undefined : addressOf(config.trustProxy),
  trustedPeer: trustedPeer(config.trustProxy),
});

const answers: { [Q in keyof Questions]: () => Promise<Questions[Q]> } = {
  members: () => room.members(),
  localMembers: async () => room.localMembers(),
  metrics: () => registry.metrics(),
};

port.on('message', (message: ToChat) => {
  switch (message.type) {
    case 'listen':
      return void listen(message.port, message.host);
    case 'close':
      return void close(message.timeoutMs);
    case 'restPort':
      restPort = message.port;
      return;
    case 'limited': {
      const resolve = limits.get(message.id);
      limits.delete(message.id);
      return resolve?.(message.refusal);
    }
    case 'ask':
      return void answers[message.question]().then(
        (value) => tell({ type: 'answer', id: message.id, value }),
        (error: unknown) => {
          logger.error({ err: error }, `answering ${message.question} failed`);
          tell({ type: 'answer', id: message.id, value: undefined });
        },
      );
    case 'crash':
      throw new Error('the chat thread was asked to crash (a test hook)');
    case 'stall': {
      const until = Date.now() + message.ms;
      while (Date.now() < until); // holds the loop, as a stuck handler would
      return;
    }
  }
});

async function listen(portNumber: number, host: string): Promise<void> {
  try {
    // Before the port opens, so the first members are already heard elsewhere (bounded: see RedisBus).
    await bus?.start();
    tellBusState();
    const address: AddressInfo = await chat.listen(portNumber, host);
    tell({ type: 'listening', port: address.port });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    tell({ type: 'listenFailed', code, message: error instanceof Error ? error.message : String(error) });
  }
}

async function close(timeoutMs: number): Promise<void> {
  try {
    await chat.close(timeoutMs);
    // After the chat has closed: its members' leaves go out first, then the goodbye.
    await bus?.close();
  } finally {
    tell({ type: 'closed' });
    port.close();
  }
}
