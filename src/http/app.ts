/**
 * The REST door: a Fastify app built from configuration and services. It never listens; `server.ts`
 * does, and tests drive it on an ephemeral port.
 */
import { Ajv } from 'ajv';
import { randomUUID } from 'node:crypto';
import Fastify, {
  LogController,
  type FastifyHttpOptions,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Server } from 'node:http';
import type { Server as TlsServer } from 'node:tls';
import { answerPlainHttp } from '../edge/tls-plain.js';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import type { UserSchemas } from '../users/schema.js';
import type { UserService } from '../users/service.js';
import { userRoutes } from './routes/user-routes.js';
import { changeRoutes } from './routes/change-routes.js';
import type { ChangeLog } from '../users/changes.js';
import type { Idempotency } from './idempotency.js';
import { chatRoutes, type ChatRoutesOptions } from './routes/chat-routes.js';
import { RouteCatalog } from './catalog.js';
import { frameworkErrors, registerErrorHandling } from './error-handler.js';
import { clientErrorHandler } from '../edge/client-errors.js';
import { hopsTrusted, trustedPeer } from '../edge/client-identity.js';
import { guardConnections } from '../edge/connection-guard.js';
import { registerJsonBodies, requestValidators } from './json-body.js';
import { COMMON_HEADERS, timeouts } from '../edge/raw-reply.js';
import { X_REQUEST_ID } from '../protocol/http-headers.js';
import { RosterError } from '../errors.js';
import { metricsRoute, probeRoutes, systemRoutes } from './system-routes.js';
import { API_PREFIX } from './prefix.js';
import { openApiRoutes, registerOpenApi } from './openapi.js';
import { asyncApiDocument } from './asyncapi.js';
import { DEFAULT_LIMIT } from '../users/service.js';
import { registerConsole } from './console.js';
import type { Metrics, RouteSeries } from '../ops/metrics.js';
import type { Authenticator } from '../edge/authenticator.js';
import type { RateLimiter } from '../edge/rate-limiter.js';
import type { Dependency } from '../ops/health.js';
import { isRateLimited, needsCredential, registerGate, registerProtection, requireAdmin } from './protection.js';

export interface AppDependencies {
  logger: Logger;
  /**
   * The user routes' service, schemas, the idempotency keys of creates (idempotency.ts), and the store's
   * change log, which the change feed serves (routes/change-routes.ts).
   */
  users: { service: UserService; schemas: UserSchemas; idempotency: Idempotency; changes: ChangeLog };
  /** Served at /metrics and fed by every request; absent when METRICS=false. */
  metrics?: Metrics | undefined;
  /** The chat port actually bound (known only once it listens), for the browser console. */
  chatPort?: () => number;
  /** Checks credentials when AUTH is not `none` (shared with the chat door). */
  authenticator?: Authenticator | undefined;
  /** RATE_LIMIT's limiter, shared with the chat's handshakes (edge/rate-limiter.ts). */
  limiter?: RateLimiter | undefined;
  /** Engines the health check reports on (PostgreSQL, Redis); none in the default single process. */
  dependencies?: readonly Dependency[];
  /** The chat room's members on every instance, for GET /api/v1/chat/members (absent: no such route). */
  chatMembers?: ChatRoutesOptions['members'] | undefined;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route the app serves (catalog.ts). */
    routeCatalog: RouteCatalog;
  }
}

/** A client's X-Request-Id is kept when it is short, printable ASCII; otherwise (or without one) a UUID. */
const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

export async function buildApp(config: Config, deps: AppDependencies): Promise<FastifyInstance> {
  const logController = new OneLinePerRequest();
  const chatPort = deps.chatPort ?? (() => config.wsPort);
  const dependencies = deps.dependencies ?? [];
  const options: FastifyHttpOptions<Server> = {
    loggerInstance: deps.logger,
    logController,
    bodyLimit: config.bodyLimit,
    // Slow clients (config/): headers, the whole request, and idle kept-alive connections. With
    // TLS_CERT/TLS_KEY the same port speaks HTTPS, with the same limits.
    ...(config.tls
      ? {
          https: {
            ...timeouts(config.headersTimeoutMs, config.requestTimeoutMs),
            ...config.tls, // cert, key, ciphers
            minVersion: 'TLSv1.2' as const,
          },
        }
      : { http: timeouts(config.headersTimeoutMs, config.requestTimeoutMs) }),
    // Whether X-Forwarded-For is believed for request.ip (rate limiting); off unless TRUST_PROXY says.
    // (A hop count as a function: Fastify's types lack the number form its runtime accepts.)
    ...(config.trustProxy === false
      ? {}
      : {
          trustProxy:
            typeof config.trustProxy === 'number'
              ? hopsTrusted(config.trustProxy)
              : (config.trustProxy as boolean | string[]),
        }),
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    // Requests arriving on kept-alive connections during shutdown are served, not answered with a
    // bare 503 outside the envelope; the listening socket is closed, so no new connection arrives.
    return503OnClosing: false,
    // Ids of any length must reach the handler (and get USER_NOT_FOUND), not fall off the router:
    // this is more than Node's header size limit lets a request line carry.
    routerOptions: { maxParamLength: 65_536 },
    frameworkErrors,
    clientErrorHandler,
    // Every reply carries X-Request-Id, also in its log line (reqId). Read here rather than through
    // Fastify's requestIdHeader, which would take any value at all into logs and headers.
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers[X_REQUEST_ID];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
  };
  const app = Fastify(options as FastifyHttpOptions<Server>) as unknown as FastifyInstance;
  // Past this, Node drops new connections on accept: each costs memory even before it sends a byte.
  app.server.maxConnections = config.maxConnections;
  // And one address may hold only its share of them, nor any silently for long (edge/connection-guard.ts).
  guardConnections(app.server, {
    ...config.connections,
    exempt: trustedPeer(config.trustProxy),
    onRefused: deps.metrics?.connectionRefused,
  });
  // http:// to the HTTPS port: a 400 that says so, rather than a dropped connection.
  if (config.tls) answerPlainHttp(app.server as unknown as TlsServer);
  // Checked below, in the envelope. Node reads this property on every request; @types/node lacks it.
  (app.server as typeof app.server & { requireHostHeader: boolean }).requireHostHeader = false;

  // Query strings and path parameters are validated here, as the strings they are (no coercion: see
  // ListQuery for why numbers are patterns). Bodies pass through untouched: UserService validates them
  // itself, because the contract checks a user's existence (404) before its body (422). The routes'
  // body schemas are documentationOnly(), and say so (json-body.ts).
  const paramsAjv = new Ajv({ coerceTypes: false, allErrors: true, verbose: true, useDefaults: false });
  app.setValidatorCompiler(requestValidators(paramsAjv));

  const catalog = new RouteCatalog();
  catalog.track(app);
  app.decorate('routeCatalog', catalog);
  // Every reply carries X-Content-Type-Options and X-Request-Id, from this one onSend hook (setting them
  // in each route instead measured no gain: BENCHMARKS.md; router errors skip hooks: errors.ts). During
  // shutdown, "Connection: close" lets Node end a busy kept-alive connection once its reply is written,
  // rather than leave it idle until the shutdown deadline (Fastify closes only the idle ones).
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.headers(COMMON_HEADERS);
    reply.header(X_REQUEST_ID, request.id);
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  await registerProtection(app, config, deps.authenticator, deps.limiter);
  const noRoute = registerErrorHandling(app, catalog);
  registerJsonBodies(app);

  // One hook for the app's own checks, in this order (two hooks cost a second call per request):
  // - no route for this method and path: the 404/405 of errors.ts, before anything reads a body;
  // - RFC 9112: an HTTP/1.1 request without Host is a 400. Node's own check answers with an empty
  //   body, so it is turned off (`requireHostHeader` above) and done here, in the envelope;
  // - RFC 9112 3.2.4: the asterisk form (`*` as the target) is for OPTIONS only; the router would
  //   otherwise serve it as `/`, the console's page. Node's parser takes `*?x=1` too: any target that
  //   starts with `*` counts.
  // Hooks on every request are written with callbacks, not async: no promise per request.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.is404) return done(noRoute(request));
    const missingHost = request.raw.httpVersion === '1.1' && request.headers.host === undefined;
    if (missingHost) return done(new RosterError('ERROR', 'The Host header is required'));
    if (request.raw.url?.startsWith('*') && request.method !== 'OPTIONS')
      return done(new RosterError('ERROR', 'The request target * is for OPTIONS only'));
    done();
  });
  registerGate(app, config, deps.authenticator);

  // Requests are recorded by the log controller below, which Fastify calls for every finished request
  // anyway: an onResponse hook would be a second call per request.
  logController.metrics = deps.metrics;

  const documented = {
    cors: config.corsOrigins !== undefined && config.corsOrigins.length > 0,
    bodyLimit: config.bodyLimit,
    maxPageSize: config.maxPageSize,
    defaultLimit: DEFAULT_LIMIT,
    tls: config.tls !== undefined,
    host: config.host,
  };
  await registerOpenApi(
    app,
    {
      auth: config.auth.scheme,
      rateLimited: config.rateLimit !== undefined,
      isProtected: (method, url) => needsCredential(method, url, config.metricsAuth),
      isLimited: isRateLimited,
    },
    documented,
  );
  // The catalog (/api/v1/docs) and the OpenAPI document list routes in this order.
  await app.register(userRoutes, {
    prefix: API_PREFIX,
    ...deps.users,
    strict: config.strictValidation,
    capped: config.maxUsers > 0,
    requireIfMatch: config.requireIfMatch,
  });
  await app.register(changeRoutes, {
    prefix: API_PREFIX,
    log: deps.users.changes,
    maxBacklog: config.changesMaxBacklog,
    maxStreamsPerClient: config.changesMaxStreamsPerClient,
  });
  if (deps.chatMembers)
    await app.register(chatRoutes, { prefix: API_PREFIX, members: deps.chatMembers, maxPageSize: config.maxPageSize });
  await app.register(systemRoutes, {
    prefix: API_PREFIX,
    catalog,
    dependencies,
    storage: () => deps.users.service.storage(),
    // Under AUTH, health (public, for load balancers) shows no counts: how many users there are is
    // for readers (GET /users) and the metrics scraper (roster_users_stored), not for anyone.
    countsShown: deps.authenticator === undefined,
  });
  await app.register(openApiRoutes, {
    config: documented,
    asyncApi: () =>
      asyncApiDocument({
        publicUrl: config.chatPublicUrl,
        host: config.host,
        port: chatPort(),
        tls: config.tls !== undefined,
      }),
  });
  await app.register(probeRoutes, { dependencies, closing: () => closing });
  if (deps.metrics) {
    const guard = config.metricsAuth && deps.authenticator ? requireAdmin(deps.authenticator) : undefined;
    await app.register(metricsRoute, { metrics: deps.metrics, guard });
  }
  if (config.console)
    await registerConsole(app, {
      chatPort,
      chatUrl: config.chatPublicUrl,
      roles: config.roles,
      auth: config.auth.scheme,
    });
  return app;
}

const SERIES = Symbol('roster.metricSeries');

/** One `info` line per request, written when it completes, instead of Fastify's two. */
class OneLinePerRequest extends LogController {
  /** With METRICS on, every finished request is recorded here too: by route pattern, never the raw URL. */
  metrics: Metrics | undefined;

  override incomingRequest(): void {}
  override routeNotFound(): void {}

  override requestCompleted(error: Error | null, request: FastifyRequest, reply: FastifyReply): void {
    if (this.metrics) {
      // The route's series, found once and kept in the route's own config object (one per route; the
      // not-found handler's stands for every unmatched request).
      const { config, url } = request.routeOptions;
      const route = config as { [SERIES]?: RouteSeries };
      const series = (route[SERIES] ??= this.metrics.route(url ?? 'unmatched'));
      series.observe(request.method, reply.statusCode, reply.elapsedTime / 1000);
    }
    // LOG_LEVEL above info (warn, as in production under load): no line, so nothing to build.
    if (!error && !(reply.log as unknown as Logger).isLevelEnabled('info')) return;
    const line = {
      method: request.method,
      url: redactCredentials(request.url),
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 100) / 100,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request failed');
    else reply.log.info(line, 'request');
  }
}

/**
 * The request URL as logged: values of `api_key` and `access_token` replaced, so that credentials sent
 * in a query string never reach the logs (headers are never logged at all).
 */
function redactCredentials(url: string): string {
  const query = url.indexOf('?');
  if (query === -1) return url;
  const pairs = url
    .slice(query + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      if (equals === -1) return pair;
      // The name as URLSearchParams reads it (credentialsOf), so `api%5Fkey` and `?api_key` are caught
      // too; a name without `%`, `+` or `?` reads as it is written, without building one per pair.
      const raw = pair.slice(0, equals);
      const name = /[%+?]/.test(raw) ? new URLSearchParams(raw).keys().next().value : raw;
      return name === 'api_key' || name === 'access_token' ? `${pair.slice(0, equals)}=[REDACTED]` : pair;
    });
  return `${url.slice(0, query)}?${pairs.join('&')}`;
}
