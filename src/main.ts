/** Entry point: read the configuration, start Roster, stop it cleanly on SIGINT or SIGTERM. */
// First: an unsupported Node is refused before any native module loads.
import './ops/node-version.js';
import type { Logger } from 'pino';
import { loadConfig, type Config } from './config/index.js';
import { createLogger } from './ops/logging.js';
import { createServer } from './server.js';
import { describeStartupFailure } from './ops/startup.js';

/**
 * A failed start: one plain line on stderr naming the setting and the cause, whatever LOG_LEVEL says,
 * and the exit status of its kind (startup.ts). The full error goes to the log at debug.
 */
function failStart(error: unknown, logger?: Logger): never {
  const { line, exitStatus } = describeStartupFailure(error);
  logger?.debug({ err: error }, 'start-up failure');
  process.stderr.write(`roster: ${line}\n`);
  process.exit(exitStatus);
}

let config: Config;
try {
  config = loadConfig(process.env);
} catch (error) {
  failStart(error);
}
const logger = await createLogger(config);
const roster = await createServer(config, logger).catch((error: unknown) => failStart(error, logger));
const started = roster.start();

// Installed before the ports open, so a signal that arrives during start-up still stops gracefully
// (once start-up has finished).
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    started
      .catch(() => undefined)
      .then(() => roster.stop())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  });
}

await started.catch((error: unknown) => failStart(error, logger));
