/**
 * Every setting of Roster, declared once: variable, default, reader, bounds, and its row of docs/configuration.md
 * (a test holds that table to this list). config/index.ts reads them; policy.ts decides the defaults that depend
 * on others (MAX_USERS, the per-client and per-address caps) or on AUTH. The `roster` command's: client-settings.ts.
 */
import { apiKeys, basicUsers, jwtSecret } from './credential-settings.js';
import {
  boolean,
  bytes,
  chatUrl,
  databaseUrl,
  engineUrl,
  host,
  integer,
  jwksUrl,
  KIB,
  MIB,
  oneOf,
  origins,
  port,
  rate,
  roles,
  sqliteSynchronous,
  text,
  trustProxy,
} from './readers.js';
import { REQUIRED_ROLES } from './roles.js';
import { declared, setting, type Setting } from './setting.js';

export { rawValue, read, type Env, type Setting } from './setting.js';

/** pino's levels, the values of LOG_LEVEL. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
/** The values of AUTH (its type here, not beside Config: policy.ts needs it, and index.ts imports policy.ts). */
export const AUTH_SCHEMES = ['none', 'apikey', 'basic', 'jwt', 'oauth2'] as const;
export type AuthScheme = (typeof AUTH_SCHEMES)[number];

export const PORT = setting('PORT', 5000, port, 'REST port (`0` picks a free port).');
export const WS_PORT = setting('WS_PORT', 8765, port, 'Chat (WebSocket) port (`0` picks a free port).');
export const HOST = setting(
  'HOST',
  '127.0.0.1',
  host,
  'Interface both ports bind to. Set `0.0.0.0` to listen on every interface.',
);
export const LOG_LEVEL = setting(
  'LOG_LEVEL',
  'info',
  oneOf(LOG_LEVELS),
  '`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`. `info` writes one JSON line per request; `warn` is quiet.',
);
export const LOG_FORMAT = setting(
  'LOG_FORMAT',
  'json',
  oneOf(['json', 'pretty'] as const),
  '`json`: one JSON object a line, for collectors. `pretty`: lines for people (pino-pretty, a development dependency, when installed; else plain text).',
);
export const MAX_PAGE_SIZE = setting(
  'MAX_PAGE_SIZE',
  100,
  integer(1, 1_000_000),
  'Largest page of the user list; a larger `limit` is clamped to it.',
);
export const MAX_USERS = setting(
  'MAX_USERS',
  undefined,
  integer(0, 1_000_000_000),
  'Users stored at most (`0`: no cap). Past it creates get 507 `INSUFFICIENT_STORAGE`; reads, updates and deletes go on. See [Limits](operations.md#limits).',
  'users in memory: 40 % of the heap limit less 192 MiB ÷ 5 KiB (323 000 on a 4 GiB heap); with `DATABASE_URL`: `0`',
);
export const BODY_LIMIT = setting(
  'BODY_LIMIT',
  MIB,
  bytes(1, 1024 * MIB),
  'Largest request body (bytes, or with a unit: `64KiB`, `1MiB`, `1MB`). Larger bodies get 413.',
  '`1MiB`',
);
export const ROLES = setting(
  'ROLES',
  REQUIRED_ROLES,
  roles,
  `Allowed values of \`role\`, comma-separated. Must include ${REQUIRED_ROLES.map((role) => `\`${role}\``).join(' and ')}.`,
);
export const STRICT_VALIDATION = setting(
  'STRICT_VALIDATION',
  false,
  boolean,
  "`true`: PATCH applies the create rules to the fields it changes, and PUT/PATCH refuse an email held by another user (409). `false` is the contract's literal behaviour.",
);
export const REQUIRE_IF_MATCH = setting(
  'REQUIRE_IF_MATCH',
  false,
  boolean,
  '`true`: PUT, PATCH and DELETE of a user need `If-Match` with an ETag (428 `PRECONDITION_REQUIRED` without, or with `*`). See [Retries and concurrent edits](rest-api.md#retries-and-concurrent-edits).',
);
export const IDEMPOTENCY_KEY_TTL_SECONDS = setting(
  'IDEMPOTENCY_KEY_TTL_SECONDS',
  86_400,
  integer(1, 30 * 86_400),
  "How long a create's `Idempotency-Key` and its reply are kept (seconds); a repeat within it gets the same reply.",
);
export const IDEMPOTENCY_MAX_KEYS = setting(
  'IDEMPOTENCY_MAX_KEYS',
  100_000,
  integer(1, 100_000_000),
  'Idempotency keys kept at most, on every store; past it the oldest key is forgotten (a repeat of it is processed afresh). Each instance checks the SQL stores against a count it takes at most once a second.',
);
export const IDEMPOTENCY_MAX_KEYS_PER_PRINCIPAL = setting(
  'IDEMPOTENCY_MAX_KEYS_PER_PRINCIPAL',
  10_000,
  integer(1, 100_000_000),
  'Idempotency keys one principal keeps at most (an API key, a user, a token subject; every anonymous client together is one); past it its own oldest key is forgotten, so one client cannot push out the keys of others.',
);
export const IDEMPOTENCY_MAX_BYTES = setting(
  'IDEMPOTENCY_MAX_BYTES',
  32 * MIB,
  bytes(MIB, 1024 * MIB),
  'Users in memory only: heap bytes of idempotency keys and their replies kept at most (two bytes a character); past it the oldest key is forgotten. It is taken off the heap that the default `MAX_USERS` is derived from.',
  '`32MiB`',
);
export const SHUTDOWN_TIMEOUT_MS = setting(
  'SHUTDOWN_TIMEOUT_MS',
  10_000,
  integer(0, 600_000),
  'How long shutdown waits for requests in flight and chat close handshakes.',
);
export const WS_MAX_PAYLOAD = setting(
  'WS_MAX_PAYLOAD',
  256 * KIB,
  bytes(64 * KIB, 1024 * MIB),
  'Largest chat message; a larger one closes the connection with 1009. At least `64KiB`.',
  '`256KiB`',
);
export const WS_HEARTBEAT_MS = setting(
  'WS_HEARTBEAT_MS',
  30_000,
  integer(10, 3_600_000),
  "Interval of the server's protocol ping; a peer that did not answer the previous one is dropped.",
);
export const WS_MAX_BACKLOG = setting(
  'WS_MAX_BACKLOG',
  MIB,
  bytes(1, 1024 * MIB),
  'Unsent bytes a chat connection may hold; past it, it is closed as a slow consumer (1013) and the others carry on.',
  '`1MiB`',
);
export const WS_MAX_CONNECTIONS = setting(
  'WS_MAX_CONNECTIONS',
  10_000,
  integer(1, 1_000_000),
  'Open chat connections at most; further handshakes get HTTP 503.',
);
export const WS_MAX_CONNECTIONS_PER_CLIENT = setting(
  'WS_MAX_CONNECTIONS_PER_CLIENT',
  undefined,
  integer(1, 1_000_000),
  'Open chat connections of one client (its principal when authenticated, else its address); further handshakes of that client get HTTP 429 `TOO_MANY_CONNECTIONS`. Set, it applies even without `AUTH` and `RATE_LIMIT`.',
  '`32` (at most a quarter of `WS_MAX_CONNECTIONS`) with `AUTH` or `RATE_LIMIT` on, else unset (off)',
);
export const HEADERS_TIMEOUT_MS = setting(
  'HEADERS_TIMEOUT_MS',
  15_000,
  integer(100, 600_000),
  "A request's headers (REST) and a handshake (chat) must arrive within this; slower clients get 408 and are cut off.",
);
export const REQUEST_TIMEOUT_MS = setting(
  'REQUEST_TIMEOUT_MS',
  30_000,
  integer(100, 3_600_000),
  'The whole request, headers and body, must arrive within this (408). At least `HEADERS_TIMEOUT_MS`.',
);
export const KEEP_ALIVE_TIMEOUT_MS = setting(
  'KEEP_ALIVE_TIMEOUT_MS',
  72_000,
  integer(100, 3_600_000),
  'An idle kept-alive REST connection is closed after this.',
);
export const MAX_CONNECTIONS = setting(
  'MAX_CONNECTIONS',
  10_000,
  integer(1, 1_000_000),
  'Open TCP connections on the REST port at most; further connections are dropped on accept.',
);
export const MAX_CONNECTIONS_PER_ADDRESS = setting(
  'MAX_CONNECTIONS_PER_ADDRESS',
  undefined,
  integer(0, 1_000_000),
  'Open TCP connections of one peer address on each port (REST, chat); further ones are dropped on accept. Proxies that `TRUST_PROXY` lists by address are exempt (a hop count or `true` exempts none); `0`: no cap.',
  "`256` (at most a quarter of the port's cap: `MAX_CONNECTIONS` on the REST port, `WS_MAX_CONNECTIONS` on the chat port)",
);
export const FIRST_BYTE_TIMEOUT_MS = setting(
  'FIRST_BYTE_TIMEOUT_MS',
  5_000,
  integer(100, 600_000),
  'A connection on either port that has sent no byte within this is closed, without a reply. Not shorter than `HEADERS_TIMEOUT_MS`, it adds nothing (that deadline applies, with its 408).',
);
export const METRICS = setting(
  'METRICS',
  true,
  boolean,
  'Prometheus metrics at `GET /metrics` on the REST port; `false` removes the route.',
);
export const METRICS_AUTH = setting(
  'METRICS_AUTH',
  false,
  boolean,
  'With `AUTH` on, `true` makes `/metrics` need an admin credential; `false` leaves it public (see [Protection](protection.md)). `true` with `AUTH=none` is refused at start (exit 2).',
);
export const CONSOLE = setting(
  'CONSOLE',
  true,
  boolean,
  'The browser console at `/` on the REST port; `false` removes it.',
);
export const CHAT_HISTORY = setting(
  'CHAT_HISTORY',
  500,
  integer(0, 100_000),
  'Chat messages the room keeps (in Redis with `REDIS_URL`, shared by every instance) for clients that ask, on the handshake URL, for `?history=N` or `?since=<id>`; `0` turns history and recovery off. See [History and recovery](chat-protocol.md#history-and-recovery-opt-in).',
);
export const CHAT_HISTORY_BYTES = setting(
  'CHAT_HISTORY_BYTES',
  16 * MIB,
  bytes(KIB, 1024 * MIB),
  'At most this many bytes of chat messages in that history (counted as they are sent; the oldest go first). In memory, it is taken off the heap that the default `MAX_USERS` is derived from.',
  '`16MiB`',
);
// Why: the contract's notices cost O(M) frames per join; past ~10⁴ members under churn that is all the chat does.
export const CHAT_NOTICES_MAX_MEMBERS = setting(
  'CHAT_NOTICES_MAX_MEMBERS',
  undefined,
  integer(1, 10_000_000),
  'Unset (the default): every join and leave is told to every member. Set: while the room has more members than this, each instance tells its members at most one `user_join` and one `user_leave` a second, each saying how many joined or left and carrying the current `online_count`. See [Product rulings, Chat](decisions.md#chat) and [capacity.md](capacity.md#a-join-notice-policy-for-very-large-rooms).',
);
export const CHAT_PUBLIC_URL = setting(
  'CHAT_PUBLIC_URL',
  undefined,
  chatUrl,
  "The chat address the browser console connects to, when it is not the page's host with `WS_PORT` (behind a proxy).",
);
export const AUTH = setting(
  'AUTH',
  'none',
  oneOf(AUTH_SCHEMES),
  '`none`, `apikey`, `basic`, `jwt` or `oauth2`: see [Protection (opt-in)](protection.md).',
);
export const API_KEYS = setting(
  'API_KEYS',
  undefined,
  apiKeys,
  '`AUTH=apikey`: comma-separated `key[:role]` (keys of 16–256 characters; role `user` unless given: write `key:admin` for an admin).',
);
export const BASIC_USERS = setting(
  'BASIC_USERS',
  undefined,
  basicUsers,
  '`AUTH=basic`: comma-separated `name:hash[:role]`, hashes from `roster hash-password`; role `user` unless given (`name:hash:admin` for an admin).',
);
export const JWT_SECRET = setting(
  'JWT_SECRET',
  undefined,
  jwtSecret,
  '`AUTH=jwt`: the HS256 signing secret, at least 32 bytes.',
);
export const OAUTH2_JWKS_URL = setting(
  'OAUTH2_JWKS_URL',
  undefined,
  jwksUrl,
  "`AUTH=oauth2`: the authorization server's JWKS (https; http only on localhost).",
);
export const OAUTH2_ISSUER = setting('OAUTH2_ISSUER', undefined, text, '`AUTH=oauth2`: the required `iss` of tokens.');
export const OAUTH2_AUDIENCE = setting(
  'OAUTH2_AUDIENCE',
  undefined,
  text,
  '`AUTH=oauth2`: the required `aud` of tokens.',
);
export const OAUTH2_ACCEPT_JWT_TYP = setting(
  'OAUTH2_ACCEPT_JWT_TYP',
  undefined,
  boolean,
  "`AUTH=oauth2`: `true` also accepts tokens whose `typ` is `JWT` or missing, not only RFC 9068's `at+jwt`.",
  '`false`',
);
export const RATE_LIMIT = setting(
  'RATE_LIMIT',
  undefined,
  rate,
  'Requests per client, e.g. `100/minute`, `10/second`, `1000/hour`: REST (all but health), chat handshakes, chat messages.',
  '(unset: off)',
);
export const TRUST_PROXY = setting(
  'TRUST_PROXY',
  false,
  trustProxy,
  'Whether `X-Forwarded-For` is believed: `true`, a hop count, or a comma list of proxy addresses/CIDRs.',
);
export const TLS_CERT = setting(
  'TLS_CERT',
  undefined,
  text,
  'PEM certificate file (with `TLS_KEY`; both or neither): HTTPS and WSS on the same ports.',
);
export const TLS_KEY = setting('TLS_KEY', undefined, text, 'PEM private key file of `TLS_CERT` (both or neither).');
export const TLS_CIPHERS = setting(
  'TLS_CIPHERS',
  undefined,
  text,
  'With TLS: the OpenSSL cipher list. The default offers TLS 1.3 and, for TLS 1.2, only ECDHE with AES-GCM or ChaCha20-Poly1305 (no CBC, no SHA-1).',
  '(modern list)',
);
export const HSTS_MAX_AGE = setting(
  'HSTS_MAX_AGE',
  31_536_000,
  integer(0, 1_000_000_000),
  'With TLS and `SECURITY_HEADERS`: `max-age` of `Strict-Transport-Security`, in seconds (`0` makes browsers forget it).',
);
export const HSTS_INCLUDE_SUBDOMAINS = setting(
  'HSTS_INCLUDE_SUBDOMAINS',
  false,
  boolean,
  '`true` adds `includeSubDomains` to HSTS: only if every host under the domain speaks HTTPS.',
);
export const CORS_ORIGINS = setting(
  'CORS_ORIGINS',
  undefined,
  origins,
  'Comma-separated origins allowed cross-origin REST calls and chat connections; `*` only without `AUTH`.',
  '(unset: off)',
);
export const SECURITY_HEADERS = setting(
  'SECURITY_HEADERS',
  false,
  boolean,
  '`true`: security headers (CSP, `X-Frame-Options`, `Referrer-Policy`, `Permissions-Policy`, cross-origin isolation, HSTS over TLS, `Cache-Control: no-store` on authenticated replies, …) on every REST reply.',
);
export const DATABASE_URL = setting(
  'DATABASE_URL',
  undefined,
  databaseUrl,
  '`postgres://` or `postgresql://` URL: users live in PostgreSQL, shared by every instance on it. See [Running several instances](deployment.md#running-several-instances). `sqlite:<file>` (`sqlite:./roster.db`, `sqlite:///var/lib/roster/roster.db`): users live in that SQLite file, owned by this one process; `sqlite::memory:` for tests. See [Keeping users on disk](storage.md#keeping-users-on-disk-sqlite).',
  '(unset: users in memory)',
);
export const DATABASE_POOL_SIZE = setting(
  'DATABASE_POOL_SIZE',
  10,
  integer(1, 1000),
  'Connections to PostgreSQL per instance (only with `DATABASE_URL`).',
);
export const SQLITE_SYNCHRONOUS = setting(
  'SQLITE_SYNCHRONOUS',
  'NORMAL',
  sqliteSynchronous,
  'With `DATABASE_URL=sqlite:…`: `NORMAL` (an acknowledged write survives a crash or `kill -9` of the process) or `FULL` (it also survives a power cut or an operating-system crash, at the cost of a disk flush per write). See [Keeping users on disk](storage.md#keeping-users-on-disk-sqlite).',
);
export const CHANGES_MAX = setting(
  'CHANGES_MAX',
  undefined,
  integer(1, 100_000_000),
  'Changes the [change feed](rest-api.md#live-changes) keeps at most; a client resuming from an older one is told to reload (410 `CHANGES_RESET`, or a `reset` event). In memory, `CHANGES_MAX` × 2 KiB is taken off the heap that the default `MAX_USERS` is derived from.',
  'users in memory: `10000`; with `DATABASE_URL`: `100000`',
);
export const CHANGES_MAX_AGE_SECONDS = setting(
  'CHANGES_MAX_AGE_SECONDS',
  86_400,
  integer(1, 365 * 86_400),
  'Changes older than this (seconds) leave the change feed, whatever their count.',
);
export const CHANGES_MAX_BACKLOG = setting(
  'CHANGES_MAX_BACKLOG',
  MIB,
  bytes(64 * KIB, 1024 * MIB),
  'Unsent bytes a change stream (Server-Sent Events) may hold; past it the stream is closed and the client resumes from its last event id.',
  '`1MiB`',
);
export const CHANGES_MAX_STREAMS_PER_CLIENT = setting(
  'CHANGES_MAX_STREAMS_PER_CLIENT',
  16,
  integer(0, 1_000_000),
  'Open change streams (Server-Sent Events) of one client (its principal when authenticated, else its address); a further stream request gets HTTP 429 `TOO_MANY_CONNECTIONS` with `Retry-After`. `0`: no cap.',
);
export const REDIS_URL = setting(
  'REDIS_URL',
  undefined,
  engineUrl(['redis:', 'rediss:']),
  '`redis://` or `rediss://` URL: the chat room spans every instance on this Redis.',
  '(unset: one room per process)',
);

/** Every setting, in the order docs/configuration.md's table lists them: the order of their declarations above. */
export const SETTINGS: readonly Setting<unknown>[] = declared;
