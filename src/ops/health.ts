/**
 * What the health check asks of the engines Roster may depend on (PostgreSQL, Redis). Each keeps its
 * own state as its connections succeed and fail, so answering health costs no I/O and a dead engine
 * cannot make the health check hang.
 */
/** How full the user store is: its users and its capacity (0: no cap), for health and the metrics. */
export interface Storage {
  users: number;
  capacity: number;
}

export type DependencyState = { up: true } | { up: false; reason: string };

export interface Dependency {
  /** Its name in the health reply: `database`, `chat_bus`. */
  readonly name: string;
  /**
   * Whether the REST API cannot work without it. A critical dependency down makes health answer 503
   * (take this instance out of the balancer); any other only marks the instance `degraded`.
   */
  readonly critical: boolean;
  /** Left out of `checks` while up: a part of Roster itself (the chat thread) rather than an engine. */
  readonly quietWhileUp?: boolean;
  state(): DependencyState;
}

export interface HealthReport {
  status: 'healthy' | 'degraded';
  /** Present only when Roster has engines, or a part of its own is down: each one's name and `up` or `down`. */
  checks?: Record<string, 'up' | 'down'>;
  /** The dependencies that are down, with why; critical ones first. */
  down: { name: string; critical: boolean; reason: string }[];
}

export function healthOf(dependencies: readonly Dependency[]): HealthReport {
  const checks: Record<string, 'up' | 'down'> = {};
  const down: HealthReport['down'] = [];
  let listed = false;
  for (const dependency of dependencies) {
    const state = dependency.state();
    if (state.up && dependency.quietWhileUp) continue;
    listed = true;
    checks[dependency.name] = state.up ? 'up' : 'down';
    if (!state.up) down.push({ name: dependency.name, critical: dependency.critical, reason: state.reason });
  }
  down.sort((a, b) => Number(b.critical) - Number(a.critical));
  return { status: down.length === 0 ? 'healthy' : 'degraded', ...(listed ? { checks } : {}), down };
}

/** What a ProbedDependency needs to know of its engine. */
export interface ProbeOptions {
  logger: { info(message: string): void; error(details: object, message: string): void };
  /** One cheap operation that succeeds once the engine works again. */
  probe: () => unknown;
  intervalMs: number;
  /** Why it is down, for the health reply (a code rather than a message that may name hosts). */
  reasonOf: (error: unknown) => string;
  /** The log lines when it goes down and comes back. */
  messages: { down: string; up: string };
  /** Whether to probe at once on the first failure, rather than after one interval. */
  probeAtOnce: boolean;
}

/**
 * An engine's entry in the health check: the outcome of its last operation, which the store reports with
 * `succeeded` and `failed`. Once down, it probes every `intervalMs` until a probe succeeds, so health
 * turns back to up without traffic.
 */
export class ProbedDependency implements Dependency {
  #down: string | undefined;
  #probe: NodeJS.Timeout | undefined;
  #checking = false;
  #closed = false;

  constructor(
    readonly name: string,
    readonly critical: boolean,
    private readonly options: ProbeOptions,
  ) {}

  state(): DependencyState {
    return this.#down === undefined ? { up: true } : { up: false, reason: this.#down };
  }

  succeeded(): void {
    if (this.#down === undefined) return;
    this.#down = undefined;
    clearInterval(this.#probe);
    this.#probe = undefined;
    this.options.logger.info(this.options.messages.up);
  }

  failed(error: unknown): void {
    if (this.#down === undefined) this.options.logger.error({ err: error }, this.options.messages.down);
    this.#down = this.options.reasonOf(error);
    if (this.#probe || this.#closed) return;
    this.#probe = setInterval(() => void this.#check(), this.options.intervalMs);
    this.#probe.unref();
    if (this.options.probeAtOnce) void this.#check();
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#probe);
    this.#probe = undefined;
  }

  async #check(): Promise<void> {
    if (this.#checking) return; // a probe may take longer than the interval
    this.#checking = true;
    try {
      await this.options.probe();
      if (!this.#closed) this.succeeded();
    } catch (error) {
      if (!this.#closed && this.#down !== undefined) this.#down = this.options.reasonOf(error);
    } finally {
      this.#checking = false;
    }
  }
}
