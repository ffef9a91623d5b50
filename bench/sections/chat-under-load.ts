/**
 * "Chat under REST load": how long the chat's round trip takes while REST clients keep the service
 * busy. One chat client sends the contract's application `ping` every 20 ms and times each `pong`
 * (load/pinger.ts) while 4 REST clients repeat one request back to back (load/rest.ts): a search, the
 * last page sorted by email, or creates; on the memory store at 1 000 000 users and on SQLite at
 * 200 000 (quick: 50 000 and 20 000).
 *
 * Before and after in one run: with BENCH_BEFORE naming the folder of an earlier build of Roster
 * (its `dist/bench/servers/roster.js` speaks the same commands), every row is measured on it too,
 * the two alternating, each server alone. The earlier build the figures in BENCHMARKS.md compare with
 * is the commit before the chat thread, made with:
 *
 *   git worktree add /tmp/roster-before 778f1ca && (cd /tmp/roster-before && npm ci && npm run build)
 *   BENCH_BEFORE=/tmp/roster-before npm run bench -- --only chat-under-load
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BenchChild, benchPids, LOAD_CPU, SERVER_CPU, SERVER_NODE_ARGS } from '../ipc.js';
import type { PingJob, PingResult } from '../load/pinger.js';
import type { RestJob, RestResult, RestTarget } from '../load/rest.js';
import { integer, ms, rate, table, targetLines, type Target } from '../report.js';
import type { RosterCommand, RosterStarted } from '../servers/roster.js';
import { otherLoadMeter } from '../stats.js';
import { SEARCH_TERM } from '../users.js';
import {
  benchScript,
  disturbed,
  errorText,
  isDisturbed,
  judge,
  progress,
  ROSTER_ENV,
  rosterServer,
  type Plan,
  type SectionReport,
} from './common.js';

const USERS_PATH = '/api/v1/users';
const PING_INTERVAL_MS = 20;
const REST_CLIENTS = 4;
/** What the chat's own thread is for (CHANGELOG.md, "Changed"): chat latency that REST load cannot move past these. */
const P99_TARGET_MS = 10;
const MAX_TARGET_MS = 50;

type Build = 'before' | 'after';
/**
 * Where the server runs: alone on one CPU, as every other section runs it (its two threads then share
 * that CPU, and the kernel's time slices show in the round trips), or on both CPUs, as a deployment
 * gives a service with two threads at least two (the load generators share the second).
 */
type Cpus = 'one CPU' | 'two CPUs';
const CPU_SETS: readonly Cpus[] = ['one CPU', 'two CPUs'];
type Store = 'memory' | 'SQLite';

interface Load {
  label: string;
  target: (users: number) => RestTarget;
}

const LOADS: readonly Load[] = [
  { label: `?search=${SEARCH_TERM}`, target: () => ({ kind: 'get', path: `${USERS_PATH}?search=${SEARCH_TERM}` }) },
  {
    label: 'last page by email',
    target: (users) => ({
      kind: 'get',
      path: `${USERS_PATH}?sort=email&order=asc&limit=100&page=${Math.ceil(users / 100)}`,
    }),
  },
  { label: 'creates', target: () => ({ kind: 'create' }) },
];

interface Row {
  build: Build;
  cpus: Cpus;
  store: Store;
  users: number;
  load: string;
  rest?: RestResult;
  ping?: PingResult;
  otherLoad?: number;
  error?: string;
}

function sizesFor(plan: Plan): [Store, number][] {
  const quick = plan.idle === undefined;
  return quick
    ? [
        ['memory', 50_000],
        ['SQLite', 20_000],
      ]
    : [
        ['memory', 1_000_000],
        ['SQLite', 200_000],
      ];
}

/** The compiled Roster bench server of a build: this one's, or BENCH_BEFORE's. */
function serverScript(build: Build): URL {
  return rosterServer(build === 'after' ? undefined : process.env.BENCH_BEFORE!);
}

async function measureServer(
  build: Build,
  cpus: Cpus,
  store: Store,
  users: number,
  seconds: number,
  pinger: BenchChild,
  generator: BenchChild,
): Promise<Row[]> {
  const folder = store === 'SQLite' ? mkdtempSync(join(tmpdir(), 'roster-bench-chat-load-')) : undefined;
  const server = new BenchChild(
    `Roster ${build} (${store}, ${integer(users)} users, ${cpus})`,
    serverScript(build),
    cpus === 'one CPU' ? SERVER_CPU : `${SERVER_CPU},${LOAD_CPU}`,
    SERVER_NODE_ARGS,
  );
  const rows: Row[] = [];
  try {
    const env = { ...ROSTER_ENV, ...(folder && { DATABASE_URL: `sqlite:${join(folder, 'roster.db')}` }) };
    const started = await server.request<RosterStarted>(
      { cmd: 'start', users, env } satisfies RosterCommand,
      60_000 + users / 5,
    );
    progress(
      `Roster ${build} up on ${store} with ${integer(users)} users (filled in ${started.fillSeconds.toFixed(1)} s)`,
    );
    for (const load of LOADS) {
      const others = otherLoadMeter(benchPids);
      try {
        const [ping, rest] = await Promise.all([
          pinger.request<PingResult>(
            {
              cmd: 'ping',
              url: `ws://127.0.0.1:${started.wsPort}`,
              seconds,
              intervalMs: PING_INTERVAL_MS,
            } satisfies PingJob,
            (seconds + 30) * 1000,
          ),
          generator.request<RestResult>(
            {
              cmd: 'run',
              url: `http://127.0.0.1:${started.port}`,
              serverPid: server.pid,
              target: load.target(users),
              connections: REST_CLIENTS,
              seconds,
              timeoutSeconds: 10,
            } satisfies RestJob,
            (seconds + 30) * 1000,
          ),
        ]);
        rows.push({ build, cpus, store, users, load: load.label, rest, ping, otherLoad: others() });
      } catch (error) {
        rows.push({ build, cpus, store, users, load: load.label, error: errorText(error) });
      }
    }
  } catch (error) {
    for (const load of LOADS) rows.push({ build, cpus, store, users, load: load.label, error: errorText(error) });
  } finally {
    await server.kill();
    if (folder) rmSync(folder, { recursive: true, force: true });
  }
  return rows;
}

export async function chatUnderLoadSection(plan: Plan): Promise<SectionReport> {
  const before = process.env.BENCH_BEFORE !== undefined;
  const seconds = plan.idle === undefined ? 2 : 8;
  const pinger = new BenchChild('chat pinger', benchScript('load/pinger.js'), LOAD_CPU);
  const generator = new BenchChild('REST load generator', benchScript('load/rest.js'), LOAD_CPU);
  const rows: Row[] = [];
  try {
    for (const [index, [store, users]] of sizesFor(plan).entries()) {
      // Alternating which build goes first, so neither always runs on the warmer machine.
      const builds: Build[] = before ? (index % 2 === 0 ? ['before', 'after'] : ['after', 'before']) : ['after'];
      for (const cpus of CPU_SETS)
        for (const build of builds)
          rows.push(...(await measureServer(build, cpus, store, users, seconds, pinger, generator)));
    }
  } finally {
    await Promise.all([pinger.kill(), generator.kill()]);
  }

  const targets: Target[] = [];
  for (const row of rows.filter((r) => r.build === 'after')) {
    const where = `${row.store}, ${integer(row.users)} users, ${row.load}, server on ${row.cpus}`;
    const disturbed = isDisturbed(row.otherLoad);
    targets.push({
      label: `chat ping RTT p99 under REST load (${where})`,
      figure: row.ping ? `${ms(row.ping.p99Ms)} ms` : (row.error ?? 'not measured'),
      goal: `≤ ${P99_TARGET_MS} ms`,
      pass: row.ping ? judge(row.ping.p99Ms, (value) => value <= P99_TARGET_MS) : undefined,
      disturbed,
    });
    targets.push({
      label: `chat ping RTT max under REST load (${where})`,
      figure: row.ping ? `${ms(row.ping.maxMs)} ms` : (row.error ?? 'not measured'),
      goal: `≤ ${MAX_TARGET_MS} ms`,
      pass: row.ping ? judge(row.ping.maxMs, (value) => value <= MAX_TARGET_MS) : undefined,
      disturbed,
    });
  }
  const header = [
    'Build',
    'Server on',
    'Store, users',
    'REST load (4 clients)',
    'REST rate',
    'chat ping RTT p50 / p99 / max',
    'pings (lost)',
    'CPU (other processes)',
  ];
  const body = rows.map((row) => [
    row.build === 'after' ? 'chat thread' : 'one thread (before)',
    row.cpus,
    `${row.store}, ${integer(row.users)}`,
    row.load,
    row.rest ? `${rate(row.rest.requestsPerSecond)}/s` : '–',
    row.ping ? `${ms(row.ping.p50Ms)} / ${ms(row.ping.p99Ms)} / ${ms(row.ping.maxMs)} ms` : (row.error ?? '–'),
    row.ping ? `${row.ping.pings} (${row.ping.lost})` : '–',
    row.otherLoad === undefined
      ? '–'
      : isDisturbed(row.otherLoad)
        ? `**${Math.round(row.otherLoad * 100)}%**`
        : `${Math.round(row.otherLoad * 100)}%`,
  ]);
  const markdown = [
    '### Chat under REST load',
    '',
    `A chat client pings every ${PING_INTERVAL_MS} ms (the contract's application \`ping\`) and times each \`pong\` while ${REST_CLIENTS} REST clients repeat one request back to back for ${seconds} s. The pinger and the REST load generator run on CPU ${LOAD_CPU}; the server runs either alone on CPU ${SERVER_CPU} (its two threads then share it, and the kernel's time slices show in the round trips) or on both CPUs (the chat thread can run while the REST thread works, which is what the thread is for; the load generators share CPU ${LOAD_CPU} with it).${before ? ` "One thread (before)" is the build in BENCH_BEFORE (\`${process.env.BENCH_BEFORE}\`), measured in the same run, alternating with this one.` : ''}`,
    '',
    table(header, body),
    ...disturbed(rows),
    '',
    'Targets:',
    '',
    targetLines(targets),
  ].join('\n');
  return { markdown, targets, errors: rows.filter((row) => row.error !== undefined).length };
}
