/**
 * The tests' one TCP relay, to play a network failure without touching what other tests share: between
 * Roster and an engine (PostgreSQL, Redis), or between a client and Roster (the browser console's chat).
 *
 * - `cut()`: every connection is dropped, and new ones are accepted and dropped at once (each counted in
 *   `refused`), until `restore()`.
 * - `stall()`: what clients send is held back, so the far end hears nothing and answers nothing; nothing
 *   is closed or refused (a peer that vanished without a reset). `resume()` lets the held bytes through;
 *   `restore()` instead cuts the stalled connections and relays new ones.
 * - `loseReplies()`: requests go through, but the first byte of a reply drops the connection instead of
 *   reaching the client (counted in `lostReplies`): the server did the work, the client never hears of it.
 */
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export interface Target {
  host: string;
  port: number;
}

/** The host and port of a URL (`redis://…`, `postgres://…`), with the scheme's port when it has none. */
export function targetOf(url: string, defaultPort: number): Target {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || defaultPort) };
}

export class TcpProxy {
  readonly #server: Server;
  /** Asked at each new connection, so the target may be known only after the proxy's port is. */
  readonly #target: () => Target;
  /** Each client connection and its connection to the target. */
  readonly #pairs = new Map<Socket, Socket>();
  #cut = false;
  #stalled = false;
  #losingReplies = false;
  /** Replies dropped by `loseReplies` instead of reaching their client. */
  lostReplies = 0;
  /** Connections dropped on accept while cut (e.g. a client's reconnection attempts). */
  refused = 0;
  readonly #onRefused = new Set<() => void>();

  private constructor(target: () => Target) {
    this.#target = target;
    this.#server = createServer((client) => this.#accept(client));
  }

  /** Listens on an ephemeral loopback port and relays every connection to `target`. */
  static async start(target: Target | (() => Target)): Promise<TcpProxy> {
    const proxy = new TcpProxy(typeof target === 'function' ? target : () => target);
    proxy.#server.listen(0, '127.0.0.1');
    await once(proxy.#server, 'listening');
    return proxy;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** Drops every connection and refuses new ones until `restore`. */
  cut(): void {
    this.#cut = true;
    this.#dropAll();
  }

  /** Relays again; connections held by a stall are cut, not resumed. */
  restore(): void {
    if (this.#stalled) {
      this.#stalled = false;
      this.#dropAll();
    }
    this.#cut = false;
  }

  /** From now on (new connections), each reply drops its connection instead of reaching the client. */
  loseReplies(): void {
    this.#losingReplies = true;
  }

  /** From now on nothing clients send gets through, and nothing is closed or refused either. */
  stall(): void {
    this.#stalled = true;
    for (const [client, upstream] of this.#pairs) this.#hold(client, upstream);
  }

  /** Ends a stall: what was held back goes through, in order, and so does everything after it. */
  resume(): void {
    if (!this.#stalled) return;
    this.#stalled = false;
    for (const [client, upstream] of this.#pairs) client.pipe(upstream);
  }

  /** Resolves once `count` connections in all have been refused. */
  refusals(count: number, timeoutMs = 5000): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#onRefused.delete(check);
        reject(new Error(`only ${this.refused} of ${count} connection attempts refused within ${timeoutMs} ms`));
      }, timeoutMs);
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
    this.#cut = true;
    this.#dropAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    if (this.#cut) {
      client.destroy();
      this.refused++;
      for (const check of this.#onRefused) check();
      return;
    }
    const { host, port } = this.#target();
    const upstream = connect(port, host);
    this.#pairs.set(client, upstream);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      from.on('error', () => {}); // the other side is destroyed with it
      from.on('close', () => {
        this.#pairs.delete(client);
        to.destroy();
      });
    }
    if (this.#losingReplies) {
      upstream.once('data', () => {
        this.lostReplies++;
        client.destroy();
        upstream.destroy();
      });
    } else upstream.pipe(client);
    if (this.#stalled) this.#hold(client, upstream);
    else client.pipe(upstream);
  }

  #hold(client: Socket, upstream: Socket): void {
    client.unpipe(upstream);
    client.pause();
  }

  #dropAll(): void {
    for (const [client, upstream] of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.#pairs.clear();
  }
}
