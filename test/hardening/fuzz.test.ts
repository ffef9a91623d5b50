/**
 * Property-based fuzzing of both ports, with fast-check over real sockets.
 *
 * Generated: REST requests (methods, paths, query strings, headers, content types and bodies, from
 * valid users through near-valid ones to random JSON, strings and bytes), raw bytes instead of HTTP,
 * and chat frames (random opcodes, flags, masks, lengths and payloads).
 * Invariants, after every run and at the end: no 5xx; every error is the JSON envelope with the JSON
 * content type and the common headers; the store stays consistent (every listed user can be fetched,
 * identical; pagination.total equals the users listed over all pages; emails unique case-insensitively
 * after trimming; any list query's page equals the reference query of src/users/query.ts over every
 * user); the chat room counts out every fuzzed connection; the process keeps serving (the
 * shared health check, users planted before the fuzzing intact).
 *
 * The service runs with STRICT_VALIDATION=true: by the contract the default PUT and PATCH may make two
 * users share an email, which would make the uniqueness invariant false for legitimate reasons.
 *
 * FUZZ_RUNS sets the runs per property (default 100; e.g. FUZZ_RUNS=5000 for a long run). The seed is
 * fast-check's random one; a failure prints it with its path, and FUZZ_SEED / FUZZ_PATH replay it.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import {
  assertCommonHeaders,
  assertErrorEnvelope,
  ChatClient,
  closePayload,
  encodeFrame,
  Opcode,
  parseHead,
  plainRequest,
  RawClient,
  roomSettles,
  startHardened,
  USER_KEYS,
  within,
  type Frame,
  type Hardened,
  type UserRecord,
} from '../support/index.js';
import { queryUsers } from '../../src/users/query.js';
import type { User } from '../../src/users/schema.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);
assert.ok(
  Number.isInteger(RUNS) && RUNS > 0,
  `FUZZ_RUNS must be a positive whole number (got ${process.env.FUZZ_RUNS})`,
);
/** Options of every fc.assert: the runs, and a replay when asked for. */
const params = <T>(runs = RUNS): fc.Parameters<T> => ({
  numRuns: runs,
  ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}),
  ...(process.env.FUZZ_PATH ? { path: process.env.FUZZ_PATH } : {}),
});

let roster: Hardened;
let observer: ChatClient;
before(async () => {
  roster = await startHardened({
    STRICT_VALIDATION: 'true',
    BODY_LIMIT: '16KiB',
    HEADERS_TIMEOUT_MS: '3000',
    REQUEST_TIMEOUT_MS: '3000',
  });
  observer = new ChatClient(roster.running.wsUrl);
  observer.ws.on('error', () => {});
  await within(
    observer.next((m) => m.type === 'system'),
    5000,
    "the observer's welcome",
  );
});
after(async () => {
  observer.ws.terminate();
  await roster.stop();
});

const restPort = () => Number(new URL(roster.running.origin).port);

// ---------------------------------------------------------------------------------------------------
// The wire: one request per connection, read until the server closes.

interface Reply {
  status: number;
  statusLine: string;
  headers: Record<string, string>;
  body: string;
}

/** Writes `bytes` (half-closing after them if asked) and collects everything until the server closes. */
async function exchange(
  port: number,
  bytes: Buffer,
  options: { halfClose?: boolean; timeoutMs?: number } = {},
): Promise<Buffer> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {});
  await within(once(socket, 'connect'), 5000, 'connect');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const closed = once(socket, 'close');
  if (options.halfClose) socket.end(bytes);
  else socket.write(bytes);
  try {
    await within(closed, options.timeoutMs ?? 5000, 'the server to answer and close');
  } finally {
    socket.destroy();
  }
  return Buffer.concat(chunks);
}

/** Parses one HTTP/1.1 response; the body by Content-Length or chunks (none for HEAD). */
function parseReply(bytes: Buffer, method: string): Reply {
  const end = bytes.indexOf('\r\n\r\n');
  assert.ok(end > 0, `a response head, got ${JSON.stringify(bytes.toString('latin1').slice(0, 200))}`);
  const head = parseHead(bytes.subarray(0, end).toString('latin1'));
  assert.ok(Number.isInteger(head.status), `a status line: ${head.statusLine}`);
  let body = bytes.subarray(end + 4);
  if (head.headers['transfer-encoding']?.toLowerCase() === 'chunked') body = dechunk(body);
  else if (head.headers['content-length'] !== undefined && method !== 'HEAD') {
    const length = Number(head.headers['content-length']);
    assert.ok(body.length >= length, `a body of the declared ${length} bytes, got ${body.length}`);
    body = body.subarray(0, length);
  }
  if (method === 'HEAD' || head.status === 204) assert.equal(body.length, 0, `no body on ${method} ${head.status}`);
  return { status: head.status, statusLine: head.statusLine, headers: head.headers, body: body.toString('utf8') };
}

function dechunk(bytes: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', offset);
    assert.ok(lineEnd >= 0, 'a complete chunked body');
    const size = parseInt(bytes.subarray(offset, lineEnd).toString('latin1'), 16);
    if (size === 0) return Buffer.concat(parts);
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    offset = lineEnd + 2 + size + 2;
  }
}

/**
 * Replies outside the success envelope: the browser console, the reference page, the metrics text and
 * the OpenAPI document (their errors are still in the error envelope).
 */
const PAGES = /^\/(?:$|\?|console\/|metrics(?:$|\?)|api\/v1\/openapi\.json(?:$|\?)|api\/v1\/reference(?:$|[/?]))/;

/** The invariants of a single reply: never 5xx; errors in the envelope; successes in theirs. */
function assertWellFormed(reply: Reply, method: string, what: string, path = ''): void {
  assert.ok(
    reply.status >= 200 && reply.status < 500,
    `${what}: status ${reply.statusLine}; ${reply.body.slice(0, 300)}`,
  );
  assertCommonHeaders(reply.headers, what);
  if (reply.status === 204 || method === 'HEAD') return;
  if (reply.status < 400 && PAGES.test(path)) return;
  assert.equal(reply.headers['content-type'], 'application/json; charset=utf-8', `${what}: content type`);
  if (reply.status >= 400) {
    assertErrorEnvelope({ status: reply.status, headers: reply.headers, text: reply.body }, {}, what);
    return;
  }
  const body = JSON.parse(reply.body) as { status?: unknown; message?: unknown };
  assert.equal(body.status, 'success', `${what}: ${reply.body.slice(0, 300)}`);
  assert.equal(typeof body.message, 'string', what);
}

// ---------------------------------------------------------------------------------------------------
// The store's invariants.

/** Ids the fuzzer may aim PUT, PATCH and DELETE at: users it created, never the planted baseline. */
let fuzzIds: string[] = [];
/** Every user, in creation order, as of the last walk. */
let everyone: UserRecord[] = [];

/**
 * Walks every page: total equals the users listed, ids are unique, emails unique case-insensitively
 * after trimming (strict mode), every user has exactly the user's fields. With `fetchEach`, every user
 * listed is fetched and must be identical.
 */
async function assertStoreConsistent(fetchEach: boolean): Promise<void> {
  const users: UserRecord[] = [];
  let total = -1;
  for (let page = 1; ; page++) {
    const list = await plainRequest(`${roster.running.api}/users?limit=100&page=${page}&order=asc`);
    assert.equal(list.status, 200, list.text);
    const { pagination } = list.body.data as { pagination: { total: number; pages: number; limit: number } };
    if (total === -1) total = pagination.total;
    assert.equal(pagination.total, total, 'the total does not change while walking');
    users.push(...(list.body.data.users as UserRecord[]));
    if (page >= pagination.pages) break;
  }
  assert.equal(users.length, total, 'pagination.total equals the users listed over all pages');
  assert.equal(new Set(users.map((u) => u.id)).size, users.length, 'no user listed twice');
  const keys = users.map((u) => u.email.trim().toLowerCase());
  const duplicates = keys.filter((key, i) => keys.indexOf(key) !== i);
  assert.deepEqual(duplicates, [], 'emails are unique case-insensitively');
  for (const user of users)
    assert.deepEqual(Object.keys(user).sort(), USER_KEYS, `user ${user.id} has only the user's fields`);
  if (fetchEach) {
    for (const user of users) {
      const one = await plainRequest(`${roster.running.api}/users/${user.id}`);
      assert.equal(one.status, 200, `listed user ${user.id} can be fetched`);
      assert.deepEqual(one.body.data, user, `listed user ${user.id} is fetched identical`);
    }
  }
  const baseline = new Set(roster.baseline.map((u) => u.id));
  for (const id of baseline)
    assert.ok(
      users.some((u) => u.id === id),
      `baseline user ${id} still listed`,
    );
  fuzzIds = users.map((u) => u.id).filter((id) => !baseline.has(id));
  everyone = users;
}

/** A list query: sort by any field (or none), either order, role and search filters, any page. */
const listQuery = fc.record(
  {
    sort: fc.constantFrom(
      'created_at',
      'updated_at',
      'name',
      'email',
      'role',
      'id',
      'nope',
      '__proto__',
      'constructor',
    ),
    order: fc.constantFrom('asc', 'desc', 'DESC', ''),
    role: fc.constantFrom('admin', 'user', 'Admin', ''),
    search: fc.oneof(
      fc.constantFrom('a', 'ANN', 'example', '@', '😀', 'e\u0301', '', ' '),
      fc.string({ maxLength: 2 }),
    ),
    limit: fc.constantFrom(1, 3, 10, 100),
    page: fc.constantFrom(1, 2, 3),
  },
  { requiredKeys: ['limit', 'page'] },
);
type ListQuery = typeof listQuery extends fc.Arbitrary<infer T> ? T : never;

/**
 * The page the service answers equals the contract's reference query (query.ts, which every store must
 * agree with) applied to every user in creation order.
 */
async function assertListMatchesReference(q: ListQuery): Promise<void> {
  const params = new URLSearchParams(Object.entries(q).map(([key, value]): [string, string] => [key, String(value)]));
  const response = await plainRequest(`${roster.running.api}/users?${params}`);
  assert.equal(response.status, 200, `?${params}: ${response.text}`);
  const expected = queryUsers(everyone as User[], {
    role: q.role,
    search: q.search,
    sort: q.sort ?? 'created_at',
    descending: (q.order ?? 'desc') === 'desc',
    offset: (q.page - 1) * q.limit,
    limit: q.limit,
  });
  const data = response.body.data as {
    users: UserRecord[];
    pagination: { total: number; page: number; limit: number; pages: number };
  };
  assert.deepEqual(
    data.pagination,
    { total: expected.total, page: q.page, limit: q.limit, pages: Math.ceil(expected.total / q.limit) },
    `?${params}`,
  );
  assert.deepEqual(data.users, expected.users, `?${params}: the page the reference query gives`);
}

// ---------------------------------------------------------------------------------------------------
// Generators for REST.

const printable = (unit: 'grapheme-ascii' | 'binary-ascii' = 'grapheme-ascii', maxLength = 30) =>
  fc.string({ unit, maxLength }).map((s) => s.replace(/[\r\n\0]/g, ''));

/** Something of a path segment: tricky constants, encoded unicode, raw printable ASCII, very long. */
const segment = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '..',
      '.',
      '',
      '%00',
      '%2e%2e',
      '%2F',
      'a%2Fb',
      '%F0%9F%98%80',
      '%',
      '%zz',
      '%E0%A4%A',
      '__proto__',
      'constructor',
      'users',
      'v1',
    ),
  },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent) },
  { weight: 2, arbitrary: printable().map((s) => s.replace(/[ ]/g, '')) },
  { weight: 1, arbitrary: fc.nat(20_000).map((n) => 'x'.repeat(n)) },
);

type Target = { kind: 'fixed'; path: string } | { kind: 'existing'; index: number; suffix: string };

const target: fc.Arbitrary<Target> = fc.oneof(
  { weight: 6, arbitrary: fc.constant<Target>({ kind: 'fixed', path: '/api/v1/users' }) },
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('existing' as const),
      index: fc.nat(),
      suffix: fc.constantFrom('', '', '', '', '', '/', '%00', 'x', '/..'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom('/api/v1/users/', '/api/v1/health', '/api/v1/docs', '/api/v1', '/', '*', '/API/V1/USERS')
      .map((path): Target => ({ kind: 'fixed', path })),
  },
  { weight: 2, arbitrary: segment.map((s): Target => ({ kind: 'fixed', path: `/api/v1/users/${s}` })) },
  {
    weight: 1,
    arbitrary: fc
      .array(segment, { maxLength: 4 })
      .map((parts): Target => ({ kind: 'fixed', path: `/${parts.join('/')}` })),
  },
  { weight: 1, arbitrary: fc.webPath().map((path): Target => ({ kind: 'fixed', path: path || '/' })) },
);

const queryValue = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '1',
      '2',
      '0',
      '-1',
      '1.5',
      '1e309',
      'abc',
      '100',
      '999999999999999999',
      '',
      'name',
      'email',
      'role',
      'created_at',
      'asc',
      'desc',
      'admin',
      'user',
      '__proto__',
    ),
  },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent) },
  { weight: 1, arbitrary: printable().map((s) => s.replace(/[ #]/g, '')) },
);
const queryKey = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      'page',
      'limit',
      'role',
      'search',
      'sort',
      'order',
      '__proto__',
      '__proto__[x]',
      'constructor[prototype][x]',
      'prototype',
      'api_key',
      'page[]',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 10 }).map(encodeURIComponent) },
);
const query = fc.oneof(
  { weight: 6, arbitrary: fc.constant('') },
  {
    weight: 6,
    arbitrary: fc
      .array(fc.tuple(queryKey, queryValue), { maxLength: 6 })
      .map((pairs) => pairs.map(([k, v]) => `${k}=${v}`).join('&')),
  },
  { weight: 1, arbitrary: fc.webQueryParameters() },
  { weight: 1, arbitrary: printable('grapheme-ascii', 60).map((s) => s.replace(/[ #]/g, '')) },
  { weight: 1, arbitrary: fc.nat(20_000).map((n) => `search=${'q'.repeat(n)}`) },
);

/** Framing and connection handling stay under the test's control (so a request is never left half-sent). */
const FRAMING = new Set([
  'content-length',
  'transfer-encoding',
  'host',
  'connection',
  'expect',
  'upgrade',
  'content-type',
  'te',
  'trailer',
  'keep-alive',
  'http2-settings',
]);
const header = fc
  .tuple(
    fc.oneof(
      {
        weight: 3,
        arbitrary: fc.constantFrom(
          'Accept',
          'Accept-Encoding',
          'Accept-Language',
          'Authorization',
          'Cookie',
          'Origin',
          'Referer',
          'User-Agent',
          'X-API-Key',
          'X-Forwarded-For',
          'If-None-Match',
          'Range',
          'Content-Encoding',
          'X-HTTP-Method-Override',
          '__proto__',
        ),
      },
      { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/) },
    ),
    fc.oneof(
      { weight: 6, arbitrary: printable('grapheme-ascii', 40) },
      { weight: 1, arbitrary: printable('binary-ascii', 40) },
      { weight: 1, arbitrary: fc.nat(20_000).map((n) => 'v'.repeat(n)) },
    ),
  )
  .filter(([name]) => !FRAMING.has(name.toLowerCase()));
const headers = fc.oneof(
  { weight: 2, arbitrary: fc.constant<[string, string][]>([]) },
  { weight: 1, arbitrary: fc.array(header, { maxLength: 4 }) },
);

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'APPLICATION/JSON',
      'application/merge-patch+json',
      'application/vnd.x+json; q=1',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=latin1',
      'application/json;;;',
      'json',
      '',
    ),
  },
  { weight: 1, arbitrary: printable('grapheme-ascii', 40) },
);

const emailArb = fc.oneof(
  // A small pool, so that creates collide (409) and case or spaces are tried on taken emails.
  fc
    .tuple(
      fc.constantFrom('ann', 'bob', 'Ann', 'BOB', 'cy'),
      fc.constantFrom('', ' ', '\t'),
      fc.constantFrom('@example.com', '@EXAMPLE.com'),
    )
    .map(([local, pad, domain]) => `${pad}${local}${domain}${pad}`),
  fc.emailAddress(),
  fc.string({ maxLength: 20 }),
);
const validUser = fc.record(
  {
    name: fc.oneof(
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
      fc.constantFrom('Ada', '👩🏽‍💻', 'مرحبا', 'e\u0301', '  padded  '),
    ),
    email: emailArb,
    role: fc.constantFrom('admin', 'user'),
  },
  { requiredKeys: ['name', 'email'] },
);
/** A valid user with one thing wrong (or odd): a field of another type, a key missing, poison keys, ... */
const nearValidUser = fc
  .tuple(validUser, fc.nat(7), fc.constantFrom('name', 'email', 'role'), fc.jsonValue({ maxDepth: 2 }))
  .map(([user, mutation, field, value]) => {
    const body: Record<string, unknown> = { ...user };
    switch (mutation) {
      case 0:
        body[field] = value;
        return JSON.stringify(body);
      case 1:
        delete body[field];
        return JSON.stringify(body);
      case 2:
        body.extra = value;
        return JSON.stringify(body);
      case 3:
        return JSON.stringify(body).replace(/^\{/, `{"__proto__":{"${field}":${JSON.stringify(value)},"polluted":1},`);
      case 4:
        return JSON.stringify(body).replace(
          /^\{/,
          `{"constructor":{"prototype":{"${field}":${JSON.stringify(value)},"polluted":1}},`,
        );
      case 5:
        return JSON.stringify(body).slice(0, -1); // truncated
      case 6:
        return JSON.stringify(body) + JSON.stringify(body); // two documents
      default:
        return JSON.stringify([body]);
    }
  });

const body = fc.option(
  fc.oneof(
    { weight: 5, arbitrary: validUser.map((user) => JSON.stringify(user)) },
    { weight: 3, arbitrary: nearValidUser },
    { weight: 2, arbitrary: fc.jsonValue().map((value) => JSON.stringify(value)) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)) },
    { weight: 1, arbitrary: fc.nat(30_000).map((n) => `{"name":"${'n'.repeat(n)}","email":"big@example.com"}`) },
    {
      weight: 1,
      arbitrary: fc
        .nat(3000)
        .map((n) => `{"name":"Deep","email":"deep${n}@example.com","x":${'['.repeat(n)}${']'.repeat(n)}}`),
    },
  ),
  { freq: 4 },
);

const method = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('GET', 'POST', 'POST', 'PUT', 'PATCH', 'PATCH', 'DELETE') },
  { weight: 2, arbitrary: fc.constantFrom('HEAD', 'OPTIONS') },
  { weight: 1, arbitrary: fc.constantFrom('TRACE', 'CONNECT', 'PROPFIND', 'QUERY', 'get', 'PURGE') },
);

const existing = fc.record({ kind: fc.constant('existing' as const), index: fc.nat(), suffix: fc.constant('') });
const users = fc.constant<Target>({ kind: 'fixed', path: '/api/v1/users' });
/** A user that can be created, unless its email is taken (the pool of emailArb makes that happen). */
const creatable = fc
  .record({
    name: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }).filter((name) => name.trim().length > 0),
    email: fc.oneof(fc.emailAddress(), emailArb),
    role: fc.constantFrom('admin', 'user'),
  })
  .map((user): string | null => JSON.stringify(user));
const httpRequest = fc.oneof(
  // Mostly requests a client of the API would send, each with garbage somewhere at times...
  {
    weight: 2,
    arbitrary: fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          method: fc.constant('POST'),
          target: users,
          query: fc.constant(''),
          headers: fc.constant<[string, string][]>([]),
          contentType: fc.constant('application/json'),
          body: creatable,
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({ method: fc.constant('POST'), target: users, query, headers, contentType, body }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          method: fc.constant('GET'),
          target: users,
          query,
          headers,
          contentType: fc.constant(null),
          body: fc.constant(null),
        }),
      },
      {
        weight: 2,
        arbitrary: fc.record({
          method: fc.constantFrom('GET', 'DELETE', 'HEAD'),
          target: existing,
          query,
          headers,
          contentType: fc.constant(null),
          body: fc.constant(null),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({
          method: fc.constantFrom('PUT', 'PATCH', 'PATCH'),
          target: existing,
          query,
          headers,
          contentType,
          body,
        }),
      },
    ),
  },
  // ...and the rest anything at all.
  { weight: 1, arbitrary: fc.record({ method, target, query, headers, contentType, body }) },
);
type HttpRequest = typeof httpRequest extends fc.Arbitrary<infer T> ? T : never;

function render(request: HttpRequest): { bytes: Buffer; path: string } {
  let path: string;
  if (request.target.kind === 'fixed') path = request.target.path;
  else {
    const id = fuzzIds.length > 0 ? fuzzIds[request.target.index % fuzzIds.length]! : 'no-such-user';
    path = `/api/v1/users/${id}${request.target.suffix}`;
  }
  const line = `${request.method} ${path}${request.query ? `?${request.query}` : ''} HTTP/1.1\r\n`;
  const payload =
    request.body === null
      ? undefined
      : Buffer.isBuffer(request.body)
        ? request.body
        : Buffer.from(request.body, 'utf8');
  const lines = [
    'Host: 127.0.0.1',
    'Connection: close',
    ...(payload ? [`Content-Length: ${payload.length}`] : []),
    ...(request.contentType !== null ? [`Content-Type: ${request.contentType}`] : []),
    ...request.headers.map(([name, value]) => `${name}: ${value}`),
  ];
  const head = Buffer.from(`${line}${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  return { bytes: payload ? Buffer.concat([head, payload]) : head, path };
}

// ---------------------------------------------------------------------------------------------------
// Generators for chat frames.

const framePayload = fc.oneof(
  fc.string({ maxLength: 40 }).map((message) => Buffer.from(JSON.stringify({ type: 'chat', message }))),
  fc.constantFrom(Buffer.from('{"type":"ping"}'), Buffer.from('{"type":"other"}'), Buffer.from('not json')),
  fc.jsonValue({ maxDepth: 2 }).map((value) => Buffer.from(JSON.stringify(value) ?? 'null')),
  fc.string({ unit: 'binary', maxLength: 60 }).map((s) => Buffer.from(s)),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  fc
    .tuple(fc.integer({ min: 0, max: 5000 }), fc.string({ maxLength: 20 }))
    .map(([code, reason]) => closePayload(code, reason)),
);
const chatFrame = fc.record({
  opcode: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(0x0, 0x1, 0x1, 0x1, 0x2, 0x8, 0x9, 0xa) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 15 }) },
  ),
  fin: fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  rsv1: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  rsv2: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  rsv3: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  mask: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
  payload: framePayload,
  /** A length in the header other than the payload's (the payload is then cut or padded by the wire). */
  declaredLength: fc.option(fc.oneof(fc.nat(300), fc.constantFrom(126, 65_535, 65_536, 300_000, 2 ** 32)), { freq: 6 }),
  /** Cut the frame's bytes here (a client dying mid-frame). */
  cutAt: fc.option(fc.nat(20), { freq: 8 }),
});
const chatSession = fc.record({
  frames: fc.array(chatFrame, { minLength: 1, maxLength: 5 }),
  /** Frames in one write, or one write each. */
  together: fc.boolean(),
  ending: fc.constantFrom('destroy', 'half-close', 'close-frame', 'wait-then-destroy'),
});
type ChatFrameSpec = typeof chatFrame extends fc.Arbitrary<infer T> ? T : never;

function encodeSpec(spec: ChatFrameSpec): Buffer {
  const { opcode, payload, declaredLength, cutAt, ...flags } = spec;
  let bytes: Buffer;
  if (declaredLength === null) bytes = encodeFrame(opcode, payload, flags);
  else {
    const header = encodeFrame(opcode, Buffer.alloc(0), { ...flags, declaredLength, headerOnly: true });
    bytes = Buffer.concat([header, payload.subarray(0, Math.min(payload.length, declaredLength))]);
  }
  return cutAt === null ? bytes : bytes.subarray(0, Math.min(cutAt, bytes.length));
}

/** Close codes the service may send: its own, or an echo of a valid code the client sent. */
const SERVER_CODES = new Set([1000, 1002, 1003, 1007, 1009]);

// ---------------------------------------------------------------------------------------------------

describe(`fuzzing (${RUNS} runs per property; FUZZ_RUNS to change)`, () => {
  test('REST: any method, path, query, headers, content type and body: never 5xx, errors in the envelope, the store consistent', async (t) => {
    await assertStoreConsistent(false);
    let runs = 0;
    const outcomes = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(httpRequest, listQuery, async (request, list) => {
        const { bytes, path } = render(request);
        const what = `${request.method} ${path.slice(0, 80)}`;
        const reply = parseReply(await exchange(restPort(), bytes), request.method);
        assertWellFormed(reply, request.method, what, path);
        const code =
          reply.status >= 400 && request.method !== 'HEAD'
            ? (JSON.parse(reply.body) as { error: { code: string } }).error.code
            : '';
        outcomes.set(`${reply.status} ${code}`.trim(), (outcomes.get(`${reply.status} ${code}`.trim()) ?? 0) + 1);
        assert.equal(({} as Record<string, unknown>).polluted, undefined, `${what}: Object.prototype polluted`);
        await assertStoreConsistent(++runs % 20 === 0);
        await assertListMatchesReference(list);
      }),
      params(),
    );
    t.diagnostic(
      `replies: ${[...outcomes]
        .sort()
        .map(([outcome, n]) => `${outcome} x${n}`)
        .join(', ')}`,
    );
    await assertStoreConsistent(true);
    await roster.check('after the REST fuzzing');
  });

  test('REST and chat ports: bytes that are not HTTP get a 4xx envelope or a closed connection, never a hang or a 5xx', async () => {
    const garbage = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 400 }).map((bytes) => Buffer.from(bytes)),
      fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 200 }).map((s) => Buffer.from(s, 'latin1')),
      // Almost HTTP: a real request line, then garbage.
      fc
        .tuple(
          fc.constantFrom(
            'GET / HTTP/1.1\r\n',
            'POST /api/v1/users HTTP/1.1\r\nHost: x\r\n',
            'GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n',
          ),
          fc.uint8Array({ maxLength: 100 }),
        )
        .map(([start, rest]) => Buffer.concat([Buffer.from(start, 'latin1'), Buffer.from(rest)])),
    );
    await fc.assert(
      fc.asyncProperty(garbage, fc.boolean(), async (bytes, chatPort) => {
        const port = chatPort ? roster.running.wsPort : restPort();
        // Half-closed after the bytes, so an incomplete request ends instead of waiting for a timeout.
        const answer = await exchange(port, bytes, { halfClose: true });
        if (answer.length === 0) return; // closed without a word
        const reply = parseReply(answer, 'GET');
        // Garbage may still be a well-formed request (on the REST port, a GET / gets its 404).
        if (reply.status === 101)
          assert.fail(`a handshake was accepted from ${JSON.stringify(bytes.toString('latin1'))}`);
        assertWellFormed(reply, 'GET', `garbage ${JSON.stringify(bytes.toString('latin1').slice(0, 60))}`);
      }),
      params(),
    );
    await assertStoreConsistent(true);
    await roster.check('after garbage bytes');
  });

  test('chat: random frames (opcodes, flags, masks, lengths, payloads, cut short): valid close codes only, every connection counted out', async () => {
    // Only the observer: the chat clients of earlier health checks have left.
    const members = 1;
    await roomSettles(roster.running, members);
    await fc.assert(
      fc.asyncProperty(chatSession, async (session) => {
        const raw = await RawClient.connect(roster.running.wsPort);
        try {
          const echoable = new Set<number>();
          for (const spec of session.frames) {
            if (spec.opcode === Opcode.close && spec.payload.length >= 2) echoable.add(spec.payload.readUInt16BE(0));
          }
          const encoded = session.frames.map(encodeSpec);
          if (session.together) await raw.write(Buffer.concat(encoded)).catch(() => {});
          else for (const bytes of encoded) await raw.write(bytes).catch(() => {});
          if (session.ending === 'close-frame') await raw.send(Opcode.close, closePayload(1000)).catch(() => {});
          if (session.ending === 'half-close') raw.socket.end();
          if (session.ending === 'wait-then-destroy' || session.ending === 'close-frame') {
            await Promise.race([raw.closed, new Promise((resolve) => setTimeout(resolve, 20))]);
          }
          for (const frame of raw.frames as Frame[]) {
            assert.equal(frame.masked, false, 'server frames are not masked');
            assert.equal(frame.rsv, 0, 'server frames use no reserved bits');
            if (frame.opcode === Opcode.close && frame.payload.length >= 2) {
              const code = frame.payload.readUInt16BE(0);
              assert.ok(SERVER_CODES.has(code) || echoable.has(code) || code === 1001, `server close code ${code}`);
            }
          }
        } finally {
          raw.destroy();
        }
        await roomSettles(roster.running, members);
      }),
      params(),
    );
    // The observer, there all along, still receives; it was told of every departure.
    observer.messages.splice(0);
    const text = `after the frame fuzzing ${Date.now()}`;
    observer.send({ type: 'chat', message: text });
    await observer.next((m) => m.type === 'chat' && m.message === text);
    await roster.check('after the chat fuzzing');
    const newcomer = new ChatClient(roster.running.wsUrl);
    newcomer.ws.on('error', () => {});
    try {
      const welcome = await within(
        newcomer.next((m) => m.type === 'system'),
        5000,
        'a welcome',
      );
      assert.match(
        String(welcome.message),
        new RegExp(`\\b${members + 1}\\b`),
        'the welcome counts only the open connections',
      );
    } finally {
      newcomer.ws.terminate();
    }
  });
});
