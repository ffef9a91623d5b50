/**
 * Configuration: the environment, read once, validated, turned into a typed object.
 *
 * Nothing else in Roster reads `process.env`; `main.ts` calls `loadConfig(process.env)` and passes the
 * result down. A bad value throws `ConfigError` naming the variable, which `main.ts` prints as one line
 * before exiting with status 2. Every setting is listed here with its default and in the README.
 */
import { isIP } from 'node:net';

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
  /** Largest page size; larger `limit` values are clamped to it. `MAX_PAGE_SIZE`, default 100. */
  maxPageSize: number;
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
  /** Prometheus metrics at `GET /metrics` on the REST port. `METRICS`, default true. */
  metrics: boolean;
  /** The browser console at `/` on the REST port. `CONSOLE`, default true. */
  console: boolean;
  /**
   * The chat address the browser console connects to, when it is not the page's host with WS_PORT
   * (behind a proxy, say). `CHAT_PUBLIC_URL`, default unset; a ws://, wss://, http:// or https:// URL, or
   * a path on the page's host such as `/chat`.
   */
  chatPublicUrl: string | undefined;
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
  /** The handshake must arrive within this; it is `HEADERS_TIMEOUT_MS` (one setting for both ports). */
  handshakeTimeoutMs: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

type Env = Readonly<Record<string, string | undefined>>;

const KIB = 1024;
const MIB = 1024 * 1024;
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env): Config {
  const read = (name: string): string | undefined => {
    const raw = env[name];
    return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
  };

  const restPort = port(read, 'PORT', 5000);
  const headersTimeoutMs = integer(read, 'HEADERS_TIMEOUT_MS', 15_000, 100, 600_000);
  const requestTimeoutMs = integer(read, 'REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  // Node refuses a headers timeout longer than the request timeout, which contains it.
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError('HEADERS_TIMEOUT_MS', `must not exceed REQUEST_TIMEOUT_MS (${headersTimeoutMs} > ${requestTimeoutMs})`);
  }
  const wsPort = port(read, 'WS_PORT', 8765);
  if (restPort !== 0 && wsPort === restPort) throw new ConfigError('WS_PORT', `must differ from PORT (both are ${restPort})`);
  return {
    port: restPort,
    wsPort,
    host: host(read),
    logLevel: oneOf(read, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    maxPageSize: integer(read, 'MAX_PAGE_SIZE', 100, 1, 1_000_000),
    bodyLimit: bytes(read, 'BODY_LIMIT', MIB, 1, 1024 * MIB),
    roles: roles(read),
    strictValidation: boolean(read, 'STRICT_VALIDATION', false),
    shutdownTimeoutMs: integer(read, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: integer(read, 'KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
    maxConnections: integer(read, 'MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    metrics: boolean(read, 'METRICS', true),
    console: boolean(read, 'CONSOLE', true),
    chatPublicUrl: wsUrl(read, 'CHAT_PUBLIC_URL'),
    chat: {
      maxPayload: bytes(read, 'WS_MAX_PAYLOAD', 256 * KIB, 64 * KIB, 1024 * MIB),
      heartbeatMs: integer(read, 'WS_HEARTBEAT_MS', 30_000, 10, 3_600_000),
      maxBacklog: bytes(read, 'WS_MAX_BACKLOG', MIB, 1, 1024 * MIB),
      maxConnections: integer(read, 'WS_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
      handshakeTimeoutMs: headersTimeoutMs,
    },
  };
}

type Reader = (name: string) => string | undefined;

function integer(read: Reader, name: string, fallback: number, min: number, max: number): number {
  const raw = read(name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be from ${min} to ${max} (got ${raw})`);
  return value;
}

function port(read: Reader, name: string, fallback: number): number {
  return integer(read, name, fallback, 0, 65_535);
}

const UNITS: Record<string, number> = { '': 1, b: 1, kb: 1000, kib: KIB, k: KIB, mb: 1000 * 1000, mib: MIB, m: MIB };

function bytes(read: Reader, name: string, fallback: number, min: number, max: number): number {
  const raw = read(name);
  if (raw === undefined) return fallback;
  const match = /^(\d+)\s*([a-z]*)$/i.exec(raw);
  const unit = match ? UNITS[match[2]!.toLowerCase()] : undefined;
  if (!match || unit === undefined) {
    throw new ConfigError(name, `must be a size in bytes such as 1048576, 64KiB or 1MiB (got "${raw}")`);
  }
  const value = Number(match[1]) * unit;
  if (value < min || value > max) throw new ConfigError(name, `must be from ${min} to ${max} bytes (got ${raw})`);
  return value;
}

function boolean(read: Reader, name: string, fallback: boolean): boolean {
  const raw = read(name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (['true', '1', 'yes', 'on'].includes(raw)) return true;
  if (['false', '0', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(name, `must be true or false (got "${raw}")`);
}

function oneOf<T extends string>(read: Reader, name: string, allowed: readonly T[], fallback: T): T {
  const raw = read(name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw new ConfigError(name, `must be one of ${allowed.join(', ')} (got "${raw}")`);
}

function wsUrl(read: Reader, name: string): string | undefined {
  const raw = read(name);
  if (raw === undefined) return undefined;
  if (/^\/(?!\/)\S*$/.test(raw)) return raw; // a path on the page's host
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || !['ws:', 'wss:', 'http:', 'https:'].includes(url.protocol)) {
    throw new ConfigError(name, `must be a ws://, wss://, http:// or https:// URL, or a path such as /chat (got "${raw}")`);
  }
  return raw;
}

function host(read: Reader): string {
  const raw = read('HOST');
  if (raw === undefined) return '127.0.0.1';
  // An IP address (v4 or v6) or a host name; anything else (a URL, a port suffix) fails here rather
  // than later inside listen().
  const hostname = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
  if (isIP(raw) === 0 && !hostname.test(raw)) throw new ConfigError('HOST', `must be an IP address or a host name (got "${raw}")`);
  return raw;
}

function roles(read: Reader): readonly string[] {
  const raw = read('ROLES');
  if (raw === undefined) return ['admin', 'user'];
  const list = [...new Set(raw.split(',').map((role) => role.trim()))];
  if (list.some((role) => !/^[A-Za-z0-9_.-]{1,64}$/.test(role))) {
    throw new ConfigError('ROLES', `must be a comma-separated list of names of letters, digits, "_", "." or "-" (got "${raw}")`);
  }
  for (const required of ['admin', 'user']) {
    if (!list.includes(required)) throw new ConfigError('ROLES', `must include "${required}" (got "${raw}")`);
  }
  return list;
}
