/**
 * The credentials themselves (docs/decisions.md, "Protection"): token claims of the wrong type refused
 * (*Credential checks*, *Claims must be well-formed Unicode*), OAuth2 access tokens told from ID tokens
 * by `typ` (RFC 9068), chat sessions closed when their token expires (*Credential expiry closes the
 * chat*), and API keys and Basic users readers unless their entry says otherwise (*Default role
 * `user`*). Everything over real sockets.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashPassword } from '../../src/edge/password.js';
import {
  API_KEY_ADMIN,
  API_KEY_READER,
  assertRefused,
  basic,
  closeOf,
  handshake,
  JwksServer,
  request,
  SECRET,
  signingKey,
  startRoster,
  token,
  within,
  type Running,
  type SigningKey,
} from '../support/index.js';

const now = () => Math.floor(Date.now() / 1000);
const bearer = (jwt: string) => ({ authorization: `Bearer ${jwt}` });

describe('AUTH=jwt: claims are type-checked', () => {
  let running: Running;
  before(async () => {
    running = await startRoster({ AUTH: 'jwt', JWT_SECRET: SECRET });
  });
  after(() => running.stop());

  const wrong: [claim: string, value: unknown][] = [
    ['sub', 123],
    ['sub', { x: 1 }],
    ['sub', []],
    ['sub', ''],
    ['sub', null],
    ['sub', true],
    ['name', 123],
    ['name', { x: 1 }],
    ['name', []],
    ['name', ''],
    ['name', null],
    ['name', true],
    // Not well-formed Unicode (a lone surrogate): Redis' cjson and the presence reaper refuse such names.
    ['name', '\ud800'],
    ['name', 'Eve \udfff'],
    ['sub', 'eve\ud800'],
    ['iss', '\udc00'],
  ];
  for (const [claim, value] of wrong) {
    test(`${claim}: ${JSON.stringify(value)} is refused with 401 invalid_token, on REST and on the chat handshake`, async () => {
      const jwt = await token({ [claim]: value });
      const response = await request(`${running.api}/users`, { headers: bearer(jwt) });
      assertRefused(response, 401, 'UNAUTHORIZED', /^Bearer realm="roster", error="invalid_token"/);
      assertRefused(await handshake(`${running.wsUrl}/?access_token=${jwt}`), 401, 'UNAUTHORIZED', /^Bearer/, 'chat');
      assert.equal(await running.server.chat.size(), 0);
    });
  }

  test('a string sub, with or without a string name, is accepted; the chat announces the name, else the sub', async () => {
    assert.equal(
      (await request(`${running.api}/users`, { headers: bearer(await token({ sub: 'u-7', name: 'Grace' })) })).status,
      200,
    );
    const withoutName = await token({ sub: 'u-8' }, { omit: ['name'] });
    assert.equal((await request(`${running.api}/users`, { headers: bearer(withoutName) })).status, 200);
    const chat = await handshake(`${running.wsUrl}/?access_token=${withoutName}`);
    assert.equal(chat.status, 101, chat.text);
    assert.equal(chat.messages[0]?.name, 'u-8');
    chat.ws!.terminate();
  });
});

describe('AUTH=oauth2: only access tokens (typ at+jwt, RFC 9068)', () => {
  const ISSUER = 'https://idp.test.example/';
  const AUDIENCE = 'roster-api';
  let key: SigningKey;
  let jwks: JwksServer;
  before(async () => {
    key = await signingKey('rsa-typ', 'RS256');
    jwks = await JwksServer.start([key]);
  });
  after(() => jwks.close());

  const oauthToken = (typ: string | null, claims: Record<string, unknown> = {}) =>
    token({ iss: ISSUER, aud: AUDIENCE, ...claims }, { key: key.privateKey, alg: key.alg, kid: key.kid, typ });
  const env = (extra: Record<string, string> = {}) => ({
    AUTH: 'oauth2',
    OAUTH2_JWKS_URL: jwks.url,
    OAUTH2_ISSUER: ISSUER,
    OAUTH2_AUDIENCE: AUDIENCE,
    ...extra,
  });
  const status = async (running: Running, jwt: string) => {
    const response = await request(`${running.api}/users`, { headers: bearer(jwt) });
    return response.status;
  };

  test('default: at+jwt and application/at+jwt accepted; an ID token (typ JWT) or no typ refused, on REST and chat', async (t) => {
    const running = await startRoster(env());
    t.after(() => running.stop());
    assert.equal(await status(running, await oauthToken('at+jwt')), 200);
    assert.equal(await status(running, await oauthToken('application/at+jwt', { sub: 'u-2' })), 200);
    assert.equal(
      await status(running, await oauthToken('AT+JWT', { sub: 'u-3' })),
      200,
      'media types are case-insensitive',
    );
    for (const typ of ['JWT', null, 'id_token+jwt']) {
      const jwt = await oauthToken(typ);
      const response = await request(`${running.api}/users`, { headers: bearer(jwt) });
      assertRefused(response, 401, 'UNAUTHORIZED', /error="invalid_token"/, `typ ${typ}`);
      assertRefused(
        await handshake(`${running.wsUrl}/?access_token=${jwt}`),
        401,
        'UNAUTHORIZED',
        /^Bearer/,
        `chat, typ ${typ}`,
      );
    }
  });

  test('OAUTH2_ACCEPT_JWT_TYP=true: typ JWT and no typ accepted too; any other typ still refused', async (t) => {
    const running = await startRoster(env({ OAUTH2_ACCEPT_JWT_TYP: 'true' }));
    t.after(() => running.stop());
    assert.equal(await status(running, await oauthToken('at+jwt')), 200);
    assert.equal(await status(running, await oauthToken('JWT', { sub: 'u-2' })), 200);
    assert.equal(await status(running, await oauthToken(null, { sub: 'u-3' })), 200);
    assert.equal(await status(running, await oauthToken('secevent+jwt', { sub: 'u-4' })), 401);
  });
});

describe('chat sessions end with their credential', () => {
  test('AUTH=jwt: a connection joined with a token that expires is closed with 1008 when it does; chat works until then', async (t) => {
    const running = await startRoster({ AUTH: 'jwt', JWT_SECRET: SECRET });
    t.after(() => running.stop());
    const expiresAt = now() + 2;
    const jwt = await token({ name: 'Short' }, { exp: expiresAt });
    const lasting = await handshake(`${running.wsUrl}/?access_token=${await token({ sub: 'u-9', name: 'Long' })}`);
    const short = await handshake(`${running.wsUrl}/?access_token=${jwt}`);
    assert.equal(short.status, 101, short.text);
    const closed = closeOf(short.ws!);
    short.ws!.send(JSON.stringify({ type: 'chat', message: 'still valid' }));
    await within(
      new Promise<void>((resolve) => {
        const check = () =>
          lasting.messages.some((m) => m.type === 'chat' && m.message === 'still valid')
            ? resolve()
            : setTimeout(check, 10);
        check();
      }),
      3000,
      'the chat before expiry',
    );
    const { code, reason } = await within(closed, 5000, 'the close at expiry');
    assert.equal(code, 1008);
    assert.match(reason, /credential expired/i);
    assert.ok(Date.now() >= expiresAt * 1000, 'not closed before exp');
    assert.ok(Date.now() < expiresAt * 1000 + 1500, 'closed promptly at exp');
    // The others hear the leave; the long-lived connection stays.
    await within(
      new Promise<void>((resolve) => {
        const check = () => (lasting.messages.some((m) => m.type === 'user_leave') ? resolve() : setTimeout(check, 10));
        check();
      }),
      3000,
      'the leave',
    );
    assert.equal(await running.server.chat.size(), 1);
    lasting.ws!.terminate();
  });

  test('AUTH=apikey: no expiry, the connection stays', async (t) => {
    const running = await startRoster({ AUTH: 'apikey', API_KEYS: API_KEY_ADMIN });
    t.after(() => running.stop());
    const chat = await handshake(`${running.wsUrl}/?api_key=${API_KEY_ADMIN}`);
    assert.equal(chat.status, 101);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(chat.ws!.readyState, chat.ws!.OPEN);
    chat.ws!.terminate();
  });
});

describe('least privilege: API keys and Basic users are readers unless their entry says admin', () => {
  test('AUTH=apikey: a key without a role reads but may not write (403); key:admin writes', async (t) => {
    const running = await startRoster({ AUTH: 'apikey', API_KEYS: `${API_KEY_READER},${API_KEY_ADMIN}:admin` });
    t.after(() => running.stop());
    const body = { name: 'Grace', email: 'grace.keys@example.com' };
    assert.equal((await request(`${running.api}/users`, { headers: { 'x-api-key': API_KEY_READER } })).status, 200);
    assertRefused(
      await request(`${running.api}/users`, { method: 'POST', body, headers: { 'x-api-key': API_KEY_READER } }),
      403,
      'FORBIDDEN',
    );
    assert.equal(
      (await request(`${running.api}/users`, { method: 'POST', body, headers: { 'x-api-key': API_KEY_ADMIN } })).status,
      201,
    );
  });

  test('AUTH=basic: a user without a role reads but may not write (403); name:hash:admin writes', async (t) => {
    const hash = await hashPassword('pw-of-the-test');
    const running = await startRoster({ AUTH: 'basic', BASIC_USERS: `bob:${hash},ada:${hash}:admin` });
    t.after(() => running.stop());
    const body = { name: 'Grace', email: 'grace.basic@example.com' };
    assert.equal(
      (await request(`${running.api}/users`, { headers: { authorization: basic('bob', 'pw-of-the-test') } })).status,
      200,
    );
    assertRefused(
      await request(`${running.api}/users`, {
        method: 'POST',
        body,
        headers: { authorization: basic('bob', 'pw-of-the-test') },
      }),
      403,
      'FORBIDDEN',
    );
    assert.equal(
      (
        await request(`${running.api}/users`, {
          method: 'POST',
          body,
          headers: { authorization: basic('ada', 'pw-of-the-test') },
        })
      ).status,
      201,
    );
  });
});
