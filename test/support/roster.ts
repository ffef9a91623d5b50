/**
 * Roster in this process, on ephemeral ports (REST and chat), as `main.ts` builds it from settings: the
 * one in-process start of the tests and of the benchmark's Roster server.
 */
import { pino, type DestinationStream } from 'pino';
import { loadConfig, type Config } from '../../src/config/index.js';
import { createServer, type RosterServer, type ServerParts } from '../../src/server.js';
import type { TestContext } from 'node:test';
import { freshSchema, type TestSchema } from './postgres.js';

export interface Running {
  server: RosterServer;
  config: Config;
  /** The REST port. */
  port: number;
  /** e.g. http://127.0.0.1:41234 */
  origin: string;
  /** e.g. http://127.0.0.1:41234/api/v1 */
  api: string;
  /** e.g. ws://127.0.0.1:41235 */
  wsUrl: string;
  wsPort: number;
  stop(): Promise<void>;
}

/**
 * Starts Roster with the given environment on top of test defaults (ports 0, logging silent), and
 * optionally parts of the test's own (a store, a chat bus) and a stream that receives the log lines.
 */
export async function startRoster(
  env: Record<string, string> = {},
  options: ServerParts & { logTo?: DestinationStream } = {},
): Promise<Running> {
  const config = loadConfig({ PORT: '0', WS_PORT: '0', LOG_LEVEL: 'silent', ...env });
  const logger = options.logTo ? pino({ level: config.logLevel }, options.logTo) : pino({ level: config.logLevel });
  const server = await createServer(config, logger, options);
  const { port, wsPort } = await server.start();
  const origin = `http://127.0.0.1:${port}`;
  const stop = () => server.stop();
  return { server, config, port, origin, api: `${origin}/api/v1`, wsUrl: `ws://127.0.0.1:${wsPort}`, wsPort, stop };
}

/**
 * Two Roster instances on one fresh PostgreSQL schema, as two processes of one deployment would be
 * (each its own pool, clock and service); both stopped and the schema dropped when the test ends,
 * also when the second fails to start.
 */
export async function twoInstancesOnFreshSchema(
  t: TestContext,
): Promise<{ schema: TestSchema; one: Running; two: Running }> {
  const schema = await freshSchema();
  const running: Running[] = [];
  t.after(async () => {
    await Promise.allSettled(running.map((roster) => roster.stop()));
    await schema.drop();
  });
  for (let i = 0; i < 2; i++) running.push(await startRoster({ DATABASE_URL: schema.url }));
  const [one, two] = running as [Running, Running];
  return { schema, one, two };
}
