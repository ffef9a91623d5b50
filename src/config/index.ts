/**
 * Configuration: the environment, read once, validated, turned into a typed object. Nothing else in the
 * server reads `process.env`: `main.ts` calls `loadConfig(process.env)` and passes the result down. Each
 * setting is declared in settings.ts, so a field's comment names its variable, never its default. A bad
 * value throws `ConfigError` naming the variable (startup.ts: one line, exit 2).
 */
import {
  checkTimeouts,
  checkPorts,
  authConfig,
  checkCorsOrigins,
  checkMetricsAuth,
  checkTls,
  maxConnectionsPerAddress,
  maxConnectionsPerClient,
  maxChanges,
  maxUsers,
  WORST_CASE_BYTES_PER_CHANGE,
  type AuthConfig,
} from './policy.js';
import { loadTls } from './files.js';
import type { RateLimit } from './readers.js';
import { rawValue, read, type Env, type LogLevel, type Setting } from './settings.js';
import * as S from './settings.js';

export { ConfigError, type RateLimit } from './readers.js';
export {
  automaticMaxUsers,
  USERS_HEAP_SHARE,
  WORST_CASE_BYTES_PER_CHANGE,
  WORST_CASE_BYTES_PER_USER,
  type AuthConfig,
} from './policy.js';
export { JWT_SECRET_MIN_BYTES } from './credential-settings.js';
export { SETTINGS, type AuthScheme, type Setting } from './settings.js';

export interface Config {
  /** `PORT`; 0 asks the OS for a free port (tests use this). */
  port: number;
  /** `WS_PORT`. */
  wsPort: number;
  /** `HOST`, of both ports. */
  host: string;
  /** `LOG_LEVEL`. */
  logLevel: LogLevel;
  /** `LOG_FORMAT` (logging.ts). */
  logFormat: 'json' | 'pretty';
  /** `MAX_PAGE_SIZE`. */
  maxPageSize: number;
  /** `MAX_USERS` (0: no cap); unset, policy.ts's maxUsers(). */
  maxUsers: number;
  /** `BODY_LIMIT`, in bytes. */
  bodyLimit: number;
  /** `ROLES`; always with `admin` and `user` (roles.ts). */
  roles: readonly string[];
  /** `STRICT_VALIDATION`. */
  strictValidation: boolean;
  /** `REQUIRE_IF_MATCH`. */
  requireIfMatch: boolean;
  /** `IDEMPOTENCY_KEY_TTL_SECONDS`, in milliseconds. */
  idempotencyKeyTtlMs: number;
  chat: ChatConfig;
  /** `SHUTDOWN_TIMEOUT_MS`. */
  shutdownTimeoutMs: number;
  /** `HEADERS_TIMEOUT_MS`, on both ports. Shorter than Node's own: trickled headers are a cheap attack. */
  headersTimeoutMs: number;
  /** `REQUEST_TIMEOUT_MS`. */
  requestTimeoutMs: number;
  /** `KEEP_ALIVE_TIMEOUT_MS`. */
  keepAliveTimeoutMs: number;
  /** `MAX_CONNECTIONS`, of the REST port. */
  maxConnections: number;
  /**
   * The REST port's connection guard (edge/connection-guard.ts): `MAX_CONNECTIONS_PER_ADDRESS` (unset:
   * policy.ts's share of `MAX_CONNECTIONS`), `FIRST_BYTE_TIMEOUT_MS`.
   */
  connections: { perAddress: number; firstByteMs: number | undefined };
  /** `METRICS`. */
  metrics: boolean;
  /** `METRICS_AUTH`: off unless asked for, as the metrics carry no user data and most scrapers have no credential. */
  metricsAuth: boolean;
  /** `CONSOLE`. */
  console: boolean;
  /** `CHAT_PUBLIC_URL`. */
  chatPublicUrl: string | undefined;
  /** `AUTH` and its scheme's credentials (policy.ts). */
  auth: AuthConfig;
  /** `RATE_LIMIT`; undefined: no rate limiting. */
  rateLimit: RateLimit | undefined;
  /** `TRUST_PROXY`: Fastify's `trustProxy`, used for chat handshakes too. */
  trustProxy: boolean | number | readonly string[];
  /** `TLS_CERT` and `TLS_KEY`, read at start-up, and `TLS_CIPHERS` (else files.ts's); undefined: no TLS. */
  tls: { cert: Buffer; key: Buffer; ciphers: string } | undefined;
  /** `HSTS_MAX_AGE` and `HSTS_INCLUDE_SUBDOMAINS`. */
  hsts: { maxAge: number; includeSubDomains: boolean };
  /** `CORS_ORIGINS`; undefined: no CORS, no Origin check. */
  corsOrigins: readonly string[] | undefined;
  /** `SECURITY_HEADERS` (@fastify/helmet). */
  securityHeaders: boolean;
  /** `DATABASE_URL`, naming the backend (users/stores/registry.ts), `DATABASE_POOL_SIZE`, `SQLITE_SYNCHRONOUS`. */
  storage: StorageConfig;
  /** `CHANGES_MAX_BACKLOG`: a change stream past it is closed (http/change-streams.ts). */
  changesMaxBacklog: number;
  /** `CHANGES_MAX_STREAMS_PER_CLIENT`; 0: no cap (http/routes/change-routes.ts). */
  changesMaxStreamsPerClient: number;
  /** `REDIS_URL`; undefined: one process, one room. */
  redis: { url: string } | undefined;
}

export interface StorageConfig {
  url: string | undefined;
  poolSize: number;
  sqliteSynchronous: 'NORMAL' | 'FULL';
  /** `IDEMPOTENCY_MAX_KEYS`: every store's bound on idempotency keys. */
  idempotencyMaxKeys: number;
  /** `IDEMPOTENCY_MAX_KEYS_PER_PRINCIPAL`. */
  idempotencyMaxKeysPerPrincipal: number;
  /** `IDEMPOTENCY_MAX_BYTES`: the memory store's bound on its keys' heap. */
  idempotencyMaxBytes: number;
  /** `CHANGES_MAX` (unset: policy.ts's maxChanges()) and `CHANGES_MAX_AGE_SECONDS` in ms (users/changes.ts). */
  changeBounds: { maxChanges: number; maxAgeMs: number };
}

export interface ChatConfig {
  /** Largest chat message, `WS_MAX_PAYLOAD`: at least 64 KiB, so that the 64-bit length form always works. */
  maxPayload: number;
  /** `WS_HEARTBEAT_MS`. */
  heartbeatMs: number;
  /** `WS_MAX_BACKLOG`. */
  maxBacklog: number;
  /** `WS_MAX_CONNECTIONS`. */
  maxConnections: number;
  /** `WS_MAX_CONNECTIONS_PER_CLIENT`; unset, policy.ts's maxConnectionsPerClient() decides (undefined: no cap). */
  maxConnectionsPerClient: number | undefined;
  /** The handshake must arrive within this; it is `HEADERS_TIMEOUT_MS` (one setting for both ports). */
  handshakeTimeoutMs: number;
  /** The chat port's connection guard: the same two settings; policy.ts takes its share of `WS_MAX_CONNECTIONS`. */
  connections: { perAddress: number; firstByteMs: number | undefined };
  /** `CHAT_HISTORY`; 0: off. */
  history: number;
  /** `CHAT_HISTORY_BYTES`. */
  historyBytes: number;
  /** `CHAT_NOTICES_MAX_MEMBERS`; undefined: every join and leave told on its own (the contract). */
  noticesMaxMembers: number | undefined;
}

export function loadConfig(env: Env): Config {
  const get = <T>(setting: Setting<T>): T => read(env, setting);
  const isSet = (name: string) => rawValue(env, name) !== undefined;

  const restPort = get(S.PORT);
  const headersTimeoutMs = get(S.HEADERS_TIMEOUT_MS);
  const requestTimeoutMs = get(S.REQUEST_TIMEOUT_MS);
  checkTimeouts(headersTimeoutMs, requestTimeoutMs);
  // Not shorter than the headers' deadline, it adds nothing: Node's own ends such a socket (408).
  const firstByteMs = ((ms) => (ms < headersTimeoutMs ? ms : undefined))(get(S.FIRST_BYTE_TIMEOUT_MS));
  const guardOf = (portCap: number) => ({
    perAddress: maxConnectionsPerAddress(get(S.MAX_CONNECTIONS_PER_ADDRESS), portCap),
    firstByteMs,
  });
  const wsPort = get(S.WS_PORT);
  checkPorts(restPort, wsPort);
  const auth = authConfig(get, isSet);
  const corsOrigins = get(S.CORS_ORIGINS);
  const database = get(S.DATABASE_URL);
  const tlsCert = get(S.TLS_CERT);
  const tlsKey = get(S.TLS_KEY);
  const redisUrl = get(S.REDIS_URL);
  const history = get(S.CHAT_HISTORY);
  const historyBytes = get(S.CHAT_HISTORY_BYTES);
  // Without Redis the chat thread keeps the history in memory, on its own heap. Its byte bound still
  // comes off the users' share of this thread's heap: the users' cap is the one bound Roster derives
  // from the heap, and both heaps draw on the one machine's memory.
  const memoryHistory = history > 0 && redisUrl === undefined;
  const changes = maxChanges(get(S.CHANGES_MAX), database !== undefined);
  return {
    port: restPort,
    wsPort,
    host: get(S.HOST),
    logLevel: get(S.LOG_LEVEL),
    logFormat: get(S.LOG_FORMAT),
    maxPageSize: get(S.MAX_PAGE_SIZE),
    // With users in memory their idempotency keys and change log are too (IDEMPOTENCY_MAX_BYTES, CHANGES_MAX
    // at worst): off the users' share.
    maxUsers: maxUsers(
      get(S.MAX_USERS),
      database !== undefined,
      (memoryHistory ? historyBytes : 0) +
        (database === undefined ? get(S.IDEMPOTENCY_MAX_BYTES) + changes * WORST_CASE_BYTES_PER_CHANGE : 0),
    ),
    bodyLimit: get(S.BODY_LIMIT),
    roles: get(S.ROLES),
    strictValidation: get(S.STRICT_VALIDATION),
    requireIfMatch: get(S.REQUIRE_IF_MATCH),
    idempotencyKeyTtlMs: get(S.IDEMPOTENCY_KEY_TTL_SECONDS) * 1000,
    shutdownTimeoutMs: get(S.SHUTDOWN_TIMEOUT_MS),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: get(S.KEEP_ALIVE_TIMEOUT_MS),
    maxConnections: get(S.MAX_CONNECTIONS),
    connections: guardOf(get(S.MAX_CONNECTIONS)),
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
    storage: {
      url: database,
      poolSize: get(S.DATABASE_POOL_SIZE),
      sqliteSynchronous: get(S.SQLITE_SYNCHRONOUS),
      idempotencyMaxKeys: get(S.IDEMPOTENCY_MAX_KEYS),
      idempotencyMaxKeysPerPrincipal: get(S.IDEMPOTENCY_MAX_KEYS_PER_PRINCIPAL),
      idempotencyMaxBytes: get(S.IDEMPOTENCY_MAX_BYTES),
      changeBounds: { maxChanges: changes, maxAgeMs: get(S.CHANGES_MAX_AGE_SECONDS) * 1000 },
    },
    changesMaxBacklog: get(S.CHANGES_MAX_BACKLOG),
    changesMaxStreamsPerClient: get(S.CHANGES_MAX_STREAMS_PER_CLIENT),
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
      connections: guardOf(get(S.WS_MAX_CONNECTIONS)),
      history,
      historyBytes,
      noticesMaxMembers: get(S.CHAT_NOTICES_MAX_MEMBERS),
    },
  };
}
