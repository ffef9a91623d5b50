/**
 * The browser console on the REST port: the page compiled from web/ (to dist/web) at `/`, its assets
 * under `/console/`, and `/console/config.json`, which tells the page where the chat is and which
 * authentication scheme is on (its name only: never a key, hash or secret). Nothing here
 * is under the API prefix. Missing assets and other failures go through the app's error handler and
 * not-found handler, so they get the error envelope like every other reply.
 */
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifySchema } from 'fastify';
import type { AuthScheme } from '../config/index.js';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the build puts the console: dist/web, seen from dist/src/http/console.js. */
const CONSOLE_ROOT = fileURLToPath(new URL('../../web/', import.meta.url));

/** Asset URLs start with this; the page refers to them relative to itself (`console/main.js`). */
export const CONSOLE_PREFIX = '/console/';

export interface ConsoleOptions {
  /** The chat port bound (the configured one may be 0), which the page combines with its own host name. */
  chatPort: () => number;
  /** CHAT_PUBLIC_URL: used by the page instead of its host and `chatPort` (behind a proxy, say). */
  chatUrl: string | undefined;
  /** The allowed values of role (ROLES), offered by the page's filter and forms. */
  roles: readonly string[];
  /** The `AUTH` scheme, so the page knows which credential to ask for. */
  auth: AuthScheme;
}

/** What `/console/config.json` answers. */
export interface ConsoleSettings {
  chatPort: number;
  chatUrl: string | null;
  roles: string[];
  /** Which credential the page must send: the scheme's name, nothing more. */
  auth: AuthScheme;
}

/**
 * The page's import map, as web/index.html writes it inline (test/console/serving.test.ts holds the two
 * together). The console imports the protocol it shares with the server and the CLI by a bare name,
 * `@roster/protocol`, which points at its browser compilation (web/tsconfig.protocol.json writes
 * dist/web/protocol); the typed client there imports openapi-fetch and eventsource-parser (the change
 * feed's reader) by their package names, loaded from the copies web/build.mjs puts next to the
 * console's own modules. No bundler: the browser resolves both.
 */
export const CONSOLE_IMPORT_MAP =
  '{ "imports": { "@roster/protocol": "./console/protocol/index.js", "openapi-fetch": "./console/vendor/openapi-fetch/index.mjs", "eventsource-parser": "./console/vendor/eventsource-parser/index.js" } }';

/**
 * The page's own resources only (`'self'`, and the import map above by its hash), and WebSocket
 * connections to the chat's own origin only (`chat`, from chatSources: another port, or a proxy's
 * address), so that a script that got into the page could not send what it reads anywhere else. No
 * inline scripts or styles; no framing, so the delete buttons cannot be clickjacked.
 */
export function consoleCsp(chat: readonly string[]): string {
  return [
    "default-src 'none'",
    `script-src 'self' 'sha256-${createHash('sha256').update(CONSOLE_IMPORT_MAP).digest('base64')}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    ['connect-src', "'self'", ...chat].join(' '),
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** A host (name, IPv4, or bracketed IPv6) with an optional port: nothing that could end a CSP source. */
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::\d{1,5})?$/;

/**
 * Where the page's chat connects, as CSP sources: what web/src/config.ts chatAddress computes, seen from
 * the server. CHAT_PUBLIC_URL when set (an absolute URL: its origin, http(s) as ws(s); a path: the
 * page's own host and port); else the page's host name on the chat port. Both ws and wss where the
 * scheme depends on how the page was reached (a proxy may end TLS). A Host header that is not a host
 * gets no chat source at all: the page then cannot chat, and nothing foreign enters the policy.
 */
export function chatSources(
  chatUrl: string | null,
  chatPort: number,
  page: { host: string; hostname: string },
): string[] {
  if (chatUrl !== null && !chatUrl.startsWith('/')) {
    const url = new URL(chatUrl);
    const scheme = url.protocol === 'http:' || url.protocol === 'ws:' ? 'ws:' : 'wss:';
    return [`${scheme}//${url.host}`];
  }
  const host = chatUrl !== null ? page.host : `${page.hostname}:${chatPort}`;
  if (!HOST.test(host)) return [];
  return [`ws://${host}`, `wss://${host}`];
}

// Routes of the console are left out of the OpenAPI document (@fastify/swagger reads `hide`).
const HIDDEN = { hide: true } as FastifySchema & { hide: boolean };

export async function registerConsole(app: FastifyInstance, options: ConsoleOptions): Promise<void> {
  // Both checked where settings are read (config/): CHAT_PUBLIC_URL by readers.ts chatUrl, ROLES by roles.
  const { chatPort, auth } = options;
  const chatUrl = options.chatUrl ?? null;
  const roles = [...options.roles];
  if (!existsSync(join(CONSOLE_ROOT, 'index.html'))) {
    app.log.warn(
      { root: CONSOLE_ROOT },
      'browser console not built: no index.html (run the web build); / will answer 404',
    );
  }

  // Encapsulated: the `sendFile` decorator and the headers below stay inside the console's routes.
  await app.register(async (scope) => {
    scope.addHook('onSend', (request, reply, payload, done) => {
      reply
        .header('content-security-policy', consoleCsp(chatSources(chatUrl, chatPort(), request)))
        .header('referrer-policy', 'no-referrer')
        .header('x-frame-options', 'DENY');
      done(null, payload);
    });

    await scope.register(fastifyStatic, {
      root: CONSOLE_ROOT,
      prefix: CONSOLE_PREFIX,
      index: false,
      dotfiles: 'ignore',
      // Assets keep their names across builds: revalidate each time (cheap, with ETag), never stale.
      cacheControl: true,
      maxAge: 0,
      schemaHide: true,
    });

    scope.get('/', { schema: HIDDEN }, (_request, reply) => {
      // The page names its assets without a version: always revalidated, so a new build shows at once.
      reply.header('cache-control', 'no-cache');
      return reply.sendFile('index.html', { cacheControl: false });
    });

    scope.get(`${CONSOLE_PREFIX}config.json`, { schema: HIDDEN }, async (_request, reply): Promise<ConsoleSettings> => {
      reply.header('cache-control', 'no-store');
      return { chatPort: chatPort(), chatUrl, roles, auth };
    });
  });
}
