/**
 * Authentication: one `Authenticator` per scheme, built from configuration, that turns the credentials
 * of a request (REST) or a handshake (chat) into a `Principal`, or throws RosterError 401 with a
 * `WWW-Authenticate` challenge naming the scheme. Signatures and tokens are checked by jose only;
 * secrets (API keys, passwords) are compared in constant time.
 *
 * Successful verifications are cached for a short while (`VerificationCache`), keyed by a digest of the
 * credential, so that a client sending the same credential on every request pays scrypt (Basic) or a
 * signature check (tokens) once a minute rather than every time.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyOptions } from 'jose';
import type { AuthConfig, AuthScheme } from '../config/index.js';
import { RosterError } from '../errors.js';
import { RETRY_AFTER, WWW_AUTHENTICATE } from '../protocol/http-headers.js';
import { DEFAULT_ROLE } from '../config/roles.js';
import { BoundedWork } from './bounded-work.js';
import { parsePasswordHash, verifyPassword, type PasswordHash } from './password.js';

export interface Principal {
  /** Who, as shown: the Basic user name, `api-key-<n>` (n-th entry of API_KEYS), or a token's `name` claim, else its `sub`. */
  name: string;
  /**
   * Who, as counted: what limits are keyed by (edge/client-identity.ts). The Basic user name, or
   * `api-key-<n>`, or a token's issuer and `sub`: never the `name` claim, which is a display name that
   * two users may share, and that OAuth2 providers often let their users edit.
   */
  id: string;
  /** `admin` may write users; any other role may read. */
  role: string;
  scheme: Exclude<AuthScheme, 'none'>;
  /**
   * When the credential stops being valid (ms since the epoch): a token's `exp`. Absent for API keys
   * and Basic users, which do not expire. A chat connection is closed (1008) when this passes.
   */
  expiresAt?: number;
}

/** What a request or handshake carries; the caller decides which places count (see credentialsOf). */
export interface Credentials {
  /** The Authorization header. */
  authorization?: string | undefined;
  /** X-API-Key, or the `api_key` query parameter. */
  apiKey?: string | undefined;
  /** The `access_token` query parameter (chat handshakes from browsers, which cannot set headers). */
  accessToken?: string | undefined;
}

export interface Authenticator {
  readonly scheme: Exclude<AuthScheme, 'none'>;
  /** The `WWW-Authenticate` challenge of a 401 without an error (credentials missing). */
  readonly challenge: string;
  /**
   * The principal, or throws the 401. Synchronous when it can be (API keys; a credential verified
   * recently), so that the common request costs no promise; a promise when it must wait (scrypt, a
   * signature check, a JWKS fetch).
   *
   * `admit`, when given, is awaited before a password is hashed (Basic credentials not verified
   * recently), and its rejection is the request's answer: the caller counts the attempt against the
   * client's rate limit there, before the work, and refuses with 429 past it (hashing itself is bounded:
   * HASHING_QUEUE). Token signatures are cheap to check and cannot be guessed: no admit there.
   */
  authenticate(credentials: Credentials, admit?: () => Promise<void>): Principal | Promise<Principal>;
}

/** Seconds of clock difference tolerated on exp, nbf and iat. */
const CLOCK_TOLERANCE_S = 5;
/**
 * At most one JWKS fetch per this many ms when a token names a key id that is not cached (jose's
 * `cooldownDuration`; its default is 30 s). Short enough that a rotation is picked up at once, long
 * enough that tokens with made-up key ids cannot make Roster hammer the identity provider.
 */
export const JWKS_COOLDOWN_MS = 2_000;
const JWKS_TIMEOUT_MS = 5_000;
/** How long a successful verification is reused; never past a token's exp. */
const CACHE_TTL_MS = 60_000;
const CACHE_ENTRIES = 4_096;
/**
 * Password hashes computed at once (scrypt runs on libuv's thread pool, 4 threads by default: two stay
 * free for file and DNS work), and how many more may wait. A login waits at most about
 * (HASHING_QUEUE / HASHING_CONCURRENCY + 1) hashes, some five times its usual time; past the queue it
 * gets 503 at once, however many credentials a flood brings.
 */
export const HASHING_CONCURRENCY = 2;
export const HASHING_QUEUE = 8;
const HASHING_RETRY_AFTER_S = 1;
const REALM = 'realm="roster"';

export function createAuthenticator(config: AuthConfig): Authenticator | undefined {
  switch (config.scheme) {
    case 'none':
      return undefined;
    case 'apikey':
      return apiKeyAuthenticator(config.apiKeys);
    case 'basic':
      return basicAuthenticator(config.basicUsers);
    case 'jwt':
      return tokenAuthenticator('jwt', new TextEncoder().encode(config.jwtSecret), { algorithms: ['HS256'] });
    case 'oauth2': {
      const { jwksUrl, issuer, audience, acceptJwtTyp } = config.oauth2!;
      const jwks = createRemoteJWKSet(new URL(jwksUrl), {
        cooldownDuration: JWKS_COOLDOWN_MS,
        timeoutDuration: JWKS_TIMEOUT_MS,
      });
      // RFC 9068 2.1: an access token says `typ: at+jwt`, so that an ID token (typ JWT, or none), signed
      // by the same keys for the same audience, is not taken for one. OAUTH2_ACCEPT_JWT_TYP relaxes
      // this for providers that do not set it.
      const types = acceptJwtTyp ? [...ACCESS_TOKEN_TYPES, 'jwt', undefined] : ACCESS_TOKEN_TYPES;
      return tokenAuthenticator('oauth2', jwks, { algorithms: ['RS256', 'ES256'], issuer, audience }, types);
    }
  }
}

/** The credentials of a request: headers, plus `api_key` (and with `accessToken`, `access_token`) from the query. */
export function credentialsOf(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  url: string,
  options: { accessToken: boolean },
): Credentials {
  const credentials: Credentials = {
    authorization: single(headers.authorization),
    apiKey: single(headers['x-api-key']),
  };
  const query = url.indexOf('?');
  if (query !== -1 && (url.includes('api_key=', query) || url.includes('access_token=', query))) {
    const params = new URLSearchParams(url.slice(query + 1));
    credentials.apiKey ??= params.get('api_key') ?? undefined;
    if (options.accessToken) credentials.accessToken = params.get('access_token') ?? undefined;
  }
  return credentials;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function unauthorized(challenge: string, message: string): RosterError {
  return new RosterError('UNAUTHORIZED', message, { headers: { [WWW_AUTHENTICATE]: challenge } });
}

// crypto.hash (one-shot) is two to four times as fast as createHash for these short inputs, and it runs
// on every authenticated request.
const sha256 = (value: string): Buffer => hash('sha256', value, 'buffer');
const sha256Text = (value: string): string => hash('sha256', value, 'base64');

function apiKeyAuthenticator(keys: AuthConfig['apiKeys']): Authenticator {
  const challenge = `ApiKey ${REALM}, header="X-API-Key", query="api_key"`;
  // Digests have one length whatever the key's, so timingSafeEqual applies and leaks no length.
  const entries = keys.map((entry, index) => {
    const name = `api-key-${index + 1}`;
    return { digest: sha256(entry.key), principal: { name, id: name, role: entry.role, scheme: 'apikey' as const } };
  });
  return {
    scheme: 'apikey',
    challenge,
    authenticate({ apiKey }) {
      if (apiKey === undefined || apiKey === '')
        throw unauthorized(challenge, 'An API key is required (X-API-Key header or api_key parameter)');
      const digest = sha256(apiKey);
      let found: Principal | undefined;
      // Every key is compared, match or not: the time taken says nothing about which key (if any) matched.
      for (const entry of entries) {
        const equal = timingSafeEqual(digest, entry.digest);
        if (equal && found === undefined) found = entry.principal;
      }
      if (!found) throw unauthorized(challenge, 'The API key is not valid');
      return found;
    },
  };
}

function basicAuthenticator(users: AuthConfig['basicUsers']): Authenticator {
  const challenge = `Basic ${REALM}, charset="UTF-8"`;
  const byName = new Map(
    users.map((user) => [
      user.name,
      {
        hash: parsePasswordHash(user.hash)!,
        principal: { name: user.name, id: user.name, role: user.role, scheme: 'basic' as const },
      },
    ]),
  );
  // An unknown user costs one scrypt like a known one, with the parameters of a real entry, so the
  // time taken does not tell which user names exist.
  const first = [...byName.values()][0]!.hash;
  const decoy: PasswordHash = { ...first, salt: randomBytes(first.salt.length), hash: randomBytes(first.hash.length) };
  const cache = new VerificationCache();
  const hashing = new BoundedWork(HASHING_CONCURRENCY, HASHING_QUEUE);
  const busy = () =>
    new RosterError('SERVICE_UNAVAILABLE', 'Too many logins are being checked; try again shortly', {
      headers: { [RETRY_AFTER]: String(HASHING_RETRY_AFTER_S) },
    });
  return {
    scheme: 'basic',
    challenge,
    authenticate({ authorization }, admit) {
      if (authorization === undefined) throw unauthorized(challenge, 'Credentials are required (Authorization: Basic)');
      const known = cache.get(authorization);
      if (known) return known;
      const match = /^Basic +([A-Za-z0-9+/]{1,4096}={0,2}) *$/i.exec(authorization);
      const decoded = match ? Buffer.from(match[1]!, 'base64').toString('utf8') : '';
      const colon = decoded.indexOf(':');
      if (colon <= 0) throw unauthorized(challenge, 'The Authorization header is not valid Basic credentials');
      const verify = () =>
        cache.verify(authorization, async () => {
          const user = byName.get(decoded.slice(0, colon));
          const ok = await hashing.run(() => verifyPassword(decoded.slice(colon + 1), user?.hash ?? decoy), busy);
          if (!ok || !user) throw unauthorized(challenge, 'The user name or password is not valid');
          return { principal: user.principal, expiresAt: Date.now() + CACHE_TTL_MS };
        });
      return admit ? admit().then(verify) : verify();
    },
  };
}

type VerifyKey = Parameters<typeof jwtVerify>[1];

/** `typ` values of an RFC 9068 access token, as compared: lower case, without `application/` (RFC 7515 4.1.9). */
const ACCESS_TOKEN_TYPES: readonly (string | undefined)[] = ['at+jwt'];

/**
 * `types`: the accepted `typ` header values (normalised as in ACCESS_TOKEN_TYPES; `undefined` for none);
 * absent, `typ` is not looked at (AUTH=jwt: Roster's own tokens, one secret, no other kind of token).
 */
function tokenAuthenticator(
  scheme: 'jwt' | 'oauth2',
  key: VerifyKey,
  options: JWTVerifyOptions,
  types?: readonly (string | undefined)[],
): Authenticator {
  const challenge = `Bearer ${REALM}`;
  const invalid = (description: string) =>
    unauthorized(`Bearer ${REALM}, error="invalid_token", error_description="${description}"`, description);
  const verifyOptions: JWTVerifyOptions = {
    ...options,
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: ['exp', 'sub'],
  };
  const cache = new VerificationCache();
  return {
    scheme,
    challenge,
    authenticate({ authorization, accessToken }) {
      let token = accessToken;
      if (authorization !== undefined) {
        const match = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(authorization);
        if (!match) throw invalid('The Authorization header is not a Bearer token');
        token = match[1];
      }
      if (token === undefined || token === '')
        throw unauthorized(challenge, 'A bearer token is required (Authorization: Bearer)');
      const jwt = token;
      const known = cache.get(jwt);
      if (known) return known;
      return cache.verify(jwt, async () => {
        let payload: JWTPayload;
        let typ: string | undefined;
        try {
          const verified = await jwtVerify(jwt, key as Parameters<typeof jwtVerify>[1] & Uint8Array, verifyOptions);
          payload = verified.payload;
          typ = verified.protectedHeader.typ;
        } catch (error) {
          if (error instanceof joseErrors.JWTExpired) throw invalid('The token has expired');
          if (
            error instanceof joseErrors.JWKSTimeout ||
            (scheme === 'oauth2' && !(error instanceof joseErrors.JOSEError))
          ) {
            // The identity provider did not answer: not the client's fault.
            throw new RosterError('SERVICE_UNAVAILABLE', 'The token cannot be checked now; try again later', {
              headers: { [RETRY_AFTER]: '5' },
            });
          }
          throw invalid('The token is not valid');
        }
        // jose checks iat only with maxTokenAge; a token issued in the future is refused here.
        if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + CLOCK_TOLERANCE_S)
          throw invalid('The token is not valid yet');
        if (types && !types.includes(normalisedTyp(typ))) throw invalid('The token is not an access token (typ)');
        // jose checks that sub is present, not its type: a number, an object or an empty string would
        // otherwise become the principal's name (and the chat's).
        if (typeof payload.sub !== 'string' || payload.sub === '') throw invalid('The token has no valid sub claim');
        if (payload.name !== undefined && (typeof payload.name !== 'string' || payload.name === ''))
          throw invalid('The token has a name claim that is not a non-empty string');
        // A lone surrogate has no UTF-8 form: such a name would travel into chat frames and Redis
        // records that other programs (Redis' cjson, the reaper) refuse to read.
        if (![payload.sub, payload.name, payload.iss].every((claim) => typeof claim !== 'string' || wellFormed(claim)))
          throw invalid('The token has a claim that is not well-formed Unicode');
        const name = typeof payload.name === 'string' ? payload.name : payload.sub;
        const role = typeof payload.role === 'string' ? payload.role : DEFAULT_ROLE;
        const expiresAt = payload.exp! * 1000;
        // The issuer (when the token names one) and the subject: unique together, by OIDC's definition.
        const id = JSON.stringify([typeof payload.iss === 'string' ? payload.iss : '', payload.sub]);
        return {
          principal: { name, id, role, scheme, expiresAt },
          expiresAt: Math.min(Date.now() + CACHE_TTL_MS, expiresAt),
        };
      });
    },
  };
}

/** Whether `text` is well-formed UTF-16 (no lone surrogate): String#isWellFormed, ES2024, not in this lib. */
function wellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

/** A `typ` header as compared: lower case, without the `application/` prefix RFC 7515 4.1.9 allows to omit. */
function normalisedTyp(typ: string | undefined): string | undefined {
  if (typ === undefined) return undefined;
  const lower = typ.toLowerCase();
  return lower.startsWith('application/') ? lower.slice('application/'.length) : lower;
}

/**
 * Recent successful verifications by a digest of the credential: a small LRU with expiry. Concurrent
 * checks of one uncached credential share one verification. Failures are never cached.
 */
class VerificationCache {
  readonly #done = new Map<string, { principal: Principal; expiresAt: number }>();
  readonly #pending = new Map<string, Promise<{ principal: Principal; expiresAt: number }>>();

  /** The principal of a credential verified recently, if any. */
  get(credential: string): Principal | undefined {
    const key = sha256Text(credential);
    const hit = this.#done.get(key);
    if (!hit) return undefined;
    this.#done.delete(key);
    if (hit.expiresAt <= Date.now()) return undefined;
    this.#done.set(key, hit); // most recently used goes last
    return hit.principal;
  }

  /** Verifies (once, however many ask at the same time) and remembers a success. */
  async verify(
    credential: string,
    check: () => Promise<{ principal: Principal; expiresAt: number }>,
  ): Promise<Principal> {
    const key = sha256Text(credential);
    let pending = this.#pending.get(key);
    if (!pending) {
      pending = check().finally(() => this.#pending.delete(key));
      this.#pending.set(key, pending);
    }
    const result = await pending;
    if (result.expiresAt > Date.now()) {
      this.#done.set(key, result);
      if (this.#done.size > CACHE_ENTRIES) this.#done.delete(this.#done.keys().next().value!);
    }
    return result.principal;
  }
}
