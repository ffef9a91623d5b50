/**
 * The REST door alone, for route rules: buildApp with a memory store and no chat door, never listening
 * unless the test says so, driven through `inject` (fastify/demo's test helper `build(t)`), and closed
 * when the test ends.
 */
import type { TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/index.js';
import { buildApp } from '../../src/http/app.js';
import { Idempotency } from '../../src/http/idempotency.js';
import { MemoryUserStore } from '../../src/users/stores/memory/memory-store.js';
import { userSchemas } from '../../src/users/schema.js';
import { UserService } from '../../src/users/service.js';
import { createUserValidator } from '../../src/users/validation.js';

/** The REST app of `env` (on top of port 0 and a silent log), over `store` (an empty memory store by default). */
export async function restApp(
  t: TestContext,
  env: Record<string, string> = {},
  store: MemoryUserStore = new MemoryUserStore(),
): Promise<FastifyInstance> {
  const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent', ...env });
  const schemas = userSchemas(config.roles, config.strictValidation);
  const service = new UserService(store, createUserValidator(schemas), {
    maxPageSize: config.maxPageSize,
    strict: config.strictValidation,
  });
  const app = await buildApp(config, {
    logger: pino({ level: 'silent' }),
    users: {
      service,
      schemas,
      idempotency: new Idempotency(store.keys, config.idempotencyKeyTtlMs),
      changes: store.changes,
    },
  });
  t.after(() => app.close());
  return app;
}
