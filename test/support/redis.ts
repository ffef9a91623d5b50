/**
 * The real Redis of the tests: a chat channel of the test's own (so parallel runs on one Redis do not
 * meet), and the address of Redis for a TCP proxy in front of it (tcp-proxy.ts).
 */
import { randomUUID } from 'node:crypto';
import { targetOf, type Target } from './tcp-proxy.js';

export const REDIS_URL = process.env.REDIS_URL;
/** For `describe(..., { skip })`: false when the tests can run. */
export const WITHOUT_REDIS: string | false = REDIS_URL
  ? false
  : 'REDIS_URL not set: the multi-instance chat tests need a real Redis';

/**
 * REDIS_URL with a `keyPrefix` of its own: instances given the same URL share a room; no one else's
 * instances are in it. (Pub/sub ignores the database number, hence the prefix.)
 */
export function roomUrl(base = REDIS_URL!): string {
  const url = new URL(base);
  url.searchParams.set('keyPrefix', `roster-test-${randomUUID()}:`);
  return url.toString();
}

/** Where REDIS_URL's Redis listens: the target of a proxy in front of it. */
export function redisTarget(): Target {
  return targetOf(REDIS_URL!, 6379);
}

/** The same room (keyPrefix) reached through another host and port. */
export function via(url: string, port: number): string {
  const through = new URL(url);
  through.hostname = '127.0.0.1';
  through.port = String(port);
  return through.toString();
}
