/**
 * The lists section (`npm run bench -- --only lists`): Roster's list queries at a million users, on
 * the memory store, SQLite and PostgreSQL. One client, each query repeated for a few seconds, p50 and
 * p95: searches (a common term, a rare needle, a two-character needle, and a search right after a
 * write), the first, middle and last page of every sort order both ways, the role filter with a sort
 * (a common and a rare role), then bursts of creates and patches, and the server's memory at the end.
 *
 * Before and after in one run: with BENCH_BEFORE naming the folder of an earlier build of Roster (its
 * `dist/bench/servers/roster.js` speaks the same commands), both builds are started on the same users
 * and every query is measured on one, then on the other, alternating which goes first; only the
 * server measured is busy. The SQL stores are filled once, by the earlier build's own bench fill (its
 * migrations and row encoding, rows in bulk) and its API (the rare role), and each build is given a
 * copy of its own (SQLite: the file copied; PostgreSQL: CREATE DATABASE … TEMPLATE), because a newer
 * build migrates the database when it starts: that start-up is timed. The memory store is filled in
 * each server's process by the same generator (bench/users.ts), the rare role given through the API.
 *
 *   git clone -q <repository> /tmp/roster-before && cd /tmp/roster-before && git checkout -q <commit>
 *   (cd /tmp/roster-before && npm ci && npm run build)
 *   BENCH_BEFORE=/tmp/roster-before npm run bench -- --only lists
 *
 * Settings: BENCH_LISTS_USERS (default 1 000 000; --quick: 2 000), BENCH_LISTS_STORES (default
 * memory,sqlite,postgres; PostgreSQL needs DATABASE_URL and is skipped without it),
 * BENCH_LISTS_SECONDS per query (default 3), BENCH_LISTS_MAX_SECONDS (a slow query stops after at
 * least 3 answers or this long, default 30), BENCH_LISTS_WRITERS (clients of the write bursts, default 1).
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { BenchChild, benchPids, LOAD_CPU, SERVER_CPU, SERVER_NODE_ARGS, type Memory } from '../ipc.js';
import type { ListsJob, ListsResult } from '../load/lists.js';
import { integer, megabytes, ms, percent, rate, ratio, table, targetLines, type Target } from '../report.js';
import type { RosterCommand, RosterStarted } from '../servers/roster.js';
import { otherLoadMeter } from '../stats.js';
import { benchUser, idPool, SEARCH_TERM } from '../users.js';
import {
  benchScript,
  errorText,
  isDisturbed,
  progress,
  ROSTER_ENV,
  rosterServer,
  type Plan,
  type SectionReport,
  numberSetting,
} from './common.js';

const USERS_PATH = '/api/v1/users';
const LIMIT = 100;
/** The rare role: one user in RARE_EVERY has it (given through the API after the fill). */
const RARE_ROLE = 'auditor';
const RARE_EVERY = 1_000;
const RARE_OFFSET = 500;
/** The roles of the bench's users: bench/users.ts makes a tenth admins and the rest users; a few are auditors. */
const ENV = { ...ROSTER_ENV, ROLES: `admin,user,${RARE_ROLE}` };
/** A needle in a handful of emails: the users whose index ends in 99999 (10 at a million). */
const RARE_NEEDLE = '99999@';
/** A two-character needle, in about a fifth of the users: a short term with many matches to count. */
const SHORT_NEEDLE = 'an';
const SORTS = ['created_at', 'name', 'email', 'updated_at', 'role', 'id'] as const;
const ORDERS = ['asc', 'desc'] as const;
/** The list queries' targets at a million users, one client. */
const SEARCH_TARGET_MS = 5;
const PAGE_TARGET_MS = { memory: 20, sqlite: 20, postgres: 50 } as const;
/** "Not slower", "not higher": within these shares, the run-to-run noise of one machine. */
const WRITE_SLACK = 0.9;
const RSS_SLACK = 1.02;
/** A slow query is still answered this many times, however long that takes (up to the maximum). */
const MIN_SAMPLES = 3;

export type Build = 'before' | 'after';
type StoreName = keyof typeof PAGE_TARGET_MS;
const STORE_LABEL: Record<StoreName, string> = { memory: 'memory', sqlite: 'SQLite', postgres: 'PostgreSQL' };
type Group = 'search' | 'page' | 'role' | 'write';

interface Query {
  label: string;
  group: Group;
  job: (url: string) => ListsJob;
}

export interface Settings {
  users: number;
  seconds: number;
  maxSeconds: number;
  writers: number;
  quick: boolean;
}

interface Measured {
  result?: ListsResult;
  error?: string;
  otherLoad?: number;
}

interface Row {
  query: Query;
  builds: Partial<Record<Build, Measured>>;
}

export interface Phase {
  label: string;
  seconds: number;
}

interface StoreReport {
  store: StoreName;
  rows: Row[];
  phases: Phase[];
  memory: Partial<Record<Build, Memory>>;
  skipped?: string;
  error?: string;
  loadAverage: number[];
}

function settingsFor(plan: Plan): Settings {
  const quick = plan.idle === undefined;
  return {
    users: Math.round(numberSetting('BENCH_LISTS_USERS', quick ? 2_000 : 1_000_000)),
    seconds: numberSetting('BENCH_LISTS_SECONDS', quick ? 0.1 : 3),
    maxSeconds: numberSetting('BENCH_LISTS_MAX_SECONDS', quick ? 10 : 30),
    writers: Math.round(numberSetting('BENCH_LISTS_WRITERS', 1)),
    quick,
  };
}

function storesAsked(): StoreName[] {
  const names = (process.env.BENCH_LISTS_STORES ?? 'memory,sqlite,postgres').split(',').map((name) => name.trim());
  for (const name of names)
    if (!(name in PAGE_TARGET_MS))
      throw new Error(`BENCH_LISTS_STORES takes memory, sqlite and postgres (got "${name}")`);
  return names as StoreName[];
}

/** The compiled Roster bench server of a build: this one's, or BENCH_BEFORE's. */
function serverScript(build: Build): URL {
  return rosterServer(build === 'after' ? undefined : process.env.BENCH_BEFORE!);
}

const seconds = (since: number) => (performance.now() - since) / 1000;

function listPath(params: Record<string, string | number>): string {
  return `${USERS_PATH}?${new URLSearchParams(Object.entries(params).map(([key, value]): [string, string] => [key, String(value)])).toString()}`;
}

/** The queries, for `users` stored, `roleUsers` of them with role `user`; the writes come last. */
function queriesFor(settings: Settings, roleTotals: Record<string, number>, ids: string[]): Query[] {
  const run = {
    seconds: settings.seconds,
    minSamples: settings.quick ? 1 : MIN_SAMPLES,
    maxSeconds: settings.maxSeconds,
  };
  const get = (label: string, group: Group, path: string): Query => ({
    label,
    group,
    job: (url) => ({ cmd: 'get', url, paths: [path], ...run }),
  });
  const pages = Math.max(1, Math.ceil(settings.users / LIMIT));
  const queries: Query[] = [
    get(`?search=${SEARCH_TERM}`, 'search', listPath({ search: SEARCH_TERM })),
    get(`?search=${RARE_NEEDLE} (rare)`, 'search', listPath({ search: RARE_NEEDLE })),
    get(`?search=${SHORT_NEEDLE} (2 characters)`, 'search', listPath({ search: SHORT_NEEDLE })),
  ];
  for (const sort of SORTS)
    for (const order of ORDERS)
      for (const [where, page] of [
        ['first', 1],
        ['middle', Math.ceil(pages / 2)],
        ['last', pages],
      ] as const)
        queries.push(
          get(
            `sort=${sort}&order=${order}, ${where} page (${integer(page)})`,
            'page',
            listPath({ sort, order, limit: LIMIT, page }),
          ),
        );
  for (const role of ['user', RARE_ROLE]) {
    const last = Math.max(1, Math.ceil((roleTotals[role] ?? 0) / LIMIT));
    for (const page of new Set([1, last]))
      queries.push(
        get(
          `role=${role}&sort=email, page ${integer(page)}${page === last ? ' (last)' : ''}`,
          'role',
          listPath({ role, sort: 'email', order: 'asc', limit: LIMIT, page }),
        ),
      );
  }
  queries.push({
    label: `?search=${SEARCH_TERM} right after a write (PATCH, search, in turn)`,
    group: 'search',
    job: (url) => ({ cmd: 'search-after-write', url, ids, searchPath: listPath({ search: SEARCH_TERM }), ...run }),
  });
  const burst = { ...run, minSamples: 1 };
  queries.push(
    {
      label: `creates (${settings.writers} client${settings.writers > 1 ? 's' : ''})`,
      group: 'write',
      job: (url) => ({ cmd: 'create', url, ids, clients: settings.writers, ...burst }),
    },
    {
      label: `patches of a name (${settings.writers} client${settings.writers > 1 ? 's' : ''})`,
      group: 'write',
      job: (url) => ({ cmd: 'patch', url, ids, clients: settings.writers, ...burst }),
    },
  );
  return queries;
}

/** Gives one user in RARE_EVERY the rare role through the API of the server at `origin`; returns how many. */
async function giveRareRole(origin: string, users: number): Promise<number> {
  const indexes: number[] = [];
  for (let index = RARE_OFFSET % users; index < users; index += RARE_EVERY) indexes.push(index);
  let next = 0;
  const worker = async () => {
    while (next < indexes.length) {
      const { id } = benchUser(indexes[next++]!);
      const reply = await fetch(`${origin}${USERS_PATH}/${id}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ role: RARE_ROLE }),
      });
      if (!reply.ok)
        throw new Error(`PATCH of bench user ${id} to ${RARE_ROLE}: ${reply.status} ${await reply.text()}`);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return indexes.length;
}

async function totalOf(origin: string, role: string): Promise<number> {
  const reply = await fetch(`${origin}${listPath({ role, limit: 1 })}`);
  const body = (await reply.json()) as { data?: { pagination?: { total?: number } } };
  const total = body.data?.pagination?.total;
  if (!reply.ok || typeof total !== 'number') throw new Error(`role=${role}: ${reply.status} ${JSON.stringify(body)}`);
  return total;
}

export interface Started {
  child: BenchChild;
  origin: string;
}

/** Starts a build's bench server with `users` stored by it (0: its database is filled already). */
export async function startServer(
  label: string,
  build: Build,
  users: number,
  env: Record<string, string>,
  phases: Phase[],
): Promise<Started> {
  const child = new BenchChild(`Roster ${build} (${label})`, serverScript(build), SERVER_CPU, SERVER_NODE_ARGS);
  try {
    const at = performance.now();
    const started = await child.request<RosterStarted>(
      { cmd: 'start', users, env: { ...ENV, ...env } } satisfies RosterCommand,
      120_000 + users / 2,
    );
    const total = seconds(at);
    phases.push({
      label: `${build}: start-up${users > 0 ? `, ${integer(users)} users stored in-process` : ' on its copy'} (of which ${users > 0 ? 'the fill' : 'opening and migrating'}: ${started.fillSeconds.toFixed(1)} s)`,
      seconds: total,
    });
    progress(
      `lists, ${label}: ${build} up in ${total.toFixed(1)} s (fill/migrate ${started.fillSeconds.toFixed(1)} s)`,
    );
    return { child, origin: `http://127.0.0.1:${started.port}` };
  } catch (error) {
    await child.kill();
    throw error;
  }
}

/** A database URL naming another database on the same server. */
function databaseUrl(url: string, database: string): string {
  const named = new URL(url);
  named.pathname = `/${database}`;
  return named.toString();
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** CREATE DATABASE … TEMPLATE, retried while the template's last connections (a killed server's) close. */
async function copyDatabase(admin: string, from: string, to: string): Promise<void> {
  const until = performance.now() + 30_000;
  for (;;) {
    try {
      await adminQuery(admin, `CREATE DATABASE ${to} TEMPLATE ${from}`);
      return;
    } catch (error) {
      if (performance.now() > until || !/being accessed by other users/.test(errorText(error))) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

export interface Prepared {
  /** The settings of each build's server: its own copy of the data. */
  env: Record<Build, Record<string, string>>;
  /** Users each server stores itself as it starts (0: its copy holds them). */
  startUsers: number;
  cleanup(): Promise<void>;
}

/**
 * The SQL stores' data: filled once by the oldest build's bench server (its migrations, its row
 * encoding, rows in bulk), the rare role given through its API; then copied for the newer build.
 */
export async function prepareSql(
  store: 'sqlite' | 'postgres',
  settings: Settings,
  builds: Build[],
  phases: Phase[],
): Promise<Prepared> {
  const oldest = builds[0]!;
  const label = `${STORE_LABEL[store]}, ${integer(settings.users)} users`;
  const cleanups: (() => Promise<void> | void)[] = [];
  const cleanup = async () => {
    for (const step of cleanups.reverse())
      await Promise.resolve(step()).catch((error: unknown) => progress(`lists: cleanup: ${errorText(error)}`));
  };
  try {
    const env = {} as Record<Build, Record<string, string>>;
    let sourceUrl: string;
    let copy: () => Promise<void>;
    let settle: () => Promise<void>;
    if (store === 'sqlite') {
      const folder = mkdtempSync(join(tmpdir(), 'roster-bench-lists-'));
      cleanups.push(() => rmSync(folder, { recursive: true, force: true }));
      const file = (build: Build) => join(folder, `${build}.db`);
      sourceUrl = `sqlite:${file(oldest)}`;
      for (const build of builds) env[build] = { DATABASE_URL: `sqlite:${file(build)}` };
      // The killed filler leaves its last writes in the WAL: folded into the file before it is copied.
      settle = async () => {
        const db = new Database(file(oldest));
        db.pragma('wal_checkpoint(TRUNCATE)');
        db.close();
      };
      copy = async () => {
        for (const build of builds.slice(1)) copyFileSync(file(oldest), file(build));
      };
    } else {
      const admin = process.env.DATABASE_URL!;
      const prefix = `roster_bench_lists_${process.pid}_${Date.now().toString(36)}`;
      const name = (build: Build) => `${prefix}_${build}`;
      await adminQuery(admin, `CREATE DATABASE ${name(oldest)}`);
      cleanups.push(() => adminQuery(admin, `DROP DATABASE IF EXISTS ${name(oldest)} WITH (FORCE)`));
      sourceUrl = databaseUrl(admin, name(oldest));
      for (const build of builds) env[build] = { DATABASE_URL: databaseUrl(admin, name(build)) };
      settle = async () => {
        const at = performance.now();
        await adminQuery(sourceUrl, 'VACUUM ANALYZE');
        phases.push({ label: 'VACUUM ANALYZE after the fill', seconds: seconds(at) });
      };
      copy = async () => {
        for (const build of builds.slice(1)) {
          cleanups.push(() => adminQuery(admin, `DROP DATABASE IF EXISTS ${name(build)} WITH (FORCE)`));
          await copyDatabase(admin, name(oldest), name(build));
        }
      };
    }
    const filler = new BenchChild(
      `Roster ${oldest} filling ${label}`,
      serverScript(oldest),
      SERVER_CPU,
      SERVER_NODE_ARGS,
    );
    try {
      let at = performance.now();
      const started = await filler.request<RosterStarted>(
        { cmd: 'start', users: settings.users, env: { ...ENV, DATABASE_URL: sourceUrl } } satisfies RosterCommand,
        300_000 + settings.users,
      );
      phases.push({
        label: `fill by the ${oldest} build's bench fill (SQL, in bulk), server started on it`,
        seconds: seconds(at),
      });
      progress(`lists, ${label}: filled in ${started.fillSeconds.toFixed(1)} s`);
      at = performance.now();
      const rare = await giveRareRole(`http://127.0.0.1:${started.port}`, settings.users);
      phases.push({ label: `role ${RARE_ROLE} given to ${integer(rare)} users (API PATCHes)`, seconds: seconds(at) });
    } finally {
      await filler.kill();
    }
    await settle();
    const at = performance.now();
    await copy();
    if (builds.length > 1)
      phases.push({
        label: `copy for the ${builds.slice(1).join(' and ')} build (${store === 'sqlite' ? 'file copy' : 'CREATE DATABASE … TEMPLATE'})`,
        seconds: seconds(at),
      });
    return { env, startUsers: 0, cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

async function measureStore(
  store: StoreName,
  settings: Settings,
  builds: Build[],
  loader: BenchChild,
): Promise<StoreReport> {
  const report: StoreReport = { store, rows: [], phases: [], memory: {}, loadAverage: [] };
  const label = `${STORE_LABEL[store]}, ${integer(settings.users)} users`;
  const prepared: Prepared =
    store === 'memory'
      ? { env: { before: {}, after: {} }, startUsers: settings.users, cleanup: async () => {} }
      : await prepareSql(store, settings, builds, report.phases);
  const servers = new Map<Build, Started>();
  try {
    for (const build of builds) {
      const server = await startServer(label, build, prepared.startUsers, prepared.env[build], report.phases);
      servers.set(build, server);
      if (store === 'memory') {
        const at = performance.now();
        const rare = await giveRareRole(server.origin, settings.users);
        report.phases.push({
          label: `${build}: role ${RARE_ROLE} given to ${integer(rare)} users (API PATCHes)`,
          seconds: seconds(at),
        });
      }
    }
    const first = servers.get(builds[0]!)!;
    const roleTotals = {
      user: await totalOf(first.origin, 'user'),
      [RARE_ROLE]: await totalOf(first.origin, RARE_ROLE),
    };
    const queries = queriesFor(settings, roleTotals, idPool(settings.users, 10_000));
    const at = performance.now();
    for (const [index, query] of queries.entries()) {
      const row: Row = { query, builds: {} };
      // Alternating which build goes first, so neither always runs on the warmer machine.
      const order = index % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order) {
        const server = servers.get(build)!;
        const others = otherLoadMeter(benchPids, store === 'postgres');
        const job = query.job(server.origin);
        try {
          const result = await loader.request<ListsResult>(job, (job.maxSeconds + 60) * 1000);
          row.builds[build] = { result, otherLoad: others() };
          // Failed replies (a 503 when the database did not answer in time) are a figure; no reply at all is not.
          if (result.samples === 0 && result.failures === 0)
            row.builds[build]!.error = result.firstFailure ?? 'no answer';
        } catch (error) {
          row.builds[build] = { error: errorText(error) };
        }
      }
      report.rows.push(row);
      const cells = builds.map((build) => {
        const measured = row.builds[build];
        return `${build} ${figureOf(measured)}`;
      });
      progress(`lists, ${label}: ${query.label}: ${cells.join(', ')}`);
    }
    report.phases.push({
      label: `measuring ${queries.length} queries on ${builds.length} build(s)`,
      seconds: seconds(at),
    });
    for (const [build, server] of servers)
      report.memory[build] = await server.child.request<Memory>({ cmd: 'memory' }, 120_000);
  } catch (error) {
    report.error = errorText(error);
    progress(`lists, ${label}: ${report.error}`);
  } finally {
    await Promise.all([...servers.values()].map((server) => server.child.kill()));
    await prepared.cleanup();
    report.loadAverage = loadavg();
  }
  return report;
}

/** The p50 of the answers; Infinity when every reply failed (the query takes longer than the server allows), NaN when unmeasured. */
function p50(measured: Measured | undefined): number {
  const result = measured?.result;
  if (!result) return NaN;
  return result.samples > 0 ? result.p50Ms : result.failures > 0 ? Infinity : NaN;
}

/** A failed reply, for a table: `GET 503 SERVICE_UNAVAILABLE after up to 5 010 ms`. */
const failedText = (result: ListsResult) =>
  `${result.firstFailure ?? 'failed'} after up to ${ms(result.failedMaxMs)} ms`;

/** The p50 as a target line gives it, or why there is none. */
function figureOf(measured: Measured | undefined): string {
  const result = measured?.result;
  if (result && result.samples > 0) return `${ms(result.p50Ms)} ms`;
  if (result && result.failures > 0) return `no answer (${integer(result.failures)}): ${failedText(result)}`;
  return measured?.error ?? 'not measured';
}
const perSecond = (measured: Measured | undefined) => measured?.result?.perSecond ?? NaN;

function cell(measured: Measured | undefined, group: Group): string {
  if (!measured) return '–';
  if (!measured.result || measured.result.samples === 0) return figureOf(measured);
  const { p50Ms, p95Ms, samples, failures } = measured.result;
  const figure =
    group === 'write'
      ? `${rate(measured.result.perSecond)}/s (p50 ${ms(p50Ms)} ms)`
      : `${ms(p50Ms)} / ${ms(p95Ms)} ms (${integer(samples)})`;
  const flagged = isDisturbed(measured.otherLoad) ? `**${figure}**` : figure;
  return failures > 0 ? `${flagged}, ${integer(failures)} failed: ${failedText(measured.result)}` : flagged;
}

/** Whether the builds' totals differ on a query read before any write (they serve the same users). */
function totalsDiffer(row: Row): boolean {
  const totals = Object.values(row.builds)
    .map((measured) => measured?.result?.total)
    .filter((total) => total !== undefined);
  return row.query.group !== 'write' && !row.query.label.includes('after a write') && new Set(totals).size > 1;
}

function targetsOf(report: StoreReport, compared: boolean): Target[] {
  const store = STORE_LABEL[report.store];
  const targets: Target[] = [];
  const after = (row: Row) => row.builds.after;
  const anyDisturbed = (rows: Row[]) => rows.some((row) => isDisturbed(after(row)?.otherLoad));
  for (const row of report.rows.filter((r) => r.query.group === 'search')) {
    const value = p50(after(row));
    targets.push({
      label: `${store}: ${row.query.label} p50`,
      figure: figureOf(after(row)),
      goal: `≤ ${SEARCH_TARGET_MS} ms`,
      pass: Number.isNaN(value) ? undefined : value <= SEARCH_TARGET_MS,
      disturbed: isDisturbed(after(row)?.otherLoad),
    });
  }
  const limit = PAGE_TARGET_MS[report.store];
  for (const [group, what] of [
    ['page', 'any page of any sort order'],
    ['role', 'role filter and sort'],
  ] as const) {
    const rows = report.rows.filter((r) => r.query.group === group);
    const worst = rows.reduce<Row | undefined>(
      (slowest, row) => (!slowest || !(p50(after(row)) <= p50(after(slowest))) ? row : slowest),
      undefined,
    );
    const value = worst ? p50(after(worst)) : NaN;
    const missing = rows.filter((row) => Number.isNaN(p50(after(row)))).length;
    targets.push({
      label: `${store}: ${what}, the slowest p50${worst ? ` (${worst.query.label})` : ''}`,
      figure: missing > 0 ? `${missing} of ${rows.length} not measured` : figureOf(worst && after(worst)),
      goal: `≤ ${limit} ms`,
      pass: missing > 0 || Number.isNaN(value) ? undefined : value <= limit,
      disturbed: anyDisturbed(rows),
    });
  }
  for (const row of report.rows.filter((r) => r.query.group === 'write')) {
    const share = perSecond(after(row)) / perSecond(row.builds.before);
    targets.push({
      label: `${store}: ${row.query.label}, after against before`,
      figure: compared
        ? `${ratio(share)} (${rate(perSecond(after(row)))}/s against ${rate(perSecond(row.builds.before))}/s)`
        : 'no BENCH_BEFORE',
      goal: `≥ ${WRITE_SLACK.toFixed(2)}× (not slower, within the noise of one run)`,
      pass: compared && Number.isFinite(share) ? share >= WRITE_SLACK : undefined,
      disturbed: isDisturbed(after(row)?.otherLoad) || isDisturbed(row.builds.before?.otherLoad),
    });
  }
  if (report.store === 'memory') {
    const share = (report.memory.after?.rss ?? NaN) / (report.memory.before?.rss ?? NaN);
    targets.push({
      label: `${store}: server RSS at the end, after against before`,
      figure: compared
        ? `${megabytes(report.memory.after?.rss ?? NaN)} against ${megabytes(report.memory.before?.rss ?? NaN)} (${ratio(share)})`
        : 'no BENCH_BEFORE',
      goal: `≤ ${RSS_SLACK.toFixed(2)}× (not higher, within the noise of one run)`,
      pass: compared && Number.isFinite(share) ? share <= RSS_SLACK : undefined,
    });
  }
  return targets;
}

function storeMarkdown(report: StoreReport, settings: Settings, builds: Build[]): string {
  const title = `#### ${STORE_LABEL[report.store]}, ${integer(settings.users)} users`;
  if (report.skipped) return [title, '', report.skipped].join('\n');
  const compared = builds.length > 1;
  const header = [
    'Query (limit 100 for pages)',
    ...(compared ? ['before p50 / p95 (answers)'] : []),
    `${compared ? 'after' : 'this build'} p50 / p95 (answers)`,
    ...(compared ? ['after / before (p50; writes: rate)'] : []),
    'pagination.total',
  ];
  const body = report.rows.map((row) => {
    const { before, after } = row.builds;
    const share = row.query.group === 'write' ? perSecond(after) / perSecond(before) : p50(after) / p50(before);
    const totals = [...new Set(Object.values(row.builds).map((measured) => measured?.result?.total))].filter(
      (total) => total !== undefined,
    );
    const total =
      totals.length === 0
        ? '–'
        : totalsDiffer(row)
          ? `**${totals.map(integer).join(' ≠ ')}**`
          : totals.map(integer).join(' / ');
    return [
      row.query.label,
      ...(compared ? [cell(before, row.query.group)] : []),
      cell(after, row.query.group),
      ...(compared ? [ratio(share)] : []),
      total,
    ];
  });
  const memory = builds
    .map((build) => {
      const figure = report.memory[build];
      return figure ? `${build}: ${megabytes(figure.rss)} RSS, ${megabytes(figure.heap)} heap` : `${build}: –`;
    })
    .join('; ');
  const loads = report.rows
    .flatMap((row) => Object.values(row.builds).map((measured) => measured?.otherLoad ?? NaN))
    .filter(Number.isFinite);
  const mean = loads.length > 0 ? loads.reduce((sum, load) => sum + load, 0) / loads.length : NaN;
  const measuredRows = report.rows.flatMap((row) =>
    Object.values(row.builds).filter((measured) => measured !== undefined),
  );
  const flagged = measuredRows.filter((measured) => isDisturbed(measured.otherLoad)).length;
  return [
    title,
    '',
    ...(report.error ? [`**Not completed: ${report.error}**`, ''] : []),
    table(header, body),
    ...(flagged > 0
      ? [
          `- **Other processes used more than 10% of a CPU during ${flagged} of these ${measuredRows.length} measurements** (their figures in bold): those figures are unreliable.`,
        ]
      : []),
    '',
    `- Server memory at the end (after a full collection): ${memory}.`,
    `- Other processes used ${percent(mean)} of a CPU on average during these measurements${report.store === 'postgres' ? " (PostgreSQL's own processes not counted)" : ''}, ${percent(Math.max(...loads))} at most during one; load average at the end ${report.loadAverage.map((load) => load.toFixed(2)).join(', ')}.`,
    `- Phases: ${report.phases.map((phase) => `${phase.label}: ${phase.seconds.toFixed(1)} s`).join('; ')}.`,
  ].join('\n');
}

export async function listsSection(plan: Plan): Promise<SectionReport> {
  const settings = settingsFor(plan);
  const builds: Build[] = process.env.BENCH_BEFORE !== undefined ? ['before', 'after'] : ['after'];
  const loader = new BenchChild('lists client', benchScript('load/lists.js'), LOAD_CPU);
  const reports: StoreReport[] = [];
  try {
    for (const store of storesAsked()) {
      if (store === 'postgres' && !process.env.DATABASE_URL) {
        const skipped = 'Skipped: DATABASE_URL is not set (PostgreSQL needs it).';
        progress(`lists: PostgreSQL ${skipped}`);
        reports.push({ store, rows: [], phases: [], memory: {}, skipped, loadAverage: loadavg() });
        continue;
      }
      reports.push(await measureStore(store, settings, builds, loader));
    }
  } finally {
    await loader.kill();
  }
  const targets = reports.filter((report) => !report.skipped).flatMap((report) => targetsOf(report, builds.length > 1));
  const errors = reports.reduce(
    (sum, report) =>
      sum +
      (report.error ? 1 : 0) +
      report.rows.filter(
        (row) => totalsDiffer(row) || Object.values(row.builds).some((measured) => measured?.error !== undefined),
      ).length,
    0,
  );
  const markdown = [
    '### Lists at a million users',
    '',
    `One client on CPU ${LOAD_CPU} sends one query at a time to Roster alone on CPU ${SERVER_CPU}, for ${settings.seconds} s per query (and at least ${settings.quick ? 1 : MIN_SAMPLES} answers, up to ${settings.maxSeconds} s); times are from the request's start to the reply's end. ` +
      `The users are bench/users.ts's (a tenth admins), one in ${integer(RARE_EVERY)} given the role \`${RARE_ROLE}\` through the API. ` +
      `"After a write" alternates a PATCH of a user's name with the search and times the search. The writes come last: a burst of creates, then of patches, for ${settings.seconds} s each. Failed replies are counted beside the figure; a query all of whose replies failed (a 503 when the database did not answer within the server's limit) misses its target, and the table says how long the server took to give up. ` +
      (builds.length > 1
        ? `"Before" is the build in BENCH_BEFORE (\`${process.env.BENCH_BEFORE}\`), started on the same users as this one ("after"); each query is measured on one, then the other, alternating which goes first. The SQL stores were filled by the before build and copied for this one, which migrates its copy as it starts (the phases say how long).`
        : 'Without BENCH_BEFORE, this build alone.'),
    '',
    ...reports.map((report) => storeMarkdown(report, settings, builds)),
    '',
    'Targets:',
    '',
    targetLines(targets),
  ]
    .join('\n\n')
    .replace(/\n{3,}/g, '\n\n');
  return { markdown, targets, errors };
}
