/**
 * The rules between settings: what one setting means given the others. Each throws ConfigError naming
 * the variable at fault; readers.ts and settings.ts know nothing of these.
 */
import { getHeapStatistics } from 'node:v8';
import { ConfigError } from './readers.js';
import * as S from './settings.js';
import type { AuthScheme, Setting } from './settings.js';

/** Node refuses a headers timeout longer than the request timeout, which contains it. */
export function checkTimeouts(headersTimeoutMs: number, requestTimeoutMs: number): void {
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      'HEADERS_TIMEOUT_MS',
      `must not exceed REQUEST_TIMEOUT_MS (${headersTimeoutMs} > ${requestTimeoutMs})`,
    );
  }
}

export function checkPorts(restPort: number, wsPort: number): void {
  if (restPort !== 0 && wsPort === restPort)
    throw new ConfigError('WS_PORT', `must differ from PORT (both are ${restPort})`);
}

/** What authenticates requests and handshakes: the scheme, and the credentials of that scheme only. */
export interface AuthConfig {
  scheme: AuthScheme;
  /** `API_KEYS`: `key[:role]` entries. */
  apiKeys: readonly { key: string; role: string }[];
  /** `BASIC_USERS`: `name:hash[:role]` entries; hashes from `roster hash-password`. */
  basicUsers: readonly { name: string; hash: string; role: string }[];
  /** `JWT_SECRET`: the HS256 key. */
  jwtSecret: string | undefined;
  /** `OAUTH2_JWKS_URL`, `OAUTH2_ISSUER`, `OAUTH2_AUDIENCE`, and `OAUTH2_ACCEPT_JWT_TYP` as `acceptJwtTyp`. */
  oauth2: { jwksUrl: string; issuer: string; audience: string; acceptJwtTyp: boolean } | undefined;
}

/** The credential settings of each AUTH scheme, and whether that scheme requires them. */
const OWNERS: Readonly<Record<string, { scheme: AuthScheme; required: boolean }>> = {
  API_KEYS: { scheme: 'apikey', required: true },
  BASIC_USERS: { scheme: 'basic', required: true },
  JWT_SECRET: { scheme: 'jwt', required: true },
  OAUTH2_JWKS_URL: { scheme: 'oauth2', required: true },
  OAUTH2_ISSUER: { scheme: 'oauth2', required: true },
  OAUTH2_AUDIENCE: { scheme: 'oauth2', required: true },
  OAUTH2_ACCEPT_JWT_TYP: { scheme: 'oauth2', required: false },
};

/**
 * AUTH and the credentials of its scheme. A credential setting given for another scheme is refused
 * rather than ignored: a deployment that sets API_KEYS but forgets AUTH=apikey must not believe it is
 * protected.
 */
export function authConfig(get: <T>(setting: Setting<T>) => T, isSet: (name: string) => boolean): AuthConfig {
  const scheme = get(S.AUTH);
  for (const [name, owner] of Object.entries(OWNERS)) {
    if (isSet(name) && scheme !== owner.scheme)
      throw new ConfigError(name, `is set but AUTH is ${scheme} (it applies to AUTH=${owner.scheme} only)`);
    if (!isSet(name) && scheme === owner.scheme && owner.required)
      throw new ConfigError(name, `is required when AUTH=${owner.scheme}`);
  }
  // Read only now, once another scheme's settings are known to be unset (so undefined).
  return {
    scheme,
    apiKeys: get(S.API_KEYS) ?? [],
    basicUsers: get(S.BASIC_USERS) ?? [],
    jwtSecret: get(S.JWT_SECRET),
    oauth2:
      scheme === 'oauth2'
        ? {
            jwksUrl: get(S.OAUTH2_JWKS_URL)!,
            issuer: get(S.OAUTH2_ISSUER)!,
            audience: get(S.OAUTH2_AUDIENCE)!,
            acceptJwtTyp: get(S.OAUTH2_ACCEPT_JWT_TYP) ?? false,
          }
        : undefined,
  };
}

/**
 * METRICS_AUTH guards /metrics with an admin credential, which only exists under AUTH: asked for with
 * AUTH=none it would silently leave /metrics public, so it is refused like other contradictions.
 */
export function checkMetricsAuth(metricsAuth: boolean, scheme: AuthScheme): void {
  if (metricsAuth && scheme === 'none')
    throw new ConfigError('METRICS_AUTH', 'needs AUTH (with AUTH=none there is no admin credential to ask for)');
}

/** `*` is refused when authentication is on: any web page could then drive the API with a credential it holds; list the origins instead. */
export function checkCorsOrigins(origins: readonly string[] | undefined, scheme: AuthScheme): void {
  if (origins?.includes('*') && scheme !== 'none')
    throw new ConfigError('CORS_ORIGINS', `must list origins, not "*", when AUTH is ${scheme}`);
}

export function checkTls(cert: string | undefined, key: string | undefined, ciphersSet: boolean): 'off' | 'on' {
  if (cert === undefined && key === undefined) {
    if (ciphersSet)
      throw new ConfigError('TLS_CIPHERS', 'is set but TLS_CERT and TLS_KEY are not (it applies to TLS only)');
    return 'off';
  }
  if (cert === undefined) throw new ConfigError('TLS_CERT', 'is required when TLS_KEY is set');
  if (key === undefined) throw new ConfigError('TLS_KEY', 'is required when TLS_CERT is set');
  return 'on';
}

/** WS_MAX_CONNECTIONS_PER_CLIENT when protection is on and it is not set: a person's tabs and tools, with room to spare. */
export const DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 32;

/**
 * Set, it applies in any case. Unset, it applies only with protection on (AUTH or RATE_LIMIT): without
 * it, Roster behaves as the contract says, and one address may well be a proxy or a NAT for many people.
 * The default is also at most a quarter of WS_MAX_CONNECTIONS (at least 1), so that under a small
 * global cap one client cannot take every slot.
 */
export function maxConnectionsPerClient(
  set: number | undefined,
  protectionOn: boolean,
  maxConnections: number,
): number | undefined {
  if (set !== undefined) return set;
  return protectionOn
    ? Math.min(DEFAULT_MAX_CONNECTIONS_PER_CLIENT, Math.max(1, Math.floor(maxConnections / 4)))
    : undefined;
}

/** MAX_CONNECTIONS_PER_ADDRESS when it is not set, under a large enough cap of the port. */
export const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS = 256;

/**
 * Set, it is the cap (0: none). Unset, 256, but at most a quarter of the port's own cap (MAX_CONNECTIONS
 * on the REST port, WS_MAX_CONNECTIONS on the chat port; at least 1): with MAX_CONNECTIONS=200, one
 * address holding 200 idle sockets would otherwise shut everyone else out, as 256 is more than 200.
 */
export function maxConnectionsPerAddress(set: number | undefined, portCap: number): number {
  return set ?? Math.min(DEFAULT_MAX_CONNECTIONS_PER_ADDRESS, Math.max(1, Math.floor(portCap / 4)));
}

/**
 * Bytes of heap one user can take in the memory store at worst, measured: 10 000 users created over
 * HTTP with a name of 200 astral-plane characters (400 UTF-16 units) and a 254-character email outside
 * Latin-1, then a search and a sort by email, came to 4 281 B of live heap per user (the user, its
 * lower-cased copies for search, every sort index); 5 KiB leaves a margin. Measured at the bounds of
 * users/fields.ts, not derived from them: a field added there, or a larger bound, calls for measuring again.
 */
export const WORST_CASE_BYTES_PER_USER = 5120;
/**
 * The share of the heap users may fill. The rest is for the process itself (about 20 MiB), the chat
 * (some 9 KiB per connection), the reply cache (http/routes/user-json.ts, a 32nd; with SQLite, its cache of
 * decoded users takes another 32nd), requests in flight, and the free
 * space a mark-compact needs to make progress.
 */
export const USERS_HEAP_SHARE = 0.4;

/**
 * What V8's heap limit counts that long-lived data cannot use: the young generation, up to three
 * semi-spaces of 64 MiB on current V8 (Node 24 adds 192 MiB to --max-old-space-size=96; Node 22, 48).
 */
export const YOUNG_GENERATION_ALLOWANCE = 192 * 1024 * 1024;

/**
 * Bytes of heap one kept change can take in the memory store at worst: a former version of a user the
 * change alone keeps alive, at the fields' bounds as heap-size.ts counts them (a name of 400 UTF-16
 * units and an email of 254: about 1.8 KiB with the object and its other strings), and the change
 * itself. Derived, not measured like the user's: the change adds no index.
 */
export const WORST_CASE_BYTES_PER_CHANGE = 2048;

/** CHANGES_MAX when unset: 10 000 in memory (20 MiB at worst, ten seconds at a write a millisecond), 100 000 on disk. */
export function maxChanges(set: number | undefined, database: boolean): number {
  return set ?? (database ? 100_000 : 10_000);
}

/**
 * The default MAX_USERS with users in memory: the worst-case user times the cap stays within 40 % of
 * this Node's heap limit less the young generation and `reserved` bytes (so it follows
 * --max-old-space-size, on every Node version), rounded down to a thousand. On a 4 144 MiB heap (Node 20 on a 24 GiB machine):
 * (4 144 - 192) MiB x 0.4 / 5 120 B = 323 000 users.
 */
export function automaticMaxUsers(heapLimit = getHeapStatistics().heap_size_limit, reserved = 0): number {
  const usable = Math.max(0, heapLimit - YOUNG_GENERATION_ALLOWANCE - reserved);
  return Math.max(1000, Math.floor((usable * USERS_HEAP_SHARE) / WORST_CASE_BYTES_PER_USER / 1000) * 1000);
}

/**
 * MAX_USERS when unset: with users in memory, automaticMaxUsers() of the heap less `reserved` (the
 * chat history's byte bound, when this process keeps it); with DATABASE_URL, no cap (0).
 */
export function maxUsers(set: number | undefined, database: boolean, reserved = 0): number {
  return set ?? (database ? 0 : automaticMaxUsers(undefined, reserved));
}
