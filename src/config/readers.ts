/**
 * Generic readers of setting values: each turns the raw text of a variable into a value, or throws
 * ConfigError naming the variable. They know nothing of any one setting; settings.ts declares which
 * reader and which bounds each setting uses.
 */
import { isIP } from 'node:net';
import { REQUIRED_ROLES } from './roles.js';

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    detail: string,
  ) {
    super(`${variable} ${detail}`);
    this.name = 'ConfigError';
  }
}

/** Reads the raw text of `name`'s variable (trimmed; set but empty counts as unset). */
export type Parse<T> = (raw: string, name: string) => T;

/** A comma list's entries, trimmed. */
export function commaList(raw: string): string[] {
  return raw.split(',').map((entry) => entry.trim());
}

export const KIB = 1024;
export const MIB = 1024 * 1024;

export function integer(min: number, max: number): Parse<number> {
  return (raw, name) => {
    if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
    const value = Number(raw);
    if (value < min || value > max) throw new ConfigError(name, `must be from ${min} to ${max} (got ${raw})`);
    return value;
  };
}

export const port: Parse<number> = integer(0, 65_535);

/** The units of a size; a Map, so that a name of Object.prototype's (`5constructor`) is no unit. */
const UNITS = new Map(Object.entries({ '': 1, b: 1, kb: 1000, kib: KIB, k: KIB, mb: 1000 * 1000, mib: MIB, m: MIB }));

/** A size in bytes: `65536`, `64KiB`, `1MiB`, `1MB`. */
export function bytes(min: number, max: number): Parse<number> {
  return (raw, name) => {
    const match = /^(\d+)\s*([a-z]*)$/i.exec(raw);
    const unit = match ? UNITS.get(match[2]!.toLowerCase()) : undefined;
    if (!match || unit === undefined) {
      throw new ConfigError(name, `must be a size in bytes such as 1048576, 64KiB or 1MiB (got "${raw}")`);
    }
    const value = Number(match[1]) * unit;
    if (value < min || value > max) throw new ConfigError(name, `must be from ${min} to ${max} bytes (got ${raw})`);
    return value;
  };
}

export const boolean: Parse<boolean> = (raw, name) => {
  const lower = raw.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(lower)) return true;
  if (['false', '0', 'no', 'off'].includes(lower)) return false;
  throw new ConfigError(name, `must be true or false (got "${lower}")`);
};

export function oneOf<T extends string>(allowed: readonly T[]): Parse<T> {
  return (raw, name) => {
    const lower = raw.toLowerCase();
    if ((allowed as readonly string[]).includes(lower)) return lower as T;
    throw new ConfigError(name, `must be one of ${allowed.join(', ')} (got "${lower}")`);
  };
}

/** Any text, as given (credentials, names: checked where their meaning is known). */
export const text: Parse<string> = (raw) => raw;

/** The URL of an engine (PostgreSQL, Redis): parsed so a typo fails at start-up, not at first use. */
export function engineUrl(protocols: readonly string[]): Parse<string> {
  return (raw, name) => {
    const url = URL.parse(raw);
    if (!url) throw new ConfigError(name, `must be a URL such as ${protocols[0]}//127.0.0.1 (got an unparsable value)`);
    if (!protocols.includes(url.protocol)) {
      throw new ConfigError(name, `must use ${protocols.map((p) => `${p}//`).join(' or ')} (got ${url.protocol}//)`);
    }
    return raw;
  };
}

/** The prefix of a SQLite DATABASE_URL: `sqlite:<path>`. */
export const SQLITE_PREFIX = 'sqlite:';

/** DATABASE_URL: a PostgreSQL URL, or `sqlite:<path>`, which must name a file (its help lists the forms). */
export const databaseUrl: Parse<string> = (raw, name) => {
  if (!raw.toLowerCase().startsWith(SQLITE_PREFIX)) return engineUrl(['postgres:', 'postgresql:'])(raw, name);
  if (sqlitePath(raw) === '')
    throw new ConfigError(name, 'must name a file after sqlite: (sqlite:./roster.db, or sqlite::memory:)');
  return raw;
};

/** The file of a `sqlite:` DATABASE_URL, as written (`sqlite:///abs` names `/abs`). */
export function sqlitePath(url: string): string {
  const path = url.slice(SQLITE_PREFIX.length);
  return path.startsWith('//') ? path.slice(2) : path;
}

/** SQLITE_SYNCHRONOUS: NORMAL or FULL, in any case. */
export const sqliteSynchronous: Parse<'NORMAL' | 'FULL'> = (raw, name) => {
  const value = raw.toUpperCase();
  if (value !== 'NORMAL' && value !== 'FULL') throw new ConfigError(name, `must be NORMAL or FULL (got "${raw}")`);
  return value;
};

/**
 * The chat address the console connects to: a ws://, wss://, http:// or https:// URL, or a path on the
 * page's host. The one definition of that rule: the console reads the setting's value as given.
 */
export const chatUrl: Parse<string> = (raw, name) => {
  if (/^\/(?!\/)\S*$/.test(raw)) return raw; // a path on the page's host
  const url = URL.parse(raw);
  if (!url || !['ws:', 'wss:', 'http:', 'https:'].includes(url.protocol)) {
    throw new ConfigError(
      name,
      `must be a ws://, wss://, http:// or https:// URL, or a path such as /chat (got "${raw}")`,
    );
  }
  return raw;
};

/** An IP address (v4 or v6) or a host name; anything else (a URL, a port suffix) fails here rather than inside listen(). */
export const host: Parse<string> = (raw, name) => {
  const hostname =
    /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
  if (isIP(raw) === 0 && !hostname.test(raw))
    throw new ConfigError(name, `must be an IP address or a host name (got "${raw}")`);
  return raw;
};

/** The longest role name; also the longest `role` a user may hold (src/users/schema.ts). */
export const ROLE_NAME_MAX_LENGTH = 64;

/** A role's name: the one rule for ROLES and for the roles of API_KEYS and BASIC_USERS entries. */
export const ROLE_NAME = new RegExp(`^[A-Za-z0-9_.-]{1,${ROLE_NAME_MAX_LENGTH}}$`);

/** ROLES: a comma list of role names that includes `admin` and `user` (the seeds' and the default role). */
export const roles: Parse<readonly string[]> = (raw, name) => {
  const list = [...new Set(commaList(raw))];
  if (list.some((role) => !ROLE_NAME.test(role))) {
    throw new ConfigError(
      name,
      `must be a comma-separated list of names of letters, digits, "_", "." or "-" (got "${raw}")`,
    );
  }
  for (const required of REQUIRED_ROLES) {
    if (!list.includes(required)) throw new ConfigError(name, `must include "${required}" (got "${raw}")`);
  }
  return list;
};

/** The windows of RATE_LIMIT, in seconds (a Map, as UNITS). */
const WINDOWS = new Map(Object.entries({ s: 1, sec: 1, second: 1, m: 60, min: 60, minute: 60, h: 3600, hour: 3600 }));

export interface RateLimit {
  /** Requests (or messages) allowed per window. */
  max: number;
  windowMs: number;
}

/** `100/minute`: a count per second, minute or hour. */
export const rate: Parse<RateLimit> = (raw, name) => {
  const match = /^(\d{1,9})\s*\/\s*([a-z]+)$/i.exec(raw);
  const seconds = match ? WINDOWS.get(match[2]!.toLowerCase()) : undefined;
  const max = match ? Number(match[1]) : 0;
  if (!match || seconds === undefined || max < 1) {
    throw new ConfigError(name, `must be a count per second, minute or hour such as 100/minute (got "${raw}")`);
  }
  return { max, windowMs: seconds * 1000 };
};

/** `true`, `false`, a hop count, or a comma list of addresses and CIDRs. */
export const trustProxy: Parse<boolean | number | readonly string[]> = (raw, name) => {
  const lower = raw.toLowerCase();
  if (['true', 'false'].includes(lower)) return lower === 'true';
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const list = commaList(raw);
  for (const entry of list) {
    const [address = '', prefix, ...rest] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    if (
      family === 0 ||
      rest.length > 0 ||
      (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > bits))
    ) {
      throw new ConfigError(
        name,
        `must be true, false, a hop count, or a comma list of addresses and CIDRs (got "${raw}")`,
      );
    }
  }
  return list;
};

/** Exact origins (scheme, host, port), or `*` alone. Whether `*` is allowed is policy (policy.ts). */
export const origins: Parse<readonly string[]> = (raw, name) => {
  const list = [...new Set(commaList(raw))];
  if (list.includes('*')) {
    if (list.length > 1) throw new ConfigError(name, 'must be "*" alone or a list of origins');
    return ['*'];
  }
  for (const entry of list) {
    const url = URL.parse(entry);
    const origin = url && ['http:', 'https:'].includes(url.protocol) ? url.origin : undefined;
    if (origin !== entry) {
      throw new ConfigError(
        name,
        `must be a comma list of origins such as https://app.example.com (no path, no trailing slash) (got "${entry}")`,
      );
    }
  }
  return list;
};

/** https, except on the loopback interface (a local identity provider, or a test). */
export const jwksUrl: Parse<string> = (raw, name) => {
  const url = URL.parse(raw);
  const loopback = url !== null && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (!url || !(url.protocol === 'https:' || (url.protocol === 'http:' && loopback))) {
    throw new ConfigError(name, `must be an https:// URL (http:// only on localhost) (got "${raw}")`);
  }
  return url.href;
};
