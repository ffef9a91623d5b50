/**
 * Prometheus metrics (prom-client), served at `GET /metrics` on the REST port unless `METRICS=false`.
 * One registry per Roster instance (not prom-client's global one), so several instances in one
 * process, as in the tests, do not share counters.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EngineFaults } from './engine-faults.js';
import type { Storage } from './users/service.js';

/** What the chat door reports. Every method is cheap: counters and a gauge. */
export interface ChatMetrics {
  opened(): void;
  /** A connection closed with `code` (RFC 6455; 1006 when it just dropped). */
  closed(code: number): void;
  joined(): void;
  left(): void;
  messageIn(): void;
  /** Frames written for one broadcast or reply. */
  messagesOut(count: number): void;
  slowConsumerDropped(): void;
}

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'roster_http_requests_total',
    help: 'HTTP requests by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'roster_http_request_duration_seconds',
    help: 'HTTP request latency by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  readonly chat: ChatMetrics;

  constructor(faults?: EngineFaults, storage?: () => Promise<Storage | undefined>) {
    // The standard process and Node.js metrics under their conventional names (process_cpu_seconds_total,
    // nodejs_eventloop_lag_seconds, ...), so stock dashboards work; Roster's own carry the roster_ prefix.
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    if (faults) {
      // Read at scrape time from the plain counts the engine listeners keep.
      new Counter({
        name: 'roster_engine_errors_total',
        help: 'Error events of engine connections (PostgreSQL, Redis), each one logged and survived',
        labelNames: ['engine'] as const,
        registers,
        collect() {
          this.reset();
          for (const [engine, count] of faults.counts()) this.labels({ engine }).inc(count);
        },
      });
    }
    if (storage) {
      // The store's fill under MAX_USERS, read at scrape time (absent without a cap).
      const read = async (field: keyof Storage, gauge: Gauge) => {
        gauge.reset();
        const now = await storage();
        if (now) gauge.set(now[field]);
      };
      new Gauge({
        name: 'roster_users_stored',
        help: 'Users in the store (under a MAX_USERS cap)',
        registers,
        collect() {
          return read('users', this);
        },
      });
      new Gauge({
        name: 'roster_users_capacity',
        help: 'MAX_USERS: creates past it get 507',
        registers,
        collect() {
          return read('capacity', this);
        },
      });
    }
    const open = new Gauge({ name: 'roster_chat_connections_open', help: 'Open chat connections', registers });
    const joins = new Counter({ name: 'roster_chat_joins_total', help: 'Connections that joined the room', registers });
    const leaves = new Counter({ name: 'roster_chat_leaves_total', help: 'Connections that left the room', registers });
    const received = new Counter({
      name: 'roster_chat_messages_in_total',
      help: 'Text messages received from clients',
      registers,
    });
    const sent = new Counter({
      name: 'roster_chat_messages_out_total',
      help: 'Messages written to clients (one per recipient)',
      registers,
    });
    const dropped = new Counter({
      name: 'roster_chat_slow_consumers_dropped_total',
      help: 'Connections closed for an unsent backlog over WS_MAX_BACKLOG',
      registers,
    });
    const closes = new Counter({
      name: 'roster_chat_closes_total',
      help: 'Closed chat connections by close code',
      labelNames: ['code'] as const,
      registers,
    });
    this.chat = {
      opened: () => open.inc(),
      closed: (code) => {
        open.dec();
        closes.inc({ code: String(code) });
      },
      joined: () => joins.inc(),
      left: () => leaves.inc(),
      messageIn: () => received.inc(),
      messagesOut: (count) => sent.inc(count),
      slowConsumerDropped: () => dropped.inc(),
    };
  }

  /** Per label set, the counter's and histogram's children: labels are hashed once, not per request. */
  readonly #series = new Map<string, { requests: { inc(): void }; duration: { observe(value: number): void } }>();

  /** Records one finished HTTP request. `route` is the route's pattern (`/api/v1/users/:id`), never the raw URL. */
  observeRequest(route: string, method: string, status: number, seconds: number): void {
    const key = `${status} ${method} ${route}`;
    let series = this.#series.get(key);
    if (!series) {
      const labels = { route, method, status: String(status) };
      series = { requests: this.httpRequests.labels(labels), duration: this.httpDuration.labels(labels) };
      this.#series.set(key, series);
    }
    series.requests.inc();
    series.duration.observe(seconds);
  }
}

/** Metrics switched off: the same calls, doing nothing. */
export const NO_CHAT_METRICS: ChatMetrics = {
  opened() {},
  closed() {},
  joined() {},
  left() {},
  messageIn() {},
  messagesOut() {},
  slowConsumerDropped() {},
};
