/**
 * `npm run bench`: Roster against baselines measured in the same run — a minimal node:http server over
 * a Map (the REST ceiling) and a stock `ws` broadcast server (the chat ceiling). Every server runs in
 * its own process on one CPU, every load generator in its own process on the other. Prints one
 * Markdown table per section with PASS/FAIL lines for the targets, and writes them to BENCHMARKS.md.
 *
 *   npm run bench                  1 000 and 100 000 users; 1 000 and 5 000 chat clients; a storm of
 *                                  5 000 connecting clients; 10 000 idle
 *   npm run bench -- --full        adds 1 000 000 users
 *   npm run bench -- --quick       smoke run under a minute; prints only, unless --write is given
 *   npm run bench -- --only chat   one section (rest, chat, connections, chat-under-load, thread-cost, drift,
 *                                  soak, scale, lists, search);
 *                                  prints only, never writes
 *   BENCH_BEFORE=<folder> ...      chat-under-load, thread-cost and drift also measure the build in <folder>
 *                                  (an earlier commit, built there): before and after in one run
 *   the drift section              every run: GET by id, the default list, creates and chat broadcast
 *                                  against the fixed older build 41a4c31, built once into
 *                                  ~/.cache/roster-bench/41a4c31 (bench/baseline.ts; BENCH_BASELINE=<folder>
 *                                  names another); BENCH_DRIFT_ROUNDS (3), BENCH_DRIFT_FIGURES (id, list,
 *                                  create, chat, chat-no-history)
 *   npm run bench -- --only soak   the soak (never run otherwise: it is long): does RSS settle over a long
 *                                  run under mixed REST, hostile requests and chat churn? Settings:
 *                                  BENCH_SOAK_SECONDS (default 1800) and BENCH_SOAK_NODES, server variants
 *                                  run at the same time, `label=/path/to/node[ flags]` comma-separated
 *                                  (default: the node running the bench), e.g.
 *                                  BENCH_SOAK_NODES='node22=/opt/n22/bin/node,node24-semi8=/opt/n24/bin/node --max-semi-space-size=8'
 *   npm run bench -- --only scale  1, 2 and 4 instances on one PostgreSQL and one Redis (needs DATABASE_URL
 *                                  and REDIS_URL): CPU per unit of work, the capacity model's prediction
 *                                  for 2 and 4 from the 1-instance row against measurement, join storms
 *                                  of 1 000, 5 000 and 10 000 over 4 instances (docs/capacity.md); with
 *                                  --quick, 1 and 2 instances at a tiny size. BENCH_SCALE_INSTANCES and
 *                                  BENCH_SCALE_STORMS (comma-separated) replace the counts and sizes,
 *                                  BENCH_SCALE_ENV (`NAME=value ...`) adds settings to every instance
 *   npm run bench -- --only lists  the list queries at 1 000 000 users on the memory store, SQLite and PostgreSQL
 *                                  (skipped without DATABASE_URL): searches, the first, middle and last page of
 *                                  every sort order, the role filter, writes, memory; with BENCH_BEFORE, before
 *                                  and after in one run (bench/sections/lists.ts). BENCH_LISTS_USERS,
 *                                  BENCH_LISTS_STORES (comma-separated), BENCH_LISTS_SECONDS per query;
 *                                  with --quick, 2 000 users and 0.1 s per query
 *   npm run bench -- --only search "search as you type" at 1 000 000 users on the memory store, SQLite and
 *                                  PostgreSQL (skipped without DATABASE_URL): every request a term the server
 *                                  has not seen, of 1–4 characters drawn as a person types (prefixes of names
 *                                  and emails, four digits), 1 client (p50/p99) and 4 (searches/s, p50/p99),
 *                                  a REST probe (/livez every 20 ms) beside them (its p99); with BENCH_BEFORE,
 *                                  before and after alternating (bench/sections/search.ts). BENCH_SEARCH_USERS,
 *                                  BENCH_SEARCH_STORES, BENCH_SEARCH_SECONDS per row (default 8)
 *   npm run bench -- --only changes  the change feed: 1 000 SSE streams on the memory store, a write a millisecond,
 *                                  write latency against no streams and against the same streams served by a
 *                                  process of their own (the floor), alternating (bench/sections/changes.ts);
 *                                  BENCH_CHANGES_STREAMS, BENCH_CHANGES_SECONDS per round (default 60),
 *                                  BENCH_CHANGES_FLOOR=0 leaves the floor rounds out
 *   BENCH_SERVER_FLAGS='--max-semi-space-size=16' ...   adds Node flags to the bench's server children
 *                                  (not the baselines' load generators): a V8 setting measured alone
 */
import { execFileSync } from 'node:child_process';
import { relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { benchPids, killAllChildren, LOAD_CPU, pinned, SERVER_CPU } from './ipc.js';
import { machine, percent, writeGeneratedSection } from './report.js';
import { chatSection } from './sections/chat.js';
import { chatUnderLoadSection } from './sections/chat-under-load.js';
import { threadCostSection } from './sections/thread-cost.js';
import { connectionsSection } from './sections/connections.js';
import { driftSection } from './sections/drift.js';
import { planFor, progress, sleep, type Plan, type SectionReport } from './sections/common.js';
import { restSection } from './sections/rest.js';
import { listsSection } from './sections/lists.js';
import { searchSection } from './sections/search.js';
import { changesSection } from './sections/changes.js';
import { scaleSection } from './sections/scale.js';
import { soakSection } from './sections/soak.js';
import { otherLoadMeter } from './stats.js';

/**
 * The sections, in the order they run and are reported. `asked`: run only when named with --only (too
 * long for every run).
 */
const SECTIONS: readonly (readonly [name: string, run: (plan: Plan) => Promise<SectionReport>, asked?: 'asked'])[] = [
  ['rest', restSection],
  ['chat', chatSection],
  ['connections', connectionsSection],
  ['chat-under-load', chatUnderLoadSection],
  ['thread-cost', threadCostSection],
  ['drift', driftSection],
  ['soak', soakSection, 'asked'],
  ['scale', scaleSection, 'asked'],
  ['lists', listsSection, 'asked'],
  ['search', searchSection, 'asked'],
  ['changes', changesSection, 'asked'],
];

function commandLine(args: readonly string[]): string {
  if (process.env.npm_lifecycle_event === 'bench')
    return `npm run bench${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`;
  const script = process.argv[1] ?? 'dist/bench/run.js';
  const local = relative(process.cwd(), script);
  return ['node', local.startsWith('..') ? script : local, ...args].join(' ');
}

function revision(): string {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return `commit ${commit}${dirty ? ' with uncommitted changes in src/' : ''}`;
  } catch {
    return 'commit unknown';
  }
}

function preamble(command: string, backgroundLoad: number): string {
  return [
    '## Results',
    '',
    `- Command: \`${command}\`, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, Roster ${revision()}`,
    `- Machine: ${machine()}; Node ${process.version}`,
    `- ${pinned ? `Each server runs alone on CPU ${SERVER_CPU}, each load generator on CPU ${LOAD_CPU} (taskset).` : 'Processes are not pinned to CPUs (taskset not found), so figures are less comparable.'} ` +
      `CPU busy figures are ${pinned ? 'of the whole CPU, kernel network work (softirq) included' : 'of each process'}. ` +
      `Other processes used ${percent(backgroundLoad)} of a CPU just before the run.`,
  ].join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const { values: flags } = parseArgs({
    args,
    options: {
      quick: { type: 'boolean', default: false },
      full: { type: 'boolean', default: false },
      write: { type: 'boolean', default: false },
      only: { type: 'string' },
    },
  });
  if (flags.quick && flags.full) throw new Error('--quick and --full exclude each other');
  const only = flags.only;
  if (only !== undefined && !SECTIONS.some(([name]) => name === only)) {
    throw new Error(`--only takes one of ${SECTIONS.map(([name]) => name).join(', ')} (got "${only}")`);
  }
  // Some sections alone are not a report: BENCHMARKS.md keeps its figures.
  if (only !== undefined && flags.write) throw new Error('--only and --write exclude each other');
  const plan = planFor(flags);
  const started = performance.now();
  const background = otherLoadMeter(benchPids);
  await sleep(1000);
  const head = preamble(commandLine(args), background());
  console.log(`${head}\n`);

  const reports: SectionReport[] = [];
  for (const [name, section, asked] of SECTIONS) {
    if (only === undefined ? asked !== undefined : name !== only) continue;
    const report = await section(plan);
    console.log(`${report.markdown}\n`);
    reports.push(report);
  }

  const targets = reports.flatMap((report) => report.targets);
  const errors = reports.reduce((sum, report) => sum + report.errors, 0);
  const failed = targets.filter((target) => target.pass === false).length;
  const passed = targets.filter((target) => target.pass === true).length;
  const summary = [
    `Targets: ${passed} pass, ${failed} fail, ${targets.length - passed - failed} not measured.`,
    errors > 0 ? `**Measurements that failed: ${errors}** (see the tables).` : '',
    `Run took ${Math.round((performance.now() - started) / 1000)} s.`,
  ]
    .filter(Boolean)
    .join(' ');
  console.log(summary);
  // Targets are reported, not enforced; a measurement that could not be made fails the run (a smoke check).
  if (errors > 0) process.exitCode = 1;

  if (only === undefined && (!flags.quick || flags.write)) {
    const file = resolve('BENCHMARKS.md');
    writeGeneratedSection(file, [head, ...reports.map((report) => report.markdown), summary].join('\n\n'));
    progress(`wrote ${file}`);
  }
}

process.on('exit', killAllChildren);
for (const [signal, status] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.on(signal, () => {
    killAllChildren();
    process.exit(status);
  });
}

try {
  await main();
} catch (error) {
  console.error(`bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
} finally {
  killAllChildren();
}
