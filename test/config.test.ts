/**
 * loadConfig: every default, valid overrides (one variable at a time, nothing else changes), and a bad
 * value for every variable, which must throw ConfigError naming it (docs/decisions.md, "Configuration").
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  automaticMaxUsers,
  ConfigError,
  loadConfig,
  WORST_CASE_BYTES_PER_CHANGE,
  type ChatConfig,
  type Config,
} from '../src/config/index.js';

/** The memory store's change log at worst (CHANGES_MAX's default), off the users' share of the heap. */
const CHANGES_HEAP = 10_000 * WORST_CASE_BYTES_PER_CHANGE;

const KIB = 1024;
const MIB = 1024 * 1024;

const DEFAULTS: Config = {
  port: 5000,
  wsPort: 8765,
  host: '127.0.0.1',
  logLevel: 'info',
  logFormat: 'json',
  maxPageSize: 100,
  // The default chat history (500 messages, 16 MiB) is kept in memory: its bytes are not the users'.
  maxUsers: automaticMaxUsers(undefined, 16 * MIB + 32 * MIB + CHANGES_HEAP),
  bodyLimit: MIB,
  roles: ['admin', 'user'],
  strictValidation: false,
  requireIfMatch: false,
  idempotencyKeyTtlMs: 86_400_000,
  shutdownTimeoutMs: 10_000,
  headersTimeoutMs: 15_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 72_000,
  maxConnections: 10_000,
  connections: { perAddress: 256, firstByteMs: 5000 },
  metrics: true,
  metricsAuth: false,
  console: true,
  chatPublicUrl: undefined,
  auth: { scheme: 'none', apiKeys: [], basicUsers: [], jwtSecret: undefined, oauth2: undefined },
  rateLimit: undefined,
  trustProxy: false,
  tls: undefined,
  hsts: { maxAge: 31_536_000, includeSubDomains: false },
  corsOrigins: undefined,
  securityHeaders: false,
  storage: {
    url: undefined,
    poolSize: 10,
    sqliteSynchronous: 'NORMAL',
    idempotencyMaxKeys: 100_000,
    idempotencyMaxKeysPerPrincipal: 10_000,
    idempotencyMaxBytes: 32 * MIB,
    changeBounds: { maxChanges: 10_000, maxAgeMs: 86_400_000 },
  },
  changesMaxBacklog: MIB,
  changesMaxStreamsPerClient: 16,
  redis: undefined,
  chat: {
    maxPayload: 256 * KIB,
    heartbeatMs: 30_000,
    maxBacklog: MIB,
    maxConnections: 10_000,
    maxConnectionsPerClient: undefined,
    handshakeTimeoutMs: 15_000,
    connections: { perAddress: 256, firstByteMs: 5000 },
    history: 500,
    historyBytes: 16 * MIB,
    noticesMaxMembers: undefined,
  },
};

type Patch = Partial<Omit<Config, 'chat'>> & { chat?: Partial<ChatConfig> };

/** The connection guard's limits as both ports get them. */
function guard(perAddress: number, firstByteMs: number | undefined): Patch {
  return { connections: { perAddress, firstByteMs }, chat: { connections: { perAddress, firstByteMs } } };
}

/** The defaults with `patch` applied: what loadConfig must return when only one variable is set. */
function expected(patch: Patch): Config {
  return { ...DEFAULTS, ...patch, chat: { ...DEFAULTS.chat, ...patch.chat } };
}

describe('loadConfig defaults', () => {
  test('an empty environment gives every default', () => {
    assert.deepEqual(loadConfig({}), DEFAULTS);
  });

  const variables = [
    'PORT',
    'WS_PORT',
    'HOST',
    'LOG_LEVEL',
    'MAX_PAGE_SIZE',
    'BODY_LIMIT',
    'ROLES',
    'STRICT_VALIDATION',
    'SHUTDOWN_TIMEOUT_MS',
    'WS_MAX_PAYLOAD',
    'WS_HEARTBEAT_MS',
    'WS_MAX_BACKLOG',
    'WS_MAX_CONNECTIONS',
    'WS_MAX_CONNECTIONS_PER_CLIENT',
    'CHAT_NOTICES_MAX_MEMBERS',
    'HEADERS_TIMEOUT_MS',
    'REQUEST_TIMEOUT_MS',
    'KEEP_ALIVE_TIMEOUT_MS',
    'MAX_CONNECTIONS',
    'MAX_CONNECTIONS_PER_ADDRESS',
    'FIRST_BYTE_TIMEOUT_MS',
    'METRICS',
    'METRICS_AUTH',
    'CONSOLE',
    'CHAT_PUBLIC_URL',
    'AUTH',
    'API_KEYS',
    'BASIC_USERS',
    'JWT_SECRET',
    'OAUTH2_JWKS_URL',
    'OAUTH2_ISSUER',
    'OAUTH2_AUDIENCE',
    'OAUTH2_ACCEPT_JWT_TYP',
    'RATE_LIMIT',
    'TRUST_PROXY',
    'TLS_CERT',
    'TLS_KEY',
    'TLS_CIPHERS',
    'HSTS_MAX_AGE',
    'HSTS_INCLUDE_SUBDOMAINS',
    'CORS_ORIGINS',
    'SECURITY_HEADERS',
    'DATABASE_URL',
    'DATABASE_POOL_SIZE',
    'REDIS_URL',
  ];
  for (const variable of variables) {
    test(`${variable} set to an empty or blank value means its default`, () => {
      assert.deepEqual(loadConfig({ [variable]: '' }), DEFAULTS);
      assert.deepEqual(loadConfig({ [variable]: '   ' }), DEFAULTS);
    });
  }

  test('unrelated variables are ignored', () => {
    assert.deepEqual(loadConfig({ HOME: '/root', NODE_ENV: 'production', port: '1234' }), DEFAULTS);
  });

  test('reads only the environment it is given, never process.env', () => {
    const saved = process.env.PORT;
    process.env.PORT = '1234';
    try {
      assert.equal(loadConfig({}).port, 5000);
    } finally {
      if (saved === undefined) delete process.env.PORT;
      else process.env.PORT = saved;
    }
  });
});

describe('loadConfig valid overrides', () => {
  const cases: [variable: string, value: string, patch: Patch][] = [
    ['PORT', '8080', { port: 8080 }],
    ['PORT', '0', { port: 0 }],
    ['PORT', '1', { port: 1 }],
    ['PORT', '65535', { port: 65_535 }],
    ['PORT', ' 3000 ', { port: 3000 }],
    ['WS_PORT', '9000', { wsPort: 9000 }],
    ['WS_PORT', '0', { wsPort: 0 }],
    ['WS_PORT', '65535', { wsPort: 65_535 }],
    ['HOST', '0.0.0.0', { host: '0.0.0.0' }],
    ['HOST', '::1', { host: '::1' }],
    ['HOST', 'localhost', { host: 'localhost' }],
    ['LOG_LEVEL', 'fatal', { logLevel: 'fatal' }],
    ['LOG_LEVEL', 'error', { logLevel: 'error' }],
    ['LOG_LEVEL', 'warn', { logLevel: 'warn' }],
    ['LOG_LEVEL', 'info', { logLevel: 'info' }],
    ['LOG_LEVEL', 'debug', { logLevel: 'debug' }],
    ['LOG_LEVEL', 'trace', { logLevel: 'trace' }],
    ['LOG_LEVEL', 'silent', { logLevel: 'silent' }],
    ['LOG_LEVEL', 'WARN', { logLevel: 'warn' }],
    ['MAX_PAGE_SIZE', '1', { maxPageSize: 1 }],
    ['MAX_PAGE_SIZE', '500', { maxPageSize: 500 }],
    ['BODY_LIMIT', '2048', { bodyLimit: 2048 }],
    ['BODY_LIMIT', '64KiB', { bodyLimit: 64 * KIB }],
    ['BODY_LIMIT', '1MiB', { bodyLimit: MIB }],
    ['BODY_LIMIT', '2MiB', { bodyLimit: 2 * MIB }],
    ['BODY_LIMIT', '64kib', { bodyLimit: 64 * KIB }],
    ['BODY_LIMIT', '64 KiB', { bodyLimit: 64 * KIB }],
    ['BODY_LIMIT', '100kB', { bodyLimit: 100_000 }],
    ['BODY_LIMIT', '1', { bodyLimit: 1 }],
    ['ROLES', 'admin,user', { roles: ['admin', 'user'] }],
    ['ROLES', 'admin,user,guest', { roles: ['admin', 'user', 'guest'] }],
    ['ROLES', ' user , admin ,editor', { roles: ['user', 'admin', 'editor'] }],
    ['ROLES', 'admin,user,admin', { roles: ['admin', 'user'] }],
    ['ROLES', 'admin,user,read-only,ops_team,v1.2', { roles: ['admin', 'user', 'read-only', 'ops_team', 'v1.2'] }],
    ['STRICT_VALIDATION', 'true', { strictValidation: true }],
    ['STRICT_VALIDATION', 'false', { strictValidation: false }],
    ['STRICT_VALIDATION', '1', { strictValidation: true }],
    ['STRICT_VALIDATION', '0', { strictValidation: false }],
    ['STRICT_VALIDATION', 'yes', { strictValidation: true }],
    ['STRICT_VALIDATION', 'no', { strictValidation: false }],
    ['STRICT_VALIDATION', 'TRUE', { strictValidation: true }],
    ['STRICT_VALIDATION', 'No', { strictValidation: false }],
    ['SHUTDOWN_TIMEOUT_MS', '0', { shutdownTimeoutMs: 0 }],
    ['SHUTDOWN_TIMEOUT_MS', '2500', { shutdownTimeoutMs: 2500 }],
    ['WS_MAX_PAYLOAD', '64KiB', { chat: { maxPayload: 64 * KIB } }],
    ['WS_MAX_PAYLOAD', '65536', { chat: { maxPayload: 65_536 } }],
    ['WS_MAX_PAYLOAD', '1MiB', { chat: { maxPayload: MIB } }],
    ['WS_HEARTBEAT_MS', '1000', { chat: { heartbeatMs: 1000 } }],
    ['WS_HEARTBEAT_MS', '120000', { chat: { heartbeatMs: 120_000 } }],
    ['WS_MAX_BACKLOG', '2048', { chat: { maxBacklog: 2048 } }],
    ['WS_MAX_BACKLOG', '4MiB', { chat: { maxBacklog: 4 * MIB } }],
    ['WS_MAX_BACKLOG', '64KiB', { chat: { maxBacklog: 64 * KIB } }],
    // The chat port's per-address cap follows: a quarter of it (MAX_CONNECTIONS_PER_ADDRESS unset).
    ['WS_MAX_CONNECTIONS', '1', { chat: { maxConnections: 1, connections: { perAddress: 1, firstByteMs: 5000 } } }],
    ['WS_MAX_CONNECTIONS', '50', { chat: { maxConnections: 50, connections: { perAddress: 12, firstByteMs: 5000 } } }],
    [
      'HEADERS_TIMEOUT_MS',
      '2000',
      {
        headersTimeoutMs: 2000,
        connections: { perAddress: 256, firstByteMs: undefined },
        chat: { handshakeTimeoutMs: 2000, connections: { perAddress: 256, firstByteMs: undefined } },
      },
    ],
    // Set, it applies even without AUTH or RATE_LIMIT (unset, it is off then: see below).
    ['WS_MAX_CONNECTIONS_PER_CLIENT', '1', { chat: { maxConnectionsPerClient: 1 } }],
    ['WS_MAX_CONNECTIONS_PER_CLIENT', '100', { chat: { maxConnectionsPerClient: 100 } }],
    [
      'HEADERS_TIMEOUT_MS',
      '5000',
      {
        headersTimeoutMs: 5000,
        connections: { perAddress: 256, firstByteMs: undefined },
        chat: { handshakeTimeoutMs: 5000, connections: { perAddress: 256, firstByteMs: undefined } },
      },
    ],
    ['HEADERS_TIMEOUT_MS', '30000', { headersTimeoutMs: 30_000, chat: { handshakeTimeoutMs: 30_000 } }],
    ['REQUEST_TIMEOUT_MS', '60000', { requestTimeoutMs: 60_000 }],
    ['REQUEST_TIMEOUT_MS', '15000', { requestTimeoutMs: 15_000 }],
    ['KEEP_ALIVE_TIMEOUT_MS', '5000', { keepAliveTimeoutMs: 5000 }],
    ['MAX_CONNECTIONS', '100', { maxConnections: 100, connections: { perAddress: 25, firstByteMs: 5000 } }],
    // One pair of settings for both ports: the REST port's guard and the chat's.
    ['MAX_CONNECTIONS_PER_ADDRESS', '0', guard(0, 5000)],
    ['MAX_CONNECTIONS_PER_ADDRESS', '8', guard(8, 5000)],
    ['FIRST_BYTE_TIMEOUT_MS', '1000', guard(256, 1000)],
    // Not shorter than HEADERS_TIMEOUT_MS (15 s by default), it adds nothing: that deadline ends silent sockets.
    ['FIRST_BYTE_TIMEOUT_MS', '60000', guard(256, undefined)],
    ['FIRST_BYTE_TIMEOUT_MS', '15000', guard(256, undefined)],
    ['METRICS', 'false', { metrics: false }],
    ['CONSOLE', 'off', { console: false }],
    ['CHAT_PUBLIC_URL', 'wss://chat.example.com/room', { chatPublicUrl: 'wss://chat.example.com/room' }],
    ['CHAT_PUBLIC_URL', 'ws://10.0.0.5:8765', { chatPublicUrl: 'ws://10.0.0.5:8765' }],
    ['CHAT_PUBLIC_URL', '/chat', { chatPublicUrl: '/chat' }],
    ['CHAT_PUBLIC_URL', 'https://example.com/chat', { chatPublicUrl: 'https://example.com/chat' }],
    ['AUTH', 'none', {}],
    // Protection on: the per-client chat connection limit takes its default too.
    ['RATE_LIMIT', '100/minute', { rateLimit: { max: 100, windowMs: 60_000 }, chat: { maxConnectionsPerClient: 32 } }],
    ['RATE_LIMIT', '10/second', { rateLimit: { max: 10, windowMs: 1000 }, chat: { maxConnectionsPerClient: 32 } }],
    [
      'RATE_LIMIT',
      '1000 / hour',
      { rateLimit: { max: 1000, windowMs: 3_600_000 }, chat: { maxConnectionsPerClient: 32 } },
    ],
    ['RATE_LIMIT', '5/s', { rateLimit: { max: 5, windowMs: 1000 }, chat: { maxConnectionsPerClient: 32 } }],
    ['TRUST_PROXY', 'false', {}],
    ['TRUST_PROXY', 'true', { trustProxy: true }],
    ['TRUST_PROXY', 'TRUE', { trustProxy: true }],
    ['TRUST_PROXY', '2', { trustProxy: 2 }],
    [
      'TRUST_PROXY',
      '10.0.0.0/8, 127.0.0.1,::1,fd00::/8',
      { trustProxy: ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8'] },
    ],
    ['CORS_ORIGINS', 'https://app.example.com', { corsOrigins: ['https://app.example.com'] }],
    [
      'CORS_ORIGINS',
      'https://a.example.com, http://localhost:3000',
      { corsOrigins: ['https://a.example.com', 'http://localhost:3000'] },
    ],
    ['CORS_ORIGINS', '*', { corsOrigins: ['*'] }],
    ['SECURITY_HEADERS', 'true', { securityHeaders: true }],
    [
      'DATABASE_URL',
      'postgres://127.0.0.1/test',
      {
        storage: {
          url: 'postgres://127.0.0.1/test',
          poolSize: 10,
          sqliteSynchronous: 'NORMAL',
          idempotencyMaxKeys: 100_000,
          idempotencyMaxKeysPerPrincipal: 10_000,
          idempotencyMaxBytes: 32 * MIB,
          changeBounds: { maxChanges: 100_000, maxAgeMs: 86_400_000 },
        },
        maxUsers: 0,
      },
    ],
    [
      'DATABASE_URL',
      'postgresql://roster:secret@db:5432/roster',
      {
        storage: {
          url: 'postgresql://roster:secret@db:5432/roster',
          poolSize: 10,
          sqliteSynchronous: 'NORMAL',
          idempotencyMaxKeys: 100_000,
          idempotencyMaxKeysPerPrincipal: 10_000,
          idempotencyMaxBytes: 32 * MIB,
          changeBounds: { maxChanges: 100_000, maxAgeMs: 86_400_000 },
        },
        maxUsers: 0,
      },
    ],
    [
      'DATABASE_URL',
      'sqlite:./roster.db',
      {
        storage: {
          url: 'sqlite:./roster.db',
          poolSize: 10,
          sqliteSynchronous: 'NORMAL',
          idempotencyMaxKeys: 100_000,
          idempotencyMaxKeysPerPrincipal: 10_000,
          idempotencyMaxBytes: 32 * MIB,
          changeBounds: { maxChanges: 100_000, maxAgeMs: 86_400_000 },
        },
        maxUsers: 0,
      },
    ],
    [
      'DATABASE_URL',
      'sqlite:///var/lib/roster/users.db',
      {
        storage: {
          url: 'sqlite:///var/lib/roster/users.db',
          poolSize: 10,
          sqliteSynchronous: 'NORMAL',
          idempotencyMaxKeys: 100_000,
          idempotencyMaxKeysPerPrincipal: 10_000,
          idempotencyMaxBytes: 32 * MIB,
          changeBounds: { maxChanges: 100_000, maxAgeMs: 86_400_000 },
        },
        maxUsers: 0,
      },
    ],
    [
      'DATABASE_URL',
      'sqlite::memory:',
      {
        storage: {
          url: 'sqlite::memory:',
          poolSize: 10,
          sqliteSynchronous: 'NORMAL',
          idempotencyMaxKeys: 100_000,
          idempotencyMaxKeysPerPrincipal: 10_000,
          idempotencyMaxBytes: 32 * MIB,
          changeBounds: { maxChanges: 100_000, maxAgeMs: 86_400_000 },
        },
        maxUsers: 0,
      },
    ],
    // Each backend's setting is read whichever backend DATABASE_URL names (here the memory store).
    [
      'SQLITE_SYNCHRONOUS',
      'full',
      {
        storage: {
          url: undefined,
          poolSize: 10,
          sqliteSynchronous: 'FULL',
          idempotencyMaxKeys: 100_000,
          idempotencyMaxKeysPerPrincipal: 10_000,
          idempotencyMaxBytes: 32 * MIB,
          changeBounds: { maxChanges: 10_000, maxAgeMs: 86_400_000 },
        },
      },
    ],
    [
      'DATABASE_POOL_SIZE',
      '4',
      {
        storage: {
          url: undefined,
          poolSize: 4,
          sqliteSynchronous: 'NORMAL',
          idempotencyMaxKeys: 100_000,
          idempotencyMaxKeysPerPrincipal: 10_000,
          idempotencyMaxBytes: 32 * MIB,
          changeBounds: { maxChanges: 10_000, maxAgeMs: 86_400_000 },
        },
      },
    ],
    ['LOG_FORMAT', 'pretty', { logFormat: 'pretty' }],
    ['LOG_FORMAT', 'JSON', {}],
    // The history then lives in Redis: none of the heap is set aside for it.
    [
      'REDIS_URL',
      'redis://127.0.0.1:6379',
      { redis: { url: 'redis://127.0.0.1:6379' }, maxUsers: automaticMaxUsers(undefined, 32 * MIB + CHANGES_HEAP) },
    ],
    [
      'REDIS_URL',
      'rediss://cache:6380/2',
      { redis: { url: 'rediss://cache:6380/2' }, maxUsers: automaticMaxUsers(undefined, 32 * MIB + CHANGES_HEAP) },
    ],
    [
      'CHAT_HISTORY_BYTES',
      '1MiB',
      { chat: { historyBytes: MIB }, maxUsers: automaticMaxUsers(undefined, MIB + 32 * MIB + CHANGES_HEAP) },
    ],
  ];

  test('DATABASE_URL=sqlite: with SQLITE_SYNCHRONOUS=FULL', () => {
    assert.deepEqual(
      loadConfig({ DATABASE_URL: 'sqlite:data/roster.db', SQLITE_SYNCHRONOUS: 'FULL' }),
      expected({
        storage: {
          url: 'sqlite:data/roster.db',
          poolSize: 10,
          sqliteSynchronous: 'FULL',
          idempotencyMaxKeys: 100_000,
          idempotencyMaxKeysPerPrincipal: 10_000,
          idempotencyMaxBytes: 32 * MIB,
          changeBounds: { maxChanges: 100_000, maxAgeMs: 86_400_000 },
        },
        maxUsers: 0,
      }),
    );
  });

  for (const [variable, value, patch] of cases) {
    test(`${variable}=${JSON.stringify(value)} changes only that setting`, () => {
      assert.deepEqual(loadConfig({ [variable]: value }), expected(patch));
    });
  }

  test('several overrides at once', () => {
    const config = loadConfig({
      PORT: '0',
      WS_PORT: '0',
      HOST: '0.0.0.0',
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'pretty',
      MAX_PAGE_SIZE: '25',
      BODY_LIMIT: '64KiB',
      ROLES: 'admin,user,guest',
      STRICT_VALIDATION: 'yes',
      SHUTDOWN_TIMEOUT_MS: '500',
      WS_MAX_PAYLOAD: '1MiB',
      WS_HEARTBEAT_MS: '5000',
      WS_MAX_BACKLOG: '2048',
      WS_MAX_CONNECTIONS: '3',
      HEADERS_TIMEOUT_MS: '2000',
      REQUEST_TIMEOUT_MS: '4000',
      KEEP_ALIVE_TIMEOUT_MS: '1000',
      MAX_CONNECTIONS: '50',
      DATABASE_URL: 'postgres://127.0.0.1:5432/roster',
      DATABASE_POOL_SIZE: '3',
      REDIS_URL: 'redis://127.0.0.1:6379/1',
      CHAT_NOTICES_MAX_MEMBERS: '5000',
    });
    assert.deepEqual(config, {
      port: 0,
      wsPort: 0,
      host: '0.0.0.0',
      logLevel: 'warn',
      logFormat: 'pretty',
      maxPageSize: 25,
      bodyLimit: 64 * KIB,
      roles: ['admin', 'user', 'guest'],
      strictValidation: true,
      requireIfMatch: false,
      idempotencyKeyTtlMs: 86_400_000,
      shutdownTimeoutMs: 500,
      headersTimeoutMs: 2000,
      requestTimeoutMs: 4000,
      keepAliveTimeoutMs: 1000,
      maxConnections: 50,
      connections: { perAddress: 12, firstByteMs: undefined },
      metrics: true,
      metricsAuth: false,
      console: true,
      chatPublicUrl: undefined,
      auth: DEFAULTS.auth,
      rateLimit: undefined,
      trustProxy: false,
      tls: undefined,
      hsts: DEFAULTS.hsts,
      corsOrigins: undefined,
      securityHeaders: false,
      storage: {
        url: 'postgres://127.0.0.1:5432/roster',
        poolSize: 3,
        sqliteSynchronous: 'NORMAL',
        idempotencyMaxKeys: 100_000,
        idempotencyMaxKeysPerPrincipal: 10_000,
        idempotencyMaxBytes: 32 * MIB,
        changeBounds: { maxChanges: 100_000, maxAgeMs: 86_400_000 },
      },
      maxUsers: 0,
      changesMaxBacklog: MIB,
      changesMaxStreamsPerClient: 16,
      redis: { url: 'redis://127.0.0.1:6379/1' },
      chat: {
        maxPayload: MIB,
        heartbeatMs: 5000,
        maxBacklog: 2048,
        maxConnections: 3,
        maxConnectionsPerClient: undefined,
        handshakeTimeoutMs: 2000,
        connections: { perAddress: 1, firstByteMs: undefined },
        history: 500,
        historyBytes: 16 * MIB,
        noticesMaxMembers: 5000,
      },
    });
  });
});

describe('loadConfig bad values throw ConfigError naming the variable', () => {
  const cases: [variable: string, value: string][] = [
    ['PORT', 'abc'],
    ['HEADERS_TIMEOUT_MS', '40000'],
    ['HEADERS_TIMEOUT_MS', '50'],
    ['HEADERS_TIMEOUT_MS', '1s'],
    ['FIRST_BYTE_TIMEOUT_MS', '50'],
    ['FIRST_BYTE_TIMEOUT_MS', '5s'],
    ['MAX_CONNECTIONS_PER_ADDRESS', '-1'],
    ['MAX_CONNECTIONS_PER_ADDRESS', 'many'],
    ['REQUEST_TIMEOUT_MS', '0'],
    ['KEEP_ALIVE_TIMEOUT_MS', '-1'],
    ['MAX_CONNECTIONS', '0'],
    ['MAX_CONNECTIONS', 'many'],
    ['METRICS', 'sometimes'],
    ['CHAT_PUBLIC_URL', 'ftp://example.com'],
    ['CHAT_PUBLIC_URL', '//evil.example.com'],
    ['CHAT_PUBLIC_URL', 'not a url'],
    ['PORT', '70000'],
    ['PORT', '65536'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['PORT', '1e3'],
    ['PORT', '0x50'],
    ['PORT', '80 81'],
    ['WS_PORT', '-1'],
    ['WS_PORT', 'abc'],
    ['WS_PORT', '99999'],
    ['LOG_LEVEL', 'loud'],
    ['LOG_FORMAT', 'colour'],
    ['LOG_LEVEL', 'verbose'],
    ['LOG_LEVEL', '30'],
    ['MAX_PAGE_SIZE', '0'],
    ['MAX_PAGE_SIZE', '-5'],
    ['MAX_PAGE_SIZE', 'ten'],
    ['MAX_PAGE_SIZE', '1.5'],
    ['BODY_LIMIT', '12XB'],
    ['BODY_LIMIT', '0'],
    ['BODY_LIMIT', 'abc'],
    ['BODY_LIMIT', '-1'],
    ['BODY_LIMIT', '1.5MiB'],
    ['BODY_LIMIT', 'MiB'],
    // Names of Object.prototype's are no unit.
    ['BODY_LIMIT', '5constructor'],
    ['WS_MAX_PAYLOAD', '1toString'],
    ['RATE_LIMIT', '5/constructor'],
    ['RATE_LIMIT', '5/__proto__'],
    ['ROLES', 'admin'],
    ['ROLES', 'user'],
    ['ROLES', 'guest,editor'],
    ['ROLES', 'a b'],
    ['ROLES', 'admin,user,a b'],
    ['ROLES', 'admin;user'],
    ['STRICT_VALIDATION', 'maybe'],
    ['STRICT_VALIDATION', '2'],
    ['STRICT_VALIDATION', 'truthy'],
    ['SHUTDOWN_TIMEOUT_MS', 'abc'],
    ['SHUTDOWN_TIMEOUT_MS', '-1'],
    ['SHUTDOWN_TIMEOUT_MS', '10s'],
    ['WS_MAX_PAYLOAD', '1000'],
    ['WS_MAX_PAYLOAD', '65535'],
    ['WS_MAX_PAYLOAD', '63KiB'],
    ['WS_MAX_PAYLOAD', 'abc'],
    ['WS_MAX_PAYLOAD', '12XB'],
    ['WS_HEARTBEAT_MS', 'abc'],
    ['WS_HEARTBEAT_MS', '-1'],
    ['WS_HEARTBEAT_MS', '30s'],
    ['WS_MAX_BACKLOG', '0'],
    ['WS_MAX_BACKLOG', 'abc'],
    ['WS_MAX_BACKLOG', '1XB'],
    ['WS_MAX_CONNECTIONS', '0'],
    ['WS_MAX_CONNECTIONS', '-1'],
    ['WS_MAX_CONNECTIONS', 'many'],
    ['WS_MAX_CONNECTIONS_PER_CLIENT', '0'],
    ['WS_MAX_CONNECTIONS_PER_CLIENT', '-1'],
    ['WS_MAX_CONNECTIONS_PER_CLIENT', 'lots'],
    ['CHAT_NOTICES_MAX_MEMBERS', '0'],
    ['CHAT_NOTICES_MAX_MEMBERS', 'many'],
    ['DATABASE_URL', 'mysql://127.0.0.1/test'],
    ['DATABASE_URL', 'not a url'],
    ['DATABASE_URL', 'sqlite:'],
    ['SQLITE_SYNCHRONOUS', 'OFF'],
    ['DATABASE_POOL_SIZE', '0'],
    ['DATABASE_POOL_SIZE', 'ten'],
    ['REDIS_URL', 'http://127.0.0.1:6379'],
    ['REDIS_URL', '127.0.0.1:6379'],
    // Not a host at all: refused here, not later inside listen().
    ['HOST', 'http://0.0.0.0:5000'],
  ];

  for (const [variable, value] of cases) {
    test(`${variable}=${JSON.stringify(value)}`, () => {
      assert.throws(
        () => loadConfig({ [variable]: value }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, `expected ConfigError, got ${String(error)}`);
          assert.ok(error instanceof Error);
          assert.equal(error.name, 'ConfigError');
          assert.equal(error.variable, variable);
          assert.match(error.message, new RegExp(`\\b${variable}\\b`), 'the message names the variable');
          assert.doesNotMatch(error.message, /\n/, 'the message is one line (main.ts prints it as is)');
          return true;
        },
      );
    });
  }

  test('a bad value is reported even when other variables are valid', () => {
    assert.throws(
      () => loadConfig({ PORT: '8080', WS_PORT: '9000', LOG_LEVEL: 'loud', ROLES: 'admin,user' }),
      (error: unknown) => error instanceof ConfigError && error.variable === 'LOG_LEVEL',
    );
  });
});

describe('loadConfig: MAX_CONNECTIONS_PER_ADDRESS', () => {
  test("unset: 256, at most a quarter of each port's own cap (at least 1); set, it wins on both ports", () => {
    const perAddress = (env: Record<string, string>) => {
      const config = loadConfig(env);
      return [config.connections.perAddress, config.chat.connections.perAddress];
    };
    assert.deepEqual(perAddress({}), [256, 256]);
    assert.deepEqual(perAddress({ MAX_CONNECTIONS: '200' }), [50, 256], 'the REST port: a quarter of MAX_CONNECTIONS');
    assert.deepEqual(perAddress({ WS_MAX_CONNECTIONS: '100' }), [256, 25], 'the chat port: of WS_MAX_CONNECTIONS');
    assert.deepEqual(perAddress({ MAX_CONNECTIONS: '1024', WS_MAX_CONNECTIONS: '3' }), [256, 1]);
    assert.deepEqual(perAddress({ MAX_CONNECTIONS: '1', WS_MAX_CONNECTIONS: '1' }), [1, 1]);
    assert.deepEqual(perAddress({ MAX_CONNECTIONS: '200', MAX_CONNECTIONS_PER_ADDRESS: '300' }), [300, 300]);
    assert.deepEqual(perAddress({ MAX_CONNECTIONS: '200', MAX_CONNECTIONS_PER_ADDRESS: '0' }), [0, 0], '0: no cap');
  });
});

describe('loadConfig: protection settings (AUTH and its credentials, TLS, CORS)', () => {
  const KEY = 'k3y-0123456789abcdef';
  const SECRET = 's'.repeat(32);

  test('WS_MAX_CONNECTIONS_PER_CLIENT: 32 by default with AUTH or RATE_LIMIT on, none without; set, it wins', () => {
    assert.equal(loadConfig({}).chat.maxConnectionsPerClient, undefined);
    assert.equal(loadConfig({ AUTH: 'jwt', JWT_SECRET: SECRET }).chat.maxConnectionsPerClient, 32);
    assert.equal(loadConfig({ RATE_LIMIT: '10/second' }).chat.maxConnectionsPerClient, 32);
    // Under a small global cap, the default is a quarter of it (at least 1): one client cannot take every slot.
    for (const [global, perClient] of [
      ['10', 2],
      ['100', 25],
      ['128', 32],
      ['3', 1],
      ['1', 1],
    ] as const)
      assert.equal(
        loadConfig({ RATE_LIMIT: '10/second', WS_MAX_CONNECTIONS: global }).chat.maxConnectionsPerClient,
        perClient,
        `WS_MAX_CONNECTIONS=${global}`,
      );
    assert.equal(
      loadConfig({ AUTH: 'jwt', JWT_SECRET: SECRET, WS_MAX_CONNECTIONS_PER_CLIENT: '4' }).chat.maxConnectionsPerClient,
      4,
    );
  });

  test('AUTH=apikey: keys with an optional role, user (a reader) by default', () => {
    const config = loadConfig({ AUTH: 'apikey', API_KEYS: `${KEY}:admin, ${KEY}-reader` });
    assert.deepEqual(config.auth, {
      scheme: 'apikey',
      apiKeys: [
        { key: KEY, role: 'admin' },
        { key: `${KEY}-reader`, role: 'user' },
      ],
      basicUsers: [],
      jwtSecret: undefined,
      oauth2: undefined,
    });
  });

  test('AUTH=basic: name:hash[:role]', () => {
    const hash = 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g';
    const config = loadConfig({ AUTH: 'basic', BASIC_USERS: `ada:${hash}:admin,bob:${hash}` });
    assert.deepEqual(config.auth.basicUsers, [
      { name: 'ada', hash, role: 'admin' },
      { name: 'bob', hash, role: 'user' },
    ]);
  });

  test('AUTH=jwt and AUTH=oauth2', () => {
    assert.equal(loadConfig({ AUTH: 'jwt', JWT_SECRET: SECRET }).auth.jwtSecret, SECRET);
    const oauth2 = {
      OAUTH2_JWKS_URL: 'https://idp.example.com/.well-known/jwks.json',
      OAUTH2_ISSUER: 'https://idp.example.com/',
      OAUTH2_AUDIENCE: 'roster',
    };
    assert.deepEqual(loadConfig({ AUTH: 'oauth2', ...oauth2 }).auth.oauth2, {
      jwksUrl: oauth2.OAUTH2_JWKS_URL,
      issuer: oauth2.OAUTH2_ISSUER,
      audience: 'roster',
      acceptJwtTyp: false,
    });
    assert.equal(
      loadConfig({ AUTH: 'oauth2', ...oauth2, OAUTH2_ACCEPT_JWT_TYP: 'true' }).auth.oauth2?.acceptJwtTyp,
      true,
    );
    assert.equal(
      loadConfig({ AUTH: 'oauth2', ...oauth2, OAUTH2_JWKS_URL: 'http://127.0.0.1:9999/jwks' }).auth.oauth2?.jwksUrl,
      'http://127.0.0.1:9999/jwks',
    );
  });

  const oauth2 = {
    OAUTH2_JWKS_URL: 'https://idp.example.com/jwks',
    OAUTH2_ISSUER: 'https://idp.example.com/',
    OAUTH2_AUDIENCE: 'roster',
  };
  const bad: [variable: string, env: Record<string, string>][] = [
    ['AUTH', { AUTH: 'token' }],
    ['API_KEYS', { AUTH: 'apikey' }],
    ['API_KEYS', { AUTH: 'apikey', API_KEYS: 'short' }],
    ['API_KEYS', { AUTH: 'apikey', API_KEYS: `${KEY}:a b` }],
    ['API_KEYS', { AUTH: 'apikey', API_KEYS: `${KEY}:admin:extra` }],
    ['API_KEYS', { API_KEYS: KEY }],
    ['BASIC_USERS', { AUTH: 'basic' }],
    ['BASIC_USERS', { AUTH: 'basic', BASIC_USERS: 'ada:plaintext-password' }],
    ['BASIC_USERS', { AUTH: 'basic', BASIC_USERS: 'ada' }],
    ['BASIC_USERS', { AUTH: 'basic', BASIC_USERS: 'ada:scrypt$3$8$1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA' }],
    ['JWT_SECRET', { AUTH: 'jwt' }],
    ['JWT_SECRET', { AUTH: 'jwt', JWT_SECRET: 's'.repeat(31) }],
    ['JWT_SECRET', { AUTH: 'apikey', API_KEYS: KEY, JWT_SECRET: SECRET }],
    ['OAUTH2_JWKS_URL', { AUTH: 'oauth2', OAUTH2_ISSUER: 'x', OAUTH2_AUDIENCE: 'y' }],
    ['OAUTH2_ISSUER', { AUTH: 'oauth2', OAUTH2_JWKS_URL: oauth2.OAUTH2_JWKS_URL, OAUTH2_AUDIENCE: 'y' }],
    ['OAUTH2_AUDIENCE', { AUTH: 'oauth2', OAUTH2_JWKS_URL: oauth2.OAUTH2_JWKS_URL, OAUTH2_ISSUER: 'x' }],
    ['OAUTH2_JWKS_URL', { AUTH: 'oauth2', ...oauth2, OAUTH2_JWKS_URL: 'http://idp.example.com/jwks' }],
    ['OAUTH2_JWKS_URL', { AUTH: 'oauth2', ...oauth2, OAUTH2_JWKS_URL: 'not a url' }],
    ['RATE_LIMIT', { RATE_LIMIT: '100' }],
    ['RATE_LIMIT', { RATE_LIMIT: '0/minute' }],
    ['RATE_LIMIT', { RATE_LIMIT: '10/fortnight' }],
    ['RATE_LIMIT', { RATE_LIMIT: '-1/second' }],
    ['TRUST_PROXY', { TRUST_PROXY: 'maybe' }],
    ['TRUST_PROXY', { TRUST_PROXY: '10.0.0.0/33' }],
    ['TRUST_PROXY', { TRUST_PROXY: '10.0.0.1,example.com' }],
    ['TLS_CERT', { TLS_KEY: '/nonexistent/key.pem' }],
    ['TLS_KEY', { TLS_CERT: '/nonexistent/cert.pem' }],
    ['TLS_CERT', { TLS_CERT: '/nonexistent/cert.pem', TLS_KEY: '/nonexistent/key.pem' }],
    ['TLS_CERT', { TLS_CERT: '/etc/hostname', TLS_KEY: '/etc/hostname' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'https://app.example.com/' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'app.example.com' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: 'https://a.example.com,*' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: '*', AUTH: 'apikey', API_KEYS: KEY }],
    ['SECURITY_HEADERS', { SECURITY_HEADERS: 'sometimes' }],
    ['OAUTH2_ACCEPT_JWT_TYP', { OAUTH2_ACCEPT_JWT_TYP: 'true' }],
    ['OAUTH2_ACCEPT_JWT_TYP', { AUTH: 'oauth2', ...oauth2, OAUTH2_ACCEPT_JWT_TYP: 'maybe' }],
    ['TLS_CIPHERS', { TLS_CIPHERS: 'ECDHE-RSA-AES128-GCM-SHA256' }],
    ['HSTS_MAX_AGE', { HSTS_MAX_AGE: '-1' }],
    ['HSTS_INCLUDE_SUBDOMAINS', { HSTS_INCLUDE_SUBDOMAINS: 'sometimes' }],
    ['METRICS_AUTH', { METRICS_AUTH: 'sometimes' }],
    // It needs AUTH: with none there is no admin credential, and /metrics would stay public unsaid.
    ['METRICS_AUTH', { METRICS_AUTH: 'true' }],
    ['METRICS_AUTH', { METRICS_AUTH: 'true', AUTH: 'none' }],
  ];
  for (const [variable, env] of bad) {
    test(`${JSON.stringify(env)} -> ConfigError naming ${variable}`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError, String(error));
          assert.equal(error.variable, variable, error.message);
          assert.doesNotMatch(error.message, /\n/);
          assert.ok(!error.message.includes(KEY), 'a key is never echoed');
          return true;
        },
      );
    });
  }
});
