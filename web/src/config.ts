/** The console's settings, served by Roster at console/config.json (src/http/console.ts). */

/** Roster's `AUTH` setting: which credential the API and the chat want. */
export type AuthScheme = 'none' | 'apikey' | 'basic' | 'jwt' | 'oauth2';

const AUTH_SCHEMES: readonly string[] = ['none', 'apikey', 'basic', 'jwt', 'oauth2'];

export interface ConsoleConfig {
  /** The chat's port on the page's host, used unless `chatUrl` is set. */
  chatPort: number;
  /** Public address of the chat (ws:, wss:, or a path on the page's host), e.g. behind a proxy. */
  chatUrl: string | null;
  /** Allowed values of a user's role. */
  roles: string[];
  /** The authentication scheme in force; `none` when the server does not say (an older Roster). */
  auth: AuthScheme;
}

/** Resolved relative to the page, so the console also works under a proxy's path prefix. */
export const API_BASE = 'api/v1';

export async function loadConfig(): Promise<ConsoleConfig> {
  const response = await fetch('console/config.json', { headers: { accept: 'application/json' }, cache: 'no-store' });
  if (!response.ok) throw new Error(`console/config.json answered ${response.status}`);
  const body = (await response.json()) as Partial<ConsoleConfig>;
  if (typeof body.chatPort !== 'number') throw new Error('console/config.json has no chatPort');
  return {
    chatPort: body.chatPort,
    chatUrl: typeof body.chatUrl === 'string' && body.chatUrl !== '' ? body.chatUrl : null,
    // The service's ROLES, which it always sends: the console keeps no list of its own.
    roles: Array.isArray(body.roles) ? body.roles.filter((role) => typeof role === 'string') : [],
    auth: typeof body.auth === 'string' && AUTH_SCHEMES.includes(body.auth) ? body.auth : 'none',
  };
}

/**
 * The chat's WebSocket address: `chatUrl` when configured (a relative one is resolved against the
 * page, http(s) becoming ws(s)), otherwise the page's own host name on `chatPort`, with wss when the
 * page came over https.
 */
export function chatAddress(config: Pick<ConsoleConfig, 'chatPort' | 'chatUrl'>, page: URL): string {
  if (config.chatUrl) {
    const url = new URL(config.chatUrl, page);
    if (url.protocol === 'http:') url.protocol = 'ws:';
    if (url.protocol === 'https:') url.protocol = 'wss:';
    return url.href;
  }
  const scheme = page.protocol === 'https:' ? 'wss:' : 'ws:';
  // URL.hostname keeps the brackets of an IPv6 address, as a URL needs them.
  return `${scheme}//${page.hostname}:${config.chatPort}/`;
}
