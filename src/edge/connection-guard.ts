/**
 * What a TCP connection may cost before it has said anything, the same on both ports. A socket that
 * has sent no complete request is seen by neither RATE_LIMIT nor AUTH, so without this one address
 * could hold every slot of MAX_CONNECTIONS (or of the chat port) with sockets that send a few bytes
 * or none, each for up to HEADERS_TIMEOUT_MS.
 *
 * - At most `perAddress` open connections per peer address, counted on `connection` and refused at
 *   once (the socket is destroyed before Node's HTTP parser reads a byte of it). Trusted proxies
 *   (TRUST_PROXY) are exempt: they carry many clients, whose limits apply after the headers.
 * - A socket that has sent no byte within `firstByteMs` (and at most a quarter more) is closed: an
 *   idle connect is the cheapest way to hold a slot, and the headers' own deadline is longer.
 *
 * Written here because neither Node nor Fastify nor ws offers either: Node's `maxConnections` is one
 * global cap, and its `headersTimeout` starts the same clock for a silent socket as for a slow one.
 */
import type { Server, Socket } from 'node:net';
import { OpenCounts } from './open-counts.js';

export interface ConnectionGuardOptions {
  /** Open connections one address may hold; 0: no cap. */
  perAddress: number;
  /** A socket that has sent no byte in this long is closed; undefined: no such deadline. */
  firstByteMs: number | undefined;
  /** Peers the per-address cap does not count: trusted proxies. */
  exempt: (address: string) => boolean;
  /** Told of every connection the guard ends: over the per-address cap, or silent past its deadline. */
  onRefused?: (reason: RefusalReason) => void;
}

export type RefusalReason = 'per_address' | 'first_byte';

/** Counts connections per address on `server` and ends those past the cap or silent too long. */
export function guardConnections(server: Server, options: ConnectionGuardOptions): void {
  const open = new OpenCounts();
  const silent =
    options.firstByteMs === undefined ? undefined : new SilentSockets(options.firstByteMs, options.onRefused);
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress;
    if (address === undefined) return; // already gone
    if (options.perAddress > 0 && !options.exempt(address)) {
      if (open.of(address) >= options.perAddress) {
        options.onRefused?.('per_address');
        socket.destroy();
        return;
      }
      open.hold(address, socket);
    }
    silent?.watch(socket);
  });
}

/**
 * The sockets that have sent no byte yet, looked at by one sweep every SWEEP_FRACTION of the deadline
 * while any is watched: a silent one is closed between `firstByteMs` and a quarter more. Not a timer per
 * socket: with one (a closure holding its socket, for FIRST_BYTE_TIMEOUT_MS), every young-generation
 * collection under load took 30 to 60 ms instead of 1 (BENCHMARKS.md, "Drift against 41a4c31").
 */
class SilentSockets {
  /** Each watched socket, with when it connected (performance.now()). */
  readonly #since = new Map<Socket, number>();
  #sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly firstByteMs: number,
    private readonly onRefused: ConnectionGuardOptions['onRefused'],
  ) {}

  watch(socket: Socket): void {
    this.#since.set(socket, performance.now());
    this.#sweeper ??= setInterval(() => this.#sweep(), this.firstByteMs * SWEEP_FRACTION).unref();
  }

  #sweep(): void {
    const deadline = performance.now() - this.firstByteMs;
    // bytesRead counts at the handle, so it is right even when Node's HTTP parser (or TLS) consumes
    // the socket's data without 'data' events.
    for (const [socket, since] of this.#since) {
      if (socket.destroyed || socket.bytesRead > 0) this.#since.delete(socket);
      else if (since <= deadline) {
        this.#since.delete(socket);
        this.onRefused?.('first_byte');
        socket.destroy();
      }
    }
    if (this.#since.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }
}

/** How often the sweep runs, as a fraction of FIRST_BYTE_TIMEOUT_MS. */
const SWEEP_FRACTION = 0.25;
