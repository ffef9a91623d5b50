/** Small measuring helpers shared by the load generators. */
import { readdirSync, readFileSync } from 'node:fs';
import { LOAD_CPU, pinned, SERVER_CPU } from './ipc.js';

/** The p-th percentile (0–100) of the samples, nearest-rank; NaN when there are none. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function sortedSamples(samples: readonly number[]): Float64Array {
  return Float64Array.from(samples).sort();
}

/** Linux's USER_HZ: the unit of the CPU times in /proc (100 on every common kernel). */
const CLOCK_TICKS_PER_SECOND = 100;

interface Ticks {
  ticks: number;
  started: string;
  /** The command name (`postgres`, `redis-server`). */
  command: string;
}

/** CPU ticks (user + system) a process has used so far, when it started, and its name; undefined if it is gone. */
function processTicks(pid: number | string): Ticks | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is the 1st, utime the 12th, stime
    // the 13th, starttime the 20th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      ticks: Number(fields[11]) + Number(fields[12]),
      started: fields[19]!,
      command: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    };
  } catch {
    return undefined;
  }
}

/** CPU seconds (user + system) a process has used so far; undefined if it is gone or /proc is missing. */
export function processCpuSeconds(pid: number): number | undefined {
  const stat = processTicks(pid);
  return stat && stat.ticks / CLOCK_TICKS_PER_SECOND;
}

/**
 * CPU seconds the processes `pids` used from now until the returned function is called; a process gone
 * by then (an autovacuum worker) is left out.
 */
export function processesCpuMeter(pids: readonly number[]): () => number {
  const before = new Map(pids.map((pid) => [pid, processCpuSeconds(pid)]));
  return () => {
    let used = 0;
    for (const [pid, was] of before) {
      const now = processCpuSeconds(pid);
      if (now !== undefined && was !== undefined) used += now - was;
    }
    return used;
  };
}

function allProcessTicks(except: ReadonlySet<number>): Map<string, Ticks> {
  const all = new Map<string, Ticks>();
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid) || except.has(Number(pid))) continue;
      const stat = processTicks(pid);
      if (stat) all.set(pid, stat);
    }
  } catch {
    // no /proc: nothing to report
  }
  return all;
}

/** The engines Roster may run on; their processes work for the benchmark when Roster uses them. */
const ENGINE_COMMANDS: ReadonlySet<string> = new Set(['postgres', 'redis-server']);

/** CPU (a share of one CPU) of the processes `counted` picks, outside `ours`, over an interval. */
function loadMeter(ours: () => ReadonlySet<number>, counted: (ticks: Ticks) => boolean): () => number {
  const start = performance.now();
  const before = allProcessTicks(ours());
  return () => {
    const seconds = (performance.now() - start) / 1000;
    let ticks = 0;
    for (const [pid, now] of allProcessTicks(ours())) {
      if (!counted(now)) continue;
      const then = before.get(pid);
      ticks += then && then.started === now.started ? now.ticks - then.ticks : now.ticks;
    }
    return ticks / CLOCK_TICKS_PER_SECOND / seconds;
  };
}

/**
 * Measures the CPU that processes outside the benchmark used over an interval (as a share of one
 * CPU): another workload on the machine makes the figures of that interval unreliable. Processes that
 * both start and end within the interval are not seen, so this is a lower bound. With `engines`
 * (Roster runs on PostgreSQL or Redis), their processes are not counted: see engineLoadMeter.
 */
export function otherLoadMeter(ours: () => ReadonlySet<number>, engines = false): () => number {
  return loadMeter(ours, (ticks) => !engines || !ENGINE_COMMANDS.has(ticks.command));
}

/**
 * The CPU PostgreSQL's and Redis's processes used over an interval: the engines' share of the work
 * when Roster runs on them (and whatever anyone else asked of them meanwhile).
 */
export function engineLoadMeter(): () => number {
  return loadMeter(
    () => new Set(),
    (ticks) => ENGINE_COMMANDS.has(ticks.command),
  );
}

/** CPU seconds this process has used so far. */
function ownCpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/**
 * Busy and total time so far, in ticks, from /proc/stat: of one CPU, or of all of them together when
 * `cpu` is undefined; undefined where it is not available.
 */
function coreTicks(cpu: number | undefined): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8')
      .split('\n')
      .find((row) => row.startsWith(`cpu${cpu ?? ''} `));
    if (!line) return undefined;
    // user nice system idle iowait irq softirq steal: everything but idle and iowait is busy.
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const busy = user + nice + system + irq + softirq + steal;
    return { busy, total: busy + idle + iowait };
  } catch {
    return undefined;
  }
}

/** CPU seconds the whole machine has been busy so far, all CPUs together; NaN without /proc. */
export function machineCpuSeconds(): number {
  const ticks = coreTicks(undefined);
  return ticks === undefined ? NaN : ticks.busy / CLOCK_TICKS_PER_SECOND;
}

export interface CpuShare {
  server: number | undefined;
  generator: number | undefined;
}

/**
 * Measures how busy the server and this generator were over an interval: call at the start, call the
 * returned function at the end. With the processes pinned, it is each one's CPU as a whole, softirq
 * included: on loopback the kernel's TCP work, a large part of a busy network server, runs there and is
 * charged to no process. Otherwise it is each process's own CPU time.
 */
export function cpuMeter(serverPid: number): () => CpuShare {
  if (pinned) {
    const server = coreTicks(SERVER_CPU);
    const generator = coreTicks(LOAD_CPU);
    return () => ({
      server: coreShare(server, coreTicks(SERVER_CPU)),
      generator: coreShare(generator, coreTicks(LOAD_CPU)),
    });
  }
  const start = performance.now();
  const server = processCpuSeconds(serverPid);
  const own = ownCpuSeconds();
  return () => {
    const seconds = (performance.now() - start) / 1000;
    const serverNow = processCpuSeconds(serverPid);
    return {
      server: server === undefined || serverNow === undefined ? undefined : (serverNow - server) / seconds,
      generator: (ownCpuSeconds() - own) / seconds,
    };
  };
}

function coreShare(
  before: { busy: number; total: number } | undefined,
  after: { busy: number; total: number } | undefined,
): number | undefined {
  if (!before || !after || after.total === before.total) return undefined;
  return (after.busy - before.busy) / (after.total - before.total);
}

/** One value of a Prometheus text exposition (`name` with its labels as written, e.g. `x{space="new"}`); NaN if absent. */
export function metric(text: string, name: string): number {
  const line = text.split('\n').find((row) => row.startsWith(`${name} `));
  return line === undefined ? NaN : Number(line.slice(name.length + 1));
}

/** A Roster's GET /metrics on `port`, as text. */
export async function scrape(port: number): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
  if (!response.ok) throw new Error(`GET /metrics: ${response.status}`);
  return response.text();
}
