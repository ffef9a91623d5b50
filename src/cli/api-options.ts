/**
 * The options every `roster users` action takes to reach a running Roster: where its API is (--url,
 * API_URL, else this machine's PORT) and the credential to sign with (--api-key, --token, --basic, or
 * their environment variables), made into the typed client.
 */
import { clientApiUrl, read, ROSTER_API_KEY, ROSTER_BASIC, ROSTER_TOKEN } from '../config/client-settings.js';
import { createRosterClient, type ErrorEnvelope, type RosterClient } from '../protocol/client/index.js';

/** parseArgs' declarations of the options below. */
export const API_OPTIONS = {
  url: { type: 'string' },
  'api-key': { type: 'string' },
  token: { type: 'string' },
  basic: { type: 'string' },
} as const;

/** The lines of a command's help that describe them. */
export const API_OPTIONS_USAGE = `  --url URL           the API: default $API_URL, else http://127.0.0.1:$PORT/api/v1 (PORT 5000)
  --api-key KEY       AUTH=apikey: the key (default $ROSTER_API_KEY)
  --token TOKEN       AUTH=jwt or oauth2: a bearer token (default $ROSTER_TOKEN)
  --basic NAME:PASS   AUTH=basic: a user and password (default $ROSTER_BASIC)`;

export interface Api {
  /** The --url given, for messages. */
  base: string;
  /** The credential's headers (and Accept), as the client sends them. */
  headers: Record<string, string>;
  /** The typed client (src/protocol/client), signed with the credential given. */
  client: RosterClient;
}

type ApiValues = { url?: string; 'api-key'?: string; token?: string; basic?: string };

/** The client the options ask for, or a usage error's message. */
export function apiFrom(values: ApiValues, env: NodeJS.ProcessEnv): Api | { error: string } {
  let base: string;
  try {
    base = (values.url ?? clientApiUrl(env)).replace(/\/+$/, '');
  } catch (error) {
    return { error: (error as Error).message }; // a ConfigError naming API_URL or PORT
  }
  if (!URL.canParse(base))
    return { error: `--url must be an http(s) URL such as http://127.0.0.1:5000/api/v1 (got ${base})` };
  const headers: Record<string, string> = { accept: 'application/json' };
  const apiKey = values['api-key'] ?? read(env, ROSTER_API_KEY);
  const token = values.token ?? read(env, ROSTER_TOKEN);
  const basic = values.basic ?? read(env, ROSTER_BASIC);
  if (apiKey) headers['x-api-key'] = apiKey;
  if (token) headers.authorization = `Bearer ${token}`;
  if (basic) headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`;
  return { base, headers, client: createRosterClient({ url: base, headers }) };
}

/** An error envelope in words: its code, message and field details. */
export function reasonOf(json: unknown): string {
  const error = (json as Partial<ErrorEnvelope> | undefined)?.error;
  if (!error) return 'unexpected reply';
  const details = (error.details ?? []).map((d) => `${d.field}: ${d.message}`).join('; ');
  return `${error.code}: ${error.message}${details ? ` (${details})` : ''}`;
}
