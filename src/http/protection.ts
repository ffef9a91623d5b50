/**
 * Protection of the REST port, all opt-in (config/): security headers (@fastify/helmet), CORS (@fastify/cors),
 * authentication and authorization (src/edge), and rate limiting (edge/rate-limiter.ts, shared with the chat's
 * handshakes). Each is registered only when its setting is on: with everything off, no hook is added.
 *
 * Order of the onRequest hooks, by design:
 *   helmet, CORS (their headers reach every reply, errors included)
 *   -> with a rate limit: 429 at once while the client's address has used up its budget, before any
 *      credential is looked at (so a right password cannot be told from a wrong one by its reply)
 *   -> authenticate (records the principal or the failure; throws nothing yet); a password to hash is
 *      counted against the address first (429 past the limit, before the hashing)
 *   -> rate limit (per principal when authenticated, else per address; health is exempt)
 *   -> 404/405 for unknown routes, missing Host (http/error-handler.ts, app.ts)
 *   -> gate: 401 for a failed or missing credential, 403 for a reader on a write
 * so a client over its limit gets 429 even with bad credentials (guessing is rate limited too), the
 * route map (public anyway, in the OpenAPI document) answers 404/405 before credentials are asked
 * for, and 401/403 come before the body is read or validated and before a user is looked up: a client
 * without the right never learns which ids exist.
 */
import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { credentialsOf, type Authenticator, type Principal } from '../edge/authenticator.js';
import type { Config } from '../config/index.js';
import { rateLimited, type RateLimiter, type Verdict } from '../edge/rate-limiter.js';
import { RosterError } from '../errors.js';
import { CONSOLE_PREFIX } from './console.js';
import { clientKey } from '../edge/client-identity.js';
import { API_PREFIX } from './prefix.js';
import { ADMIN_ROLE } from '../config/roles.js';
import * as headers from '../protocol/http-headers.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated principal, when authentication is on and the route is not public. */
    principal: Principal | null;
    /** Why authentication failed (a 401), raised by the gate once the rate limit has had its say. */
    authFailure: unknown;
    /** The request was counted against its address before its password was hashed: not again after. */
    addressCharged: boolean;
  }
}

export type Access = 'public' | 'reader' | 'admin';

const HEALTH = `${API_PREFIX}/health`;
/** Orchestrators' probes (system-routes.ts): public and never rate limited, like health. */
const PROBES: ReadonlySet<string> = new Set(['/livez', '/readyz']);
const PUBLIC_ROUTES = new Set([
  HEALTH,
  ...PROBES,
  `${API_PREFIX}/docs`,
  `${API_PREFIX}/openapi.json`,
  '/docs',
  '/metrics',
  '/',
  '*',
]);
const PUBLIC_PREFIXES = [`${API_PREFIX}/reference`, CONSOLE_PREFIX];

/** What a route needs, in one place (docs/decisions.md "Who may do what"): any route not listed public needs a principal. */
export function accessOf(method: string, routeUrl: string | undefined): Access {
  if (routeUrl === undefined || method === 'OPTIONS' || PUBLIC_ROUTES.has(routeUrl)) return 'public';
  if (PUBLIC_PREFIXES.some((prefix) => routeUrl.startsWith(prefix))) return 'public';
  return method === 'GET' || method === 'HEAD' ? 'reader' : 'admin';
}

/** Whether RATE_LIMIT applies to a route: all but health, which stays answerable to load balancers and orchestrators however busy a client is. */
export function isRateLimited(routeUrl: string | undefined): boolean {
  return routeUrl !== HEALTH && !PROBES.has(routeUrl ?? '');
}

/** Whether a route needs a credential when AUTH is on: what accessOf says, and /metrics under METRICS_AUTH. */
export function needsCredential(method: string, routeUrl: string | undefined, metricsAuth: boolean): boolean {
  return accessOf(method, routeUrl) !== 'public' || (metricsAuth && routeUrl === '/metrics');
}

export const forbidden = () => new RosterError('FORBIDDEN', 'This needs the admin role');

/** Helmet, CORS, authentication and rate limiting: what must run before the app's own onRequest hooks. */
export async function registerProtection(
  app: FastifyInstance,
  config: Config,
  authenticator: Authenticator | undefined,
  limiter: RateLimiter | undefined,
): Promise<void> {
  if (config.securityHeaders) {
    await app.register(helmet, helmetOptions(config));
    addSecurityHeaders(app, authenticator !== undefined, config.metricsAuth);
  }
  if (config.corsOrigins) await app.register(cors, corsOptions(config.corsOrigins));

  if (authenticator) {
    app.decorateRequest('principal', null);
    app.decorateRequest('authFailure', null);
  }
  // With rate limiting, authentication runs before it (the key is the principal) and only records its
  // outcome; the gate after the router decides. Without, the gate does it all in one hook.
  if (authenticator && limiter) {
    app.decorateRequest('addressCharged', false);
    app.addHook('onRequest', (request, reply, done) => {
      if (accessOf(request.method, request.routeOptions.url) === 'public') return done();
      const address = clientKey(undefined, request.ip);
      limiter.spent(address).then((spent) => {
        if (spent) return done(spent);
        const admit = async () => {
          admitted(reply, await limiter.count(address));
          request.addressCharged = true;
        };
        authenticateRequest(authenticator, request, () => done(), admit);
      }, done);
    });
  }

  if (limiter) addRateLimitHook(app, limiter);
}

/** Throws the 429 of a request over the limit; else the reply tells what is left. */
function admitted(reply: FastifyReply, verdict: Verdict): void {
  if (!verdict.allowed) throw rateLimited(verdict.limit, verdict.resetSeconds * 1000);
  reply
    .header('ratelimit-limit', verdict.limit)
    .header('ratelimit-remaining', verdict.remaining)
    .header('ratelimit-reset', verdict.resetSeconds);
}

/**
 * Sets request.principal, or request.authFailure, then calls `next`: at once when the authenticator
 * answers synchronously (the common case: a key, a credential verified recently), else when it settles.
 */
function authenticateRequest(
  authenticator: Authenticator,
  request: FastifyRequest,
  next: () => void,
  admit?: () => Promise<void>,
): void {
  const succeed = (principal: Principal) => {
    request.principal = principal;
    next();
  };
  const fail = (error: unknown) => {
    request.authFailure = error;
    next();
  };
  let result: Principal | Promise<Principal>;
  try {
    result = authenticator.authenticate(credentialsOf(request.headers, request.url, { accessToken: false }), admit);
  } catch (error) {
    return fail(error);
  }
  if (result instanceof Promise) result.then(succeed, fail);
  else succeed(result);
}

/** The 401/403 decision, after the rate limit and the router's 404/405. */
export function registerGate(app: FastifyInstance, config: Config, authenticator: Authenticator | undefined): void {
  if (!authenticator) return;
  const authenticated = config.rateLimit !== undefined; // by the hook before the rate limit
  app.addHook('onRequest', (request, _reply, done) => {
    const access = accessOf(request.method, request.routeOptions.url);
    if (access === 'public') return done();
    if (authenticated) decide(request, access, done);
    else authenticateRequest(authenticator, request, () => decide(request, access, done));
  });
}

function decide(request: FastifyRequest, access: Access, done: (error?: Error) => void): void {
  if (request.authFailure) return done(request.authFailure as Error);
  if (access === 'admin' && request.principal?.role !== ADMIN_ROLE) return done(forbidden());
  done();
}

function addRateLimitHook(app: FastifyInstance, limiter: RateLimiter): void {
  app.addHook('onRequest', async (request, reply) => {
    if (!isRateLimited(request.routeOptions.url)) return;
    // A failed password check was counted before the hashing; an accepted one counts for its principal.
    if (request.addressCharged && !request.principal) return;
    admitted(reply, await limiter.count(clientKey(request.principal, request.ip)));
  });
}

/**
 * Powerful browser features none of Roster's pages use, turned off for them and anything they embed.
 * (Helmet does not send Permissions-Policy; only features Chromium knows are listed, so it logs no
 * warnings about unknown ones.)
 */
export const PERMISSIONS_POLICY =
  'accelerometer=(), camera=(), display-capture=(), fullscreen=(), geolocation=(), gyroscope=(), magnetometer=(), microphone=(), payment=(), usb=()';

/**
 * What SECURITY_HEADERS adds beyond helmet: Permissions-Policy on every reply, and `Cache-Control:
 * no-store` on every reply of a route that needs a credential (errors included), so that neither the
 * browser nor a shared cache keeps a user list fetched with someone's credential.
 */
function addSecurityHeaders(app: FastifyInstance, authenticated: boolean, metricsAuth: boolean): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('permissions-policy', PERMISSIONS_POLICY);
    if (authenticated && needsCredential(request.method, request.routeOptions.url, metricsAuth))
      reply.header('cache-control', 'no-store');
    done();
  });
}

/**
 * METRICS_AUTH with AUTH on: `/metrics` wants an admin credential, checked by this route-level hook
 * (401 with the challenge, 403 for a reader), after the app's rate limit like any other route.
 */
export function requireAdmin(authenticator: Authenticator) {
  return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void =>
    authenticateRequest(authenticator, request, () => decide(request, 'admin', done));
}

/**
 * For a JSON API, Swagger UI (its own scripts and styles, no inline script) and the console (which
 * sets its own, stricter policy in console.ts, replacing this one on its pages). HSTS only over TLS:
 * sent over plain HTTP it is ignored at best.
 */
function helmetOptions(config: Config) {
  return {
    global: true,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        'default-src': ["'self'"],
        'base-uri': ["'self'"],
        'connect-src': ["'self'"],
        'font-src': ["'self'", 'data:'],
        'form-action': ["'self'"],
        'frame-ancestors': ["'none'"],
        'img-src': ["'self'", 'data:'],
        'object-src': ["'none'"],
        'script-src': ["'self'"],
        'script-src-attr': ["'none'"],
        'style-src': ["'self'", "'unsafe-inline'"], // Swagger UI sets style attributes from script
      },
    },
    // With COOP same-origin (helmet's default), the page is cross-origin isolated: nothing it did not
    // opt into can be embedded, and no other window can reach it. The console and Swagger UI load only
    // their own files, which carry CORP same-origin (helmet's default) themselves.
    crossOriginEmbedderPolicy: { policy: 'require-corp' as const },
    frameguard: { action: 'deny' as const },
    hsts: config.tls ? { maxAge: config.hsts.maxAge, includeSubDomains: config.hsts.includeSubDomains } : false,
    referrerPolicy: { policy: 'no-referrer' as const },
  };
}

function corsOptions(origins: readonly string[]) {
  return {
    // A function rather than the list: for an origin it refuses, the plugin then stays out entirely,
    // so a foreign preflight gets the app's 405 like any OPTIONS, not a 204 without CORS headers.
    origin: origins.includes('*')
      ? '*'
      : (origin: string | undefined, callback: (error: Error | null, allow: boolean) => void) =>
          callback(null, origin !== undefined && origins.includes(origin)),
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: [
      'Authorization',
      'Content-Type',
      'X-API-Key',
      headers.X_REQUEST_ID,
      headers.IDEMPOTENCY_KEY,
      headers.IF_MATCH,
      headers.IF_NONE_MATCH,
      headers.IF_UNMODIFIED_SINCE,
    ],
    exposedHeaders: [
      headers.X_REQUEST_ID,
      headers.WWW_AUTHENTICATE,
      headers.RETRY_AFTER,
      'RateLimit-Limit',
      'RateLimit-Remaining',
      'RateLimit-Reset',
      'Allow',
      headers.ETAG,
      headers.IDEMPOTENT_REPLAYED,
    ],
    maxAge: 600,
    // A non-preflight OPTIONS from an allowed origin gets the preflight answer rather than the
    // plugin's plain-text 400 (not in the envelope); OPTIONS from elsewhere still gets 405.
    strictPreflight: false,
  };
}
