/**
 * Roster as one process: builds the REST door and the chat door from one configuration, starts them,
 * and stops them gracefully.
 */
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { createChatServer, type ChatServer } from './chat/ws-server.js';
import { ChatRoom } from './chat/room.js';
import { createClock } from './clock.js';
import type { Config } from './config.js';
import { buildApp } from './http/app.js';
import { MemoryUserStore } from './users/memory-store.js';
import { userSchemas } from './users/schema.js';
import { seedUsers } from './users/seed.js';
import { UserService } from './users/service.js';
import type { UserStore } from './users/store.js';
import { Metrics, NO_CHAT_METRICS } from './metrics.js';
import { createUserValidator } from './users/validation.js';

export interface RosterServer {
  readonly rest: FastifyInstance;
  readonly chat: ChatServer;
  /** Listens on both ports; returns the ports actually bound (they differ from the config when it says 0). */
  start(): Promise<{ port: number; wsPort: number }>;
  /** Chat connections get 1001, the REST port stops accepting, in-flight requests finish. */
  stop(): Promise<void>;
}

export interface ServerParts {
  /** The user store; the in-memory store of the contract unless another is given. */
  store?: UserStore;
}

export async function createServer(config: Config, logger: Logger, parts: ServerParts = {}): Promise<RosterServer> {
  const store: UserStore = parts.store ?? new MemoryUserStore();
  const schemas = userSchemas(config.roles, config.strictValidation);
  const service = new UserService(store, createUserValidator(schemas), createClock(), {
    maxPageSize: config.maxPageSize,
    strict: config.strictValidation,
  });
  await seedUsers(service);

  const metrics = config.metrics ? new Metrics() : undefined;
  let chatPort = config.wsPort;
  const rest = await buildApp(config, { logger, users: { service, schemas }, metrics, chatPort: () => chatPort });
  const room = new ChatRoom({
    deliveryFailed: (member, error) => logger.warn({ err: error, id: member.id }, 'chat delivery failed'),
  });
  const chat = createChatServer(config.chat, room, logger, metrics?.chat ?? NO_CHAT_METRICS);

  return {
    rest,
    chat,
    async start() {
      await rest.listen({ port: config.port, host: config.host, backlog: 4096 });
      const chatAddress = await chat.listen(config.wsPort, config.host);
      chatPort = chatAddress.port;
      const port = (rest.server.address() as AddressInfo).port;
      logger.info({ port, wsPort: chatAddress.port, host: config.host }, 'Roster is listening');
      return { port, wsPort: chatAddress.port };
    },
    async stop() {
      await Promise.all([chat.close(config.shutdownTimeoutMs), closeWithin(rest, config.shutdownTimeoutMs)]);
      await store.close();
    },
  };
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
