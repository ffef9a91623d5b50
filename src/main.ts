/** Entry point: read the configuration, start Roster, stop it cleanly on SIGINT or SIGTERM. */
import { pino } from 'pino';
import { ConfigError, loadConfig, type Config } from './config/index.js';
import { createServer } from './server.js';

function readConfig(): Config {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`roster: invalid configuration: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}

const config = readConfig();
const logger = pino({ level: config.logLevel });
const roster = await createServer(config, logger).catch((error: unknown) => {
  // e.g. DATABASE_URL names a database that cannot be reached or migrated: one log line, status 1.
  logger.fatal({ err: error }, 'could not start');
  process.exit(1);
});
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

try {
  await started;
} catch (error) {
  logger.fatal({ err: error }, 'could not start');
  process.exit(1);
}
