/**
 * The authenticator of each scheme (edge/authenticator.ts) on its own, built from the settings as
 * Roster builds it: good credentials give the principal the rules of docs/decisions.md ("Protection")
 * describe, bad ones a 401 UNAUTHORIZED whose challenge names the scheme (and, for tokens, says
 * `invalid_token`), and an identity provider that does not answer a 503. Over real sockets, the same
 * table runs against both ports in test/protection/auth.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SignJWT } from 'jose';
import { loadConfig } from '../../src/config/index.js';
import {
  createAuthenticator,
  credentialsOf,
  type Authenticator,
  type Credentials,
} from '../../src/edge/authenticator.js';
import { hashPassword } from '../../src/edge/password.js';
import { RosterError } from '../../src/errors.js';
import {
  API_KEY_ADMIN,
  API_KEY_READER,
  basic,
  freePort,
  JwksServer,
  SECRET,
  signingKey,
  tampered,
  token,
  unsignedToken,
  type SigningKey,
} from '../support/index.js';

const now = () => Math.floor(Date.now() / 1000);

function authenticator(env: Record<string, string>): Authenticator {
  const built = createAuthenticator(loadConfig(env).auth);
  assert.ok(built, `an authenticator for ${env.AUTH}`);
  return built;
}

/** Resolves with the rejection of `work`, or fails when it gives a principal. */
async function rejection(work: () => unknown): Promise<RosterError> {
  try {
    await work();
  } catch (error) {
    assert.ok(error instanceof RosterError, `a RosterError, got ${String(error)}`);
    return error;
  }
  assert.fail('the credential was accepted');
}

/** `credentials` are refused with 401 UNAUTHORIZED and a challenge matching `challenge`. */
async function assertUnauthorized(auth: Authenticator, credentials: Credentials, challenge: RegExp): Promise<void> {
  const error = await rejection(() => auth.authenticate(credentials));
  assert.equal(error.code, 'UNAUTHORIZED', error.message);
  assert.equal(error.status, 401);
  assert.match(error.headers?.['www-authenticate'] ?? '', challenge);
}

test('AUTH=none builds no authenticator: every request is anonymous', () => {
  assert.equal(createAuthenticator(loadConfig({}).auth), undefined);
});

describe('AUTH=apikey', () => {
  const auth = authenticator({ AUTH: 'apikey', API_KEYS: `${API_KEY_ADMIN}:admin,${API_KEY_READER}` });
  const challenge = /^ApiKey realm="roster", header="X-API-Key", query="api_key"$/;

  test('a listed key is the principal of its entry: its role, or a reader without one', () => {
    assert.deepEqual(auth.authenticate({ apiKey: API_KEY_ADMIN }), {
      name: 'api-key-1',
      id: 'api-key-1',
      role: 'admin',
      scheme: 'apikey',
    });
    assert.deepEqual(auth.authenticate({ apiKey: API_KEY_READER }), {
      name: 'api-key-2',
      id: 'api-key-2',
      role: 'user',
      scheme: 'apikey',
    });
  });

  for (const [what, apiKey] of [
    ['missing', undefined],
    ['empty', ''],
    ['wrong', 'wrong-key-0123456789abcdef'],
    ['a prefix of a listed key', API_KEY_ADMIN.slice(0, 10)],
    ['a listed key and more', `${API_KEY_ADMIN}0`],
  ] as const)
    test(`a key ${what} is refused with 401 and the ApiKey challenge`, async () => {
      await assertUnauthorized(auth, { apiKey }, challenge);
    });

  test('a key in the Authorization header does not count', async () => {
    await assertUnauthorized(auth, { authorization: `Bearer ${API_KEY_ADMIN}` }, challenge);
  });
});

describe('AUTH=basic', () => {
  let auth: Authenticator;
  const challenge = /^Basic realm="roster", charset="UTF-8"$/;
  before(async () => {
    // The lowest cost the setting accepts: the rules under test do not depend on it.
    const weak = { N: 2 ** 10, r: 8, p: 1 };
    const users = `ada:${await hashPassword('lovelace-1815', weak)}:admin,bob:${await hashPassword('builder-pw', weak)}`;
    auth = authenticator({ AUTH: 'basic', BASIC_USERS: users });
  });

  test('the right password is the principal of its user: its role, or a reader without one', async () => {
    assert.deepEqual(await auth.authenticate({ authorization: basic('ada', 'lovelace-1815') }), {
      name: 'ada',
      id: 'ada',
      role: 'admin',
      scheme: 'basic',
    });
    assert.deepEqual(await auth.authenticate({ authorization: basic('bob', 'builder-pw') }), {
      name: 'bob',
      id: 'bob',
      role: 'user',
      scheme: 'basic',
    });
  });

  for (const [what, authorization] of [
    ['missing', undefined],
    ['not base64', 'Basic !!!'],
    ['without a colon', `Basic ${Buffer.from('ada').toString('base64')}`],
    ['with a wrong password', basic('ada', 'lovelace-1816')],
    ['of an unknown user', basic('eve', 'lovelace-1815')],
    ["of another user with ada's password", basic('bob', 'lovelace-1815')],
    ['of another scheme', 'Bearer abc'],
  ] as const)
    test(`credentials ${what} are refused with 401 and the Basic challenge`, async () => {
      await assertUnauthorized(auth, { authorization }, challenge);
    });

  test('admit is asked before a password is hashed, and its refusal is the answer', async () => {
    const refusal = new RosterError('RATE_LIMITED', 'slow down');
    const refused = await rejection(() =>
      auth.authenticate({ authorization: basic('ada', 'wrong-password') }, () => Promise.reject(refusal)),
    );
    assert.equal(refused, refusal);
    let admitted = 0;
    const admit = async () => void admitted++;
    await auth.authenticate({ authorization: basic('bob', 'builder-pw') });
    await auth.authenticate({ authorization: basic('bob', 'builder-pw') }, admit);
    assert.equal(admitted, 0, 'a credential verified a moment ago needs no hashing, so no admission');
    await assertUnauthorized(auth, { authorization: basic('bob', 'not-it') }, challenge);
    await rejection(() => auth.authenticate({ authorization: basic('bob', 'not-it') }, admit));
    assert.equal(admitted, 1, 'a failure is not remembered: the next try is hashed, and admitted first');
  });
});

describe('AUTH=jwt', () => {
  const auth = authenticator({ AUTH: 'jwt', JWT_SECRET: SECRET });
  const bearer = (jwt: string): Credentials => ({ authorization: `Bearer ${jwt}` });
  const invalid = /^Bearer realm="roster", error="invalid_token", error_description="[^"]+"$/;

  test('a good HS256 token is its principal: name, issuer and subject as id, role, and its expiry', async () => {
    const exp = now() + 600;
    const principal = await auth.authenticate(bearer(await token({ iss: 'roster', name: 'Ada' }, { exp })));
    assert.deepEqual(principal, {
      name: 'Ada',
      id: JSON.stringify(['roster', 'u-1']),
      role: 'admin',
      scheme: 'jwt',
      expiresAt: exp * 1000,
    });
  });

  test('without a name the subject is shown, and without a role the principal is a reader', async () => {
    const principal = await auth.authenticate({ accessToken: await token({ sub: 'u-9' }, { omit: ['name', 'role'] }) });
    assert.deepEqual([principal.name, principal.id, principal.role], ['u-9', JSON.stringify(['', 'u-9']), 'user']);
  });

  test('no token is refused with the bare Bearer challenge', async () => {
    await assertUnauthorized(auth, {}, /^Bearer realm="roster"$/);
  });

  const cases: [what: string, credentials: () => Promise<Credentials>][] = [
    ['not a Bearer header', async () => ({ authorization: basic('ada', 'pw') })],
    ['not a JWT', async () => bearer('not-a-token')],
    [
      'signed with another secret',
      async () => bearer(await token({}, { key: new TextEncoder().encode('another-secret-of-at-least-32-bytes!!') })),
    ],
    ['expired', async () => bearer(await token({}, { exp: now() - 60, iat: now() - 120 }))],
    ['not valid before a later time (nbf)', async () => bearer(await token({}, { nbf: now() + 600 }))],
    ['issued in the future (iat)', async () => bearer(await token({}, { iat: now() + 600 }))],
    ['without exp', async () => bearer(await token({}, { omit: ['exp'] }))],
    ['without sub', async () => bearer(await token({}, { omit: ['sub'] }))],
    ['with a sub that is not a string', async () => bearer(await token({ sub: 42 as unknown as string }))],
    ['with an empty name', async () => bearer(await token({ name: '' }))],
    ['with a lone surrogate in its name', async () => bearer(await token({ name: 'Ada \ud800' }))],
    ['tampered', async () => bearer(tampered(await token({ role: 'user' })))],
    ['unsigned (alg none)', async () => bearer(unsignedToken())],
    ['signed with HS512', async () => bearer(await token({}, { alg: 'HS512' }))],
  ];
  for (const [what, credentials] of cases)
    test(`a token ${what} is refused with 401 invalid_token`, async () => {
      await assertUnauthorized(auth, await credentials(), invalid);
    });
});

describe('AUTH=oauth2', () => {
  const ISSUER = 'https://idp.test.example/';
  const AUDIENCE = 'roster-api';
  let jwks: JwksServer;
  let key: SigningKey;
  let stranger: SigningKey;
  let auth: Authenticator;
  let relaxed: Authenticator;
  before(async () => {
    [key, stranger] = await Promise.all([signingKey('k-1', 'ES256'), signingKey('k-1', 'ES256')]);
    jwks = await JwksServer.start([key]);
    const env = { AUTH: 'oauth2', OAUTH2_JWKS_URL: jwks.url, OAUTH2_ISSUER: ISSUER, OAUTH2_AUDIENCE: AUDIENCE };
    auth = authenticator(env);
    relaxed = authenticator({ ...env, OAUTH2_ACCEPT_JWT_TYP: 'true' });
  });
  after(() => jwks.close());

  /** An access token of the provider; `typ` at+jwt unless given (null leaves it out). */
  function accessToken(
    options: { signer?: SigningKey; typ?: string | null; iss?: string; aud?: string; exp?: number } = {},
  ): Promise<string> {
    const signer = options.signer ?? key;
    return new SignJWT({ name: 'Ada', role: 'admin' })
      .setProtectedHeader({
        alg: signer.alg,
        kid: signer.kid,
        ...(options.typ === null ? {} : { typ: options.typ ?? 'at+jwt' }),
      })
      .setSubject('u-1')
      .setIssuer(options.iss ?? ISSUER)
      .setAudience(options.aud ?? AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(options.exp ?? now() + 600)
      .sign(signer.privateKey);
  }
  const bearer = async (jwt: Promise<string>): Promise<Credentials> => ({ authorization: `Bearer ${await jwt}` });
  const invalid = /^Bearer realm="roster", error="invalid_token"/;

  test('an access token signed by a key of the JWKS, for this issuer and audience, is its principal', async () => {
    const principal = await auth.authenticate(await bearer(accessToken()));
    assert.deepEqual(
      [principal.name, principal.id, principal.role, principal.scheme],
      ['Ada', JSON.stringify([ISSUER, 'u-1']), 'admin', 'oauth2'],
    );
    assert.equal((await auth.authenticate(await bearer(accessToken({ typ: 'application/AT+JWT' })))).name, 'Ada');
  });

  const cases: [what: string, jwt: () => Promise<string>][] = [
    ['signed by a key not in the JWKS', () => accessToken({ signer: stranger })],
    ['of another issuer', () => accessToken({ iss: 'https://elsewhere.example/' })],
    ['for another audience', () => accessToken({ aud: 'another-api' })],
    ['expired', () => accessToken({ exp: now() - 60 })],
    ['that is an ID token (typ JWT)', () => accessToken({ typ: 'JWT' })],
    ['without typ', () => accessToken({ typ: null })],
    ['signed with the shared secret instead (HS256)', () => token({ iss: ISSUER, aud: AUDIENCE })],
  ];
  for (const [what, jwt] of cases)
    test(`a token ${what} is refused with 401 invalid_token`, async () => {
      await assertUnauthorized(auth, await bearer(jwt()), invalid);
    });

  test('OAUTH2_ACCEPT_JWT_TYP=true also takes a token typed JWT or untyped, and still checks the rest', async () => {
    assert.equal((await relaxed.authenticate(await bearer(accessToken({ typ: 'JWT' })))).name, 'Ada');
    assert.equal((await relaxed.authenticate(await bearer(accessToken({ typ: null })))).name, 'Ada');
    await assertUnauthorized(relaxed, await bearer(accessToken({ typ: 'JWT', aud: 'another-api' })), invalid);
  });

  test('a provider that does not answer is a 503 with Retry-After, not the client’s 401', async () => {
    const gone = authenticator({
      AUTH: 'oauth2',
      OAUTH2_JWKS_URL: `http://127.0.0.1:${await freePort()}/jwks.json`,
      OAUTH2_ISSUER: ISSUER,
      OAUTH2_AUDIENCE: AUDIENCE,
    });
    const error = await rejection(async () => gone.authenticate(await bearer(accessToken())));
    assert.equal(error.code, 'SERVICE_UNAVAILABLE', error.message);
    assert.equal(error.status, 503);
    assert.equal(error.headers?.['retry-after'], '5');
  });
});

describe('credentialsOf', () => {
  test('reads the Authorization and X-API-Key headers, then api_key from the query when no header gave one', () => {
    assert.deepEqual(
      credentialsOf({ authorization: 'Bearer t', 'x-api-key': 'h' }, '/x?api_key=q', { accessToken: false }),
      {
        authorization: 'Bearer t',
        apiKey: 'h',
      },
    );
    assert.equal(credentialsOf({}, '/x?api_key=q', { accessToken: false }).apiKey, 'q');
  });

  test('takes access_token from the query only where asked to (chat handshakes)', () => {
    assert.equal(credentialsOf({}, '/?access_token=t', { accessToken: false }).accessToken, undefined);
    assert.equal(credentialsOf({}, '/?access_token=t', { accessToken: true }).accessToken, 't');
  });
});
