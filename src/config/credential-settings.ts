/** Readers of the credential settings of AUTH: API_KEYS, BASIC_USERS and JWT_SECRET. */
import { parsePasswordHash } from './password-hash.js';
import { commaList, ConfigError, ROLE_NAME, type Parse } from './readers.js';
import { DEFAULT_ROLE } from './roles.js';

/** RFC 7518 3.2: an HS256 key shorter than this is guessable offline from any one token. The CLI's `roster token` checks it too. */
export const JWT_SECRET_MIN_BYTES = 32;

/** An entry without a role is a reader: least privilege, so a forgotten `:admin` fails safe. */
function roleOf(name: string, raw: string | undefined): string {
  if (raw === undefined) return DEFAULT_ROLE;
  if (!ROLE_NAME.test(raw))
    throw new ConfigError(name, `has a role that is not a name of letters, digits, "_", "." or "-" ("${raw}")`);
  return raw;
}

/** `key[:role]`: keys of 16 to 256 URL-safe characters (they travel in a header or a query string). */
export const apiKeys: Parse<{ key: string; role: string }[]> = (raw, name) =>
  commaList(raw).map((entry, index) => {
    const [key = '', role, ...rest] = entry.split(':');
    if (rest.length > 0 || !/^[A-Za-z0-9._~+/=-]{16,256}$/.test(key)) {
      // The key itself is never echoed: configuration errors end up in logs.
      throw new ConfigError(
        name,
        `entry ${index + 1} must be key[:role] with a key of 16 to 256 characters of A-Z a-z 0-9 . _ ~ + / = -`,
      );
    }
    return { key, role: roleOf(name, role) };
  });

/** `name:hash[:role]`, the hash in the format of `roster hash-password`. */
export const basicUsers: Parse<{ name: string; hash: string; role: string }[]> = (raw, variable) => {
  const names = new Set<string>();
  return commaList(raw).map((entry, index) => {
    const [name = '', hash = '', role, ...rest] = entry.split(':');
    if (rest.length > 0 || !/^[^\s:]{1,128}$/.test(name)) {
      throw new ConfigError(
        variable,
        `entry ${index + 1} must be name:hash[:role] (a name of 1 to 128 characters without ":" or spaces)`,
      );
    }
    if (!parsePasswordHash(hash)) {
      throw new ConfigError(
        variable,
        `entry ${index + 1} (${name}) has a hash that is not in the format of "roster hash-password" (scrypt$N$r$p$salt$hash)`,
      );
    }
    if (names.has(name)) throw new ConfigError(variable, `lists the user "${name}" twice`);
    names.add(name);
    return { name, hash, role: roleOf(variable, role) };
  });
};

export const jwtSecret: Parse<string> = (raw, name) => {
  const length = Buffer.byteLength(raw, 'utf8');
  if (length < JWT_SECRET_MIN_BYTES)
    throw new ConfigError(name, `must be at least ${JWT_SECRET_MIN_BYTES} bytes long (got ${length})`);
  return raw;
};
