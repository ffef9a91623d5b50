/**
 * Credentials for the tests under AUTH: API keys, Basic credentials, tokens (jose) good and forged, a
 * JWKS server that can rotate its keys, and a certificate for TLS.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export const SECRET = 'test-secret-of-at-least-32-bytes-0123456789';
export const API_KEY_ADMIN = 'admin-key-0123456789abcdef';
export const API_KEY_READER = 'reader-key-0123456789abcdef';

const now = () => Math.floor(Date.now() / 1000);

/** An HS256 token (or another algorithm with `key`); claims default to a valid admin token for an hour. */
export async function token(
  claims: JWTPayload = {},
  options: {
    key?: CryptoKey | Uint8Array;
    alg?: string;
    kid?: string;
    typ?: string | null;
    exp?: number;
    iat?: number;
    nbf?: number;
    omit?: string[];
  } = {},
): Promise<string> {
  const payload: JWTPayload = {
    sub: 'u-1',
    name: 'Ada',
    role: 'admin',
    iat: options.iat ?? now(),
    exp: options.exp ?? now() + 3600,
    ...claims,
  };
  if (options.nbf !== undefined) payload.nbf = options.nbf;
  for (const name of options.omit ?? []) delete payload[name];
  return (
    new SignJWT(payload)
      // typ: `JWT` unless given; null leaves it out.
      .setProtectedHeader({
        alg: options.alg ?? 'HS256',
        ...(options.typ === null ? {} : { typ: options.typ ?? 'JWT' }),
        ...(options.kid ? { kid: options.kid } : {}),
      })
      .sign(options.key ?? new TextEncoder().encode(SECRET))
  );
}

/** A token with `alg: none` and no signature: built by hand, since no library should make one. */
export function unsignedToken(claims: JWTPayload = {}): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${encode({ alg: 'none', typ: 'JWT' })}.${encode({ sub: 'u-1', role: 'admin', iat: now(), exp: now() + 3600, ...claims })}.`;
}

/** The token with one character of its payload changed (the signature no longer matches). */
export function tampered(jwt: string): string {
  const [header, payload, signature] = jwt.split('.') as [string, string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as JWTPayload;
  claims.role = claims.role === 'admin' ? 'user' : 'admin';
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}

export const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

export interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  jwk: JWK;
}

export async function signingKey(kid: string, alg: 'RS256' | 'ES256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** A JWKS endpoint of the test's own; `keys` can be replaced (a rotation); `fetches` counts requests. */
export class JwksServer {
  keys: SigningKey[] = [];
  fetches = 0;
  readonly server: Server;

  private constructor() {
    this.server = createServer((_request, response) => {
      this.fetches += 1;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ keys: this.keys.map((key) => key.jwk) }));
    });
  }

  static async start(keys: SigningKey[]): Promise<JwksServer> {
    const jwks = new JwksServer();
    jwks.keys = keys;
    jwks.server.listen(0, '127.0.0.1');
    await once(jwks.server, 'listening');
    return jwks;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/.well-known/jwks.json`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** A self-signed certificate for 127.0.0.1, or undefined when openssl is not installed. */
export function makeCertificate(): { dir: string; cert: string; key: string } | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'roster-tls-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  return { dir, cert, key };
}
