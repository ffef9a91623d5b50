/**
 * Configuration: the environment, read once, validated, turned into a typed object.
 *
 * Nothing else in Roster reads `process.env`; `main.ts` calls `loadConfig(process.env)` and passes the
 * result down. Every setting is declared once in settings.ts (variable, default, reader and bounds,
 * README text); readers.ts holds the generic readers, policy.ts the rules between settings, files.ts
 * the files they name. A bad value throws `ConfigError` naming the variable, which `main.ts` prints as
 * one line before exiting with status 2.
 */
import {
  checkTimeouts,
  checkPorts,
  authConfig,
  checkCorsOrigins,
  checkMetricsAuth,
  checkTls,
  maxConnectionsPerClient,
  maxUsers,
} from './policy.js';
import { loadTls } from './files.js';
import type { Setting } from './settings.js';
import * as S from './settings.js';

export { ConfigError } from './readers.js';
export {
  automaticMaxUsers,
  DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
  USERS_HEAP_SHARE,
  WORST_CASE_BYTES_PER_USER,
} from './policy.js';
export { TLS_MODERN_CIPHERS } from './files.js';
export { JWT_SECRET_MIN_BYTES } from './credentials.js';
export { SETTINGS, type Setting } from './settings.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Config {
  /** REST port. `PORT`, default 5000. 0 asks the OS for a free port (tests use this). */
  port: number;
  /** Chat (WebSocket) port. `WS_PORT`, default 8765. 0 asks the OS for a free port. */
  wsPort: number;
  /** Interface both ports bind to. `HOST`, default 127.0.0.1: listening on every interface must be asked for. */
  host: string;
  /** pino level. `LOG_LEVEL`, default `info` (one line per request); `warn` is quiet. */
  logLevel: LogLevel;
  /** `LOG_FORMAT`: `json` (default, one JSON object a line) or `pretty` (for people: pino-pretty when installed, else plain text). */
  logFormat: 'json' | 'pretty';
  /** Largest page size; larger `limit` values are clamped to it. `MAX_PAGE_SIZE`, default 100. */
  maxPageSize: number;
  /**
   * Users stored at most; past it creates get 507 `INSUFFICIENT_STORAGE`, while reads, updates and
   * deletes go on. `MAX_USERS`; 0 means no cap. Default: with users in memory, `automaticMaxUsers()`,
   * a share of the V8 heap that the worst-case user can never outgrow; with DATABASE_URL, no cap.
   */
  maxUsers: number;
  /** Largest accepted request body in bytes. `BODY_LIMIT`, default 1 MiB. Accepts `65536`, `64KiB`, `1MiB`. */
  bodyLimit: number;
  /** Allowed values of a user's `role`. `ROLES`, default `admin,user`; must include both (seeds and default). */
  roles: readonly string[];
  /** Strict validation of PATCH and email uniqueness on PUT/PATCH. `STRICT_VALIDATION`, default false. */
  strictValidation: boolean;
  chat: ChatConfig;
  /** How long shutdown waits for in-flight requests and chat close handshakes. `SHUTDOWN_TIMEOUT_MS`, default 10 s. */
  shutdownTimeoutMs: number;
  /**
   * Request headers (REST) and the handshake (chat) must arrive within this; slower clients get 408.
   * `HEADERS_TIMEOUT_MS`, default 15 s (Node's own is 60 s; trickled headers are a cheap attack).
   */
  headersTimeoutMs: number;
  /** The whole request, headers and body, must arrive within this. `REQUEST_TIMEOUT_MS`, default 30 s. */
  requestTimeoutMs: number;
  /** An idle kept-alive REST connection is closed after this. `KEEP_ALIVE_TIMEOUT_MS`, default 72 s. */
  keepAliveTimeoutMs: number;
  /** Open TCP connections on the REST port at most; more are dropped on accept. `MAX_CONNECTIONS`, default 10000. */
  maxConnections: number;
  /**
   * What a connection may cost before it has said anything, on both ports (edge/connection-guard.ts):
   * open connections per peer address (`MAX_CONNECTIONS_PER_ADDRESS`, default 256; 0: no cap; trusted
   * proxies exempt) and how long a socket may stay silent (`FIRST_BYTE_TIMEOUT_MS`, default 5 s;
   * undefined when not shorter than `HEADERS_TIMEOUT_MS`, whose deadline then ends silent sockets too).
   */
  connections: { perAddress: number; firstByteMs: number | undefined };
  /** Prometheus metrics at `GET /metrics` on the REST port. `METRICS`, default true. */
  metrics: boolean;
  /**
   * With AUTH on, `/metrics` needs an admin credential like a write. `METRICS_AUTH`, default false: the
   * metrics carry no user data, and most scrapers are set up without credentials.
   */
  metricsAuth: boolean;
  /** The browser console at `/` on the REST port. `CONSOLE`, default true. */
  console: boolean;
  /**
   * The chat address the browser console connects to, when it is not the page's host with WS_PORT
   * (behind a proxy, say). `CHAT_PUBLIC_URL`, default unset; a ws://, wss://, http:// or https:// URL, or
   * a path on the page's host such as `/chat`.
   */
  chatPublicUrl: string | undefined;
  /** Authentication of the REST API and the chat handshake (`AUTH` and its credentials); scheme `none` by default. */
  auth: AuthConfig;
  /**
   * Requests per client and window on the REST port (health excepted), chat handshakes and chat messages.
   * `RATE_LIMIT`, e.g. `100/minute`; default unset (no rate limiting).
   */
  rateLimit: RateLimit | undefined;
  /**
   * Whether X-Forwarded-For is believed, passed to Fastify's `trustProxy` (and used for chat handshakes).
   * `TRUST_PROXY`: `false` (default), `true`, a hop count, or a comma list of addresses/CIDRs.
   */
  trustProxy: boolean | number | readonly string[];
  /**
   * Certificate and key (PEM, read at start-up) for HTTPS and WSS on the same ports. `TLS_CERT` / `TLS_KEY`,
   * default unset. `ciphers`: the OpenSSL cipher list, `TLS_CIPHERS`, default TLS_MODERN_CIPHERS.
   */
  tls: { cert: Buffer; key: Buffer; ciphers: string } | undefined;
  /**
   * Strict-Transport-Security, sent over TLS with SECURITY_HEADERS. `HSTS_MAX_AGE` in seconds, default
   * one year (0 tells browsers to forget it); `HSTS_INCLUDE_SUBDOMAINS`, default false (Roster cannot
   * know whether every sibling host speaks HTTPS).
   */
  hsts: { maxAge: number; includeSubDomains: boolean };
  /** Origins allowed cross-origin REST calls and chat handshakes. `CORS_ORIGINS`, default unset (no CORS, no Origin check). */
  corsOrigins: readonly string[] | undefined;
  /** Security headers (@fastify/helmet) on every REST reply. `SECURITY_HEADERS`, default false (replies unchanged). */
  securityHeaders: boolean;
  /**
   * Where users are kept: the store backend that `url` names (users/stores/registry.ts), or the memory
   * store when it is undefined. `DATABASE_URL`, `DATABASE_POOL_SIZE` (PostgreSQL's connections per
   * instance), `SQLITE_SYNCHRONOUS` (SQLite's durability: see the README, "Keeping users on disk").
   */
  storage: StorageConfig;
  /** Redis carries the chat between instances. `REDIS_URL` (redis:// or rediss://), default unset: one process, one room. */
  redis: { url: string } | undefined;
}

export interface StorageConfig {
  url: string | undefined;
  poolSize: number;
  sqliteSynchronous: 'NORMAL' | 'FULL';
}

export type AuthScheme = 'none' | 'apikey' | 'basic' | 'jwt' | 'oauth2';

export interface AuthConfig {
  scheme: AuthScheme;
  /** `API_KEYS`: `key[:role]`, comma-separated; role `user` unless given (least privilege). */
  apiKeys: readonly { key: string; role: string }[];
  /** `BASIC_USERS`: `name:hash[:role]`, comma-separated; hashes from `roster hash-password`; role `user` unless given. */
  basicUsers: readonly { name: string; hash: string; role: string }[];
  /** `JWT_SECRET`: the HS256 key, at least 32 bytes. */
  jwtSecret: string | undefined;
  /**
   * `OAUTH2_JWKS_URL`, `OAUTH2_ISSUER`, `OAUTH2_AUDIENCE`; `OAUTH2_ACCEPT_JWT_TYP` (default false): also
   * accept tokens whose `typ` is `JWT` or absent, not only RFC 9068's `at+jwt`.
   */
  oauth2: { jwksUrl: string; issuer: string; audience: string; acceptJwtTyp: boolean } | undefined;
}

export interface RateLimit {
  /** Requests (or messages) allowed per window. */
  max: number;
  windowMs: number;
}

export interface ChatConfig {
  /**
   * Largest chat message in bytes; a larger one closes the connection with 1009. `WS_MAX_PAYLOAD`,
   * default 256 KiB. Never below 64 KiB, so messages that need the 64-bit length form always work.
   */
  maxPayload: number;
  /** Interval of the server's protocol ping; a peer that missed the previous one is terminated. `WS_HEARTBEAT_MS`, default 30 s. */
  heartbeatMs: number;
  /** Unsent bytes a connection may hold before it is closed as a slow consumer (1013). `WS_MAX_BACKLOG`, default 1 MiB. */
  maxBacklog: number;
  /** Open connections at most; the next handshake is refused with HTTP 503. `WS_MAX_CONNECTIONS`, default 10000. */
  maxConnections: number;
  /**
   * Open connections of one client at most (its principal when authenticated, else its address); the
   * next handshake of that client is refused with HTTP 429 TOO_MANY_CONNECTIONS.
   * `WS_MAX_CONNECTIONS_PER_CLIENT`; default DEFAULT_MAX_CONNECTIONS_PER_CLIENT (at most a quarter of
   * `maxConnections`) when AUTH or RATE_LIMIT is on, else undefined (no such limit, as without protection).
   */
  maxConnectionsPerClient: number | undefined;
  /** The handshake must arrive within this; it is `HEADERS_TIMEOUT_MS` (one setting for both ports). */
  handshakeTimeoutMs: number;
  /** The connection guard's limits, the REST port's (Config.connections): one pair of settings for both ports. */
  connections: { perAddress: number; firstByteMs: number | undefined };
  /** Chat messages kept for clients that ask (`?history=`, `?since=`); 0: off. `CHAT_HISTORY`, default 500. */
  history: number;
  /** At most this many bytes of them. `CHAT_HISTORY_BYTES`, default 16 MiB. */
  historyBytes: number;
}

type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env): Config {
  const raw = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const get = <T>(setting: Setting<T>): T => {
    const value = raw(setting.name);
    return value === undefined ? setting.fallback : setting.parse(value, setting.name);
  };
  const isSet = (name: string) => raw(name) !== undefined;

  const restPort = get(S.PORT);
  const headersTimeoutMs = get(S.HEADERS_TIMEOUT_MS);
  const requestTimeoutMs = get(S.REQUEST_TIMEOUT_MS);
  checkTimeouts(headersTimeoutMs, requestTimeoutMs);
  const connections = {
    perAddress: get(S.MAX_CONNECTIONS_PER_ADDRESS),
    // Not shorter than the headers' deadline, it adds nothing: Node's own ends such a socket (408).
    firstByteMs: ((ms) => (ms < headersTimeoutMs ? ms : undefined))(get(S.FIRST_BYTE_TIMEOUT_MS)),
  };
  const wsPort = get(S.WS_PORT);
  checkPorts(restPort, wsPort);
  const auth = authOf(get, isSet);
  const corsOrigins = get(S.CORS_ORIGINS);
  const database = get(S.DATABASE_URL);
  const tlsCert = get(S.TLS_CERT);
  const tlsKey = get(S.TLS_KEY);
  const redisUrl = get(S.REDIS_URL);
  const history = get(S.CHAT_HISTORY);
  const historyBytes = get(S.CHAT_HISTORY_BYTES);
  // Without Redis, this process keeps the chat history itself, next to the users.
  const memoryHistory = history > 0 && redisUrl === undefined;
  return {
    port: restPort,
    wsPort,
    host: get(S.HOST),
    logLevel: get(S.LOG_LEVEL),
    logFormat: get(S.LOG_FORMAT),
    maxPageSize: get(S.MAX_PAGE_SIZE),
    maxUsers: maxUsers(get(S.MAX_USERS), database !== undefined, memoryHistory ? historyBytes : 0),
    bodyLimit: get(S.BODY_LIMIT),
    roles: get(S.ROLES),
    strictValidation: get(S.STRICT_VALIDATION),
    shutdownTimeoutMs: get(S.SHUTDOWN_TIMEOUT_MS),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: get(S.KEEP_ALIVE_TIMEOUT_MS),
    maxConnections: get(S.MAX_CONNECTIONS),
    connections,
    metrics: get(S.METRICS),
    metricsAuth: (checkMetricsAuth(get(S.METRICS_AUTH), auth.scheme), get(S.METRICS_AUTH)),
    console: get(S.CONSOLE),
    chatPublicUrl: get(S.CHAT_PUBLIC_URL),
    auth,
    rateLimit: get(S.RATE_LIMIT),
    trustProxy: get(S.TRUST_PROXY),
    tls:
      checkTls(tlsCert, tlsKey, isSet('TLS_CIPHERS')) === 'on'
        ? loadTls(tlsCert!, tlsKey!, get(S.TLS_CIPHERS))
        : undefined,
    hsts: { maxAge: get(S.HSTS_MAX_AGE), includeSubDomains: get(S.HSTS_INCLUDE_SUBDOMAINS) },
    corsOrigins: (checkCorsOrigins(corsOrigins, auth.scheme), corsOrigins),
    securityHeaders: get(S.SECURITY_HEADERS),
    // Each backend's settings are read (and checked) whichever backend DATABASE_URL names.
    storage: { url: database, poolSize: get(S.DATABASE_POOL_SIZE), sqliteSynchronous: get(S.SQLITE_SYNCHRONOUS) },
    redis: redisUrl === undefined ? undefined : { url: redisUrl },
    chat: {
      maxPayload: get(S.WS_MAX_PAYLOAD),
      heartbeatMs: get(S.WS_HEARTBEAT_MS),
      maxBacklog: get(S.WS_MAX_BACKLOG),
      maxConnections: get(S.WS_MAX_CONNECTIONS),
      maxConnectionsPerClient: maxConnectionsPerClient(
        get(S.WS_MAX_CONNECTIONS_PER_CLIENT),
        auth.scheme !== 'none' || isSet('RATE_LIMIT'),
        get(S.WS_MAX_CONNECTIONS),
      ),
      handshakeTimeoutMs: headersTimeoutMs,
      connections,
      history,
      historyBytes,
    },
  };
}

/** AUTH, then only its own credential settings read (another scheme's are refused by policy.ts first). */
function authOf(get: <T>(setting: Setting<T>) => T, isSet: (name: string) => boolean): AuthConfig {
  const scheme = get(S.AUTH);
  const mine = <T>(owner: AuthScheme, setting: Setting<T>): T | undefined =>
    scheme === owner && isSet(setting.name) ? get(setting) : undefined;
  return authConfig(scheme, isSet, () => ({
    apiKeys: mine('apikey', S.API_KEYS) ?? [],
    basicUsers: mine('basic', S.BASIC_USERS) ?? [],
    jwtSecret: mine('jwt', S.JWT_SECRET),
    jwksUrl: mine('oauth2', S.OAUTH2_JWKS_URL),
    issuer: mine('oauth2', S.OAUTH2_ISSUER),
    audience: mine('oauth2', S.OAUTH2_AUDIENCE),
    acceptJwtTyp: mine('oauth2', S.OAUTH2_ACCEPT_JWT_TYP),
  }));
}
