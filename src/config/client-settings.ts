/**
 * The settings of the `roster` command as a client of a running Roster (`roster chat`, `roster users`),
 * declared as the server's are in settings.ts, for the client table of docs/configuration.md. The server never reads
 * them. Their defaults follow the server's own PORT and WS_PORT, read as the server reads them, so a
 * client with no settings finds a server with none on the same machine.
 */
import { engineUrl, text } from './readers.js';
import { PORT, read, WS_PORT, type Env, type Setting } from './settings.js';

export interface ClientSetting extends Setting<string | undefined> {
  /** The `roster` commands that read it. */
  readonly commands: readonly string[];
}

function clientSetting(
  name: string,
  commands: readonly string[],
  parse: ClientSetting['parse'],
  help: string,
  shown = '(unset)',
): ClientSetting {
  return { name, fallback: undefined, parse, shown, help, commands };
}

/** Where a client finds a Roster on this machine: `$PORT` and `$WS_PORT` stand for the ports it would read. */
const LOCAL_API = 'http://127.0.0.1:$PORT/api/v1';
const LOCAL_CHAT = 'ws://127.0.0.1:$WS_PORT';

export const API_URL = clientSetting(
  'API_URL',
  ['users'],
  engineUrl(['http:', 'https:']),
  'The REST API to export from, import into or watch, when `--url` is not given.',
  `\`${LOCAL_API}\``,
);
export const WS_URL = clientSetting(
  'WS_URL',
  ['chat'],
  text,
  'The chat room to join, when no URL is given (a URL without a scheme gets `ws://`).',
  `\`${LOCAL_CHAT}\``,
);
export const ROSTER_API_KEY = clientSetting(
  'ROSTER_API_KEY',
  ['users'],
  text,
  'With `AUTH=apikey`: the key sent, when `--api-key` is not given.',
);
export const ROSTER_TOKEN = clientSetting(
  'ROSTER_TOKEN',
  ['users'],
  text,
  'With `AUTH=jwt` or `oauth2`: the bearer token sent, when `--token` is not given.',
);
export const ROSTER_BASIC = clientSetting(
  'ROSTER_BASIC',
  ['users'],
  text,
  'With `AUTH=basic`: `name:password`, when `--basic` is not given.',
);

/** Every client setting, in the order docs/configuration.md's client table lists them. */
export const CLIENT_SETTINGS: readonly ClientSetting[] = [API_URL, WS_URL, ROSTER_API_KEY, ROSTER_TOKEN, ROSTER_BASIC];

/** A setting's value in `env`, undefined when unset (the same reading as the server's settings). */
export { read } from './settings.js';

/** API_URL, else the API of a Roster on this machine; a bad API_URL or PORT throws ConfigError naming it. */
export function clientApiUrl(env: Env): string {
  return read(env, API_URL) ?? LOCAL_API.replace('$PORT', String(read(env, PORT)));
}

/** WS_URL, else the chat of a Roster on this machine; a bad WS_PORT throws ConfigError naming it. */
export function clientChatUrl(env: Env): string {
  return read(env, WS_URL) ?? LOCAL_CHAT.replace('$WS_PORT', String(read(env, WS_PORT)));
}
