/**
 * Shared pieces of the tests against the real Redis: a chat channel of the test's own (so parallel runs
 * on one Redis do not meet), the address of Redis for a TCP proxy in front of it (support/tcp-proxy.ts),
 * and a log stream that can be waited on.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { targetOf, type Target } from '../support/tcp-proxy.js';

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

type LogLine = Record<string, unknown>;

/** A pino destination that keeps every line and lets a test wait for one. */
export class LogWatch {
  readonly lines: LogLine[] = [];
  #waiters: { predicate: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];
  readonly stream = new Writable({
    write: (chunk, _encoding, done) => {
      const line = JSON.parse(String(chunk)) as LogLine;
      this.lines.push(line);
      this.#waiters = this.#waiters.filter((waiter) => !(waiter.predicate(line) && (waiter.resolve(line), true)));
      done();
    },
  });

  /** The first line from index `from` on (default: lines not yet seen) whose `msg` matches. */
  until(msg: RegExp, timeoutMs = 5000, from = this.lines.length): Promise<LogLine> {
    const predicate = (line: LogLine) => typeof line.msg === 'string' && msg.test(line.msg);
    const seen = this.lines.slice(from).find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no log line matching ${msg} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.#waiters.push({
        predicate,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
    });
  }
}
