/**
 * Authentication and authorization over real sockets, one suite per mechanism (AUTH=apikey, basic,
 * jwt, oauth2), each run through the same table: accepted, missing, malformed, wrong, expired,
 * tampered and wrong-algorithm credentials, on the REST port and on the chat handshake, and the
 * 401/403 split between a reader and an admin.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashPassword } from '../../src/edge/password.js';
import {
  API_KEY_ADMIN,
  API_KEY_READER,
  assertRefused,
  basic,
  handshake,
  JwksServer,
  request,
  SECRET,
  signingKey,
  startRoster,
  tampered,
  token,
  unsignedToken,
  until,
  type Running,
  type SigningKey,
} from '../support/index.js';

const now = () => Math.floor(Date.now() / 1000);

/** Credentials as they travel: headers, or a query string (api_key / access_token). */
interface Credential {
  headers?: Record<string, string>;
  query?: string;
}

interface Mechanism {
  name: string;
  env: () => Record<string, string>;
  /** The challenge of a 401. */
  challenge: RegExp;
  admin: () => Promise<Credential>;
  reader: () => Promise<Credential>;
  /** The principal name the chat announces for the admin credential. */
  adminName: string;
  /** The same admin credential as a browser would put in the chat URL. */
  chatQuery?: () => Promise<string>;
  /** Bad credentials by kind: each must be refused with 401 (and, for bearer tokens, error="invalid_token"). */
  bad: () => Promise<[kind: string, credential: Credential][]>;
  setUp?: () => Promise<void>;
  tearDown?: () => Promise<void>;
}

const bearer = (jwt: string): Credential => ({ headers: { authorization: `Bearer ${jwt}` } });

let basicUsers = '';
let jwks: JwksServer | undefined;
let rsaKey: SigningKey;
let ecKey: SigningKey;
let strangerKey: SigningKey;
const ISSUER = 'https://idp.test.example/';
const AUDIENCE = 'roster-api';

const MECHANISMS: Mechanism[] = [
  {
    name: 'apikey',
    env: () => ({ AUTH: 'apikey', API_KEYS: `${API_KEY_ADMIN}:admin,${API_KEY_READER}` }),
    challenge: /^ApiKey realm="roster"/,
    admin: async () => ({ headers: { 'x-api-key': API_KEY_ADMIN } }),
    reader: async () => ({ query: `api_key=${API_KEY_READER}` }),
    adminName: 'api-key-1',
    chatQuery: async () => `api_key=${API_KEY_ADMIN}`,
    bad: async () => [
      ['malformed (empty)', { headers: { 'x-api-key': '' } }],
      ['malformed (spaces and a newline-free junk)', { headers: { 'x-api-key': 'not a key at all' } }],
      ['wrong', { headers: { 'x-api-key': 'wrong-key-0123456789abcdef' } }],
      ['tampered (one character changed)', { headers: { 'x-api-key': `${API_KEY_ADMIN.slice(0, -1)}0` } }],
      ['a prefix of a valid key', { query: `api_key=${API_KEY_ADMIN.slice(0, 10)}` }],
      ['a key in the Authorization header instead', { headers: { authorization: `Bearer ${API_KEY_ADMIN}` } }],
    ],
  },
  {
    name: 'basic',
    setUp: async () => {
      basicUsers = `ada:${await hashPassword('lovelace-1815')}:admin,bob:${await hashPassword('builder-pw')}`;
    },
    env: () => ({ AUTH: 'basic', BASIC_USERS: basicUsers }),
    challenge: /^Basic realm="roster"/,
    admin: async () => ({ headers: { authorization: basic('ada', 'lovelace-1815') } }),
    reader: async () => ({ headers: { authorization: basic('bob', 'builder-pw') } }),
    adminName: 'ada',
    bad: async () => [
      ['malformed (not base64)', { headers: { authorization: 'Basic !!!' } }],
      ['malformed (no colon)', { headers: { authorization: `Basic ${Buffer.from('ada').toString('base64')}` } }],
      ['wrong password', { headers: { authorization: basic('ada', 'lovelace-1816') } }],
      ['unknown user', { headers: { authorization: basic('eve', 'lovelace-1815') } }],
      ['tampered (another user with ada’s password)', { headers: { authorization: basic('bob', 'lovelace-1815') } }],
      ['another scheme', { headers: { authorization: 'Bearer abc' } }],
    ],
  },
  {
    name: 'jwt',
    env: () => ({ AUTH: 'jwt', JWT_SECRET: SECRET }),
    challenge: /^Bearer realm="roster"/,
    admin: async () => bearer(await token({ name: 'Ada', role: 'admin' })),
    reader: async () => bearer(await token({ sub: 'u-2', name: 'Bob', role: 'user' })),
    adminName: 'Ada',
    chatQuery: async () => `access_token=${await token({ name: 'Ada', role: 'admin' })}`,
    bad: async () => [
      ['malformed (not a JWT)', bearer('not-a-token')],
      ['malformed (Bearer without token)', { headers: { authorization: 'Bearer ' } }],
      [
        'wrong secret',
        bearer(await token({}, { key: new TextEncoder().encode('another-secret-of-at-least-32-bytes!!') })),
      ],
      ['expired', bearer(await token({}, { exp: now() - 60, iat: now() - 120 }))],
      ['not yet valid (nbf)', bearer(await token({}, { nbf: now() + 600 }))],
      ['issued in the future (iat)', bearer(await token({}, { iat: now() + 600 }))],
      ['without exp', bearer(await token({}, { omit: ['exp'] }))],
      ['tampered (role changed)', bearer(tampered(await token({ role: 'user' })))],
      ['wrong algorithm: alg none', bearer(unsignedToken())],
      ['wrong algorithm: RS256', bearer(await token({}, { key: rsaKey.privateKey, alg: 'RS256', kid: rsaKey.kid }))],
      ['wrong algorithm: HS512 with the right secret', bearer(await token({}, { alg: 'HS512' }))],
    ],
  },
  {
    name: 'oauth2',
    setUp: async () => {
      jwks = await JwksServer.start([rsaKey, ecKey]);
    },
    tearDown: async () => jwks?.close(),
    env: () => ({ AUTH: 'oauth2', OAUTH2_JWKS_URL: jwks!.url, OAUTH2_ISSUER: ISSUER, OAUTH2_AUDIENCE: AUDIENCE }),
    challenge: /^Bearer realm="roster"/,
    admin: async () => bearer(await oauthToken(rsaKey, { name: 'Ada', role: 'admin' })),
    reader: async () => bearer(await oauthToken(ecKey, { sub: 'u-2', name: 'Bob' })),
    adminName: 'Ada',
    chatQuery: async () => `access_token=${await oauthToken(ecKey, { name: 'Ada', role: 'admin' })}`,
    bad: async () => [
      ['malformed', bearer('a.b.c')],
      ['wrong key (not in the JWKS)', bearer(await oauthToken({ ...strangerKey, kid: rsaKey.kid }))],
      ['unknown kid', bearer(await oauthToken(strangerKey))],
      ['wrong issuer', bearer(await oauthToken(rsaKey, { iss: 'https://evil.example/' }))],
      ['wrong audience', bearer(await oauthToken(rsaKey, { aud: 'another-api' }))],
      ['expired', bearer(await oauthToken(rsaKey, {}, { exp: now() - 60, iat: now() - 120 }))],
      ['tampered', bearer(tampered(await oauthToken(rsaKey, { role: 'user' })))],
      [
        'wrong algorithm: HS256',
        bearer(await token({ iss: ISSUER, aud: AUDIENCE }, { alg: 'HS256', key: new TextEncoder().encode(SECRET) })),
      ],
      [
        'wrong algorithm: HS256 keyed with the public key (algorithm confusion)',
        bearer(
          await token(
            { iss: ISSUER, aud: AUDIENCE },
            { alg: 'HS256', kid: rsaKey.kid, key: new TextEncoder().encode(JSON.stringify(rsaKey.jwk)) },
          ),
        ),
      ],
      ['wrong algorithm: alg none', bearer(unsignedToken({ iss: ISSUER, aud: AUDIENCE }))],
    ],
  },
];

/** An access token as RFC 9068 has it (typ at+jwt), from the test's identity provider. */
function oauthToken(
  key: SigningKey,
  claims: Record<string, unknown> = {},
  options: { exp?: number; iat?: number; typ?: string | null } = {},
) {
  return token(
    { iss: ISSUER, aud: AUDIENCE, role: 'user', ...claims },
    { key: key.privateKey, alg: key.alg, kid: key.kid, typ: 'at+jwt', ...options },
  );
}

function call(
  running: Running,
  path: string,
  credential: Credential,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const separator = path.includes('?') ? '&' : '?';
  const url = `${running.api}${path}${credential.query ? `${separator}${credential.query}` : ''}`;
  return request(url, { ...init, headers: { ...credential.headers, ...init.headers } });
}

before(async () => {
  [rsaKey, ecKey, strangerKey] = await Promise.all([
    signingKey('rsa-1', 'RS256'),
    signingKey('ec-1', 'ES256'),
    signingKey('stranger', 'RS256'),
  ]);
});

for (const mechanism of MECHANISMS) {
  describe(`AUTH=${mechanism.name}`, () => {
    let running: Running;
    let userId: string;
    before(async () => {
      await mechanism.setUp?.();
      running = await startRoster(mechanism.env());
      const list = await call(running, '/users', await mechanism.admin());
      assert.equal(list.status, 200, list.text);
      userId = list.body.data.users[0].id;
    });
    after(async () => {
      await running?.stop();
      await mechanism.tearDown?.();
    });

    test('public: health, docs, the OpenAPI document, the reference page, the console, metrics', async () => {
      for (const path of [
        '/api/v1/health',
        '/api/v1/docs',
        '/api/v1/openapi.json',
        '/api/v1/reference',
        '/',
        '/console/config.json',
        '/metrics',
      ]) {
        const response = await fetch(`${running.origin}${path}`);
        await response.arrayBuffer();
        assert.equal(response.status, 200, path);
      }
    });

    test('admin: reads and writes', async () => {
      const admin = await mechanism.admin();
      assert.equal((await call(running, '/users', admin)).status, 200);
      assert.equal((await call(running, `/users/${userId}`, admin)).status, 200);
      const created = await call(running, '/users', admin, {
        method: 'POST',
        body: { name: 'Grace', email: `grace.${mechanism.name}@example.com` },
      });
      assert.equal(created.status, 201, created.text);
      const id = created.body.data.id as string;
      assert.equal(
        (await call(running, `/users/${id}`, admin, { method: 'PATCH', body: { name: 'Grace H.' } })).status,
        200,
      );
      assert.equal(
        (
          await call(running, `/users/${id}`, admin, {
            method: 'PUT',
            body: { name: 'Grace', email: `g.${mechanism.name}@example.com` },
          })
        ).status,
        200,
      );
      assert.equal((await call(running, `/users/${id}`, admin, { method: 'DELETE' })).status, 204);
    });

    test('reader: reads (200), writes are 403 FORBIDDEN, before the body is checked and before the id is looked up', async () => {
      const reader = await mechanism.reader();
      assert.equal((await call(running, '/users', reader)).status, 200);
      assert.equal((await call(running, `/users/${userId}`, reader)).status, 200);
      assertRefused(
        await call(running, '/users', reader, { method: 'POST', body: { name: 'X', email: 'x@example.com' } }),
        403,
        'FORBIDDEN',
      );
      assertRefused(
        await call(running, '/users', reader, {
          method: 'POST',
          body: '{not json',
          headers: { 'content-type': 'application/json' },
        }),
        403,
        'FORBIDDEN',
      );
      assertRefused(
        await call(running, `/users/${userId}`, reader, { method: 'PATCH', body: { name: 'Y' } }),
        403,
        'FORBIDDEN',
      );
      assertRefused(await call(running, '/users/no-such-id', reader, { method: 'DELETE' }), 403, 'FORBIDDEN');
      assert.equal(
        (await call(running, `/users/${userId}`, await mechanism.admin())).body.data.name !== 'Y',
        true,
        'nothing was written',
      );
    });

    test('missing credentials: 401 with the challenge, before 404 and before body checks', async () => {
      const none: Credential = {};
      assertRefused(await call(running, '/users', none), 401, 'UNAUTHORIZED', mechanism.challenge);
      assertRefused(
        await call(running, '/users/no-such-id', none),
        401,
        'UNAUTHORIZED',
        mechanism.challenge,
        'an unknown id',
      );
      assertRefused(
        await call(running, `/users/${userId}`, none),
        401,
        'UNAUTHORIZED',
        mechanism.challenge,
        'a known id',
      );
      assertRefused(
        await call(running, '/users', none, {
          method: 'POST',
          body: '{not json',
          headers: { 'content-type': 'application/json' },
        }),
        401,
        'UNAUTHORIZED',
        mechanism.challenge,
        'a malformed body',
      );
      // The route map is public (it is in the OpenAPI document): unknown paths stay 404, wrong methods 405.
      assert.equal((await call(running, '/nothing', none)).status, 404);
      assert.equal((await call(running, '/users', none, { method: 'OPTIONS' })).status, 405);
    });

    test('bad credentials: each 401 with the challenge (error="invalid_token" for tokens)', async () => {
      for (const [kind, credential] of await mechanism.bad()) {
        const response = await call(running, '/users', credential);
        assertRefused(response, 401, 'UNAUTHORIZED', mechanism.challenge, kind);
        const challenge = response.headers.get('www-authenticate') ?? '';
        if (mechanism.challenge.source.includes('Bearer') && credential.headers?.authorization?.match(/^Bearer \S/)) {
          assert.match(challenge, /error="invalid_token"/, `${kind}: ${challenge}`);
        }
        const write = await call(running, `/users/${userId}`, credential, { method: 'DELETE' });
        assertRefused(write, 401, 'UNAUTHORIZED', mechanism.challenge, `${kind} (DELETE)`);
      }
      assert.equal(
        (await call(running, `/users/${userId}`, await mechanism.admin())).status,
        200,
        'the user is still there',
      );
    });

    test('chat: the handshake needs the credential; refused with 401 before the upgrade; the name is announced', async () => {
      const admin = await mechanism.admin();
      const query = admin.query ?? (mechanism.chatQuery ? await mechanism.chatQuery() : undefined);
      const viaHeaders = await handshake(running.wsUrl, { headers: admin.headers ?? {} });
      const first = admin.headers ? viaHeaders : await handshake(`${running.wsUrl}/?${query}`);
      assert.equal(first.status, 101, first.text);
      assert.equal(first.messages[0]?.type, 'system');
      assert.equal(first.messages[0]?.name, mechanism.adminName);

      const reader = await mechanism.reader();
      const second = await handshake(reader.query ? `${running.wsUrl}/?${reader.query}` : running.wsUrl, {
        headers: reader.headers ?? {},
      });
      assert.equal(second.status, 101, second.text);
      // The others hear who joined; `from` of chats stays the connection id.
      await until('the join notice', () => first.messages.some((m) => m.type === 'user_join'), 3000, 10);
      const join = first.messages.find((m) => m.type === 'user_join')!;
      assert.equal(typeof join.name, 'string');
      assert.notEqual(join.name, mechanism.adminName);
      first.ws!.send(JSON.stringify({ type: 'chat', message: 'hi' }));
      await until('the chat message', () => second.messages.some((m) => m.type === 'chat'), 3000, 10);
      const chat = second.messages.find((m) => m.type === 'chat')!;
      assert.match(String(chat.from), /^[0-9a-f-]{36}$/);
      assert.deepEqual(Object.keys(chat).sort(), ['from', 'message', 'timestamp', 'type']);

      if (query && !admin.query) {
        const viaQuery = await handshake(`${running.wsUrl}/?${query}`);
        assert.equal(viaQuery.status, 101, `credential in the URL: ${viaQuery.text}`);
        viaQuery.ws!.terminate();
      }
      first.ws!.terminate();
      second.ws!.terminate();

      assertRefused(await handshake(running.wsUrl), 401, 'UNAUTHORIZED', mechanism.challenge, 'no credential');
      for (const [kind, credential] of await mechanism.bad()) {
        const url = credential.query ? `${running.wsUrl}/?${credential.query}` : running.wsUrl;
        assertRefused(
          await handshake(url, { headers: credential.headers ?? {} }),
          401,
          'UNAUTHORIZED',
          mechanism.challenge,
          `chat: ${kind}`,
        );
      }
    });
  });
}

describe('AUTH=oauth2: key rotation', () => {
  test('a token signed with a new key (kid not yet cached) makes Roster fetch the JWKS again', async () => {
    const oldKey = await signingKey('old', 'RS256');
    const newKey = await signingKey('new', 'ES256');
    const server = await JwksServer.start([oldKey]);
    const running = await startRoster({
      AUTH: 'oauth2',
      OAUTH2_JWKS_URL: server.url,
      OAUTH2_ISSUER: ISSUER,
      OAUTH2_AUDIENCE: AUDIENCE,
    });
    try {
      const before = await request(`${running.api}/users`, {
        headers: { authorization: `Bearer ${await oauthToken(oldKey)}` },
      });
      assert.equal(before.status, 200, before.text);
      assert.equal(server.fetches, 1);
      // The identity provider rotates: the new key is published, the old one retired.
      server.keys = [newKey];
      // jose refetches on an unknown kid at most once per cooldown (JWKS_COOLDOWN_MS, 2 s).
      await new Promise((resolve) => setTimeout(resolve, 2100));
      const rotated = await request(`${running.api}/users`, {
        headers: { authorization: `Bearer ${await oauthToken(newKey)}` },
      });
      assert.equal(rotated.status, 200, rotated.text);
      assert.equal(server.fetches, 2, 'the JWKS was fetched again');
      // A fresh token of the retired key is refused now (the earlier one stays cached until it is due).
      const retired = await request(`${running.api}/users`, {
        headers: { authorization: `Bearer ${await oauthToken(oldKey, { sub: 'u-9' })}` },
      });
      assertRefused(retired, 401, 'UNAUTHORIZED', /^Bearer/);
    } finally {
      await running.stop();
      await server.close();
    }
  });

  test('the identity provider unreachable: 503, not 401 (the token may be fine)', async () => {
    const key = await signingKey('k', 'RS256');
    const server = await JwksServer.start([key]);
    const url = server.url;
    await server.close();
    const running = await startRoster({
      AUTH: 'oauth2',
      OAUTH2_JWKS_URL: url,
      OAUTH2_ISSUER: ISSUER,
      OAUTH2_AUDIENCE: AUDIENCE,
    });
    try {
      const response = await request(`${running.api}/users`, {
        headers: { authorization: `Bearer ${await oauthToken(key)}` },
      });
      assert.equal(response.status, 503, response.text);
      assert.equal(response.body.error.code, 'SERVICE_UNAVAILABLE');
    } finally {
      await running.stop();
    }
  });
});
