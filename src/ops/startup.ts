/**
 * Start-up failures as a person reads them: one plain line naming the setting and the cause, and an
 * exit status per kind, so a supervisor (or a script) can tell a typo from a busy port from a database
 * that is not up yet. `main.ts` prints the line on stderr, whatever LOG_LEVEL says.
 *
 *   roster: invalid configuration: PORT must be a whole number from 0 to 65535 (got "abc")   exit 2
 *   roster: PORT 5000 is already in use on 127.0.0.1                                         exit 3
 *   roster: DATABASE_URL: connection refused at 127.0.0.1:1                                  exit 4
 *   roster: could not start: <message>                                                       exit 1
 */
import { ConfigError } from '../config/index.js';

/** The exit statuses of the header's table (docs/configuration.md's "Start-up failures" table too). */
const EXIT_STATUS = { other: 1, badSetting: 2, portUnavailable: 3, databaseUnavailable: 4 } as const;

/** A start-up failure already put in words: `line` follows "roster: ". */
class StartupError extends Error {
  constructor(
    readonly line: string,
    readonly exitStatus: number,
    options?: { cause?: unknown },
  ) {
    super(line, options);
    this.name = 'StartupError';
  }
}

type SystemError = Error & { code?: string; address?: string; port?: number; hostname?: string; errors?: unknown[] };

/** A port that could not be opened: `setting` is PORT or WS_PORT. */
export function listenFailure(setting: 'PORT' | 'WS_PORT', port: number, host: string, error: unknown): StartupError {
  const code = (error as SystemError | undefined)?.code;
  const line =
    code === 'EADDRINUSE'
      ? `${setting} ${port} is already in use on ${host}`
      : code === 'EACCES'
        ? `${setting} ${port}: permission denied (ports below 1024 need privileges)`
        : code === 'EADDRNOTAVAIL'
          ? `HOST ${host} is not an address of this machine (opening ${setting} ${port})`
          : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
            ? `HOST ${host}: host name not found (opening ${setting} ${port})`
            : `${setting} ${port}: cannot listen on ${host}: ${messageOf(error)}`;
  return new StartupError(line, EXIT_STATUS.portUnavailable, { cause: error });
}

/** The database named by DATABASE_URL could not be opened (connected to, or migrated). */
export function databaseFailure(error: unknown): StartupError {
  return new StartupError(`DATABASE_URL: ${databaseCause(error)}`, EXIT_STATUS.databaseUnavailable, { cause: error });
}

function databaseCause(error: unknown): string {
  // pg tries every address of a host name (::1 and 127.0.0.1 for localhost): one refusal stands for all.
  const first =
    error instanceof AggregateError && error.errors.length > 0
      ? (error.errors[0] as SystemError)
      : (error as SystemError);
  const where = first?.address !== undefined && first.port !== undefined ? `${first.address}:${first.port}` : undefined;
  switch (first?.code) {
    case 'ECONNREFUSED':
      return `connection refused${where ? ` at ${where}` : ''}`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host ${first.hostname ?? '(unknown)'} not found`;
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${where ?? 'the server'} cannot be reached (${first.code})`;
    default:
      // pg's own messages ("password authentication failed for user …", "database … does not exist",
      // "timeout expired") name no secret: the URL itself is never printed.
      return messageOf(error);
  }
}

/** The one line and exit status for anything that stopped the start. */
export function describeStartupFailure(error: unknown): { line: string; exitStatus: number } {
  if (error instanceof StartupError) return { line: error.line, exitStatus: error.exitStatus };
  if (error instanceof ConfigError)
    return { line: `invalid configuration: ${error.message}`, exitStatus: EXIT_STATUS.badSetting };
  return { line: `could not start: ${messageOf(error)}`, exitStatus: EXIT_STATUS.other };
}

/** An error's message on one line. */
function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return text.replace(/\s*\n\s*/g, ' ').trim() || 'unknown error';
}
