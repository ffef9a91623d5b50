/**
 * The last line of defence between an engine driver and the process. node-postgres and ioredis report
 * a lost connection as an `'error'` event on the client object; an `'error'` event with no listener is
 * thrown by Node and ends the process. Every engine client Roster holds (pooled idle or checked out,
 * dedicated, migration, bus) is given a listener that reports here, so such an event is logged and
 * counted (`roster_engine_errors_total` in /metrics) and never becomes an uncaught exception. The
 * request the connection was serving fails on its own, with 503 (see users/stores/postgres/postgres-connection.ts).
 */
import type { Logger } from 'pino';

export type Engine = 'database' | 'chat_bus';

export class EngineFaults {
  readonly #counts = new Map<Engine, number>();

  constructor(private readonly logger?: Logger) {}

  /** Counts an error event of `engine`; logs it unless the caller logs its own (the bus logs each outage once). */
  report(engine: Engine, error: unknown, options: { log?: boolean } = {}): void {
    this.#counts.set(engine, (this.#counts.get(engine) ?? 0) + 1);
    if (options.log !== false) this.logger?.warn({ err: error, engine }, 'an engine connection reported an error');
  }

  /** Errors reported so far, per engine. */
  counts(): ReadonlyMap<Engine, number> {
    return this.#counts;
  }
}
