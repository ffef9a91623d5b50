#!/usr/bin/env node
/**
 * The `roster` command (package.json `bin`): `roster [command] [arguments]`, dispatched through the
 * COMMANDS table; a new subcommand is one more entry there (a summary, a usage text and run()).
 */
// First: an unsupported Node is refused before any native module loads.
import '../ops/node-version.js';
import { CHAT_USAGE, chatCommand } from './chat-command.js';
import { HASH_PASSWORD_USAGE, hashPasswordCommand, TOKEN_USAGE, tokenCommand } from './credential-commands.js';
import { createRequire } from 'node:module';
import { BACKUP_USAGE, backupCommand } from './backup.js';
import { MIGRATE_USAGE, migrateCommand } from './migrate.js';
import { USERS_USAGE, usersCommand } from './users-command.js';
import { print, STANDARD_IO, usageError } from './io.js';

interface Command {
  /** One line for `roster --help`. */
  summary: string;
  /** The command's own help (`roster <command> --help` or `-h`, answered before run). */
  usage: string;
  /**
   * Runs the command with the arguments after its name. Resolves with the exit status, or with
   * `undefined` when the command keeps the process running and ends it itself (`serve`).
   */
  run(args: string[]): Promise<number | undefined>;
}

const SERVE_USAGE = `Usage: roster serve

Starts Roster: the REST API (PORT, default 5000) and the chat room (WS_PORT, default 8765), both on
HOST (default 127.0.0.1). Every setting is an environment variable (see docs/configuration.md).
Stops cleanly on Ctrl-C (SIGINT) or SIGTERM. Same as \`node dist/src/main.js\`; also what \`roster\`
alone does.`;

const COMMANDS: Readonly<Record<string, Command>> = {
  serve: {
    summary: 'start the REST API and the chat room (the default)',
    usage: SERVE_USAGE,
    async run(args) {
      if (args.length > 0)
        return usageError(
          STANDARD_IO,
          'serve',
          `takes no arguments (got ${args.join(' ')}); settings are environment variables`,
        );
      // The entry point itself: it reads the environment, starts, and owns the process from here on
      // (signals, exit status).
      await import('../main.js');
      return undefined;
    },
  },
  chat: {
    summary: 'join the chat room from the terminal (--json for programs)',
    usage: CHAT_USAGE,
    run: chatCommand,
  },
  'hash-password': {
    summary: 'print the hash of a password for BASIC_USERS (read from stdin, no echo)',
    usage: HASH_PASSWORD_USAGE,
    run: hashPasswordCommand,
  },
  token: {
    summary: 'mint an HS256 token for AUTH=jwt (signed with JWT_SECRET)',
    usage: TOKEN_USAGE,
    run: tokenCommand,
  },
  migrate: {
    summary: 'apply the pending database migrations (DATABASE_URL: PostgreSQL or SQLite) and exit',
    usage: MIGRATE_USAGE,
    run: migrateCommand,
  },
  users: {
    summary: 'export users to JSON or CSV, import them, or watch their changes, over the REST API',
    usage: USERS_USAGE,
    run: usersCommand,
  },
  backup: {
    summary: 'copy the SQLite database (DATABASE_URL=sqlite:…) to a file, while the service runs',
    usage: BACKUP_USAGE,
    run: backupCommand,
  },
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`);
  return [
    'Usage: roster [command] [arguments]    (roster --version: the version)',
    '',
    'Commands:',
    ...lines,
    '',
    "With no command, roster serves. 'roster <command> --help' shows one command's help.",
    '',
    ...Object.values(COMMANDS).flatMap((command) => [command.usage, '']),
  ]
    .join('\n')
    .trimEnd();
}

/** The package's version (package.json, two folders above dist/src/cli). */
function version(): string {
  return (createRequire(import.meta.url)('../../../package.json') as { version: string }).version;
}

async function main(argv: string[]): Promise<number | undefined> {
  const [name, ...args] = argv;
  if (name === undefined) return COMMANDS.serve!.run([]);
  if (name === '--help' || name === '-h' || name === 'help') return print(STANDARD_IO, usage());
  if (name === '--version' || name === '-v' || name === 'version') return print(STANDARD_IO, `roster ${version()}`);
  // hasOwn: `constructor` or `__proto__` must not reach Object.prototype.
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    process.stderr.write(`roster: unknown command ${JSON.stringify(name)}\nRun 'roster --help' for usage.\n`);
    return 2;
  }
  if (args.length === 1 && (args[0] === '--help' || args[0] === '-h')) return print(STANDARD_IO, command.usage);
  return command.run(args);
}

/**
 * Ends the process with `code` once stdout and stderr have drained (writes to pipes may still be
 * queued), rather than waiting for the event loop to empty: a chat client's stdin would hold it open.
 */
function exit(code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 1_000).unref();
  process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
}

const code = await main(process.argv.slice(2));
if (code !== undefined) exit(code);
