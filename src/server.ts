/**
 * Roster as one process: builds the REST door and the chat door from one configuration, starts them,
 * and stops them gracefully.
 */
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createAuthenticator } from './edge/authenticator.js';
import type { Logger } from 'pino';
import type { Dependency } from './ops/health.js';
import { ChatThread } from './chat/thread.js';
import type { RedisBusOptions } from './chat/redis/redis-bus.js';
import { EngineFaults } from './ops/engine-faults.js';
import type { Config } from './config/index.js';
import { buildApp } from './http/app.js';
import { Idempotency } from './http/idempotency.js';
import { userSchemas } from './users/schema.js';
import { UserService } from './users/service.js';
import type { UserStore } from './users/store.js';
import { openStore, storeBackend, type OpenStore } from './users/stores/registry.js';
import { Metrics } from './ops/metrics.js';
import { createUserValidator } from './users/validation.js';
import { RateLimiter } from './edge/rate-limiter.js';
import { databaseFailure, listenFailure } from './ops/startup.js';
import { API_PREFIX } from './http/prefix.js';

/**
 * Where a person points a browser, for the start line: the console (`/`, when CONSOLE is on) and the API
 * reference. A wildcard HOST is reached through loopback; an IPv6 address goes in brackets.
 */
export function browserUrls(
  config: Pick<Config, 'host' | 'tls' | 'console'>,
  port: number,
): { console?: string; reference: string } {
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host === '::' ? '::1' : config.host;
  const origin = `${config.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    ...(config.console ? { console: `${origin}/` } : {}),
    reference: `${origin}${API_PREFIX}/reference`,
  };
}

export interface RosterServer {
  readonly rest: FastifyInstance;
  /** The chat door, on its own thread. */
  readonly chat: ChatThread;
  /** Listens on both ports; returns the ports actually bound (they differ from the config when it says 0). */
  start(): Promise<{ port: number; wsPort: number }>;
  /** Chat connections get 1001, the REST port stops accepting, in-flight requests finish. */
  stop(): Promise<void>;
}

export interface ServerParts {
  /** The user store, instead of the one DATABASE_URL names (users/stores/registry.ts). */
  store?: UserStore;
  /** Engines the health check reports on, beyond those the configuration brings. */
  dependencies?: readonly Dependency[];
  /** Tuning of the Redis chat bus (REDIS_URL), for tests: its defaults are those of a deployment. */
  chatBus?: Partial<RedisBusOptions>;
  /** The time (ms since the epoch) idempotency keys are claimed and expire by; Date.now by default. */
  now?: () => number;
}

export async function createServer(config: Config, logger: Logger, parts: ServerParts = {}): Promise<RosterServer> {
  // Every engine client's error events end here: logged, counted, never thrown (engine-faults.ts).
  const faults = new EngineFaults(logger);
  // The store DATABASE_URL names (users/stores/registry.ts, which loads its driver only then), migrated
  // before use; a database store seeds under a lock, so instances starting together seed once.
  const opened = parts.store
    ? undefined
    : await openStore(config.storage, { logger, faults }).catch((error: unknown) => {
        throw databaseFailure(error); // one line naming DATABASE_URL (startup.ts)
      });
  try {
    return await assemble(config, logger, parts, faults, opened);
  } catch (error) {
    await opened?.store.close().catch(() => undefined);
    throw error;
  }
}

async function assemble(
  config: Config,
  logger: Logger,
  parts: ServerParts,
  faults: EngineFaults,
  opened: OpenStore | undefined,
): Promise<RosterServer> {
  const store = parts.store ?? opened!.store;
  const storageNote = opened?.note ?? storeBackend(config.storage).note(config.storage);
  const schemas = userSchemas(config.roles, config.strictValidation);
  const service = new UserService(store, createUserValidator(schemas), {
    maxPageSize: config.maxPageSize,
    strict: config.strictValidation,
    maxUsers: config.maxUsers,
  });
  await service.seed();

  let chatPort = config.wsPort;
  // The REST thread's authenticator; the chat thread builds its own from the same configuration.
  const authenticator = createAuthenticator(config.auth);
  // One rate limiter for both doors: REST requests and chat handshakes (under keys of their own); the
  // chat thread asks it by message.
  const limiter = config.rateLimit ? new RateLimiter(config.rateLimit) : undefined;
  // The chat door on a thread of its own (chat/worker.ts): the room, its history, and with REDIS_URL
  // the bus that shares it with the other instances.
  const chat = new ChatThread({ config, logger, faults, limiter, chatBus: parts.chatBus });
  const metrics = config.metrics
    ? new Metrics(
        faults,
        () => service.storage(),
        () => chat.metrics(),
        () => chat.restarts,
      )
    : undefined;
  const dependencies: Dependency[] = [...(opened?.health ? [opened.health] : []), ...(parts.dependencies ?? [])];
  if (chat.health) dependencies.push(chat.health);
  dependencies.push(chat.door);
  const chatMembers = async () =>
    (await chat.members()).map((member) => ({
      id: member.id,
      ...(member.name === undefined ? {} : { name: member.name }),
      connected_at: member.since,
    }));
  const rest = await buildApp(config, {
    logger,
    users: {
      service,
      schemas,
      idempotency: new Idempotency(store.keys, config.idempotencyKeyTtlMs, parts.now),
      changes: store.changes,
    },
    metrics,
    chatPort: () => chatPort,
    authenticator,
    limiter,
    dependencies,
    chatMembers,
  });
  return {
    rest,
    chat,
    async start() {
      // The chat port first: Fastify announces the REST port as it opens, so once it does both are
      // open, and a busy chat port stops the start before anything said "listening".
      const chatAddress = await chat.listen(config.wsPort, config.host).catch(async (error: unknown) => {
        await chat.close(0).catch(() => undefined);
        throw listenFailure('WS_PORT', config.wsPort, config.host, error);
      });
      chatPort = chatAddress.port;
      try {
        await rest.listen({ port: config.port, host: config.host, backlog: 4096 });
      } catch (error) {
        await chat.close(0).catch(() => undefined);
        throw listenFailure('PORT', config.port, config.host, error);
      }
      const port = (rest.server.address() as AddressInfo).port;
      chat.setRestPort(port);
      logger.info(
        { port, wsPort: chatAddress.port, host: config.host, ...browserUrls(config, port) },
        'Roster is listening',
      );
      logger.info(storageNote);
      return { port, wsPort: chatAddress.port };
    },
    async stop() {
      // The REST port stops accepting before the chat thread says goodbye (1001): a client that turns
      // to REST on hearing 1001 must find the door shut. Fastify closes its listener a few ticks into
      // close() (after its preClose hooks), and the chat thread, on its own CPU, would win that race.
      const restClosed = closeWithin(rest, config.shutdownTimeoutMs);
      restClosed.catch(() => undefined); // awaited below; not unhandled while the listener closes
      await listenerClosed(rest);
      await Promise.all([chat.close(config.shutdownTimeoutMs), restClosed]);
      await store.close();
    },
  };
}

/** Resolves once `app` no longer accepts connections (its close() has begun), or after 1 000 turns. */
async function listenerClosed(app: FastifyInstance): Promise<void> {
  for (let turn = 0; app.server.listening && turn < 1000; turn++) await nextTurn();
}

/** Fastify's close waits for in-flight requests; past the deadline, remaining connections are cut. */
async function closeWithin(app: FastifyInstance, timeoutMs: number): Promise<void> {
  const timer = setTimeout(() => app.server.closeAllConnections(), timeoutMs);
  try {
    await app.close();
  } finally {
    clearTimeout(timer);
  }
}
