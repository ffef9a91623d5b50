/**
 * The "search as you type" section (`npm run bench -- --only search`): searches of terms the server has
 * never seen, at BENCH_SEARCH_USERS users (default 1 000 000) on the memory store, SQLite and
 * PostgreSQL (skipped without DATABASE_URL). The terms are drawn as a person types (bench/load/typing.ts:
 * the first one to four characters of a name or an email, or four digits), every request a new one;
 * one client, then four, each for BENCH_SEARCH_SECONDS (default 8), with a REST probe (`GET /livez`
 * every 20 ms) beside them whose p99 says whether searches hold the REST thread.
 *
 * With BENCH_BEFORE naming the folder of an earlier build (as in the lists section, whose fill and
 * start-up this section reuses: bench/sections/lists.ts), both builds serve the same users and each row
 * is measured on one, then the other, alternating which goes first. BENCH_SEARCH_STORES
 * (comma-separated) picks the stores.
 */
import { loadavg } from 'node:os';
import { BenchChild, benchPids, LOAD_CPU, SERVER_CPU } from '../ipc.js';
import type { TypingJob, TypingResult } from '../load/typing.js';
import { integer, ms, rate, table, targetLines, type Target } from '../report.js';
import { otherLoadMeter } from '../stats.js';
import {
  benchScript,
  errorText,
  isDisturbed,
  numberSetting,
  progress,
  type Plan,
  type SectionReport,
} from './common.js';
import { prepareSql, startServer, type Build, type Phase, type Prepared, type Started } from './lists.js';

type StoreName = 'memory' | 'sqlite' | 'postgres';
const STORE_LABEL: Record<StoreName, string> = { memory: 'memory', sqlite: 'SQLite', postgres: 'PostgreSQL' };
/** The rows: clients searching at once. The terms of a row are fresh also against the rows before it. */
const CLIENTS = [1, 4];
/** The issue's targets (issue 43), through the API, a fresh term on every request. */
const ONE_P50_MS = 5;
const ONE_P99_MS = 25;
const FOUR_PER_SECOND = 400;
const PROBE_P99_MS = 10;

interface Measured {
  result?: TypingResult;
  error?: string;
  otherLoad?: number;
}

interface StoreReport {
  store: StoreName;
  rows: { clients: number; builds: Partial<Record<Build, Measured>> }[];
  phases: Phase[];
  skipped?: string;
  error?: string;
  loadAverage: number[];
}

/**
 * BENCH_SEARCH_CLIENTS (comma-separated): the rows to measure, 1 and 4 by default. Each row may send
 * its part of the fresh terms the rows before it left (of two rows, half, then the rest).
 */
function clientsAsked(): number[] {
  const raw = process.env.BENCH_SEARCH_CLIENTS;
  if (raw === undefined || raw === '') return CLIENTS;
  const rows = raw.split(',').map((text) => Number(text.trim()));
  if (rows.some((clients) => !Number.isInteger(clients) || clients < 1 || clients > 64))
    throw new Error(`BENCH_SEARCH_CLIENTS takes client counts of 1 to 64, comma-separated (got "${raw}")`);
  return rows;
}

function storesAsked(): StoreName[] {
  const names = (process.env.BENCH_SEARCH_STORES ?? 'memory,sqlite,postgres').split(',').map((name) => name.trim());
  for (const name of names)
    if (!(name in STORE_LABEL))
      throw new Error(`BENCH_SEARCH_STORES takes memory, sqlite and postgres (got "${name}")`);
  return names as StoreName[];
}

async function measureStore(
  store: StoreName,
  users: number,
  seconds: number,
  builds: Build[],
  loader: BenchChild,
): Promise<StoreReport> {
  const report: StoreReport = { store, rows: [], phases: [], loadAverage: [] };
  const label = `${STORE_LABEL[store]}, ${integer(users)} users`;
  const settings = { users, seconds, maxSeconds: seconds, writers: 1, quick: false };
  let prepared: Prepared | undefined;
  const servers = new Map<Build, Started>();
  try {
    prepared =
      store === 'memory'
        ? { env: { before: {}, after: {} }, startUsers: users, cleanup: async () => {} }
        : await prepareSql(store, settings, builds, report.phases);
    for (const build of builds)
      servers.set(build, await startServer(label, build, prepared.startUsers, prepared.env[build], report.phases));
    const rows = clientsAsked();
    for (const [index, clients] of rows.entries()) {
      const row: StoreReport['rows'][number] = { clients, builds: {} };
      // Each row its part of the fresh terms that the rows before it left (load/typing.ts).
      const share = 1 / (rows.length - index);
      for (const build of index % 2 === 0 ? builds : [...builds].reverse()) {
        const others = otherLoadMeter(benchPids, store === 'postgres');
        const url = servers.get(build)!.origin;
        const job: TypingJob = { cmd: 'type', url, clients, seconds, users, share };
        try {
          row.builds[build] = { result: await loader.request<TypingResult>(job, (seconds + 60) * 1000) };
        } catch (error) {
          row.builds[build] = { error: errorText(error) };
        }
        row.builds[build]!.otherLoad = others();
        progress(`search, ${label}, ${clients} client(s), ${build}: ${cell(row.builds[build])}`);
      }
      report.rows.push(row);
    }
  } catch (error) {
    report.error = errorText(error);
    progress(`search, ${label}: ${report.error}`);
  } finally {
    await Promise.all([...servers.values()].map((server) => server.child.kill()));
    await prepared?.cleanup();
    report.loadAverage = loadavg();
  }
  return report;
}

function cell(measured: Measured | undefined): string {
  if (!measured?.result) return measured?.error ?? '–';
  const { searches, probe, short, failures, firstFailure, ranOutAfterSeconds } = measured.result;
  const figure =
    `${rate(searches.perSecond)}/s, ${ms(searches.p50Ms)} / ${ms(searches.p99Ms)} ms ` +
    `(1–2 characters: ${ms(short.p50Ms)} / ${ms(short.p99Ms)} ms); probe p99 ${ms(probe.p99Ms)} ms` +
    (ranOutAfterSeconds === undefined ? '' : `; fresh terms ran out after ${ranOutAfterSeconds.toFixed(1)} s`);
  const flagged = isDisturbed(measured.otherLoad) ? `**${figure}**` : figure;
  return failures > 0 ? `${flagged}, ${integer(failures)} failed (${firstFailure})` : flagged;
}

function targetsOf(report: StoreReport): Target[] {
  const store = STORE_LABEL[report.store];
  const after = (clients: number) => report.rows.find((row) => row.clients === clients)?.builds.after;
  const one = after(1);
  const four = after(4);
  const judge = (value: number | undefined, pass: (value: number) => boolean) =>
    value === undefined || !Number.isFinite(value) ? undefined : pass(value);
  const disturbed = (measured: Measured | undefined) => isDisturbed(measured?.otherLoad);
  return [
    {
      label: `${store}: 1 client, fresh terms, p50`,
      figure: `${ms(one?.result?.searches.p50Ms ?? NaN)} ms`,
      goal: `≤ ${ONE_P50_MS} ms`,
      pass: judge(one?.result?.searches.p50Ms, (value) => value <= ONE_P50_MS),
      disturbed: disturbed(one),
    },
    {
      label: `${store}: 1 client, fresh terms, p99`,
      figure: `${ms(one?.result?.searches.p99Ms ?? NaN)} ms`,
      goal: `≤ ${ONE_P99_MS} ms`,
      pass: judge(one?.result?.searches.p99Ms, (value) => value <= ONE_P99_MS),
      disturbed: disturbed(one),
    },
    {
      label: `${store}: 1 client, terms of 1–2 characters, p50`,
      figure: `${ms(one?.result?.short.p50Ms ?? NaN)} ms`,
      goal: `≤ ${ONE_P50_MS} ms`,
      pass: judge(one?.result?.short.p50Ms, (value) => value <= ONE_P50_MS),
      disturbed: disturbed(one),
    },
    {
      label: `${store}: 4 clients, searches per second`,
      figure: `${rate(four?.result?.searches.perSecond ?? NaN)}/s`,
      goal: `≥ ${FOUR_PER_SECOND}/s`,
      pass: judge(four?.result?.searches.perSecond, (value) => value >= FOUR_PER_SECOND),
      disturbed: disturbed(four),
    },
    {
      label: `${store}: 4 clients, the REST probe's p99 meanwhile`,
      figure: `${ms(four?.result?.probe.p99Ms ?? NaN)} ms`,
      goal: `≤ ${PROBE_P99_MS} ms`,
      pass: judge(four?.result?.probe.p99Ms, (value) => value <= PROBE_P99_MS),
      disturbed: disturbed(four),
    },
  ];
}

function storeMarkdown(report: StoreReport, users: number, builds: Build[]): string {
  const title = `#### ${STORE_LABEL[report.store]}, ${integer(users)} users`;
  if (report.skipped) return [title, '', report.skipped].join('\n');
  const header = ['Clients', ...builds.map((build) => (builds.length > 1 ? build : 'this build'))];
  const body = report.rows.map((row) => [String(row.clients), ...builds.map((build) => cell(row.builds[build]))]);
  return [
    title,
    '',
    ...(report.error ? [`**Not completed: ${report.error}**`, ''] : []),
    table(header, body),
    '',
    `- Load average at the end: ${report.loadAverage.map((load) => load.toFixed(2)).join(', ')}.`,
    `- Phases: ${report.phases.map((phase) => `${phase.label}: ${phase.seconds.toFixed(1)} s`).join('; ')}.`,
  ].join('\n');
}

export async function searchSection(plan: Plan): Promise<SectionReport> {
  const quick = plan.idle === undefined;
  const users = Math.round(numberSetting('BENCH_SEARCH_USERS', quick ? 2_000 : 1_000_000));
  const seconds = numberSetting('BENCH_SEARCH_SECONDS', quick ? 1 : 8);
  const builds: Build[] = process.env.BENCH_BEFORE !== undefined ? ['before', 'after'] : ['after'];
  const loader = new BenchChild('typing clients', benchScript('load/typing.js'), LOAD_CPU);
  const reports: StoreReport[] = [];
  try {
    for (const store of storesAsked()) {
      if (store === 'postgres' && !process.env.DATABASE_URL) {
        const skipped = 'Skipped: DATABASE_URL is not set (PostgreSQL needs it).';
        reports.push({ store, rows: [], phases: [], skipped, loadAverage: loadavg() });
        continue;
      }
      reports.push(await measureStore(store, users, seconds, builds, loader));
    }
  } finally {
    await loader.kill();
  }
  const targets = reports.filter((report) => !report.skipped).flatMap(targetsOf);
  const errors = reports.reduce(
    (sum, report) =>
      sum +
      (report.error ? 1 : 0) +
      report.rows.filter((row) => Object.values(row.builds).some((measured) => measured?.error !== undefined)).length,
    0,
  );
  const markdown = [
    '### Search as you type',
    '',
    `Clients on CPU ${LOAD_CPU} search Roster alone on CPU ${SERVER_CPU} for ${seconds} s per row, every request a term the server has not seen (the first one to four characters of a name or an email of the stored users, or four digits: a row may send its part of those the rows before it left, and a row whose part runs out ends there); a probe asks \`/livez\` every 20 ms meanwhile. Each cell: searches per second, p50 / p99 of all searches (of those of one or two characters), and the probe's p99. ` +
      (builds.length > 1
        ? `"before" is the build in BENCH_BEFORE (\`${process.env.BENCH_BEFORE}\`), on the same users; the builds alternate which goes first.`
        : 'Without BENCH_BEFORE, this build alone.'),
    '',
    ...reports.map((report) => storeMarkdown(report, users, builds)),
    '',
    'Targets:',
    '',
    targetLines(targets),
  ]
    .join('\n\n')
    .replace(/\n{3,}/g, '\n\n');
  return { markdown, targets, errors };
}
