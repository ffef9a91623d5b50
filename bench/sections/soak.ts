/**
 * "Soak": does Roster's RSS settle over a long run? Each server variant (BENCH_SOAK_NODES: a node
 * binary with its flags) runs `node dist/src/main.js` as deployed (memory store, LOG_LEVEL=warn), all
 * of them at the same time, each under a load of its own (load/soak.ts: mixed REST with 5 % hostile
 * requests and the users held near 2 000, 204 chat clients with churn) for BENCH_SOAK_SECONDS
 * (default 1 800). Every 10 s this samples each server's RSS (/proc) and its heap (GET /metrics).
 * Target per variant: the mean RSS of the last quarter within 15 % of the second quarter's (it
 * settles); and the invariants: no 5xx, every hostile request a 4xx, no chat connection lost.
 *
 * Before and after in one run: with BENCH_BEFORE naming the folder of an earlier build (made as in
 * chat-under-load.ts), the first variant also runs on that build's dist/src/main.js, labelled
 * `<label> before`, at the same time as the others.
 *
 * Run only when asked (`--only soak`): it is long. The raw samples go to test-artifacts/soak/*.csv.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { BenchChild, benchPids, LOAD_CPU, pinned, SERVER_CPU } from '../ipc.js';
import type { SoakCommand, SoakCounts, SoakLoad } from '../load/soak.js';
import { integer, percent, table, targetLines, type Target } from '../report.js';
import { machineCpuSeconds, metric, processCpuSeconds, scrape } from '../stats.js';
import { benchScript, errorText, progress, sleep, type SectionReport } from './common.js';

/** A server to soak: a node binary and its flags, under a label of its own, and the build it runs. */
interface Variant {
  label: string;
  node: string;
  flags: string[];
  /** The server's script: this build's dist/src/main.js, or BENCH_BEFORE's. */
  main: string;
}

/** One sample of one server. Bytes; NaN where it could not be read. */
interface Sample {
  seconds: number;
  rss: number;
  heapUsed: number;
  heapTotal: number;
  /** V8's young generation (new space: the two semi-spaces), as the metrics report its size. */
  newSpace: number;
  oldSpace: number;
  external: number;
  /** The load generator's counts at that moment (cumulative). */
  counts: SoakCounts | undefined;
}

interface Soak {
  variant: Variant;
  version: string;
  server: ChildProcess;
  port: number;
  load: BenchChild;
  /** Counts when the timed run began (after the fill). */
  start?: SoakCounts;
  final?: SoakCounts;
  samples: Sample[];
  /** Steps that failed (a scrape, the load generator). */
  errors: string[];
  /** Why the server stopped before the end of the run: a crash. */
  crashed?: string;
}

const SAMPLE_SECONDS = 10;
/** "First" RSS: the first sample this long into the run, once the load's start-up is behind. */
const WARMUP_SECONDS = 30;
const SETTLED = 0.15;
const LOAD: Omit<SoakLoad, 'label' | 'origin' | 'wsPort'> = {
  users: 2_000,
  // Modest: a soak measures memory over time, not speed, and the variants share the machine.
  requestsPerSecond: 200,
  hostileShare: 0.05,
  chatClients: 204,
  churnPerSecond: 3,
  messagesPerSecond: 10,
};
const MAIN = resolve('dist/src/main.js');
/** As in ipc.ts: servers are pinned to SERVER_CPU, load generators to LOAD_CPU, when taskset is there. */
const TASKSET = '/usr/bin/taskset';
const MIB = 1024 * 1024;

/**
 * BENCH_SOAK_NODES: `label=/path/to/node[ flags]`, comma-separated; by default the node running this.
 * With `before` (BENCH_BEFORE), the first of them once more on that build.
 */
export function soakVariants(text = process.env.BENCH_SOAK_NODES, before = process.env.BENCH_BEFORE): Variant[] {
  const variants = text?.trim()
    ? parseVariants(text)
    : [{ label: `node${process.versions.node.split('.')[0]}`, node: process.execPath, flags: [], main: MAIN }];
  if (before === undefined) return variants;
  const first = variants[0]!;
  return [...variants, { ...first, label: `${first.label} before`, main: resolve(before, 'dist/src/main.js') }];
}

function parseVariants(text: string): Variant[] {
  return text.split(',').map((entry) => {
    const equals = entry.indexOf('=');
    const [node, ...flags] = entry
      .slice(equals + 1)
      .trim()
      .split(/\s+/);
    if (equals < 1 || !node) throw new Error(`BENCH_SOAK_NODES: "${entry}" is not label=/path/to/node[ flags]`);
    return { label: entry.slice(0, equals).trim(), node, flags, main: MAIN };
  });
}

function soakSeconds(): number {
  const seconds = Number(process.env.BENCH_SOAK_SECONDS ?? 1800);
  if (!Number.isInteger(seconds) || seconds < 4 * SAMPLE_SECONDS)
    throw new Error(`BENCH_SOAK_SECONDS must be a whole number of at least ${4 * SAMPLE_SECONDS}`);
  return seconds;
}

/** A port free right now on 127.0.0.1 (the server binds it a moment later). */
function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => done(port));
    });
    probe.on('error', fail);
  });
}

/** VmRSS of a process from /proc, in bytes; NaN when it is gone. */
function rssOf(pid: number | undefined): number {
  try {
    const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kib === undefined ? NaN : Number(kib) * 1024;
  } catch {
    return NaN;
  }
}

/**
 * The CPU that everything but the soak took over an interval (a share of one CPU): the machine's busy
 * time less the soak's own processes'. Unlike otherLoadMeter, it sees processes that came and went
 * meanwhile (a test suite's), which a 30-minute run is sure to meet; kernel work charged to no process
 * (the soak's own loopback traffic included) counts as others'. `ours` must still be running at the end.
 */
function othersMeter(ours: () => readonly number[]): () => number {
  const started = performance.now();
  const machine = machineCpuSeconds();
  const before = new Map(ours().map((pid) => [pid, processCpuSeconds(pid) ?? 0]));
  return () => {
    const seconds = (performance.now() - started) / 1000;
    const own = ours().reduce((sum, pid) => sum + (processCpuSeconds(pid) ?? 0) - (before.get(pid) ?? 0), 0);
    return (machineCpuSeconds() - machine - own) / seconds;
  };
}

/** Servers still running at exit (an error, Ctrl-C): killed, as ipc.ts kills the bench's own children. */
const servers = new Set<ChildProcess>();
const killServers = () => {
  for (const server of servers) server.kill('SIGKILL');
};

/** Starts `node [flags] dist/src/main.js` on free ports and waits until it answers /livez. */
async function startServer(variant: Variant): Promise<{ server: ChildProcess; port: number; wsPort: number }> {
  const port = await freePort();
  const wsPort = await freePort();
  const command = [variant.node, ...variant.flags, variant.main];
  const [file, ...args] = pinned ? [TASKSET, '-c', String(SERVER_CPU), ...command] : command;
  // stdout and stderr to ours (stderr): stdout carries only the report.
  const server = spawn(file!, args, {
    env: { ...process.env, PORT: String(port), WS_PORT: String(wsPort), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 2, 2],
  });
  servers.add(server);
  server.on('exit', () => servers.delete(server));
  const deadline = performance.now() + 30_000;
  for (;;) {
    if (server.exitCode !== null || server.signalCode !== null)
      throw new Error(`${variant.label} exited at start (${server.exitCode ?? server.signalCode})`);
    const ready = await fetch(`http://127.0.0.1:${port}/livez`).then(
      (response) => response.ok,
      () => false,
    );
    if (ready) return { server, port, wsPort };
    if (performance.now() > deadline) throw new Error(`${variant.label} did not answer /livez within 30 s`);
    await sleep(200);
  }
}

async function startSoak(variant: Variant): Promise<Soak> {
  const version = execFileSync(variant.node, ['--version'], { encoding: 'utf8' }).trim();
  const { server, port, wsPort } = await startServer(variant);
  const load = new BenchChild(`soak load (${variant.label})`, benchScript('load/soak.js'), LOAD_CPU);
  const soak: Soak = { variant, version, server, port, load, samples: [], errors: [] };
  server.on('exit', (code, signal) => {
    if (soak.final === undefined) soak.crashed = `the server exited during the run (${code ?? signal})`;
  });
  const command: SoakCommand = {
    cmd: 'start',
    label: variant.label,
    origin: `http://127.0.0.1:${port}`,
    wsPort,
    ...LOAD,
  };
  try {
    await load.request<SoakCounts>(command, 300_000);
  } catch (error) {
    await load.kill();
    server.kill('SIGKILL');
    throw new Error(`${variant.label}: ${errorText(error)}`, { cause: error });
  }
  progress(
    `soak: ${variant.label} (${version}) filled to ${integer(LOAD.users)} users, ${LOAD.chatClients} chat clients in`,
  );
  return soak;
}

async function sample(soak: Soak, seconds: number): Promise<void> {
  const rss = rssOf(soak.server.pid);
  const [text, counts] = await Promise.all([
    scrape(soak.port).catch((error: unknown) => {
      soak.errors.push(`t=${seconds} s: ${errorText(error)}`);
      return '';
    }),
    soak.load.request<SoakCounts>({ cmd: 'counts' } satisfies SoakCommand, 10_000).catch(() => undefined),
  ]);
  soak.samples.push({
    seconds,
    rss,
    heapUsed: metric(text, 'nodejs_heap_size_used_bytes'),
    heapTotal: metric(text, 'nodejs_heap_size_total_bytes'),
    newSpace: metric(text, 'nodejs_heap_space_size_total_bytes{space="new"}'),
    oldSpace: metric(text, 'nodejs_heap_space_size_total_bytes{space="old"}'),
    external: metric(text, 'nodejs_external_memory_bytes'),
    counts,
  });
}

const alive = (soak: Soak) => soak.server.exitCode === null && soak.server.signalCode === null;

/** Samples every server every SAMPLE_SECONDS from now until `seconds` have passed; `loads`: the load average then. */
async function run(soaks: readonly Soak[], seconds: number, loads: number[]): Promise<void> {
  const started = performance.now();
  for (let at = 0; at <= seconds; at += SAMPLE_SECONDS) {
    await sleep(Math.max(0, started + at * 1000 - performance.now()));
    loads.push(loadavg()[0]!);
    await Promise.all(soaks.filter(alive).map((soak) => sample(soak, at)));
    if (at % 60 === 0 && at > 0) {
      const rss = soaks.map((soak) => `${soak.variant.label} ${mib(soak.samples.at(-1)?.rss ?? NaN)}`).join(', ');
      progress(`soak ${at}/${seconds} s: RSS ${rss}`);
    }
  }
}

const mib = (bytes: number) => (Number.isFinite(bytes) ? `${Math.round(bytes / MIB)} MiB` : '–');
const mean = (values: readonly number[]) =>
  values.length === 0 ? NaN : values.reduce((sum, value) => sum + value, 0) / values.length;
const finite = (values: readonly number[]) => values.filter(Number.isFinite);

interface Figures {
  first: number;
  peak: number;
  end: number;
  q2: number;
  q4: number;
  growth: number;
  heapMin: number;
  heapMax: number;
  /** The least heap used in the second and in the last quarter: the floor, what stays live. */
  heapFloorQ2: number;
  heapFloorQ4: number;
  heapTotalFirst: number;
  heapTotalEnd: number;
  newSpaceMax: number;
  requests: number;
  serverErrors: number;
  hostileNot4xx: number;
  unexpected: number;
  failed: number;
  chatLost: number;
  chatRefused: number;
}

/** The figures of one variant over a run of `seconds`; quarters by time since the load began. */
function figures(soak: Soak, seconds: number): Figures {
  const { samples } = soak;
  const warm = samples.filter((s) => s.seconds >= WARMUP_SECONDS);
  // From the quarter's start up to the next one's (the last one up to the end, included).
  const quarter = (from: number, to: number, field: 'rss' | 'heapUsed' = 'rss') =>
    finite(
      samples
        .filter((s) => s.seconds >= from * seconds && (to === 1 ? s.seconds <= seconds : s.seconds < to * seconds))
        .map((s) => s[field]),
    );
  const q2 = quarter(0.25, 0.5);
  const last = soak.final ?? samples.at(-1)?.counts;
  const delta = (field: keyof Omit<SoakCounts, 'chatCloseCodes'>) =>
    last === undefined ? NaN : last[field] - (soak.start?.[field] ?? 0);
  const heapUsed = finite(warm.map((s) => s.heapUsed));
  return {
    first: warm[0]?.rss ?? NaN,
    peak: Math.max(...finite(samples.map((s) => s.rss))),
    end: samples.at(-1)?.rss ?? NaN,
    q2: mean(q2),
    q4: mean(quarter(0.75, 1)),
    growth: mean(quarter(0.75, 1)) / mean(q2) - 1,
    heapMin: Math.min(...heapUsed),
    heapMax: Math.max(...heapUsed),
    heapFloorQ2: Math.min(...quarter(0.25, 0.5, 'heapUsed')),
    heapFloorQ4: Math.min(...quarter(0.75, 1, 'heapUsed')),
    heapTotalFirst: warm[0]?.heapTotal ?? NaN,
    heapTotalEnd: samples.at(-1)?.heapTotal ?? NaN,
    newSpaceMax: Math.max(...finite(samples.map((s) => s.newSpace))),
    requests: delta('requests'),
    serverErrors: delta('serverErrors'),
    hostileNot4xx: delta('hostileNot4xx'),
    unexpected: delta('unexpected'),
    failed: delta('failed'),
    chatLost: delta('chatUnexpectedCloses'),
    chatRefused: delta('chatRefused'),
  };
}

const signed = (share: number) =>
  Number.isFinite(share) ? `${share >= 0 ? '+' : ''}${(share * 100).toFixed(1)} %` : '–';

function targets(soak: Soak, f: Figures): Target[] {
  const label = `${soak.variant.label} (${soak.version}${soak.variant.flags.length > 0 ? ` ${soak.variant.flags.join(' ')}` : ''})`;
  const broken = f.serverErrors + f.hostileNot4xx + f.chatLost + f.chatRefused;
  return [
    {
      label: `RSS settles, ${label}: last-quarter mean against second-quarter mean`,
      figure: soak.crashed ?? `${mib(f.q4)} vs ${mib(f.q2)}, ${signed(f.growth)}`,
      goal: `within ±${SETTLED * 100} %`,
      pass: Number.isFinite(f.growth) && !soak.crashed ? Math.abs(f.growth) <= SETTLED : undefined,
    },
    {
      label: `invariants, ${label}: 5xx replies, hostile requests not answered 4xx, chat connections lost or refused`,
      figure: `${integer(f.serverErrors)}, ${integer(f.hostileNot4xx)}, ${integer(f.chatLost)}, ${integer(f.chatRefused)}${soak.crashed ? `; ${soak.crashed}` : ''}`,
      goal: 'all 0, no crash',
      pass: soak.crashed ? false : Number.isFinite(broken) ? broken === 0 : undefined,
    },
  ];
}

/** The raw samples, one row per server and sample, for a reader to plot. */
function writeCsv(soaks: readonly Soak[]): string {
  const folder = resolve('test-artifacts/soak');
  mkdirSync(folder, { recursive: true });
  const file = resolve(folder, `soak-${new Date().toISOString().slice(0, 19).replace(/:/g, '')}Z.csv`);
  const header = [
    'variant',
    'node',
    'seconds',
    'rss_bytes',
    'heap_used_bytes',
    'heap_total_bytes',
    'new_space_total_bytes',
    'old_space_total_bytes',
    'external_bytes',
    'requests',
    'server_errors',
    'hostile_not_4xx',
    'chat_open',
    'chat_unexpected_closes',
  ];
  const rows = soaks.flatMap((soak) =>
    soak.samples.map((s) => {
      const counted = (field: 'requests' | 'serverErrors' | 'hostileNot4xx' | 'chatUnexpectedCloses') =>
        s.counts ? s.counts[field] - (soak.start?.[field] ?? 0) : '';
      return [
        soak.variant.label,
        soak.version,
        s.seconds,
        s.rss,
        s.heapUsed,
        s.heapTotal,
        s.newSpace,
        s.oldSpace,
        s.external,
        counted('requests'),
        counted('serverErrors'),
        counted('hostileNot4xx'),
        s.counts?.chatOpen ?? '',
        counted('chatUnexpectedCloses'),
      ]
        .map((cell) => (typeof cell === 'number' && !Number.isFinite(cell) ? '' : String(cell)))
        .join(',');
    }),
  );
  writeFileSync(file, `${[header.join(','), ...rows].join('\n')}\n`);
  return file;
}

function markdown(soaks: readonly Soak[], seconds: number, others: number, load: string, csv: string): string {
  const rows = soaks.map((soak) => {
    const f = figures(soak, seconds);
    return [
      `${soak.variant.label} (${soak.version}${soak.variant.flags.length > 0 ? ` \`${soak.variant.flags.join(' ')}\`` : ''})`,
      mib(f.first),
      mib(f.peak),
      mib(f.end),
      `${mib(f.q2)} → ${mib(f.q4)} (${signed(f.growth)})`,
      `${mib(f.heapMin)}–${mib(f.heapMax)}`,
      `${mib(f.heapFloorQ2)} → ${mib(f.heapFloorQ4)}`,
      `${mib(f.heapTotalFirst)} → ${mib(f.heapTotalEnd)}`,
      mib(f.newSpaceMax),
      `${integer(f.requests)} (${integer(f.requests / seconds)}/s)`,
      integer(f.serverErrors),
    ];
  });
  const problems = soaks.flatMap((soak) => {
    const f = figures(soak, seconds);
    const notes = [...(soak.crashed ? [soak.crashed] : []), ...soak.errors];
    if (f.unexpected > 0) notes.push(`${integer(f.unexpected)} ordinary requests got an unexpected status`);
    if (f.failed > 0) notes.push(`${integer(f.failed)} requests got no reply (connection error or timeout)`);
    const codes = Object.entries(soak.final?.chatCloseCodes ?? {});
    if (codes.length > 0) notes.push(`chat close codes: ${codes.map(([code, n]) => `${code} ×${n}`).join(', ')}`);
    return notes.length === 0 ? [] : [`- ${soak.variant.label}: ${notes.slice(0, 5).join('; ')}`];
  });
  return [
    '### Soak: RSS over a long run',
    '',
    `${soaks.length} server${soaks.length > 1 ? 's' : ''} (\`node [flags] dist/src/main.js\`, memory store, LOG_LEVEL=warn) soaked **at the same time** for ${integer(seconds)} s, ` +
      `each under its own load: ${LOAD.requestsPerSecond} REST requests/s (lists with filters, search, sort and pages; reads; creates and deletes holding ${integer(LOAD.users)} users; PATCH; PUT), ` +
      `${percent(LOAD.hostileShare)} of them hostile (each must get a 4xx), and ${LOAD.chatClients} chat clients sending ${LOAD.messagesPerSecond} messages/s in all, ${LOAD.churnPerSecond} leaving and ${LOAD.churnPerSecond} joining every second. ` +
      `${pinned ? `The servers share CPU ${SERVER_CPU} and the load generators CPU ${LOAD_CPU}` : 'Processes are not pinned'}: throughput is shared, which a memory soak does not mind. ` +
      `Sampled every ${SAMPLE_SECONDS} s: RSS (VmRSS, the whole process, the chat worker thread included); heap used and total (\`nodejs_heap_size_used_bytes\`, \`nodejs_heap_size_total_bytes\` of GET /metrics: the main thread's V8 heap only, the chat thread's heap is not in them); young generation (\`nodejs_heap_space_size_total_bytes{space="new"}\`, main thread). ` +
      `${soaks.some((soak) => soak.variant.main !== MAIN) ? `"before" runs the build in BENCH_BEFORE (\`${process.env.BENCH_BEFORE}\`). ` : ''}` +
      `"First" is at ${WARMUP_SECONDS} s; quarters are of the run's time. Other processes used ${percent(others)} of a CPU meanwhile (the machine's busy time less the soak's); load average ${load}. Raw samples: \`${csv}\`.`,
    '',
    table(
      [
        'Variant',
        'RSS first',
        'RSS peak',
        'RSS end',
        'RSS mean Q2 → Q4 (growth)',
        'heap used min–max',
        'heap used floor Q2 → Q4',
        'heap total first → end',
        'young gen max',
        'requests served',
        '5xx',
      ],
      rows,
    ),
    ...(problems.length > 0 ? ['', ...problems] : []),
    '',
    'Targets:',
    '',
    targetLines(soaks.flatMap((soak) => targets(soak, figures(soak, seconds)))),
  ].join('\n');
}

export async function soakSection(): Promise<SectionReport> {
  const variants = soakVariants();
  const seconds = soakSeconds();
  process.on('exit', killServers);
  const others = othersMeter(() => [...benchPids(), ...[...servers].map((server) => server.pid ?? -1)]);
  const loads: number[] = [];
  let othersShare = NaN;
  progress(`soak: ${variants.map((v) => v.label).join(', ')} at the same time for ${seconds} s`);
  const started = await Promise.allSettled(variants.map(startSoak));
  const soaks = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failures = started.flatMap((result) => (result.status === 'rejected' ? [errorText(result.reason)] : []));
  try {
    if (soaks.length > 0) {
      for (const soak of soaks) soak.start = await soak.load.request<SoakCounts>({ cmd: 'counts' }, 10_000);
      await run(soaks, seconds, loads);
      othersShare = others();
      await Promise.all(
        soaks.map(async (soak) => {
          soak.final = await soak.load
            .request<SoakCounts>({ cmd: 'stop' } satisfies SoakCommand, 60_000)
            .catch((error: unknown) => {
              soak.errors.push(errorText(error));
              return undefined;
            });
        }),
      );
    }
  } finally {
    await Promise.all(soaks.map((soak) => soak.load.kill()));
    killServers();
    process.off('exit', killServers);
  }
  const load = `(1 min) ${mean(loads).toFixed(1)} on average, at most ${Math.max(...loads).toFixed(1)}, on ${cpus().length} CPUs`;
  const csv = writeCsv(soaks);
  progress(`soak: samples written to ${csv}`);
  const report = markdown(soaks, seconds, othersShare, load, csv.replace(`${process.cwd()}/`, ''));
  const failed = failures.map((failure) => `- **not run**: ${failure}`);
  return {
    markdown: failed.length > 0 ? `${report}\n\n${failed.join('\n')}` : report,
    targets: soaks.flatMap((soak) => targets(soak, figures(soak, seconds))),
    errors: failures.length + soaks.reduce((sum, soak) => sum + soak.errors.length, 0),
  };
}
