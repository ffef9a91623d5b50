/**
 * Password hashes for HTTP Basic users (`BASIC_USERS`), made by `roster hash-password`:
 * `scrypt$N$r$p$salt$hash`, salt (16 bytes) and hash (32 bytes) in base64url. The parameters travel
 * with the hash, so stronger ones can be used later without breaking old entries.
 *
 * N = 2^17, r = 8, p = 1 by default (OWASP's minimum for scrypt): 128 MiB and a few hundred
 * milliseconds per check. Hashes made with the earlier default, N = 2^15, still verify: each check
 * uses the parameters stored in its hash. Stronger settings cost every request that misses the
 * verification cache (authenticator.ts), and cost an attacker who tries unknown users too, so they
 * are a trade-off against denial of service, not a free win.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { PasswordHash } from '../config/password-hash.js';
export { parsePasswordHash, type PasswordHash } from '../config/password-hash.js';

const SCRYPT_DEFAULTS = { N: 2 ** 17, r: 8, p: 1 } as const;
const SALT_BYTES = 16;
const HASH_BYTES = 32;

function derive(
  password: string | Buffer,
  salt: Buffer,
  length: number,
  params: { N: number; r: number; p: number },
): Promise<Buffer> {
  // Node refuses a cost above its default memory cap (32 MiB) unless told: 128 * N * r, plus slack.
  const options: ScryptOptions = { ...params, maxmem: 256 * params.N * params.r + 1024 * 1024 };
  return new Promise((resolve, reject) => {
    scrypt(password, salt, length, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashPassword(
  password: string,
  params: { N: number; r: number; p: number } = SCRYPT_DEFAULTS,
): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, HASH_BYTES, params);
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/** Always runs scrypt once and compares in constant time. */
export async function verifyPassword(password: string | Buffer, stored: PasswordHash): Promise<boolean> {
  const candidate = await derive(password, stored.salt, stored.hash.length, stored);
  return timingSafeEqual(candidate, stored.hash);
}
