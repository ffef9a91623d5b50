/**
 * What the health check asks of the engines Roster may depend on (PostgreSQL, Redis). Each keeps its
 * own state as its connections succeed and fail, so answering health costs no I/O and a dead engine
 * cannot make the health check hang.
 */
export type DependencyState = { up: true } | { up: false; reason: string };

export interface Dependency {
  /** Its name in the health reply: `database`, `chat_bus`. */
  readonly name: string;
  /**
   * Whether the REST API cannot work without it. A critical dependency down makes health answer 503
   * (take this instance out of the balancer); any other only marks the instance `degraded`.
   */
  readonly critical: boolean;
  state(): DependencyState;
}

export interface HealthReport {
  status: 'healthy' | 'degraded';
  /** Present only when Roster has dependencies: each one's name and `up` or `down`. */
  checks?: Record<string, 'up' | 'down'>;
  /** The dependencies that are down, with why; critical ones first. */
  down: { name: string; critical: boolean; reason: string }[];
}

export function healthOf(dependencies: readonly Dependency[]): HealthReport {
  if (dependencies.length === 0) return { status: 'healthy', down: [] };
  const checks: Record<string, 'up' | 'down'> = {};
  const down: HealthReport['down'] = [];
  for (const dependency of dependencies) {
    const state = dependency.state();
    checks[dependency.name] = state.up ? 'up' : 'down';
    if (!state.up) down.push({ name: dependency.name, critical: dependency.critical, reason: state.reason });
  }
  down.sort((a, b) => Number(b.critical) - Number(a.critical));
  return { status: down.length === 0 ? 'healthy' : 'degraded', checks, down };
}
