/**
 * Shared pieces of the tests against the real Redis: a chat channel of the test's own (so parallel runs
 * on one Redis do not meet), a TCP proxy in front of Redis that a test can cut and restore, and a log
 * stream that can be waited on.
 */
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';

export const REDIS_URL = process.env.REDIS_URL;
/** For `describe(..., { skip })`: false when the tests can run. */
export const WITHOUT_REDIS: string | false = REDIS_URL ? false : 'REDIS_URL not set: the multi-instance chat tests need a real Redis';

/**
 * REDIS_URL with a `keyPrefix` of its own: instances given the same URL share a room; no one else's
 * instances are in it. (Pub/sub ignores the database number, hence the prefix.)
 */
export function roomUrl(base = REDIS_URL!): string {
  const url = new URL(base);
  url.searchParams.set('keyPrefix', `roster-test-${randomUUID()}:`);
  return url.toString();
}

/** The same room (keyPrefix) reached through another host and port. */
export function via(url: string, port: number): string {
  const through = new URL(url);
  through.hostname = '127.0.0.1';
  through.port = String(port);
  return through.toString();
}

/**
 * A TCP proxy to Redis: `cut` drops every connection and refuses new ones until `restore`; `stall`
 * holds back what clients send (Redis hears nothing, answers nothing) until `resume`.
 */
export class RedisProxy {
  readonly #sockets = new Set<Socket>();
  /** Each client connection and its connection to Redis. */
  readonly #pairs = new Map<Socket, Socket>();
  #open = true;
  /** Connections refused while cut: ioredis's reconnection attempts. */
  refused = 0;
  #onRefused = new Set<() => void>();

  private constructor(
    readonly server: Server,
    readonly target: { host: string; port: number },
  ) {}

  static async start(redisUrl = REDIS_URL!): Promise<RedisProxy> {
    const url = new URL(redisUrl);
    const target = { host: url.hostname, port: Number(url.port || 6379) };
    const server = createServer();
    const proxy = new RedisProxy(server, target);
    server.on('connection', (client) => proxy.#accept(client));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return proxy;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  cut(): void {
    this.#open = false;
    for (const socket of this.#sockets) socket.destroy();
  }

  restore(): void {
    this.#open = true;
  }

  stall(): void {
    for (const [client, upstream] of this.#pairs) {
      client.unpipe(upstream);
      client.pause();
    }
  }

  resume(): void {
    for (const [client, upstream] of this.#pairs) client.pipe(upstream);
  }

  /** Resolves once `count` connections in all have been refused. */
  refusals(count: number, timeoutMs = 5000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${this.refused} of ${count} reconnection attempts within ${timeoutMs} ms`)), timeoutMs);
      const check = () => {
        if (this.refused < count) return;
        clearTimeout(timer);
        this.#onRefused.delete(check);
        resolve();
      };
      this.#onRefused.add(check);
      check();
    });
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    if (!this.#open) {
      client.destroy();
      this.refused++;
      for (const check of this.#onRefused) check();
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    this.#pairs.set(client, upstream);
    client.on('close', () => this.#pairs.delete(client));
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      this.#sockets.add(from);
      from.on('error', () => {});
      from.on('close', () => {
        this.#sockets.delete(from);
        to.destroy();
      });
      from.pipe(to);
    }
  }
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
      const timer = setTimeout(() => reject(new Error(`no log line matching ${msg} within ${timeoutMs} ms`)), timeoutMs);
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
