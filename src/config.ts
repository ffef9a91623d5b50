/**
 * Configuration: the environment, read once, validated, turned into a typed object.
 *
 * Nothing else in Roster reads `process.env`; `main.ts` calls `loadConfig(process.env)` and passes the
 * result down. A bad value throws `ConfigError` naming the variable, which `main.ts` prints as one line
 * before exiting with status 2. Every setting is listed here with its default and in the README.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import { getHeapStatistics } from 'node:v8';
import { parsePasswordHash } from './edge/password.js';

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
   * PostgreSQL holds the users instead of memory. `DATABASE_URL` (a postgres:// or postgresql:// URL),
   * default unset; `DATABASE_POOL_SIZE`, default 10 connections per instance.
   */
  database: { url: string; poolSize: number } | undefined;
  /** Redis carries the chat between instances. `REDIS_URL` (redis:// or rediss://), default unset: one process, one room. */
  redis: { url: string } | undefined;
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
   * `WS_MAX_CONNECTIONS_PER_CLIENT`; default DEFAULT_MAX_CONNECTIONS_PER_CLIENT when AUTH or RATE_LIMIT
   * is on, else undefined (no such limit, as without protection).
   */
  maxConnectionsPerClient: number | undefined;
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
  const auth = authConfig(read);
  return {
    port: restPort,
    wsPort,
    host: host(read),
    logLevel: oneOf(read, 'LOG_LEVEL', LOG_LEVELS, 'info'),
    maxPageSize: integer(read, 'MAX_PAGE_SIZE', 100, 1, 1_000_000),
    maxUsers: integer(read, 'MAX_USERS', read('DATABASE_URL') === undefined ? automaticMaxUsers() : 0, 0, 1_000_000_000),
    bodyLimit: bytes(read, 'BODY_LIMIT', MIB, 1, 1024 * MIB),
    roles: roles(read),
    strictValidation: boolean(read, 'STRICT_VALIDATION', false),
    shutdownTimeoutMs: integer(read, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: integer(read, 'KEEP_ALIVE_TIMEOUT_MS', 72_000, 100, 3_600_000),
    maxConnections: integer(read, 'MAX_CONNECTIONS', 10_000, 1, 1_000_000),
    metrics: boolean(read, 'METRICS', true),
    metricsAuth: boolean(read, 'METRICS_AUTH', false),
    console: boolean(read, 'CONSOLE', true),
    chatPublicUrl: wsUrl(read, 'CHAT_PUBLIC_URL'),
    auth,
    rateLimit: rateLimit(read),
    trustProxy: trustProxy(read),
    tls: tls(read),
    hsts: { maxAge: integer(read, 'HSTS_MAX_AGE', 31_536_000, 0, 1_000_000_000), includeSubDomains: boolean(read, 'HSTS_INCLUDE_SUBDOMAINS', false) },
    corsOrigins: corsOrigins(read, auth.scheme),
    securityHeaders: boolean(read, 'SECURITY_HEADERS', false),
    database: database(read),
    redis: engineUrl(read, 'REDIS_URL', ['redis:', 'rediss:']),
    chat: {
      maxPayload: bytes(read, 'WS_MAX_PAYLOAD', 256 * KIB, 64 * KIB, 1024 * MIB),
      heartbeatMs: integer(read, 'WS_HEARTBEAT_MS', 30_000, 10, 3_600_000),
      maxBacklog: bytes(read, 'WS_MAX_BACKLOG', MIB, 1, 1024 * MIB),
      maxConnections: integer(read, 'WS_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
      maxConnectionsPerClient: maxConnectionsPerClient(read, auth.scheme !== 'none' || read('RATE_LIMIT') !== undefined),
      handshakeTimeoutMs: headersTimeoutMs,
    },
  };
}

type Reader = (name: string) => string | undefined;

/** WS_MAX_CONNECTIONS_PER_CLIENT when protection is on and it is not set: a person's tabs and tools, with room to spare. */
export const DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 32;

/**
 * Set, it applies in any case. Unset, it applies only with protection on (AUTH or RATE_LIMIT): without
 * it, Roster behaves as the contract says, and one address may well be a proxy or a NAT for many people.
 */
function maxConnectionsPerClient(read: Reader, protectionOn: boolean): number | undefined {
  const fallback = protectionOn ? DEFAULT_MAX_CONNECTIONS_PER_CLIENT : undefined;
  return read('WS_MAX_CONNECTIONS_PER_CLIENT') === undefined ? fallback : integer(read, 'WS_MAX_CONNECTIONS_PER_CLIENT', 0, 1, 1_000_000);
}

function database(read: Reader): Config['database'] {
  const engine = engineUrl(read, 'DATABASE_URL', ['postgres:', 'postgresql:']);
  const poolSize = integer(read, 'DATABASE_POOL_SIZE', 10, 1, 1000);
  return engine && { url: engine.url, poolSize };
}

/** The URL of an engine (PostgreSQL, Redis): parsed so a typo fails at start-up, not at first use. */
function engineUrl(read: Reader, name: string, protocols: readonly string[]): { url: string } | undefined {
  const raw = read(name);
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, `must be a URL such as ${protocols[0]}//127.0.0.1 (got an unparsable value)`);
  }
  if (!protocols.includes(url.protocol)) {
    throw new ConfigError(name, `must use ${protocols.map((p) => `${p}//`).join(' or ')} (got ${url.protocol}//)`);
  }
  return { url: raw };
}

/**
 * Bytes of heap one user can take in the memory store at worst, measured: 10 000 users created over
 * HTTP with a name of 200 astral-plane characters (400 UTF-16 units) and a 254-character email outside
 * Latin-1, then a search and a sort by email, came to 4 281 B of live heap per user (the user, its
 * lower-cased copies for search, every sort index); 5 KiB leaves a margin.
 */
export const WORST_CASE_BYTES_PER_USER = 5120;
/**
 * The share of the heap users may fill. The rest is for the process itself (about 20 MiB), the chat
 * (some 9 KiB per connection), the reply cache (http/routes/user-json.ts, a 32nd), requests in flight, and the free
 * space a mark-compact needs to make progress.
 */
export const USERS_HEAP_SHARE = 0.4;

/**
 * The default MAX_USERS with users in memory: the worst-case user times the cap stays within 40 % of
 * this Node's heap limit (so it follows --max-old-space-size), rounded down to a thousand. On a
 * 4 144 MiB heap (Node 20 on a 24 GiB machine): 4 144 MiB x 0.4 / 5 120 B = 339 000 users.
 */
export function automaticMaxUsers(heapLimit = getHeapStatistics().heap_size_limit): number {
  return Math.max(1000, Math.floor((heapLimit * USERS_HEAP_SHARE) / WORST_CASE_BYTES_PER_USER / 1000) * 1000);
}

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

// --- Protection (all off by default) ---

const AUTH_SCHEMES: readonly AuthScheme[] = ['none', 'apikey', 'basic', 'jwt', 'oauth2'];
const ROLE_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * AUTH and the credentials of its scheme. A credential setting given for another scheme is refused
 * rather than ignored: a deployment that sets API_KEYS but forgets AUTH=apikey must not believe it is
 * protected.
 */
function authConfig(read: Reader): AuthConfig {
  const scheme = oneOf(read, 'AUTH', AUTH_SCHEMES, 'none');
  const owners: Record<string, AuthScheme> = {
    API_KEYS: 'apikey',
    BASIC_USERS: 'basic',
    JWT_SECRET: 'jwt',
    OAUTH2_JWKS_URL: 'oauth2',
    OAUTH2_ISSUER: 'oauth2',
    OAUTH2_AUDIENCE: 'oauth2',
  };
  for (const [name, owner] of Object.entries(owners)) {
    if (read(name) !== undefined && scheme !== owner) throw new ConfigError(name, `is set but AUTH is ${scheme} (it applies to AUTH=${owner} only)`);
    if (read(name) === undefined && scheme === owner) throw new ConfigError(name, `is required when AUTH=${owner}`);
  }
  // Optional, but like the credentials refused for another scheme.
  if (read('OAUTH2_ACCEPT_JWT_TYP') !== undefined && scheme !== 'oauth2') {
    throw new ConfigError('OAUTH2_ACCEPT_JWT_TYP', `is set but AUTH is ${scheme} (it applies to AUTH=oauth2 only)`);
  }
  return {
    scheme,
    apiKeys: scheme === 'apikey' ? apiKeys(read) : [],
    basicUsers: scheme === 'basic' ? basicUsers(read) : [],
    jwtSecret: scheme === 'jwt' ? jwtSecret(read) : undefined,
    oauth2:
      scheme === 'oauth2'
        ? {
            jwksUrl: jwksUrl(read),
            issuer: read('OAUTH2_ISSUER')!,
            audience: read('OAUTH2_AUDIENCE')!,
            acceptJwtTyp: boolean(read, 'OAUTH2_ACCEPT_JWT_TYP', false),
          }
        : undefined,
  };
}

/** An entry without a role is a reader: least privilege, so a forgotten `:admin` fails safe. */
function roleOf(name: string, raw: string | undefined): string {
  if (raw === undefined) return 'user';
  if (!ROLE_NAME.test(raw)) throw new ConfigError(name, `has a role that is not a name of letters, digits, "_", "." or "-" ("${raw}")`);
  return raw;
}

/** `key[:role]`: keys of 16 to 256 URL-safe characters (they travel in a header or a query string). */
function apiKeys(read: Reader): { key: string; role: string }[] {
  const entries = read('API_KEYS')!.split(',').map((entry) => entry.trim());
  return entries.map((entry, index) => {
    const [key = '', role, ...rest] = entry.split(':');
    if (rest.length > 0 || !/^[A-Za-z0-9._~+/=-]{16,256}$/.test(key)) {
      // The key itself is never echoed: configuration errors end up in logs.
      throw new ConfigError('API_KEYS', `entry ${index + 1} must be key[:role] with a key of 16 to 256 characters of A-Z a-z 0-9 . _ ~ + / = -`);
    }
    return { key, role: roleOf('API_KEYS', role) };
  });
}

/** `name:hash[:role]`, the hash in the format of `roster hash-password`. */
function basicUsers(read: Reader): { name: string; hash: string; role: string }[] {
  const names = new Set<string>();
  return read('BASIC_USERS')!
    .split(',')
    .map((entry) => entry.trim())
    .map((entry, index) => {
      const [name = '', hash = '', role, ...rest] = entry.split(':');
      if (rest.length > 0 || !/^[^\s:]{1,128}$/.test(name)) {
        throw new ConfigError('BASIC_USERS', `entry ${index + 1} must be name:hash[:role] (a name of 1 to 128 characters without ":" or spaces)`);
      }
      if (!parsePasswordHash(hash)) {
        throw new ConfigError('BASIC_USERS', `entry ${index + 1} (${name}) has a hash that is not in the format of "roster hash-password" (scrypt$N$r$p$salt$hash)`);
      }
      if (names.has(name)) throw new ConfigError('BASIC_USERS', `lists the user "${name}" twice`);
      names.add(name);
      return { name, hash, role: roleOf('BASIC_USERS', role) };
    });
}

/** At least 32 bytes: HS256 with a shorter key is guessable offline from any one token (RFC 7518 3.2). */
function jwtSecret(read: Reader): string {
  const secret = read('JWT_SECRET')!;
  const length = Buffer.byteLength(secret, 'utf8');
  if (length < 32) throw new ConfigError('JWT_SECRET', `must be at least 32 bytes long (got ${length})`);
  return secret;
}

/** https, except on the loopback interface (a local identity provider, or a test). */
function jwksUrl(read: Reader): string {
  const raw = read('OAUTH2_JWKS_URL')!;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  const loopback = url !== undefined && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (!url || !(url.protocol === 'https:' || (url.protocol === 'http:' && loopback))) {
    throw new ConfigError('OAUTH2_JWKS_URL', `must be an https:// URL (http:// only on localhost) (got "${raw}")`);
  }
  return url.href;
}

const WINDOWS: Record<string, number> = { second: 1_000, s: 1_000, sec: 1_000, minute: 60_000, m: 60_000, min: 60_000, hour: 3_600_000, h: 3_600_000 };

function rateLimit(read: Reader): RateLimit | undefined {
  const raw = read('RATE_LIMIT');
  if (raw === undefined) return undefined;
  const match = /^(\d{1,9})\s*\/\s*([a-z]+)$/i.exec(raw);
  const windowMs = match ? WINDOWS[match[2]!.toLowerCase()] : undefined;
  const max = match ? Number(match[1]) : 0;
  if (!match || windowMs === undefined || max < 1) {
    throw new ConfigError('RATE_LIMIT', `must be a count per second, minute or hour such as 100/minute (got "${raw}")`);
  }
  return { max, windowMs };
}

function trustProxy(read: Reader): boolean | number | readonly string[] {
  const raw = read('TRUST_PROXY');
  if (raw === undefined) return false;
  const lower = raw.toLowerCase();
  if (['true', 'false'].includes(lower)) return lower === 'true';
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const list = raw.split(',').map((entry) => entry.trim());
  for (const entry of list) {
    const [address = '', prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    if (family === 0 || rest.length > 0 || (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits))) {
      throw new ConfigError('TRUST_PROXY', `must be true, false, a hop count, or a comma list of addresses and CIDRs (got "${raw}")`);
    }
  }
  return list;
}

/** Both or neither; read and checked now, so a bad file stops the start with the variable named. */
function tls(read: Reader): Config['tls'] {
  const certPath = read('TLS_CERT');
  const keyPath = read('TLS_KEY');
  if (certPath === undefined && keyPath === undefined) {
    if (read('TLS_CIPHERS') !== undefined) throw new ConfigError('TLS_CIPHERS', 'is set but TLS_CERT and TLS_KEY are not (it applies to TLS only)');
    return undefined;
  }
  if (certPath === undefined) throw new ConfigError('TLS_CERT', 'is required when TLS_KEY is set');
  if (keyPath === undefined) throw new ConfigError('TLS_KEY', 'is required when TLS_CERT is set');
  const load = (name: string, path: string, check: (pem: Buffer) => unknown): Buffer => {
    let pem: Buffer;
    try {
      pem = readFileSync(path);
    } catch (error) {
      throw new ConfigError(name, `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}: ${path})`);
    }
    try {
      check(pem);
    } catch {
      throw new ConfigError(name, `is not a PEM ${name === 'TLS_CERT' ? 'certificate' : 'private key'} (${path})`);
    }
    return pem;
  };
  const cert = load('TLS_CERT', certPath, (pem) => new X509Certificate(pem));
  const key = load('TLS_KEY', keyPath, (pem) => createPrivateKey(pem));
  try {
    createSecureContext({ cert, key });
  } catch {
    throw new ConfigError('TLS_KEY', `does not match the certificate of TLS_CERT (${keyPath})`);
  }
  const ciphers = read('TLS_CIPHERS') ?? TLS_MODERN_CIPHERS;
  try {
    createSecureContext({ cert, key, ciphers });
  } catch {
    throw new ConfigError('TLS_CIPHERS', `must be an OpenSSL cipher list that leaves at least one suite (got "${ciphers}")`);
  }
  return { cert, key, ciphers };
}

/**
 * The TLS suites offered by default: TLS 1.3's, and for TLS 1.2 only ECDHE with AES-GCM or
 * ChaCha20-Poly1305 (forward secrecy, AEAD: no CBC, no SHA-1 MAC), as Mozilla's "intermediate"
 * profile without its DHE suites. Node's own default also allows CBC suites with SHA-1 and SHA-2.
 */
export const TLS_MODERN_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/**
 * Exact origins (scheme, host, port). `*` is refused when authentication is on: any web page could then
 * drive the API with a credential it holds (an API key a user pasted, say); list the origins instead.
 */
function corsOrigins(read: Reader, scheme: AuthScheme): readonly string[] | undefined {
  const raw = read('CORS_ORIGINS');
  if (raw === undefined) return undefined;
  const list = [...new Set(raw.split(',').map((entry) => entry.trim()))];
  if (list.includes('*')) {
    if (list.length > 1) throw new ConfigError('CORS_ORIGINS', 'must be "*" alone or a list of origins');
    if (scheme !== 'none') throw new ConfigError('CORS_ORIGINS', `must list origins, not "*", when AUTH is ${scheme}`);
    return ['*'];
  }
  for (const entry of list) {
    let origin: string | undefined;
    try {
      const url = new URL(entry);
      origin = ['http:', 'https:'].includes(url.protocol) ? url.origin : undefined;
    } catch {
      origin = undefined;
    }
    if (origin !== entry) {
      throw new ConfigError('CORS_ORIGINS', `must be a comma list of origins such as https://app.example.com (no path, no trailing slash) (got "${entry}")`);
    }
  }
  return list;
}
