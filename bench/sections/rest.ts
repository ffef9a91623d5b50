/**
 * The REST section: Roster and the node:http baseline, each filled with the same users, driven by the
 * REST load generator scenario by scenario (warm-up, settle, measure, settle), at each size of the
 * plan, with get by id also on Roster started again with authentication on. Beside them, for some
 * scenarios: the Fastify floor (health, get by id) and, with DATABASE_URL, Roster on PostgreSQL with
 * the PostgreSQL baseline (servers/pg-baseline.ts) on the same schema (and get by id and create on two
 * instances of Roster). Then the tables, the derived checks against the targets, and the memory figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchAuths, type BenchAuth } from '../auth.js';
import { BenchChild, benchPids, LOAD_CPU, SERVER_CPU, SERVER_NODE_ARGS, type Memory } from '../ipc.js';
import type { RestJob, RestResult, RestTarget } from '../load/rest.js';
import { bytes, integer, megabytes, ms, percent, rate, ratio, table, targetLines, type Target } from '../report.js';
import type { FastifyFloorCommand } from '../servers/fastify-floor.js';
import type { HttpBaselineCommand, HttpBaselineStarted } from '../servers/http-baseline.js';
import type { PgBaselineCommand } from '../servers/pg-baseline.js';
import { postgresPids, withApplicationName } from '../postgres.js';
import type { RosterCommand, RosterStarted } from '../servers/roster.js';
import { freshSchema, type TestSchema } from '../../test/support/postgres.js';
import { engineLoadMeter, otherLoadMeter, processCpuSeconds, processesCpuMeter } from '../stats.js';
import { idPool, SEARCH_TERM, searchMatches } from '../users.js';
import {
  benchRedisUrl,
  benchScript,
  cpuCell,
  disturbed,
  errorText,
  isDisturbed,
  judge,
  progress,
  ROSTER_ENV,
  SERVERS,
  sleep,
  type Plan,
  type SectionReport,
  type ServerName,
} from './common.js';

export type ScenarioKey =
  'health' | 'get' | 'list' | 'role' | 'search' | 'search-alone' | 'sorted' | 'create' | 'patch';

export interface Scenario {
  key: ScenarioKey;
  label: string;
  /** Connections of this scenario, when not the plan's. */
  connections?: number;
  target(ids: string[]): RestTarget;
}

const USERS_PATH = '/api/v1/users';
const HEALTH_PATH = '/api/v1/health';
const SEARCH_PATH = `${USERS_PATH}?search=${SEARCH_TERM}`;
/** How many known ids get-by-id and patch pick from. */
const ID_POOL = 10_000;

/** In this order: the writes come last, so every list scenario sees the same users on both servers. */
export const SCENARIOS: readonly Scenario[] = [
  { key: 'health', label: 'health', target: () => ({ kind: 'get', path: HEALTH_PATH }) },
  { key: 'get', label: 'get by id', target: (ids) => ({ kind: 'get-by-id', ids }) },
  { key: 'list', label: 'list, default page', target: () => ({ kind: 'get', path: USERS_PATH }) },
  { key: 'role', label: 'list ?role=admin', target: () => ({ kind: 'get', path: `${USERS_PATH}?role=admin` }) },
  { key: 'search', label: `list ?search=${SEARCH_TERM}`, target: () => ({ kind: 'get', path: SEARCH_PATH }) },
  // One request at a time: its latency is the search itself, where with the plan's connections it is
  // mostly the wait behind the other connections' searches.
  {
    key: 'search-alone',
    label: `list ?search=${SEARCH_TERM}, 1 connection`,
    connections: 1,
    target: () => ({ kind: 'get', path: SEARCH_PATH }),
  },
  {
    key: 'sorted',
    label: 'list ?sort=name&order=asc',
    target: () => ({ kind: 'get', path: `${USERS_PATH}?sort=name&order=asc` }),
  },
  { key: 'create', label: 'create', target: () => ({ kind: 'create' }) },
  { key: 'patch', label: 'patch (name)', target: (ids) => ({ kind: 'patch', ids }) },
];
const LIST_KEYS: readonly ScenarioKey[] = ['list', 'role', 'sorted'];
/** The scenarios the Fastify floor answers. */
const FLOOR_KEYS: readonly ScenarioKey[] = ['health', 'get'];
/** The scenarios run on Roster's PostgreSQL store (the one-connection search aside), and in quick mode (a read and a write). */
const POSTGRES_KEYS: Record<Plan['postgres'], readonly ScenarioKey[]> = {
  all: ['health', 'get', 'list', 'role', 'search', 'sorted', 'create', 'patch'],
  smoke: ['get', 'create'],
};
/** The largest size run on PostgreSQL: a million users take minutes to store there. */
const POSTGRES_MAX_USERS = 100_000;
/** The size at which get by id and create run on two instances sharing the PostgreSQL schema. */
const PAIR_USERS = 1_000;
/** The scenarios run on two instances as well as on one. */
const PAIR_KEYS: readonly ScenarioKey[] = ['get', 'create'];
/** The scenarios the PostgreSQL baseline answers, each right after Roster on PostgreSQL. */
const PG_BASELINE_KEYS: readonly ScenarioKey[] = ['get', 'list', 'role', 'search', 'sorted', 'create', 'patch'];
/** Roster on PostgreSQL against the PostgreSQL baseline, per scenario; search at 100 000 users, req/s. */
const PG_BASELINE_RATIO = 0.8;
const PG_SEARCH_USERS = 100_000;
const PG_SEARCH_RPS = 1_000;
/** Roster's default DATABASE_POOL_SIZE, which the baseline's pool matches. */
const PG_POOL_SIZE = 10;
/**
 * BENCH_POSTGRES_ONLY=1: the REST section runs Roster on PostgreSQL and the PostgreSQL baseline alone
 * (no Map baseline, Roster on memory, floor, SQLite or authentication), to measure the PostgreSQL
 * store quickly; a development aid, like --only.
 */
const POSTGRES_ONLY = process.env.BENCH_POSTGRES_ONLY === '1';

/**
 * The servers of the section: the two every scenario runs on; the Fastify floor (a bare Fastify app,
 * see servers/fastify-floor.ts), which runs health and get by id only; and, with DATABASE_URL, Roster
 * on its PostgreSQL store, once alone and once as two instances on the same schema.
 */
type RestServerName =
  | ServerName
  | 'Fastify floor'
  | 'Roster (PostgreSQL)'
  | 'two instances (PostgreSQL)'
  | 'PostgreSQL baseline'
  | SqliteServerName;

/** Roster on its SQLite store (DATABASE_URL=sqlite:…), once per durability setting. */
const SQLITE_SYNCS = ['FULL', 'NORMAL'] as const;
type SqliteServerName = `Roster (SQLite ${(typeof SQLITE_SYNCS)[number]})`;
/** The scenarios run on the SQLite store: all (the one-connection search aside), writes last. */
const SQLITE_KEYS: readonly ScenarioKey[] = ['health', 'get', 'list', 'role', 'search', 'sorted', 'create', 'patch'];
/** SQLite's reads against Roster's memory store, writes against its PostgreSQL store. */
const SQLITE_READ_KEYS: readonly ScenarioKey[] = ['get', 'list', 'role', 'search', 'sorted'];
const SQLITE_READ_RATIO = 0.5;
const SQLITE_WRITE_RATIO = 2;

interface RestServer {
  name: RestServerName;
  /** Roster with authentication on: the credentials it takes. */
  auth?: BenchAuth;
  /** Roster's environment beyond the bench's (DATABASE_URL, REDIS_URL), kept for a restart. */
  env?: Record<string, string>;
  /** A second instance driven together with this one (two instances on PostgreSQL). */
  partner?: RestServer;
  /** Whether it runs on PostgreSQL (and Redis): their CPU is then reported apart, not as other load. */
  engines?: boolean;
  /** On PostgreSQL: the database URL and the application_name its connections carry (postgresPids). */
  postgres?: { databaseUrl: string; applicationName: string };
  users: number;
  child: BenchChild;
  port: number;
  /** The first start's figures (a restart, see settle, fills the same users again). */
  started: HttpBaselineStarted;
  /** After the read-only scenarios, before create and patch add users. */
  afterReads?: Memory;
}

interface RestRow {
  scenario: Scenario;
  users: number;
  server: RestServerName;
  auth?: BenchAuth['scheme'];
  result?: RestResult;
  /** CPU used by processes outside the benchmark meanwhile, as a share of one CPU. */
  otherLoad?: number;
  /** CPU used by PostgreSQL and Redis meanwhile, for Roster on them. */
  engineLoad?: number;
  /**
   * On PostgreSQL, CPU seconds per request served while measuring: of the server process(es), and of
   * the PostgreSQL backends serving their connections plus PostgreSQL's background processes.
   */
  cpuPerRequest?: { node: number; postgres: number };
  error?: string;
}

/** The `total` each server returned for the search scenarios at one size, and what it must be. */
interface SearchCheck {
  users: number;
  /** Counted from the generated users (searchMatches). */
  expected: number;
  totals: Partial<Record<RestServerName, number>>;
}

interface RestFindings {
  rows: RestRow[];
  /** Get by id on Roster with authentication on, one row per scheme. */
  authRows: RestRow[];
  /** Health and get by id on the Fastify floor. */
  floorRows: RestRow[];
  /** Roster on PostgreSQL, and get by id on two instances; undefined without DATABASE_URL. */
  postgresRows?: RestRow[];
  /** Roster on SQLite, FULL and NORMAL. */
  sqliteRows: RestRow[];
  memory: { users: number; server: RestServer }[];
  searchChecks: SearchCheck[];
  notes: string[];
}

/** The server as the report names it: "Roster (AUTH=jwt)" when authentication is on. */
const serverLabel = (name: RestServerName, scheme: BenchAuth['scheme'] | undefined) =>
  scheme ? `${name} (AUTH=${scheme})` : name;

/** Starts a server filled with `users` (Roster on PostgreSQL: `extraEnv` has DATABASE_URL, and the users are stored there unless some are already). */
async function startRestServer(
  name: RestServerName,
  users: number,
  auth?: BenchAuth,
  extraEnv?: Record<string, string>,
): Promise<RestServer> {
  const label = serverLabel(name, auth?.scheme);
  const script =
    name === 'baseline'
      ? 'servers/http-baseline.js'
      : name === 'Fastify floor'
        ? 'servers/fastify-floor.js'
        : name === 'PostgreSQL baseline'
          ? 'servers/pg-baseline.js'
          : 'servers/roster.js';
  const child = new BenchChild(
    `${name === 'baseline' ? 'HTTP baseline' : label} (${integer(users)} users)`,
    benchScript(script),
    SERVER_CPU,
    SERVER_NODE_ARGS,
  );
  try {
    // A million users take a few seconds to generate and store; PostgreSQL takes longer per user.
    const timeout = 60_000 + (extraEnv?.DATABASE_URL ? users : users / 10);
    const env = { ...ROSTER_ENV, ...auth?.env, ...extraEnv };
    const started =
      script === 'servers/roster.js'
        ? await child.request<RosterStarted>({ cmd: 'start', users, env } satisfies RosterCommand, timeout)
        : script === 'servers/pg-baseline.js'
          ? await child.request<HttpBaselineStarted>(
              { cmd: 'start', users, url: extraEnv!.DATABASE_URL!, poolSize: PG_POOL_SIZE } satisfies PgBaselineCommand,
              timeout,
            )
          : await child.request<HttpBaselineStarted>(
              { cmd: 'start', users } satisfies HttpBaselineCommand | FastifyFloorCommand,
              timeout,
            );
    progress(`${label} up with ${integer(users)} users (filled in ${started.fillSeconds.toFixed(1)} s)`);
    return {
      name,
      ...(auth && { auth }),
      ...(extraEnv && { env: extraEnv }),
      users,
      child,
      port: started.port,
      started,
    };
  } catch (error) {
    await child.kill();
    throw error;
  }
}

/** GET a JSON document, failing after `timeoutMs`. */
async function getJson(port: number, path: string, timeoutMs: number): Promise<unknown> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(timeoutMs) });
  return response.json();
}

/**
 * Checks that both servers answer the list scenarios alike (same page of ids, same pagination) before
 * anything is timed, so the baseline is known to do the same work, and that the search's `total` is
 * the number of generated users it must find. Returns notes for the report.
 */
async function probe(servers: readonly RestServer[], users: number): Promise<{ notes: string[]; search: SearchCheck }> {
  const notes: string[] = [];
  const paths = [
    ...new Set(
      SCENARIOS.flatMap((scenario) => {
        const target = scenario.target([]);
        return target.kind === 'get' && target.path !== HEALTH_PATH ? [target.path] : [];
      }),
    ),
  ];
  paths.push(`${USERS_PATH}/${idPool(users, 1)[0]!}`);
  const search: SearchCheck = { users, expected: searchMatches(users), totals: {} };
  const disagreements: string[] = [];
  for (const path of paths) {
    const answers = await Promise.all(
      servers.map(async (server) => {
        const body = (await getJson(server.port, path, 120_000)) as {
          data?: { users?: { id: string }[]; pagination?: { total?: number }; id?: string };
        };
        const data = body.data;
        if (path === SEARCH_PATH) search.totals[server.name] = data?.pagination?.total;
        return JSON.stringify(
          data?.users ? { ids: data.users.map((user) => user.id), pagination: data.pagination } : data?.id,
        );
      }),
    );
    if (new Set(answers).size > 1) disagreements.push(path);
  }
  const names = servers.map((server) => server.name);
  const all = `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]!}`.replace(/^baseline/, 'Baseline');
  notes.push(
    `\`?search=${SEARCH_TERM}\` must match ${integer(search.expected)} of ${integer(users)} users (${((100 * search.expected) / users).toFixed(1)} %, counted from the generated users); ` +
      names.map((name) => `${name} says ${integer(search.totals[name] ?? NaN)}`).join(', ') +
      '.',
  );
  notes.push(
    disagreements.length === 0
      ? `${all} return the same page and pagination for every list scenario and a get by id at ${integer(users)} users.`
      : `**${all} disagree** at ${integer(users)} users on: ${disagreements.map((path) => `\`${path}\``).join(', ')}.`,
  );
  return { notes, search };
}

/**
 * Waits until the server is idle again: requests it accepted before the generator hung up (slow lists,
 * say) are still worked through, even for connections that are gone. Idle means its own CPU time over
 * IDLE_WINDOW_MS stays under 10 % and it answers health promptly (one quick answer alone proves
 * nothing: it may have slipped in between two queued requests). False if that takes over `maxSeconds`.
 */
async function waitUntilIdle(server: RestServer, maxSeconds: number): Promise<boolean> {
  const started = performance.now();
  for (;;) {
    const cpuBefore = processCpuSeconds(server.child.pid);
    await sleep(IDLE_WINDOW_MS);
    const cpu = (processCpuSeconds(server.child.pid) ?? 0) - (cpuBefore ?? 0);
    const sent = performance.now();
    try {
      await getJson(server.port, HEALTH_PATH, 5_000);
      if (cpu < (0.1 * IDLE_WINDOW_MS) / 1000 && performance.now() - sent < 250) return true;
    } catch {
      // still busy
    }
    if (performance.now() - started > maxSeconds * 1000) return false;
  }
}

/** How long a server may take to work off a backlog before it is restarted instead. */
const BACKLOG_SECONDS = 60;
/** The interval over which a server's CPU time tells whether it is idle. */
const IDLE_WINDOW_MS = 200;

/**
 * Makes sure the server is ready for the next measurement: waits for it to work off its backlog, or,
 * when that would take longer than BACKLOG_SECONDS, restarts it with the same users. Returns a note
 * for the report when either took a while.
 */
async function settle(server: RestServer, after: string): Promise<string | undefined> {
  const started = performance.now();
  const idle = await waitUntilIdle(server, BACKLOG_SECONDS);
  if (idle && (!server.partner || (await waitUntilIdle(server.partner, BACKLOG_SECONDS)))) {
    const waited = (performance.now() - started) / 1000;
    return waited > 1.5
      ? `${serverLabel(server.name, server.auth?.scheme)} needed ${waited.toFixed(1)} s to work off its backlog after ${after}.`
      : undefined;
  }
  // Two instances are measured once, right after being started: no restart.
  if (server.partner) return `${server.name} still had a backlog ${BACKLOG_SECONDS} s after ${after}.`;
  await server.child.kill();
  const fresh = await startRestServer(server.name, server.users, server.auth, server.env);
  server.child = fresh.child;
  server.port = fresh.port;
  return `${serverLabel(server.name, server.auth?.scheme)} still had a backlog ${BACKLOG_SECONDS} s after ${after}, and was restarted.`;
}

async function measureRest(plan: Plan): Promise<RestFindings> {
  const databaseUrl = process.env.DATABASE_URL;
  const findings: RestFindings = {
    rows: [],
    authRows: [],
    floorRows: [],
    ...(databaseUrl && { postgresRows: [] }),
    sqliteRows: [],
    memory: [],
    searchChecks: [],
    notes: [],
  };
  const postgresKeys = POSTGRES_KEYS[plan.postgres];
  const generator = new BenchChild('REST load generator', benchScript('load/rest.js'), LOAD_CPU);
  try {
    for (const users of plan.sizes) {
      const servers: RestServer[] = [];
      // Alongside the others for the scenarios they answer, each gone once it has run them.
      let floor: RestServer | undefined;
      let postgres: RestServer | undefined;
      let pgBaseline: RestServer | undefined;
      let schema: TestSchema | undefined;
      try {
        if (POSTGRES_ONLY && !(databaseUrl && users <= POSTGRES_MAX_USERS)) continue;
        if (!POSTGRES_ONLY) for (const name of SERVERS) servers.push(await startRestServer(name, users));
        if (databaseUrl && users <= POSTGRES_MAX_USERS) {
          schema = await freshSchema({ databaseUrl, prefix: 'bench_' }).catch((error: unknown) => {
            failPostgres(findings, users, `no bench schema: ${errorText(error)}`, postgresKeys);
            return undefined;
          });
          if (schema) postgres = await startPostgres(findings, users, databaseUrl, schema, postgresKeys);
          // On the users Roster stored, so it starts after Roster.
          if (schema && postgres && plan.postgres === 'all')
            pgBaseline = await startPgBaseline(findings, users, databaseUrl, schema);
        }
        const probed = [...servers, ...(postgres ? [postgres] : []), ...(pgBaseline ? [pgBaseline] : [])];
        const { notes, search } = await probe(probed, users);
        findings.notes.push(...notes);
        findings.searchChecks.push(search);
        const ids = idPool(users, ID_POOL);
        if (!POSTGRES_ONLY) floor = await startFloor(servers, users, ids[0]!, findings);
        for (const scenario of SCENARIOS) {
          if (scenario.key === 'create') {
            for (const server of servers)
              server.afterReads = await server.child.request<Memory>({ cmd: 'memory' }, 60_000);
          }
          for (const server of servers) {
            findings.rows.push(await runRest(generator, server, scenario, ids, plan, findings.notes));
          }
          if (floor && FLOOR_KEYS.includes(scenario.key)) {
            findings.floorRows.push(await runRest(generator, floor, scenario, ids, plan, findings.notes));
            if (scenario.key === FLOOR_KEYS[FLOOR_KEYS.length - 1]) {
              await floor.child.kill();
              floor = undefined;
            }
          }
          if (postgres && postgresKeys.includes(scenario.key)) {
            findings.postgresRows!.push(await runRest(generator, postgres, scenario, ids, plan, findings.notes));
            // Right after the one instance it is compared with.
            // Not in quick mode, which stays under a minute: one instance on PostgreSQL is its smoke check.
            if (PAIR_KEYS.includes(scenario.key) && users === PAIR_USERS && plan.postgres === 'all') {
              findings.postgresRows!.push(await measurePair(generator, postgres, scenario, ids, plan, findings.notes));
            }
            if (pgBaseline && PG_BASELINE_KEYS.includes(scenario.key)) {
              findings.postgresRows!.push(await runRest(generator, pgBaseline, scenario, ids, plan, findings.notes));
            }
          }
          // Right after the unauthenticated figure it is compared with, under the same conditions.
          if (!POSTGRES_ONLY && scenario.key === 'get' && users === AUTH_USERS) {
            findings.authRows.push(...(await measureAuth(generator, scenario, users, ids, plan, findings.notes)));
          }
        }
      } catch (error) {
        findings.notes.push(`**${integer(users)} users: stopped early**: ${errorText(error)}`);
      } finally {
        for (const server of servers) findings.memory.push({ users, server });
        await Promise.all(
          [
            ...servers,
            ...(floor ? [floor] : []),
            ...(postgres ? [postgres] : []),
            ...(pgBaseline ? [pgBaseline] : []),
          ].map((server) => server.child.kill()),
        );
        await schema
          ?.drop()
          .catch((error: unknown) =>
            findings.notes.push(`**The bench schema ${schema?.name ?? ''} could not be dropped**: ${errorText(error)}`),
          );
      }
      if (plan.postgres === 'all' && !POSTGRES_ONLY) await measureSqlite(generator, users, plan, findings);
    }
  } finally {
    await generator.kill();
  }
  return findings;
}

/**
 * Roster on its SQLite store at `users`, once per durability setting: a fresh file in a folder of its
 * own, filled in bulk, every SQLite scenario in order (writes last), then the folder removed. Run after
 * the other servers of the size are gone, alone on the server CPU like them.
 */
async function measureSqlite(generator: BenchChild, users: number, plan: Plan, findings: RestFindings): Promise<void> {
  const ids = idPool(users, ID_POOL);
  for (const sync of SQLITE_SYNCS) {
    const name: SqliteServerName = `Roster (SQLite ${sync})`;
    const folder = mkdtempSync(join(tmpdir(), 'roster-bench-sqlite-'));
    let server: RestServer | undefined;
    try {
      server = await startRestServer(name, users, undefined, {
        DATABASE_URL: `sqlite:${join(folder, 'roster.db')}`,
        SQLITE_SYNCHRONOUS: sync,
      });
      const expected = searchMatches(users);
      const said = (
        (await getJson(server.port, SEARCH_PATH, 120_000)) as { data?: { pagination?: { total?: number } } }
      ).data?.pagination?.total;
      findings.notes.push(
        `${name} at ${integer(users)} users: \`?search=${SEARCH_TERM}\` says ${integer(said ?? NaN)} (expected ${integer(expected)}).`,
      );
      for (const key of SQLITE_KEYS) {
        const scenario = SCENARIOS.find((candidate) => candidate.key === key)!;
        findings.sqliteRows.push(await runRest(generator, server, scenario, ids, plan, findings.notes));
      }
    } catch (error) {
      for (const key of SQLITE_KEYS) {
        if (findings.sqliteRows.some((row) => row.server === name && row.users === users && row.scenario.key === key))
          continue;
        findings.sqliteRows.push({
          scenario: SCENARIOS.find((candidate) => candidate.key === key)!,
          users,
          server: name,
          error: errorText(error),
        });
      }
    } finally {
      await server?.child.kill();
      rmSync(folder, { recursive: true, force: true });
    }
  }
}

/**
 * Starts the Fastify floor with the same users, and checks that it answers a get by id as Roster does
 * (the same data). If it cannot be started, its rows say why and the section goes on without it.
 */
async function startFloor(
  servers: readonly RestServer[],
  users: number,
  id: string,
  findings: RestFindings,
): Promise<RestServer | undefined> {
  try {
    const floor = await startRestServer('Fastify floor', users);
    const roster = servers.find((server) => server.name === 'Roster')!;
    const path = `${USERS_PATH}/${id}`;
    const [mine, theirs] = await Promise.all([getJson(floor.port, path, 10_000), getJson(roster.port, path, 10_000)]);
    if (JSON.stringify(mine) !== JSON.stringify(theirs)) {
      findings.notes.push(
        `**The Fastify floor and Roster answer a get by id differently** at ${integer(users)} users.`,
      );
    }
    return floor;
  } catch (error) {
    for (const key of FLOOR_KEYS) {
      findings.floorRows.push({
        scenario: SCENARIOS.find((scenario) => scenario.key === key)!,
        users,
        server: 'Fastify floor',
        error: errorText(error),
      });
    }
    return undefined;
  }
}

/**
 * Roster's environment on the bench schema, its connections named `applicationName`; on the bench's
 * Redis prefix too when REDIS_URL is set, as a deployment of several instances runs.
 */
function postgresEnv(schema: TestSchema, applicationName: string): Record<string, string> {
  const redisUrl = process.env.REDIS_URL;
  return {
    DATABASE_URL: withApplicationName(schema.url, applicationName),
    ...(redisUrl && { REDIS_URL: benchRedisUrl(redisUrl) }),
  };
}

/** Roster on PostgreSQL with the users stored; if it cannot be started, its rows say why and the section goes on without it. */
async function startPostgres(
  findings: RestFindings,
  users: number,
  databaseUrl: string,
  schema: TestSchema,
  keys: readonly ScenarioKey[],
): Promise<RestServer | undefined> {
  const applicationName = `${schema.name}_roster`;
  try {
    const server = await startRestServer('Roster (PostgreSQL)', users, undefined, postgresEnv(schema, applicationName));
    return { ...server, engines: true, postgres: { databaseUrl, applicationName } };
  } catch (error) {
    failPostgres(findings, users, errorText(error), keys);
    return undefined;
  }
}

/** The PostgreSQL baseline on Roster's schema; if it cannot be started, its rows say why. */
async function startPgBaseline(
  findings: RestFindings,
  users: number,
  databaseUrl: string,
  schema: TestSchema,
): Promise<RestServer | undefined> {
  const applicationName = `${schema.name}_baseline`;
  try {
    const server = await startRestServer('PostgreSQL baseline', users, undefined, {
      DATABASE_URL: withApplicationName(schema.url, applicationName),
    });
    return { ...server, engines: true, postgres: { databaseUrl, applicationName } };
  } catch (error) {
    for (const key of PG_BASELINE_KEYS) {
      findings.postgresRows!.push({
        scenario: SCENARIOS.find((scenario) => scenario.key === key)!,
        users,
        server: 'PostgreSQL baseline',
        error: errorText(error),
      });
    }
    return undefined;
  }
}

function failPostgres(findings: RestFindings, users: number, error: string, keys: readonly ScenarioKey[]): void {
  for (const key of keys) {
    findings.postgresRows!.push({
      scenario: SCENARIOS.find((scenario) => scenario.key === key)!,
      users,
      server: 'Roster (PostgreSQL)',
      error,
    });
  }
}

/**
 * Get by id on two instances on the same schema, both on the server CPU (one instance's CPU budget):
 * the one already running and a second started now, as warm as the first by the time it is measured;
 * one generator spreads its connections evenly over both.
 */
async function measurePair(
  generator: BenchChild,
  first: RestServer,
  scenario: Scenario,
  ids: string[],
  plan: Plan,
  notes: string[],
): Promise<RestRow> {
  const name = 'two instances (PostgreSQL)';
  let second: RestServer | undefined;
  try {
    // The same schema and Redis prefix: the users are there already.
    second = await startRestServer('Roster (PostgreSQL)', first.users, undefined, first.env);
    const pair: RestServer = { ...first, name, partner: second, engines: true };
    return await runRest(generator, pair, scenario, ids, plan, notes, plan.rest.freshWarmupSeconds);
  } catch (error) {
    progress(`${integer(first.users)} users, ${scenario.label}, ${name}: ${errorText(error)}`);
    return { scenario, users: first.users, server: name, error: errorText(error) };
  } finally {
    await second?.child.kill();
  }
}

/** The size at which get by id is measured with authentication on. */
const AUTH_USERS = 1_000;
/** Get by id with authentication on, at least this share of the unauthenticated figure. */
const AUTH_RATIO = 0.8;
/** A REST target: Roster's health and get by id against the bare Fastify app (servers/fastify-floor.ts). */
const FLOOR_RATIO = 0.95;

/**
 * Get by id on Roster started again with authentication on, once per scheme, with the credential on
 * every request. Each server is checked first to refuse a request without it.
 */
async function measureAuth(
  generator: BenchChild,
  scenario: Scenario,
  users: number,
  ids: string[],
  plan: Plan,
  notes: string[],
): Promise<RestRow[]> {
  const rows: RestRow[] = [];
  for (const auth of await benchAuths()) {
    const authenticated: Scenario = {
      ...scenario,
      label: `${scenario.label}, ${auth.carrier}`,
      target: (pool) => ({ kind: 'get-by-id', ids: pool, headers: auth.headers }),
    };
    let server: RestServer | undefined;
    try {
      server = await startRestServer('Roster', users, auth);
      await checkCredentials(server, ids[0]!, auth);
      // As warm as the unauthenticated server was by then: it had run health (warm-up and measured) first.
      rows.push(await runRest(generator, server, authenticated, ids, plan, notes, plan.rest.freshWarmupSeconds));
    } catch (error) {
      rows.push({ scenario: authenticated, users, server: 'Roster', auth: auth.scheme, error: errorText(error) });
      progress(`${integer(users)} users, ${authenticated.label}: ${errorText(error)}`);
    } finally {
      await server?.child.kill();
    }
  }
  return rows;
}

/** Fails unless the server refuses a get by id without the credential (401) and answers it with (200). */
async function checkCredentials(server: RestServer, id: string, auth: BenchAuth): Promise<void> {
  const url = `http://127.0.0.1:${server.port}${USERS_PATH}/${id}`;
  const without = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  await without.arrayBuffer();
  const withIt = await fetch(url, { headers: auth.headers, signal: AbortSignal.timeout(10_000) });
  await withIt.arrayBuffer();
  if (without.status !== 401 || withIt.status !== 200) {
    throw new Error(
      `AUTH=${auth.scheme} not in force: status ${without.status} without the credential, ${withIt.status} with it`,
    );
  }
}

/**
 * Warm-up (`warmupSeconds`, the plan's unless given), then the measured run, each followed by
 * `settle`. A failure is reported in the row.
 */
async function runRest(
  generator: BenchChild,
  server: RestServer,
  scenario: Scenario,
  ids: string[],
  plan: Plan,
  notes: string[],
  warmupSeconds = plan.rest.warmupSeconds,
): Promise<RestRow> {
  const row: RestRow = {
    scenario,
    users: server.users,
    server: server.name,
    ...(server.auth && { auth: server.auth.scheme }),
  };
  const what = `${integer(server.users)} users, ${scenario.label}, ${serverLabel(server.name, server.auth?.scheme)}`;
  const urls = [server, ...(server.partner ? [server.partner] : [])].map(
    (instance) => `http://127.0.0.1:${instance.port}`,
  );
  const job = (seconds: number): RestJob => ({
    cmd: 'run',
    url: urls.length === 1 ? urls[0]! : urls,
    serverPid: server.child.pid,
    target: scenario.target(ids),
    connections: scenario.connections ?? plan.rest.connections,
    timeoutSeconds: plan.rest.timeoutSeconds,
    seconds,
  });
  const timeout = (seconds: number) => (seconds + plan.rest.timeoutSeconds) * 1000 + 30_000;
  const settled = async (after: string) => {
    const note = await settle(server, after);
    if (note) notes.push(note);
  };
  const measured = `"${scenario.label}" at ${integer(server.users)} users`;
  try {
    await generator.request<RestResult>(job(warmupSeconds), timeout(warmupSeconds));
    await settled(`the warm-up of ${measured}`);
    // The pool has opened its connections during the warm-up: their backends are the ones to watch.
    const backends = server.postgres
      ? await postgresPids(server.postgres.databaseUrl, server.postgres.applicationName)
      : [];
    const nodePids = [server, ...(server.partner ? [server.partner] : [])].map((instance) => instance.child.pid);
    const before = { node: processesCpuMeter(nodePids), postgres: processesCpuMeter(backends), at: performance.now() };
    const others = otherLoadMeter(benchPids, server.engines);
    const engines = server.engines ? engineLoadMeter() : undefined;
    row.result = await generator.request<RestResult>(job(plan.rest.seconds), timeout(plan.rest.seconds));
    row.otherLoad = others();
    if (engines) row.engineLoad = engines();
    if (server.postgres) {
      // Requests served over the interval, from the generator's rate: CPU seconds / requests.
      const requests = (row.result.requestsPerSecond * (performance.now() - before.at)) / 1000;
      row.cpuPerRequest = {
        node: before.node() / requests,
        postgres: before.postgres() / requests,
      };
    }
    progress(`${what}: ${integer(row.result.requestsPerSecond)} req/s, p99 ${ms(row.result.p99Ms)} ms`);
  } catch (error) {
    row.error = errorText(error);
    progress(`${what}: ${row.error}`);
  }
  // Also after a failure: a server that died or hangs is restarted here.
  await settled(measured);
  return row;
}

/** The search target: p50 with one connection under this many milliseconds at this many users. */
const SEARCH_P50_USERS = 100_000;
const SEARCH_P50_MS = 5;
/** A REST target: search p50 with one connection at most this at a million users too. */
const SEARCH_MILLION_P50_MS = 5;
/** A REST target: search with the plan's connections at 100 000 users, at least this many req/s. */
const SEARCH_LOADED_USERS = 100_000;
const SEARCH_LOADED_RPS = 3_000;
/** A REST target: get by id at a million users, at least this share of its own figure at 1 000. */
const GET_MILLION_RATIO = 0.9;
/** A REST target: Roster's RSS with a million users, after every read scenario, under this. */
const MILLION_RSS_MIB = 450;

/** Bytes per user are shown from this many users on. */
const PER_USER_FROM = 100_000;

function restReport(plan: Plan, findings: RestFindings): SectionReport {
  type RowKey = [key: ScenarioKey, users: number, server: ServerName];
  const rowOf = ([key, users, server]: RowKey) =>
    findings.rows.find((row) => row.scenario.key === key && row.users === users && row.server === server);
  const find = (key: ScenarioKey, users: number, server: ServerName) => rowOf([key, users, server])?.result;
  const rps = (key: ScenarioKey, users: number, server: ServerName) =>
    find(key, users, server)?.requestsPerSecond ?? NaN;
  const shaky = (...keys: RowKey[]) => keys.some((key) => isDisturbed(rowOf(key)?.otherLoad));

  const cells = (row: RestRow, ...comparisons: string[]) => {
    const r = row.result;
    const server = serverLabel(row.server, row.auth);
    if (!r)
      return [
        row.scenario.label,
        integer(row.users),
        server,
        `error: ${row.error ?? '?'}`,
        '',
        '',
        '',
        '',
        '',
        ...comparisons,
      ];
    return [
      row.scenario.label,
      integer(row.users),
      server,
      rate(r.requestsPerSecond),
      ms(r.p50Ms),
      ms(r.p99Ms),
      integer(r.non2xx),
      integer(r.errors),
      cpuCell(r, row.otherLoad),
      ...comparisons,
    ];
  };
  const header = [
    'Scenario',
    'Users',
    'Server',
    'req/s',
    'p50 ms',
    'p99 ms',
    'non-2xx',
    'errors',
    'CPU server / generator / others',
  ];
  const rows = findings.rows.map((row) =>
    cells(
      row,
      row.server === 'Roster'
        ? ratio(rps(row.scenario.key, row.users, 'Roster') / rps(row.scenario.key, row.users, 'baseline'))
        : '',
    ),
  );
  const restTable = table([...header, 'Roster / baseline'], rows);
  const authVsPlain = (row: RestRow) => (row.result?.requestsPerSecond ?? NaN) / rps('get', row.users, 'Roster');
  const authTable = table(
    [...header, 'authenticated / unauthenticated'],
    findings.authRows.map((row) => cells(row, ratio(authVsPlain(row)))),
  );
  const floorRatios = (row: RestRow) => {
    const floor = (row.result?.requestsPerSecond ?? NaN) / rps(row.scenario.key, row.users, 'baseline');
    const roster = rps(row.scenario.key, row.users, 'Roster') / rps(row.scenario.key, row.users, 'baseline');
    return { floor, roster, rosterVsFloor: roster / floor };
  };
  const floorTable = table(
    [...header, 'floor / node:http', 'Roster / node:http', 'Roster / floor'],
    findings.floorRows.map((row) => {
      const { floor, roster, rosterVsFloor } = floorRatios(row);
      return cells(row, ratio(floor), ratio(roster), ratio(rosterVsFloor));
    }),
  );
  const floorLines = findings.floorRows.map((row) => {
    const { floor, roster, rosterVsFloor } = floorRatios(row);
    const shakyRow =
      isDisturbed(row.otherLoad) ||
      shaky([row.scenario.key, row.users, 'Roster'], [row.scenario.key, row.users, 'baseline']);
    return (
      `- ${row.scenario.label} at ${integer(row.users)} users: Fastify floor ${ratio(floor)} node:http; Roster ${ratio(roster)} node:http = ${ratio(rosterVsFloor)} the Fastify floor.` +
      (shakyRow ? ' — **measured under other load**' : '')
    );
  });
  // Roster's req/s over the floor's, run one after the other in the same size: at every size.
  const floorTargets: Target[] = findings.floorRows.map((row) => {
    const value = rps(row.scenario.key, row.users, 'Roster') / (row.result?.requestsPerSecond ?? NaN);
    return {
      label: `${row.scenario.label} at ${integer(row.users)} users, Roster against the Fastify floor`,
      figure: `${ratio(value)} the floor`,
      goal: `≥ ${FLOOR_RATIO}×`,
      pass: judge(value, (v) => v >= FLOOR_RATIO),
      disturbed: isDisturbed(row.otherLoad) || shaky([row.scenario.key, row.users, 'Roster']),
    };
  });
  const postgresSection = postgresReport(plan, findings, header, cells, rps);
  const sqlite = sqliteReport(plan, findings, header, cells, rps);
  const authTargets: Target[] = findings.authRows.map((row) => {
    const value = authVsPlain(row);
    // A credential refused is no measurement of authentication's cost.
    const refused = row.result?.non2xx ?? 0;
    return {
      label: `get by id with AUTH=${row.auth ?? '?'} at ${integer(row.users)} users`,
      figure: `${ratio(value)} unauthenticated${refused > 0 ? `, **${integer(refused)} non-2xx**` : ''}`,
      goal: `≥ ${AUTH_RATIO}×, no non-2xx`,
      pass: refused > 0 ? false : judge(value, (v) => v >= AUTH_RATIO),
      disturbed: isDisturbed(row.otherLoad) || shaky(['get', row.users, 'Roster']),
    };
  });

  const targets: Target[] = [];
  for (const users of plan.sizes) {
    for (const key of ['get', 'health'] as const) {
      const value = rps(key, users, 'Roster') / rps(key, users, 'baseline');
      targets.push({
        label: `${key === 'get' ? 'get by id' : 'health'} at ${integer(users)} users`,
        figure: `${ratio(value)} baseline`,
        goal: '≥ 0.85×',
        pass: judge(value, (v) => v >= 0.85),
        disturbed: shaky([key, users, 'Roster'], [key, users, 'baseline']),
      });
    }
  }
  const smallest = plan.sizes[0]!;
  const largest = plan.sizes[plan.sizes.length - 1]!;
  for (const key of LIST_KEYS) {
    const label = SCENARIOS.find((scenario) => scenario.key === key)!.label;
    const growth = (find(key, largest, 'Roster')?.p99Ms ?? NaN) / (find(key, smallest, 'Roster')?.p99Ms ?? NaN);
    targets.push({
      label: `${label}: p99 at ${integer(largest)} users / p99 at ${integer(smallest)} users`,
      figure: largest === smallest ? 'one size only' : ratio(growth),
      goal: '≤ 1.5×',
      pass: largest === smallest ? undefined : judge(growth, (v) => v <= 1.5),
      disturbed: shaky([key, largest, 'Roster'], [key, smallest, 'Roster']),
    });
    for (const users of plan.sizes) {
      const value = rps(key, users, 'Roster') / rps('get', users, 'Roster');
      targets.push({
        label: `${label} at ${integer(users)} users, throughput`,
        figure: `${ratio(value)} Roster's get by id`,
        goal: '≥ 0.8×',
        pass: judge(value, (v) => v >= 0.8),
        disturbed: shaky([key, users, 'Roster'], ['get', users, 'Roster']),
      });
    }
  }
  // Search: its latency with one connection (the search itself, no queue), under 5 ms at 100 000 users,
  // and at every size the total the contract's rule gives for the generated users.
  for (const users of plan.sizes) {
    const p50 = find('search-alone', users, 'Roster')?.p50Ms ?? NaN;
    const check = findings.searchChecks.find((candidate) => candidate.users === users);
    const total = check?.totals.Roster;
    const timed = users === SEARCH_P50_USERS;
    const million = users === 1_000_000;
    targets.push({
      label: `search, 1 connection, at ${integer(users)} users`,
      figure: `p50 ${ms(p50)} ms, total ${integer(total ?? NaN)} (expected ${integer(check?.expected ?? NaN)})`,
      goal: timed
        ? `p50 < ${SEARCH_P50_MS} ms, total exact`
        : million
          ? `p50 ≤ ${SEARCH_MILLION_P50_MS} ms, total exact`
          : 'total exact',
      pass:
        total === undefined
          ? undefined
          : total !== check?.expected
            ? false
            : timed
              ? judge(p50, (v) => v < SEARCH_P50_MS)
              : million
                ? judge(p50, (v) => v <= SEARCH_MILLION_P50_MS)
                : true,
      disturbed: shaky(['search-alone', users, 'Roster']),
    });
  }
  if (!plan.sizes.includes(SEARCH_P50_USERS)) {
    targets.push({
      label: `search, 1 connection, at ${integer(SEARCH_P50_USERS)} users`,
      figure: `not measured (needs ${integer(SEARCH_P50_USERS)} users)`,
      goal: `p50 < ${SEARCH_P50_MS} ms, total exact`,
      pass: undefined,
    });
  }
  if (plan.sizes.includes(SEARCH_LOADED_USERS)) {
    const value = rps('search', SEARCH_LOADED_USERS, 'Roster');
    targets.push({
      label: `search, ${plan.rest.connections} connections, at ${integer(SEARCH_LOADED_USERS)} users`,
      figure: `${integer(value)} req/s`,
      goal: `≥ ${integer(SEARCH_LOADED_RPS)} req/s`,
      pass: judge(value, (v) => v >= SEARCH_LOADED_RPS),
      disturbed: shaky(['search', SEARCH_LOADED_USERS, 'Roster']),
    });
  }
  if (plan.sizes.includes(1_000_000) && plan.sizes.includes(1_000)) {
    const value = rps('get', 1_000_000, 'Roster') / rps('get', 1_000, 'Roster');
    targets.push({
      label: 'get by id at 1 000 000 users / at 1 000 users',
      figure: ratio(value),
      goal: `≥ ${GET_MILLION_RATIO}×`,
      pass: judge(value, (v) => v >= GET_MILLION_RATIO),
      disturbed: shaky(['get', 1_000_000, 'Roster'], ['get', 1_000, 'Roster']),
    });
  }
  const searchScaling = plan.sizes.map((users, index) => {
    const p50 = find('search-alone', users, 'Roster')?.p50Ms ?? NaN;
    const previous = index === 0 ? NaN : (find('search-alone', plan.sizes[index - 1]!, 'Roster')?.p50Ms ?? NaN);
    return `${ms(p50)} ms at ${integer(users)} users${index === 0 ? '' : ` (${ratio(p50 / previous)} the previous size)`}`;
  });
  for (const users of plan.sizes) {
    for (const key of ['create', 'patch'] as const) {
      const value = rps(key, users, 'Roster') / rps('create', users, 'baseline');
      targets.push({
        label: `${key} at ${integer(users)} users`,
        figure: `${ratio(value)} baseline create`,
        goal: '≥ 0.7×',
        pass: judge(value, (v) => v >= 0.7),
        disturbed: shaky([key, users, 'Roster'], ['create', users, 'baseline']),
      });
    }
  }

  const memoryRows = findings.memory.map(({ users, server }) => {
    const { empty, filled, fillSeconds } = server.started;
    const afterReads: Memory = server.afterReads ?? { rss: NaN, heap: NaN };
    const perUser = (now: number, then: number) =>
      users >= PER_USER_FROM ? bytes((now - then) / users) : 'too few users';
    return [
      integer(users),
      server.name,
      megabytes(empty.rss),
      megabytes(filled.rss),
      megabytes(afterReads.rss),
      perUser(filled.rss, empty.rss),
      perUser(afterReads.rss, empty.rss),
      perUser(afterReads.heap, empty.heap),
      Number.isFinite(afterReads.fullGcMs) ? `${ms(afterReads.fullGcMs!)} ms` : 'n/a',
      `${fillSeconds.toFixed(1)} s`,
    ];
  });
  const memoryTable = table(
    [
      'Users',
      'Server',
      'RSS empty',
      'RSS filled',
      'RSS after reads',
      'RSS/user filled',
      'RSS/user after reads',
      'heap/user after reads',
      'full GC after reads',
      'fill time',
    ],
    memoryRows,
  );
  const million = findings.memory.find(({ users, server }) => users === 1_000_000 && server.name === 'Roster')?.server;
  const millionRss = million ? Math.max(million.started.filled.rss, million.afterReads?.rss ?? NaN) : NaN;
  const memoryTargets: Target[] = [
    {
      label: 'Roster RSS with 1 000 000 users',
      figure: million ? megabytes(millionRss) : 'not measured (needs --full)',
      goal: `< ${MILLION_RSS_MIB} MiB`,
      pass: judge(millionRss, (v) => v < MILLION_RSS_MIB * 2 ** 20),
    },
  ];

  const { connections, warmupSeconds, seconds } = plan.rest;
  const markdown = [
    '### REST',
    '',
    `autocannon, ${connections} keep-alive connections (1 for the second search row), ${warmupSeconds} s warm-up then ${seconds} s measured per scenario; ` +
      'one request at a time per connection; latency of every response. ' +
      `Both servers hold the same deterministic users (seeded PRNG, 10 % admins); get by id and patch pick among ${integer(ID_POOL)} known ids. ` +
      'Roster runs with LOG_LEVEL=warn (no line per request) and its defaults otherwise.',
    '',
    restTable,
    '',
    ...findings.notes.map((note) => `- ${note}`),
    `- Roster's search p50 with 1 connection: ${searchScaling.join('; ')}.`,
    ...disturbed(findings.rows),
    '',
    'Targets:',
    '',
    targetLines(targets),
    '',
    '### REST: the Fastify floor',
    '',
    'How much of the gap to node:http is Fastify itself: a bare Fastify app (no logger, no hooks, no plugins; servers/fastify-floor.ts) over a Map of the same users, ' +
      'with health and get by id declared as Roster declares them (the same params and response schemas, so fast-json-stringify serialises alike), checked to answer a get by id as Roster does. ' +
      'Run with the other two servers, right after them, with the same warm-up; the ratios are to the node:http baseline and Roster of the table above.',
    '',
    floorTable,
    '',
    ...floorLines,
    '',
    'Targets:',
    '',
    targetLines(floorTargets),
    '',
    ...postgresSection.lines,
    '',
    ...sqlite.lines,
    '',
    '### REST with authentication (Roster)',
    '',
    `Roster started again at ${integer(AUTH_USERS)} users, once with AUTH=apikey (a key with the user role) and once with AUTH=jwt (an HS256 token minted with jose, as \`roster token\` does), ` +
      'each checked to refuse a request without its credential; get by id with the credential on every request, run right after the unauthenticated get by id it is compared with. ' +
      'Otherwise as above.',
    '',
    authTable,
    '',
    'Targets:',
    '',
    targetLines(authTargets),
    '',
    '### Memory of the REST servers',
    '',
    'After a full garbage collection. "After reads" is after the read-only scenarios (indexes a store builds lazily included), before create and patch add users. ' +
      'RSS keeps the heap at its high-water mark, so RSS per user also carries a fixed overhead; heap per user counts live objects alone. ' +
      '"Full GC after reads" is the time of a forced full collection right after another (the marking of the live heap, which every major collection pays). ' +
      `Per-user figures from ${integer(PER_USER_FROM)} users on: below that, what the load itself left behind outweighs the users.`,
    '',
    memoryTable,
    '',
    'Targets:',
    '',
    targetLines(memoryTargets),
  ].join('\n');
  // A size stopped early leaves rows missing: at least one failure.
  const missing = POSTGRES_ONLY ? 0 : plan.sizes.length * SCENARIOS.length * SERVERS.length - findings.rows.length;
  const errors =
    [
      ...findings.rows,
      ...findings.authRows,
      ...findings.floorRows,
      ...(findings.postgresRows ?? []),
      ...findings.sqliteRows,
    ].filter((row) => row.error !== undefined).length + missing;
  return {
    markdown,
    targets: [
      ...targets,
      ...floorTargets,
      ...postgresSection.targets,
      ...authTargets,
      ...sqlite.targets,
      ...memoryTargets,
    ],
    errors,
  };
}

/**
 * The subsection of Roster on PostgreSQL: each scenario against the PostgreSQL baseline and Roster on
 * its memory store in the same run, CPU per request of Node and of PostgreSQL, two instances against
 * one, and the REST targets that concern it (BENCHMARKS.md's list).
 */
function postgresReport(
  plan: Plan,
  findings: RestFindings,
  header: readonly string[],
  cells: (row: RestRow, ...comparisons: string[]) => (string | number)[],
  rps: (key: ScenarioKey, users: number, server: ServerName) => number,
): { lines: string[]; targets: Target[] } {
  const heading = '### REST on PostgreSQL';
  const rows = findings.postgresRows;
  if (!rows) return { lines: [heading, '', 'n/a: DATABASE_URL not set.'], targets: [] };
  const own = (row: RestRow | undefined) => row?.result?.requestsPerSecond ?? NaN;
  const find = (server: RestServerName, users: number, key: ScenarioKey) =>
    rows.find(
      (candidate) => candidate.server === server && candidate.users === users && candidate.scenario.key === key,
    );
  const microseconds = (seconds: number | undefined) =>
    seconds === undefined || !Number.isFinite(seconds) ? '–' : `${(seconds * 1e6).toFixed(0)} µs`;
  const postgresTable = table(
    [
      ...header,
      'PostgreSQL + Redis CPU',
      'CPU/request Node',
      'CPU/request PostgreSQL',
      'Roster / PostgreSQL baseline',
      'PostgreSQL / memory store',
      'two instances / one',
    ],
    rows.map((row) =>
      cells(
        row,
        percent(row.engineLoad),
        microseconds(row.cpuPerRequest?.node),
        microseconds(row.cpuPerRequest?.postgres),
        row.server === 'Roster (PostgreSQL)'
          ? ratio(own(row) / own(find('PostgreSQL baseline', row.users, row.scenario.key)))
          : '',
        row.server === 'PostgreSQL baseline' ? '' : ratio(own(row) / rps(row.scenario.key, row.users, 'Roster')),
        row.server === 'two instances (PostgreSQL)'
          ? ratio(own(row) / own(find('Roster (PostgreSQL)', row.users, row.scenario.key)))
          : '',
      ),
    ),
  );
  const shaky = (...found: (RestRow | undefined)[]) => found.some((row) => isDisturbed(row?.otherLoad));
  const targets: Target[] = [];
  if (plan.postgres === 'all') {
    for (const users of [...new Set(rows.map((row) => row.users))]) {
      for (const key of PG_BASELINE_KEYS) {
        if (key === 'search') continue;
        const roster = find('Roster (PostgreSQL)', users, key);
        const baseline = find('PostgreSQL baseline', users, key);
        const value = own(roster) / own(baseline);
        targets.push({
          label: `Roster on PostgreSQL: ${roster?.scenario.label ?? key} at ${integer(users)} users`,
          figure: `${ratio(value)} the PostgreSQL baseline`,
          goal: `≥ ${PG_BASELINE_RATIO}×`,
          pass: judge(value, (v) => v >= PG_BASELINE_RATIO),
          disturbed: shaky(roster, baseline),
        });
      }
    }
    const search = find('Roster (PostgreSQL)', PG_SEARCH_USERS, 'search');
    const check = findings.searchChecks.find((candidate) => candidate.users === PG_SEARCH_USERS);
    const total = check?.totals['Roster (PostgreSQL)'];
    const value = own(search);
    targets.push({
      label: `Roster on PostgreSQL: search at ${integer(PG_SEARCH_USERS)} users`,
      figure: search
        ? `${rate(value)} req/s (${ratio(value / own(find('PostgreSQL baseline', PG_SEARCH_USERS, 'search')))} the PostgreSQL baseline), total ${integer(total ?? NaN)} (expected ${integer(check?.expected ?? NaN)})`
        : `not measured (needs ${integer(PG_SEARCH_USERS)} users)`,
      goal: `≥ ${integer(PG_SEARCH_RPS)} req/s, total exact`,
      pass: total !== undefined && total !== check?.expected ? false : judge(value, (v) => v >= PG_SEARCH_RPS),
      disturbed: shaky(search),
    });
  }
  const redis = process.env.REDIS_URL
    ? ', and on the Redis chat bus (REDIS_URL, a key prefix of its own) as a deployment of several instances runs'
    : '';
  const lines = [
    heading,
    '',
    `Roster with DATABASE_URL on a fresh schema of this run's own${redis}: migrated at start-up, the same users stored first in bulk (one INSERT from arrays per ${integer(5_000)} users, then ANALYZE), the schema dropped afterwards; ` +
      `up to ${integer(POSTGRES_MAX_USERS)} users${plan.postgres === 'smoke' ? '; in quick mode get by id and create only' : ''}. Its default pool (${PG_POOL_SIZE} connections). ` +
      (plan.postgres === 'all'
        ? `Right after each of its scenarios, the **PostgreSQL baseline** (servers/pg-baseline.ts) runs it: a minimal node:http server over pg with a pool of the same size, one named prepared statement per scenario (plain parameterised SQL on Roster's schema and users, its triggers included), Roster's JSON shapes, next to no validation. `
        : '') +
      `PostgreSQL (and Redis) run unpinned, on either CPU: their CPU is counted apart ("PostgreSQL + Redis CPU", with whatever else used them meanwhile), not as other load, and it also shows in the busy figures of the CPU it ran on. ` +
      "CPU per request: the server process(es) (/proc/<pid>/stat), and the PostgreSQL backends of their own connections (found by application_name) plus PostgreSQL's background processes (WAL writer, checkpointer, …), over the measured seconds, divided by the requests served. " +
      (plan.postgres === 'all'
        ? `At ${integer(PAIR_USERS)} users, get by id and create also run on two instances on the same schema, both on CPU ${SERVER_CPU} (one instance's CPU budget), the second started for each; ` +
          'the generator spreads its connections evenly over both; req/s is their sum. '
        : 'Two instances: not in quick mode. ') +
      'Ratios are to the PostgreSQL baseline, to Roster on its memory store in the table above, and of two instances to one. Otherwise as above.',
    '',
    postgresTable,
    '',
    ...disturbed(rows),
    ...(targets.length > 0 ? ['', 'Targets:', '', targetLines(targets)] : []),
  ];
  return { lines, targets };
}

/**
 * The subsection of Roster on SQLite: each scenario against Roster on its memory store (reads) and on
 * PostgreSQL (writes) in the same run, with the SQLite section's targets (BENCHMARKS.md).
 */
function sqliteReport(
  plan: Plan,
  findings: RestFindings,
  header: readonly string[],
  cells: (row: RestRow, ...comparisons: string[]) => (string | number)[],
  rps: (key: ScenarioKey, users: number, server: ServerName) => number,
): { lines: string[]; targets: Target[] } {
  const heading = '### REST on SQLite';
  const rows = findings.sqliteRows;
  if (rows.length === 0) return { lines: [heading, '', 'n/a: not in quick mode.'], targets: [] };
  const own = (row: RestRow) => row.result?.requestsPerSecond ?? NaN;
  const postgres = (key: ScenarioKey, users: number) =>
    findings.postgresRows?.find(
      (row) => row.server === 'Roster (PostgreSQL)' && row.users === users && row.scenario.key === key,
    )?.result?.requestsPerSecond ?? NaN;
  const sqliteTable = table(
    [...header, 'SQLite / memory store', 'SQLite / PostgreSQL'],
    rows.map((row) =>
      cells(
        row,
        ratio(own(row) / rps(row.scenario.key, row.users, 'Roster')),
        ratio(own(row) / postgres(row.scenario.key, row.users)),
      ),
    ),
  );
  const targets: Target[] = [];
  for (const row of rows) {
    const read = SQLITE_READ_KEYS.includes(row.scenario.key);
    const write = row.scenario.key === 'create' || row.scenario.key === 'patch';
    if (!read && !write) continue;
    const value = read
      ? own(row) / rps(row.scenario.key, row.users, 'Roster')
      : own(row) / postgres(row.scenario.key, row.users);
    targets.push({
      label: `${row.server}: ${row.scenario.label} at ${integer(row.users)} users`,
      figure: `${ratio(value)} ${read ? 'the memory store' : 'PostgreSQL'}`,
      goal: `≥ ${read ? SQLITE_READ_RATIO : SQLITE_WRITE_RATIO}×`,
      pass: judge(value, (v) => v >= (read ? SQLITE_READ_RATIO : SQLITE_WRITE_RATIO)),
      disturbed: isDisturbed(row.otherLoad),
    });
  }
  const lines = [
    heading,
    '',
    `Roster with DATABASE_URL=sqlite:<a fresh file> (WAL), once with SQLITE_SYNCHRONOUS=FULL and once with NORMAL (the default), each filled in bulk with the same users (one transaction), ` +
      `run after the other servers of its size on CPU ${SERVER_CPU}. Reads are compared with Roster on its memory store, creates and patches with Roster on PostgreSQL, in the table above${plan.postgres === 'all' ? '' : ' (quick mode: none)'}. Otherwise as above.`,
    '',
    sqliteTable,
    '',
    ...disturbed(rows),
    '',
    'Targets:',
    '',
    targetLines(targets),
  ];
  return { lines, targets };
}

/** Runs the REST section and reports it. */
export async function restSection(plan: Plan): Promise<SectionReport> {
  return restReport(plan, await measureRest(plan));
}
