/**
 * A TCP relay between Roster and an engine (PostgreSQL) that a test can cut and restore, to play a
 * network failure or an engine going away without touching the engine that other tests share.
 */
import { once } from 'node:events';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

export class TcpProxy {
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  /** Stalled: bytes are taken in and dropped both ways, as by a peer that vanished without a reset. */
  #stalled = false;

  private constructor(
    private readonly target: { host: string; port: number },
    public port: number,
  ) {}

  /** Listens on an ephemeral loopback port and relays every connection to `target`. */
  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(target, 0);
    await proxy.restore();
    return proxy;
  }

  /** Connections open now are destroyed, and new ones are refused, until `restore`. */
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** From now on nothing gets through, but no connection is refused or closed either: a black hole. */
  stall(): void {
    this.#stalled = true;
  }

  /** Accepts and relays connections again, on the same port; a stall ends by cutting every stalled connection. */
  async restore(): Promise<void> {
    if (this.#stalled) {
      this.#stalled = false;
      await this.cut();
    }
    const server = createServer((client) => {
      const upstream = createConnection(this.target);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('error', () => undefined); // the other side is destroyed with it
        socket.on('close', () => {
          this.#sockets.delete(socket);
          client.destroy();
          upstream.destroy();
        });
      }
      client.on('data', (data) => {
        if (!this.#stalled) upstream.write(data);
      });
      upstream.on('data', (data) => {
        if (!this.#stalled) client.write(data);
      });
    });
    server.listen(this.port, '127.0.0.1');
    await once(server, 'listening');
    this.port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  close(): Promise<void> {
    return this.cut();
  }
}
