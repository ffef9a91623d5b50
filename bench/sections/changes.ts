/**
 * The changes section (`--only changes`): Roster on the memory store, pinned to the server CPU, with
 * STREAMS open Server-Sent Events streams of the change feed, and one write a millisecond for
 * BENCH_CHANGES_SECONDS (60 by default). Rounds go without streams, with, floor, floor, with, without
 * (each round's own streams, opened before its writes; each round on a fresh server, warmed first): a
 * write's latency is compared, p50 and p99, and every stream must have received every change of its
 * round, in order, none twice. In a floor round the same streams are served by Roster's fan-out in a
 * process of its own (bench/servers/change-floor.ts, on the server CPU below the server's priority)
 * while the writes go to Roster without streams: what the stream traffic costs a write on this machine
 * when Roster's process does none of it.
 *
 * The load runs on the load CPU in three processes: the writer alone (bench/load/change-writer.ts), so
 * that its latencies are the server's and not the lag of an event loop busy reading streams, and the
 * streams' readers split over two (bench/load/change-readers.ts), which check each stream as it comes.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { BenchChild, benchPids, LOAD_CPU, pinned, SERVER_CPU, SERVER_NODE_ARGS } from '../ipc.js';
import type { ReadersResult } from '../load/change-readers.js';
import type { WriteResult } from '../load/change-writer.js';
import { ms, ratio, table, targetLines, type Target } from '../report.js';
import {
  metric,
  otherLoadMeter,
  percentile,
  processCpuSeconds,
  processesCpuMeter,
  scrape,
  sortedSamples,
} from '../stats.js';
import { benchScript, progress, sleep, type Plan, type SectionReport } from './common.js';
import { freePort } from '../../test/support/http.js';

const STREAMS = Number(process.env.BENCH_CHANGES_STREAMS ?? 1000);
const SECONDS = Number(process.env.BENCH_CHANGES_SECONDS ?? 60);
/** Rounds of each kind, BENCH_CHANGES_ROUNDS (2 by default). */
const ROUNDS = Number(process.env.BENCH_CHANGES_ROUNDS ?? 2);
/**
 * Writes before each round, not measured: a server's first seconds (its code compiled, its heap grown)
 * counted in the first round, without streams, and made "none" look slower (a 20 s round measured p99
 * 37 ms, the same kind of round later 4 ms).
 */
const WARM_UP_SECONDS = 5;
/** prom-client's event-loop sampling interval (its eventLoopMonitoringPrecision, by default). */
const PROM_LOOP_SAMPLE_MS = 10;
/**
 * The kinds of round: none (no stream), streams (Roster's own), floor (the same streams served by Roster's
 * fan-out in a process of its own, bench/servers/change-floor.ts, while the writes go to Roster without
 * streams). BENCH_CHANGES_FLOOR=0 leaves the floor out.
 */
type Kind = 'none' | 'streams' | 'floor';
/**
 * The order of the rounds, repeated BENCH_CHANGES_ROUNDS times: each kind meets the machine's drift over
 * the run alike (none then streams, alternating, gave the streams the later rounds every time).
 */
const ORDER: readonly Kind[] =
  process.env.BENCH_CHANGES_FLOOR === '0'
    ? ['none', 'streams', 'streams', 'none']
    : ['none', 'streams', 'floor', 'floor', 'streams', 'none'];
/**
 * The floor process's niceness, BENCH_CHANGES_FLOOR_NICE (10 by default): below the server's, as a
 * process that holds the streams would be run so that the writes come first.
 */
const FLOOR_NICE = Number(process.env.BENCH_CHANGES_FLOOR_NICE ?? 10);
/** The streams' readers: this many processes, the streams split between them. */
const READERS = 2;
/** The target: a write's latency with the streams open, against none, at p50 and p99. */
const RATIO = 1.1;
/**
 * The niceness of the section's processes (server, writer, readers), BENCH_CHANGES_NICE (-10 by
 * default; 0 leaves them as they are). On a machine shared with other work, a server that gets a third
 * of its CPU falls behind a write a millisecond with or without streams, and the comparison measures
 * the neighbours; a raised priority lets it take the CPU it needs (it needs less than one). Needs root
 * (renice fails quietly otherwise, and the run says so).
 */
const NICE = Number(process.env.BENCH_CHANGES_NICE ?? -10);

/**
 * The readers' niceness, BENCH_CHANGES_READER_NICE (5 by default): below the writer's. The writer is
 * the instrument, and it shares the load CPU with the readers, which fill it with streams; a writer
 * that waits for that CPU adds its wait to every latency it measures with streams, and not without.
 * Run below it, the readers take what the writer leaves (it needs a fifth of a CPU), and the comparison
 * is of the server's own latency. (A real-time writer, SCHED_FIFO, was tried: it came to hold the
 * whole CPU at the end of a stream round, cause not found, and the readers stalled past the wait.)
 */
const READER_NICE = Number(process.env.BENCH_CHANGES_READER_NICE ?? 5);

/** Sets the niceness of `pids` to `nice`; whether it could. */
function renice(pids: readonly number[], nice = NICE): boolean {
  if (nice === 0) return true;
  return spawnSync('renice', ['-n', String(nice), '-p', ...pids.map(String)], { stdio: 'ignore' }).status === 0;
}

async function startServer(port: number): Promise<ChildProcess> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    WS_PORT: '0',
    LOG_LEVEL: 'warn',
    MAX_CONNECTIONS_PER_ADDRESS: '0',
    CHANGES_MAX_STREAMS_PER_CLIENT: '0',
    MAX_USERS: '0',
    CONSOLE: 'false',
  };
  delete env.DATABASE_URL;
  const main = new URL('../../src/main.js', import.meta.url).pathname;
  // BENCH_SERVER_FLAGS reaches the server (e.g. `--cpu-prof`: it is stopped with SIGTERM and waited for).
  const command = [process.execPath, ...SERVER_NODE_ARGS, main];
  const args = pinned ? ['-c', String(SERVER_CPU), ...command] : command.slice(1);
  const child = spawn(pinned ? '/usr/bin/taskset' : process.execPath, args, { env, stdio: 'ignore' });
  for (let tries = 0; tries < 200; tries++) {
    try {
      await fetch(`http://127.0.0.1:${port}/readyz`);
      return child;
    } catch {
      await sleep(100);
    }
  }
  throw new Error('Roster did not start');
}

export async function changesSection(_plan: Plan): Promise<SectionReport> {
  let port = 0;
  let server: ChildProcess | undefined;
  let api = '';
  const writer = new BenchChild('change feed writer', benchScript('load/change-writer.js'), LOAD_CPU);
  const readers = Array.from(
    { length: READERS },
    (_, index) => new BenchChild(`change feed readers ${index + 1}`, benchScript('load/change-readers.js'), LOAD_CPU),
  );
  let reniced =
    renice([writer.pid]) &&
    renice(
      readers.map((reader) => reader.pid),
      READER_NICE,
    );
  const niceness = reniced
    ? `server and writer at niceness ${NICE}, readers at ${READER_NICE}`
    : 'niceness 0 (renice failed)';
  progress(`changes: ${niceness}`);
  /** A stopped server: SIGTERM, and its exit waited for. */
  const stop = async (child: ChildProcess | undefined) => {
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise((resolve) => child.once('exit', resolve).kill('SIGTERM'));
  };
  const rows: (string | number)[][] = [];
  const samples: Record<Kind, number[]> = { none: [], streams: [], floor: [] };
  let floor: BenchChild | undefined;
  let complete = true;
  let failures = 0;
  /** The server's garbage collections so far (prom-client's nodejs_gc_duration_seconds): count and seconds by kind. */
  const gcSoFar = async () => {
    const text = await scrape(port);
    // A kind of collection not seen yet has no series: none so far.
    const read = (kind: string, what: 'count' | 'sum') =>
      metric(text, `nodejs_gc_duration_seconds_${what}{kind="${kind}"}`) || 0;
    return {
      majors: read('major', 'count'),
      majorSeconds: read('major', 'sum'),
      minors: read('minor', 'count'),
      minorSeconds: read('minor', 'sum'),
    };
  };
  const headSeq = async () => {
    const next = ((await (await fetch(`${api}/users/changes`)).json()) as { next: string }).next;
    return { next, seq: Number(next.slice(next.lastIndexOf('.') + 1)) };
  };
  /**
   * How late the server's event loop ran, p99 since the last scrape (prom-client resets its histogram on
   * each), ms: Node's histogram holds each interval between its samples, so the interval prom-client
   * samples at (10 ms) is taken off.
   */
  const serverLoopP99 = async () =>
    metric(await scrape(port), 'nodejs_eventloop_lag_p99_seconds') * 1000 - PROM_LOOP_SAMPLE_MS;
  try {
    for (let round = 0; round < (ORDER.length * ROUNDS) / 2; round++) {
      // A fresh server per round, warmed: every round meets the same store and heap. On one server the
      // store grew by every round's writes, and the major collections a larger heap brings fell in
      // whichever round crossed a threshold (one round without streams: 4 of them, 320 ms, p99 58 ms).
      await stop(server);
      port = await freePort();
      const running = (server = await startServer(port));
      api = `http://127.0.0.1:${port}/api/v1`;
      reniced = renice([running.pid!]) && reniced;
      await writer.request<WriteResult>({ cmd: 'write', api, seconds: WARM_UP_SECONDS }, 120_000);
      const kind = ORDER[round % ORDER.length]!;
      const withStreams = kind !== 'none';
      let floorFeed: Promise<{ last: number }> | undefined;
      let floorStart: { port: number; epoch: string } | undefined;
      if (kind === 'floor') {
        floor = new BenchChild('change feed floor', benchScript('servers/change-floor.js'), SERVER_CPU);
        reniced = renice([floor.pid], FLOOR_NICE) && reniced;
        floorStart = await floor.request<{ port: number; epoch: string }>({ cmd: 'start' }, 30_000);
      }
      const head = floorStart ? { next: `${floorStart.epoch}.0`, seq: 0 } : await headSeq();
      const streamsUrl = floorStart
        ? `http://127.0.0.1:${floorStart.port}/api/v1/users/changes?since=${head.next}`
        : `${api}/users/changes?since=${head.next}`;
      if (withStreams)
        await Promise.all(
          readers.map((reader, index) =>
            reader.request(
              {
                cmd: 'open',
                url: streamsUrl,
                since: head.next,
                streams: Math.floor(STREAMS / READERS) + (index < STREAMS % READERS ? 1 : 0),
              },
              120_000,
            ),
          ),
        );
      progress(`changes: round ${round + 1} (${kind}), ${withStreams ? STREAMS : 0} streams, ${SECONDS} s of writes`);
      const serverCpu = processCpuSeconds(running.pid!) ?? NaN;
      const loadCpu = processesCpuMeter([writer.pid, ...readers.map((reader) => reader.pid)]);
      const writerCpu = processesCpuMeter([writer.pid]);
      const floorCpu = processesCpuMeter(floor ? [floor.pid] : []);
      const others = otherLoadMeter(() => new Set([...benchPids(), running.pid!]));
      const gcBefore = await gcSoFar();
      await serverLoopP99(); // from here
      const started = performance.now();
      if (floorStart) floorFeed = floor!.request({ cmd: 'feed', seconds: SECONDS }, SECONDS * 1000 + 60_000);
      const written = await writer.request<WriteResult>(
        { cmd: 'write', api, seconds: SECONDS },
        SECONDS * 1000 + 120_000,
      );
      if (written.failures > 0)
        progress(`changes: ${written.failures} writes failed, the first: ${written.firstFailure}`);
      failures += written.failures;
      samples[kind].push(...written.latencies);
      const seconds = (performance.now() - started) / 1000;
      const cpu = ((processCpuSeconds(running.pid!) ?? NaN) - serverCpu) / seconds;
      const loopP99 = await serverLoopP99();
      const gc = await gcSoFar();
      const row = [
        `${round + 1} (${kind})`,
        written.latencies.length,
        `${Math.round(cpu * 100)} %${floor ? ` (floor ${Math.round((floorCpu() / seconds) * 100)} %)` : ''}`,
        `${Math.round((loadCpu() / seconds) * 100)} % (writer ${Math.round((writerCpu() / seconds) * 100)} %)`,
        `${Math.round(others() * 100)} %`,
        `${gc.minors - gcBefore.minors} (${ms((gc.minorSeconds - gcBefore.minorSeconds) * 1000)} ms) / ${gc.majors - gcBefore.majors} (${ms((gc.majorSeconds - gcBefore.majorSeconds) * 1000)} ms)`,
        `${ms(loopP99)} / ${ms(written.loopDelayP99)}`,
      ];
      const p = (q: number) => ms(percentile(sortedSamples(written.latencies), q));
      if (withStreams) {
        const last = floorFeed ? (await floorFeed).last : (await headSeq()).seq;
        const results = await Promise.all(
          readers.map((reader) => reader.request<ReadersResult>({ cmd: 'await', last, timeoutMs: 60_000 }, 90_000)),
        );
        const whole = results.reduce((sum, result) => sum + result.whole, 0);
        if (whole < STREAMS) complete = false;
        rows.push([...row, p(50), p(99), `${whole} / ${STREAMS}`]);
        await Promise.all(readers.map((reader) => reader.request({ cmd: 'close' }, 30_000)));
        await floor?.kill();
        floor = undefined;
      } else rows.push([...row, p(50), p(99), '–']);
    }
  } finally {
    await stop(server);
    await Promise.all([writer, ...readers, ...(floor ? [floor] : [])].map((child) => child.kill()));
  }
  const none = sortedSamples(samples.none);
  const streams = sortedSamples(samples.streams);
  const p = (sorted: Float64Array, q: number) => percentile(sorted, q);
  const targets: Target[] = [50, 99].map((q) => ({
    label: `write p${q} with ${STREAMS} streams against none`,
    figure: `${ratio(p(streams, q) / p(none, q))} (${ms(p(streams, q))} against ${ms(p(none, q))})`,
    goal: `≤ ${RATIO}×`,
    pass: p(streams, q) / p(none, q) <= RATIO,
  }));
  const floored = sortedSamples(samples.floor);
  // Not the issue's targets: what the same stream traffic costs a write when Roster's process does none of it.
  const floorLines =
    floored.length === 0
      ? []
      : [50, 99].map(
          (q) =>
            `- write p${q} with the streams in a process of their own (floor) against none: ` +
            `${ratio(p(floored, q) / p(none, q))} (${ms(p(floored, q))} against ${ms(p(none, q))}); ` +
            `Roster's streams against the floor: ${ratio(p(streams, q) / p(floored, q))}`,
        );
  targets.push({
    label: 'every stream saw every change of its round, in order, once',
    figure: complete ? 'yes' : 'no',
    goal: 'yes',
    pass: complete,
  });
  const markdown = [
    `## Change feed: ${STREAMS} streams, a write a millisecond for ${SECONDS} s per round`,
    `Processes: ${reniced ? niceness : 'niceness 0 (renice failed)'} (BENCH_CHANGES_NICE, BENCH_CHANGES_READER_NICE); a fresh server per round, after ${WARM_UP_SECONDS} s of writes not measured.`,
    table(
      [
        'round',
        'writes',
        'server CPU',
        'load CPU',
        'other processes',
        'server GCs: minor / major (their ms)',
        'event-loop lateness p99 ms: server / writer',
        'write p50 ms',
        'write p99 ms',
        'streams complete',
      ],
      rows,
    ),
    targetLines(targets),
    ...(floorLines.length > 0 ? [floorLines.join('\n')] : []),
  ].join('\n\n');
  return { markdown, targets, errors: failures };
}
