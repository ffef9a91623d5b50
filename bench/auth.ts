/**
 * Credentials for the benchmark's runs of Roster with authentication on: an API key, and an HS256 JWT
 * minted with jose as `roster token` mints one (src/cli/credential-commands.ts). They are made afresh for each
 * run and never written down.
 */
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';

export interface BenchAuth {
  /** AUTH's value. */
  scheme: 'apikey' | 'jwt';
  /** How requests carry the credential, as the report names it. */
  carrier: string;
  /** Roster's settings for the scheme. */
  env: Record<string, string>;
  /** Sent with every request. */
  headers: Record<string, string>;
}

export async function benchAuths(): Promise<BenchAuth[]> {
  const key = randomBytes(24).toString('base64url');
  // 32 random bytes, 43 characters: Roster uses the characters as the key, and wants 32 bytes at least.
  const secret = randomBytes(32).toString('base64url');
  const token = await new SignJWT({ role: 'user', name: 'Bench' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject('bench')
    .setIssuedAt()
    .setExpirationTime('2h')
    .sign(new TextEncoder().encode(secret));
  // Reading needs no more than the user role.
  return [
    {
      scheme: 'apikey',
      carrier: 'X-API-Key',
      env: { AUTH: 'apikey', API_KEYS: `${key}:user` },
      headers: { 'x-api-key': key },
    },
    {
      scheme: 'jwt',
      carrier: 'Authorization: Bearer',
      env: { AUTH: 'jwt', JWT_SECRET: secret },
      headers: { authorization: `Bearer ${token}` },
    },
  ];
}
