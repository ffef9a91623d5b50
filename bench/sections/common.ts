/**
 * What the benchmark's sections share: the plan of a run, the servers compared, Roster's settings, how
 * a section reports (with the helpers for its PASS/FAIL lines and CPU figures), and small helpers of
 * the parent process.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { RestJob } from '../load/rest.js';
import { percent, type Target } from '../report.js';

export interface Plan {
  sizes: number[];
  rest: Pick<RestJob, 'connections' | 'seconds' | 'timeoutSeconds'> & {
    warmupSeconds: number;
    /**
     * The warm-up of a server started for one scenario alone (with authentication on): as warm as the
     * server it is compared with, which had run the scenarios before (in quick mode, the plain warm-up).
     */
    freshWarmupSeconds: number;
  };
  chat: {
    clients: number[];
    senders: number[];
    window: number;
    warmupSeconds: number;
    seconds: number;
    /** Connecting, and the join notices Roster sends meanwhile, must be over within this. */
    connectSeconds: number;
  };
  /** Clients connecting at once, each server given so long for all of them to be in with every join notice. */
  storm: {
    clients: number;
    baselineClients: number;
    concurrency: number;
    rosterSeconds: number;
    baselineSeconds: number;
  };
  /** Idle connections held on Roster for the memory-per-connection figure, and how long connecting them may take; none in quick mode. */
  idle: { connections: number; seconds: number } | undefined;
  /**
   * The engines: with DATABASE_URL, Roster on PostgreSQL runs every REST scenario, or in quick mode a
   * read and a write; the two-instance rows (PostgreSQL, Redis) run only outside quick mode.
   */
  postgres: 'all' | 'smoke';
  /**
   * The scale section (asked for alone): Roster instances on one PostgreSQL and one Redis, per count of
   * instances the REST scenarios and a chat run; then join storms of each size over the largest count.
   */
  scale: {
    instances: number[];
    users: number;
    restSeconds: number;
    warmupSeconds: number;
    chatClients: number;
    chatSeconds: number;
    storms: number[];
    stormSeconds: number;
  };
}

export function planFor(flags: { quick: boolean; full: boolean }): Plan {
  if (flags.quick) {
    return {
      sizes: [1_000],
      rest: { connections: 50, warmupSeconds: 0.25, freshWarmupSeconds: 0.25, seconds: 1, timeoutSeconds: 10 },
      chat: { clients: [1_000], senders: [1, 4], window: 16, warmupSeconds: 0.25, seconds: 1, connectSeconds: 30 },
      storm: { clients: 500, baselineClients: 500, concurrency: 500, rosterSeconds: 30, baselineSeconds: 30 },
      idle: undefined,
      postgres: 'smoke',
      scale: {
        instances: [1, 2],
        users: 1_000,
        restSeconds: 0.5,
        warmupSeconds: 0.1,
        chatClients: 100,
        chatSeconds: 0.5,
        storms: [100],
        stormSeconds: 20,
      },
    };
  }
  return {
    sizes: flags.full ? [1_000, 100_000, 1_000_000] : [1_000, 100_000],
    rest: { connections: 50, warmupSeconds: 1, freshWarmupSeconds: 7, seconds: 5, timeoutSeconds: 10 },
    chat: { clients: [1_000, 5_000], senders: [1, 4], window: 16, warmupSeconds: 1, seconds: 5, connectSeconds: 120 },
    // The stock ws server needs over two minutes for 5 000; past its cap it is reported as "> cap".
    storm: { clients: 5_000, baselineClients: 5_000, concurrency: 500, rosterSeconds: 60, baselineSeconds: 150 },
    idle: { connections: 10_000, seconds: 120 },
    postgres: 'all',
    scale: {
      instances: [1, 2, 4],
      users: 10_000,
      restSeconds: 5,
      warmupSeconds: 1,
      chatClients: 1_000,
      chatSeconds: 5,
      storms: [1_000, 5_000, 10_000],
      stormSeconds: 240,
    },
  };
}

export type ServerName = 'baseline' | 'Roster';
export const SERVERS: readonly ServerName[] = ['baseline', 'Roster'];

/**
 * Roster's settings for the benchmark: room for the idle connections, no slow-consumer drops caused by
 * the bench's own bursts (join notices), no heartbeat traffic. Everything else is Roster's default.
 */
export const ROSTER_ENV = { WS_MAX_CONNECTIONS: '20000', WS_MAX_BACKLOG: '64MiB', WS_HEARTBEAT_MS: '3600000' };

/** REDIS_URL with a key prefix (and so a chat channel) of its own, for instances of one benchmark run to share. */
export function benchRedisUrl(url: string): string {
  const withPrefix = new URL(url);
  withPrefix.searchParams.set('keyPrefix', `bench-${randomBytes(4).toString('hex')}:`);
  return withPrefix.toString();
}

/** A compiled bench module, by its path under bench/ ("servers/roster.js"). */
export const benchScript = (path: string) => new URL(`../${path}`, import.meta.url);
/**
 * The compiled Roster bench server of a build: this one's, or that of the build in `folder` (an earlier
 * commit built there: BENCH_BEFORE, or the drift section's fixed older build, bench/baseline.ts). Its
 * `dist/bench/servers/roster.js` speaks the same commands (bench/servers/roster.ts).
 */
export const rosterServer = (folder?: string): URL =>
  folder === undefined ? benchScript('servers/roster.js') : pathToFileURL(join(folder, 'dist/bench/servers/roster.js'));
/** A positive number from the environment variable `name`, `fallback` when unset or empty; anything else is refused. */
export function numberSetting(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number (got "${raw}")`);
  return value;
}
export const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
export const progress = (text: string) => console.error(`[bench] ${text}`);
export const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

export interface SectionReport {
  markdown: string;
  targets: Target[];
  /** Measurements that could not be made. */
  errors: number;
}

/** Share of a CPU above which other processes are taken to have disturbed a measurement. */
const DISTURBED = 0.1;

/** Whether other processes took enough CPU during a measurement to skew it. */
export function isDisturbed(otherLoad: number | undefined): boolean {
  return (otherLoad ?? 0) > DISTURBED;
}

/**
 * "CPU server / generator / others": how busy the server's and the generator's CPUs were, and how much
 * CPU processes outside the benchmark took meanwhile (flagged when it is enough to skew the figures).
 */
export function cpuCell(
  result: { serverCpu: number | undefined; generatorCpu: number | undefined },
  otherLoad: number | undefined,
): string {
  const others = percent(otherLoad);
  return `${percent(result.serverCpu)} / ${percent(result.generatorCpu)} / ${isDisturbed(otherLoad) ? `**${others}**` : others}`;
}

export function disturbed(rows: readonly { otherLoad?: number }[]): string[] {
  const count = rows.filter((row) => isDisturbed(row.otherLoad)).length;
  return count === 0
    ? []
    : [
        `- **Other processes used more than ${percent(DISTURBED)} of a CPU during ${count} of these measurements** (bold in the CPU column): those figures are unreliable.`,
      ];
}

/** PASS/FAIL for a figure, or n/a when it could not be computed. */
export function judge(value: number, pass: (value: number) => boolean): boolean | undefined {
  return Number.isFinite(value) ? pass(value) : undefined;
}
