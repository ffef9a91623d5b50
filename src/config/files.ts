/**
 * The files settings name: TLS_CERT and TLS_KEY, read and checked at start-up, so a bad file stops
 * the start with the variable named rather than at the first connection.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';
import { ConfigError } from './readers.js';

/**
 * The TLS suites offered by default: TLS 1.3's, and for TLS 1.2 only ECDHE with AES-GCM or
 * ChaCha20-Poly1305 (forward secrecy, AEAD: no CBC, no SHA-1 MAC), as Mozilla's "intermediate"
 * profile without its DHE suites. Node's own default also allows CBC suites with SHA-1 and SHA-2.
 */
export const TLS_MODERN_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** The certificate and key (both given: policy.ts checks that), loaded, matched, and the cipher list tried. */
export function loadTls(
  certPath: string,
  keyPath: string,
  ciphers: string | undefined,
): { cert: Buffer; key: Buffer; ciphers: string } {
  const load = (name: string, path: string, check: (pem: Buffer) => unknown): Buffer => {
    let pem: Buffer;
    try {
      pem = readFileSync(path);
    } catch (error) {
      throw new ConfigError(name, `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}: ${path})`);
    }
    try {
      check(pem);
    } catch {
      throw new ConfigError(name, `is not a PEM ${name === 'TLS_CERT' ? 'certificate' : 'private key'} (${path})`);
    }
    return pem;
  };
  const cert = load('TLS_CERT', certPath, (pem) => new X509Certificate(pem));
  const key = load('TLS_KEY', keyPath, (pem) => createPrivateKey(pem));
  try {
    createSecureContext({ cert, key });
  } catch {
    throw new ConfigError('TLS_KEY', `does not match the certificate of TLS_CERT (${keyPath})`);
  }
  const suites = ciphers ?? TLS_MODERN_CIPHERS;
  try {
    createSecureContext({ cert, key, ciphers: suites });
  } catch {
    throw new ConfigError(
      'TLS_CIPHERS',
      `must be an OpenSSL cipher list that leaves at least one suite (got "${suites}")`,
    );
  }
  return { cert, key, ciphers: suites };
}
