/**
 * The format of a BASIC_USERS hash, `scrypt$N$r$p$salt$hash` (salt and hash in base64url): part of the
 * setting, so the configuration checks it at start-up; edge/password.ts makes and verifies them.
 */
export interface PasswordHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

const B64URL = /^[A-Za-z0-9_-]+$/;

/** The parsed hash, or undefined when `encoded` is not one (the config check uses this). */
export function parsePasswordHash(encoded: string): PasswordHash | undefined {
  const parts = encoded.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [, n, r, p, salt = '', hash = ''] = parts;
  const N = Number(n);
  const R = Number(r);
  const P = Number(p);
  const powerOfTwo = Number.isInteger(N) && N >= 2 ** 10 && N <= 2 ** 20 && (N & (N - 1)) === 0;
  if (!powerOfTwo || !Number.isInteger(R) || R < 1 || R > 32 || !Number.isInteger(P) || P < 1 || P > 16)
    return undefined;
  if (!B64URL.test(salt) || !B64URL.test(hash)) return undefined;
  const saltBytes = Buffer.from(salt, 'base64url');
  const hashBytes = Buffer.from(hash, 'base64url');
  if (saltBytes.length < 8 || hashBytes.length < 16 || hashBytes.length > 64) return undefined;
  return { N, r: R, p: P, salt: saltBytes, hash: hashBytes };
}
