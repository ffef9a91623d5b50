/**
 * Prometheus metrics (prom-client), served at `GET /metrics` on the REST port unless `METRICS=false`.
 * One registry per Roster instance (not prom-client's global one), so several instances in one
 * process, as in the tests, do not share counters.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import type { RefusalReason } from '../edge/connection-guard.js';
import type { EngineFaults } from './engine-faults.js';
import type { Storage } from './health.js';

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
  /** A handler of a client's request, handshake or frame failed unexpectedly (its connection was closed, 1011). */
  handlerFailed(): void;
  /** The connection guard ended a TCP connection before its handshake (edge/connection-guard.ts). */
  connectionRefused(reason: RefusalReason): void;
}

/** A counter of the connections a port's guard ended, by reason; one per port, each in its thread's registry. */
function refusedConnections(registry: Registry, port: 'http' | 'chat'): (reason: RefusalReason) => void {
  const counter = new Counter({
    name: `roster_${port}_connections_refused_total`,
    help: `TCP connections to the ${port === 'http' ? 'REST' : 'chat'} port ended before a request: over MAX_CONNECTIONS_PER_ADDRESS (per_address) or silent past FIRST_BYTE_TIMEOUT_MS (first_byte)`,
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  return (reason) => counter.inc({ reason });
}

/** Upper bounds (seconds) of roster_http_request_duration_seconds. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5] as const;
/** Per series: a count per bucket plus one for above the last bound (+Inf alone). */
const SLOT_WIDTH = DURATION_BUCKETS.length + 1;

type SeriesLabels = { route: string; method: string; status: string };

/**
 * The HTTP requests of one route pattern: its series, found by method and status without building or
 * hashing a label object. Made once per route (app.ts); `observe` runs once per request.
 */
export class RouteSeries {
  /** Per method seen, the slot of each status code (index: the status, -1 for none yet). */
  readonly #methods: { method: string; slots: Int32Array }[] = [];

  constructor(
    readonly route: string,
    private readonly requests: RequestSeries,
  ) {}

  observe(method: string, status: number, seconds: number): void {
    let slots: Int32Array | undefined;
    for (const entry of this.#methods) {
      if (entry.method === method) {
        slots = entry.slots;
        break;
      }
    }
    if (!slots) {
      slots = new Int32Array(600).fill(-1);
      this.#methods.push({ method, slots });
    }
    // A status outside 100-599 never comes from Node's http; counted all the same, in a slot found the slow way.
    let slot = status >= 0 && status < 600 ? slots[status]! : -1;
    if (slot === -1) {
      slot = this.requests.slotOf(this.route, method, status);
      if (status >= 0 && status < 600) slots[status] = slot;
    }
    this.requests.record(slot, seconds);
  }
}

/**
 * roster_http_requests_total and roster_http_request_duration_seconds, kept in plain typed arrays and
 * handed to prom-client at scrape time. Why not prom-client's own Counter and Histogram children: each
 * observation there goes through label validation and a hash of the label values, about 1.4 µs per
 * request for the pair, measured; here it is a few array writes. The exposition is what prom-client
 * printed for the same observations, series in the order first seen (test/ops/metrics.test.ts compares the
 * two).
 */
class RequestSeries {
  /** Labels of each slot, in the order first seen. */
  readonly labels: SeriesLabels[] = [];
  /** Non-cumulative bucket counts, SLOT_WIDTH per slot; grown by doubling. */
  buckets = new Float64Array(64 * SLOT_WIDTH);
  sums: number[] = [];
  counts: number[] = [];
  /** Slot by key: found here once per route, method and status (always, for a status outside 0-599). */
  readonly #byKey = new Map<string, number>();

  slotOf(route: string, method: string, status: number): number {
    const key = `${status} ${method} ${route}`;
    let slot = this.#byKey.get(key);
    if (slot === undefined) {
      slot = this.labels.length;
      this.labels.push({ route, method, status: String(status) });
      this.sums.push(0);
      this.counts.push(0);
      if ((slot + 1) * SLOT_WIDTH > this.buckets.length) {
        const grown = new Float64Array(this.buckets.length * 2);
        grown.set(this.buckets);
        this.buckets = grown;
      }
      this.#byKey.set(key, slot);
    }
    return slot;
  }

  record(slot: number, seconds: number): void {
    let bucket = 0;
    while (bucket < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[bucket]!) bucket++;
    this.buckets[slot * SLOT_WIDTH + bucket]!++;
    this.sums[slot]! += seconds;
    this.counts[slot]!++;
  }
}

/**
 * The request histogram as prom-client's registry reads a metric: `get()` gives the values a
 * prom-client Histogram gives (cumulative `_bucket` lines with `le` first, then `+Inf`, `_sum` and
 * `_count` per series). A collector of our own rather than a Histogram with a `collect()` callback:
 * prom-client has no public way to set a histogram's buckets from counts kept elsewhere.
 */
class RequestDurations {
  readonly name = 'roster_http_request_duration_seconds';
  readonly help = 'HTTP request latency by route pattern, method and status';
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  constructor(readonly series: RequestSeries) {}

  get() {
    const { labels, buckets, sums, counts } = this.series;
    const bucketName = `${this.name}_bucket`;
    const values: { labels: Record<string, string | number>; value: number; metricName: string }[] = [];
    for (let slot = 0; slot < labels.length; slot++) {
      if (counts[slot] === 0) continue; // reset since (as prom-client's reset() drops a series)
      const series = labels[slot]!;
      let cumulative = 0;
      for (let bucket = 0; bucket < DURATION_BUCKETS.length; bucket++) {
        cumulative += buckets[slot * SLOT_WIDTH + bucket]!;
        values.push({
          labels: { le: DURATION_BUCKETS[bucket]!, ...series },
          value: cumulative,
          metricName: bucketName,
        });
      }
      values.push({ labels: { le: '+Inf', ...series }, value: counts[slot]!, metricName: bucketName });
      values.push({ labels: { ...series }, value: sums[slot]!, metricName: `${this.name}_sum` });
      values.push({ labels: { ...series }, value: counts[slot]!, metricName: `${this.name}_count` });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator });
  }

  /** Registry.resetMetrics() calls this on every metric. */
  reset(): void {
    const { buckets, sums, counts } = this.series;
    buckets.fill(0);
    sums.fill(0);
    counts.fill(0);
  }
}

export class Metrics {
  readonly registry = new Registry();
  readonly #requests = new RequestSeries();
  readonly #chat: () => Promise<string>;
  /** The REST port's connection guard ended a connection (edge/connection-guard.ts). */
  readonly connectionRefused: (reason: RefusalReason) => void;

  /**
   * `chat`: the chat thread's metrics, in the exposition format, asked for at each scrape (it owns
   * them: thread.ts); `chatRestarts`: how often that thread was started again.
   */
  constructor(
    faults?: EngineFaults,
    storage?: () => Promise<Storage | undefined>,
    chat: () => Promise<string> = async () => '',
    chatRestarts: () => number = () => 0,
  ) {
    // Registered first, as before (the exposition lists metrics in registration order). The counter is
    // prom-client's own, refilled from the arrays at scrape time; the histogram is RequestDurations.
    const requests = this.#requests;
    new Counter({
      name: 'roster_http_requests_total',
      help: 'HTTP requests by route pattern, method and status',
      labelNames: ['route', 'method', 'status'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (let slot = 0; slot < requests.labels.length; slot++) {
          const count = requests.counts[slot]!;
          if (count > 0) this.inc(requests.labels[slot]!, count);
        }
      },
    });
    // The registry's types want a prom-client Metric; at run time it reads name, help, type and get().
    this.registry.registerMetric(new RequestDurations(requests) as unknown as Metric);
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
      const gauge = (field: keyof Storage, name: string, help: string) =>
        new Gauge({
          name,
          help,
          registers,
          async collect() {
            this.reset();
            const now = await storage();
            if (now) this.set(now[field]);
          },
        });
      gauge('users', 'roster_users_stored', 'Users in the store (under a MAX_USERS cap)');
      gauge('capacity', 'roster_users_capacity', 'MAX_USERS: creates past it get 507');
    }
    this.connectionRefused = refusedConnections(this.registry, 'http');
    this.#chat = chat;
    new Counter({
      name: 'roster_chat_thread_restarts_total',
      help: 'Times the chat thread died and was started again (its connections were lost; clients reconnect)',
      registers,
      collect() {
        this.reset();
        this.inc(chatRestarts());
      },
    });
  }

  /** The exposition: this thread's metrics, then the chat thread's. */
  async text(): Promise<string> {
    const [own, chat] = await Promise.all([this.registry.metrics(), this.#chat()]);
    return chat === '' ? own : `${own}${chat}`;
  }

  /** A new series for one route pattern (`/api/v1/users/:id`, never a raw URL); the caller keeps it (http/app.ts, in the route's config). */
  route(route: string): RouteSeries {
    return new RouteSeries(route, this.#requests);
  }
}

/** The chat door's metrics, registered in `registry` (the chat thread's own: worker.ts). */
export function chatMetrics(registry: Registry): ChatMetrics {
  const registers = [registry];
  const counter = (name: string, help: string) => new Counter({ name, help, registers });
  const open = new Gauge({ name: 'roster_chat_connections_open', help: 'Open chat connections', registers });
  const joins = counter('roster_chat_joins_total', 'Connections that joined the room');
  const leaves = counter('roster_chat_leaves_total', 'Connections that left the room');
  const received = counter('roster_chat_messages_in_total', 'Text messages received from clients');
  const sent = counter('roster_chat_messages_out_total', 'Messages written to clients (one per recipient)');
  const dropped = counter(
    'roster_chat_slow_consumers_dropped_total',
    'Connections closed for an unsent backlog over WS_MAX_BACKLOG',
  );
  const failures = counter(
    'roster_chat_handler_errors_total',
    'Unexpected errors handling a client (each logged; the connection closed with 1011, the process unharmed)',
  );
  const closes = new Counter({
    name: 'roster_chat_closes_total',
    help: 'Closed chat connections by close code',
    labelNames: ['code'] as const,
    registers,
  });
  return {
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
    handlerFailed: () => failures.inc(),
    connectionRefused: refusedConnections(registry, 'chat'),
  };
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
  handlerFailed() {},
  connectionRefused() {},
};
