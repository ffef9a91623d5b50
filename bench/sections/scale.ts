/**
 * The scale section (`npm run bench -- --only scale`): 1, 2 and 4 Roster instances on one PostgreSQL
 * (DATABASE_URL, a schema of each count's own, filled alike) and one Redis (REDIS_URL, a key prefix of the run's own).
 * Every instance is pinned to the server CPU, every load generator to the other one, PostgreSQL and
 * Redis unpinned: on a small, shared machine the figures are CPU per unit of work (process CPU time
 * from /proc, Redis's INFO), not throughput. Per count of instances: the REST scenarios (get by id, a
 * page, a search, create, patch), spread over every instance, and a chat run (the clients spread over
 * every instance, several senders). From the one-instance row the section predicts the others before
 * it runs them (docs/capacity.md is the model), then sets prediction and measurement side by side.
 * Last, join storms of growing size over the largest count of instances, until one does not complete.
 */
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import pg from 'pg';
import { BenchChild, benchPids, LOAD_CPU, type Memory } from '../ipc.js';
import type { ChatCommand, ChatConnected, ChatResult } from '../load/chat.js';
import type { RestJob, RestResult } from '../load/rest.js';
import type { StormCommand, StormResult } from '../load/storm.js';
import { postgresPids, withApplicationName } from '../postgres.js';
import { bytes, integer, megabytes, percent, rate, table } from '../report.js';
import { otherLoadMeter, processesCpuMeter } from '../stats.js';
import { idPool } from '../users.js';
import { freshSchema, type TestSchema } from '../../test/support/postgres.js';
import { startChatServer, type ChatServer } from './chat.js';
import { benchRedisUrl, benchScript, errorText, progress, sleep, type Plan, type SectionReport } from './common.js';
import { SCENARIOS, type ScenarioKey } from './rest.js';

/** The REST scenarios of the model: a read by id, a page, a search, and the two writes. */
const REST_KEYS = ['get', 'sorted', 'search', 'create', 'patch'] as const satisfies readonly ScenarioKey[];
type RestKey = (typeof REST_KEYS)[number];
const REST_CONNECTIONS = 50;
const CHAT_SENDERS = 4;
const CHAT_WINDOW = 16;
/** Handshakes in flight during a storm. */
const STORM_CONCURRENCY = 500;
/** Redis measured idle this long at most (the instances' heartbeats), to take its rate off the chat figures. */
const IDLE_SECONDS = 2;
/** A miss of the prediction past this share is revised in docs/capacity.md. */
const MISS = 0.3;

/** Redis's counters: CPU seconds (user + system) and bytes in and out since it started. */
interface RedisCounters {
  cpu: number;
  input: number;
  output: number;
}

interface RedisUse {
  cpuSeconds: number;
  input: number;
  output: number;
}

async function redisCounters(redis: Redis): Promise<RedisCounters> {
  const text = `${await redis.info('cpu')}\n${await redis.info('stats')}`;
  const field = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(text)?.[1] ?? NaN);
  return {
    cpu: field('used_cpu_sys') + field('used_cpu_user'),
    input: field('total_net_input_bytes'),
    output: field('total_net_output_bytes'),
  };
}

/** Redis's use from now until the returned function is called. */
async function redisMeter(redis: Redis): Promise<() => Promise<RedisUse>> {
  const before = await redisCounters(redis);
  return async () => {
    const now = await redisCounters(redis);
    return { cpuSeconds: now.cpu - before.cpu, input: now.input - before.input, output: now.output - before.output };
  };
}

/** What one unit of work cost: Node CPU (all instances), PostgreSQL CPU (backends and background), Redis. */
interface UnitCost {
  units: number;
  nodeCpu: number;
  postgresCpu: number;
  redis: RedisUse;
}

const per = (total: number, units: number) => (units > 0 ? total / units : NaN);

interface RestCell {
  requestsPerSecond: number;
  cost: UnitCost;
  errors: number;
  p99Ms: number;
}

interface CountRow {
  instances: number;
  rest: Partial<Record<RestKey, RestCell>>;
  /** PostgreSQL connections each instance held after the REST runs (pg_stat_activity). */
  postgresConnections: number[];
  chat?: {
    deliveries: UnitCost;
    messages: number;
    joins: UnitCost;
    /** RSS added per chat connection, per instance (after a full collection). */
    rssPerConnection: number;
    p99Ms: number;
    lost: number;
    /** Node CPU of one instance at rest with its members in (a share of one CPU): timers, the bus's heartbeat. */
    idleCpu: number;
  };
  otherLoad: number;
  errors: string[];
}

interface StormRow {
  clients: number;
  instances: number;
  result?: StormResult;
  cost?: UnitCost;
  rssPerConnection?: number;
  /** Predicted from the one-instance chat row: Node CPU seconds for the storm's frames. */
  predictedNodeCpu: number;
  otherLoad?: number;
  error?: string;
}

/** Predictions for `instances`, from the one-instance row alone (see docs/capacity.md). */
interface Prediction {
  instances: number;
  figures: { label: string; predicted: number; measured?: number; unit: string }[];
}

interface Deployment {
  servers: ChatServer[];
  applicationNames: string[];
}

/** `instances` Roster processes on one schema and one Redis prefix, on the server CPU. */
async function deploy(instances: number, schema: TestSchema, redisUrl: string, users: number): Promise<Deployment> {
  const room = benchRedisUrl(redisUrl);
  const deployment: Deployment = { servers: [], applicationNames: [] };
  try {
    // One after the other: the first stores the users, the others find them there.
    for (let index = 0; index < instances; index++) {
      const applicationName = `${schema.name}_i${index}`;
      deployment.applicationNames.push(applicationName);
      deployment.servers.push(
        await startChatServer('Roster', {
          label: `Roster ${index + 1}/${instances} (scale)`,
          users,
          env: { ...extraEnv(), DATABASE_URL: withApplicationName(schema.url, applicationName), REDIS_URL: room },
        }),
      );
    }
  } catch (error) {
    await stop(deployment);
    throw error;
  }
  return deployment;
}

async function stop(deployment: Deployment): Promise<void> {
  await Promise.all(deployment.servers.map((server) => server.child.kill()));
}

/** PostgreSQL connections each instance holds: rows of pg_stat_activity by application_name. */
async function connectionsHeld(databaseUrl: string, names: readonly string[]): Promise<number[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  client.on('error', () => {});
  try {
    await client.connect();
    const { rows } = await client.query<{ name: string; count: string }>(
      'SELECT application_name AS name, count(*) AS count FROM pg_stat_activity WHERE application_name = ANY($1) GROUP BY 1',
      [names],
    );
    return names.map((name) => Number(rows.find((row) => row.name === name)?.count ?? 0));
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The PostgreSQL processes working for the deployment: its backends and the background processes. */
async function postgresProcesses(databaseUrl: string, names: readonly string[]): Promise<number[]> {
  const pids = await Promise.all(names.map((name) => postgresPids(databaseUrl, name)));
  return [...new Set(pids.flat())];
}

/** Measures `work` (which returns how many units it did) on Node, PostgreSQL and Redis. */
async function costOf(
  deployment: Deployment,
  postgres: number[],
  redis: Redis,
  work: () => Promise<number>,
): Promise<UnitCost> {
  const node = processesCpuMeter(deployment.servers.map((server) => server.child.pid));
  const database = processesCpuMeter(postgres);
  const engine = await redisMeter(redis);
  const units = await work();
  return { units, nodeCpu: node(), postgresCpu: database(), redis: await engine() };
}

async function memories(deployment: Deployment): Promise<Memory[]> {
  return Promise.all(deployment.servers.map((server) => server.child.request<Memory>({ cmd: 'memory' }, 60_000)));
}

function rssPerConnection(before: Memory[], after: Memory[], connections: number): number {
  const added = after.reduce((sum, memory, index) => sum + memory.rss - before[index]!.rss, 0);
  return per(added, connections);
}

async function measureRest(
  plan: Plan,
  generator: BenchChild,
  deployment: Deployment,
  databaseUrl: string,
  redis: Redis,
  row: CountRow,
): Promise<void> {
  const ids = idPool(plan.scale.users, 10_000);
  const urls = deployment.servers.map((server) => `http://127.0.0.1:${server.port!}`);
  for (const key of REST_KEYS) {
    const scenario = SCENARIOS.find((candidate) => candidate.key === key)!;
    const job = (seconds: number): RestJob => ({
      cmd: 'run',
      url: urls,
      serverPid: deployment.servers[0]!.child.pid,
      target: scenario.target(ids),
      connections: REST_CONNECTIONS,
      timeoutSeconds: 10,
      seconds,
    });
    try {
      await generator.request<RestResult>(job(plan.scale.warmupSeconds), 60_000);
      // The pools have opened their connections in the warm-up: their backends are the ones to watch.
      const postgres = await postgresProcesses(databaseUrl, deployment.applicationNames);
      let result: RestResult | undefined;
      const cost = await costOf(deployment, postgres, redis, async () => {
        result = await generator.request<RestResult>(
          job(plan.scale.restSeconds),
          plan.scale.restSeconds * 1000 + 60_000,
        );
        return result.requestsPerSecond * plan.scale.restSeconds;
      });
      row.rest[key] = {
        requestsPerSecond: result!.requestsPerSecond,
        cost,
        errors: result!.errors + result!.non2xx,
        p99Ms: result!.p99Ms,
      };
      progress(
        `scale, ${row.instances} instance(s), ${scenario.label}: ${integer(result!.requestsPerSecond)} req/s, ` +
          `${rate(per(cost.units, cost.nodeCpu))} per Node CPU-s, ${(per(cost.postgresCpu, cost.units) * 1e6).toFixed(0)} µs PostgreSQL CPU each`,
      );
    } catch (error) {
      row.errors.push(`${scenario.label}: ${errorText(error)}`);
    }
  }
  row.postgresConnections = await connectionsHeld(databaseUrl, deployment.applicationNames).catch(() => []);
}

async function measureChat(
  plan: Plan,
  generator: BenchChild,
  deployment: Deployment,
  redis: Redis,
  row: CountRow,
): Promise<void> {
  const { chatClients, chatSeconds } = plan.scale;
  const idleSeconds = Math.min(IDLE_SECONDS, 2 * chatSeconds);
  const before = await memories(deployment);
  let connected: ChatConnected | undefined;
  const joins = await costOf(deployment, [], redis, async () => {
    connected = await generator.request<ChatConnected>(
      {
        cmd: 'connect',
        ports: deployment.servers.map((server) => server.wsPort),
        serverPid: deployment.servers[0]!.child.pid,
        clients: chatClients,
        senders: CHAT_SENDERS,
        expectWelcome: true,
        maxSeconds: 120,
      } satisfies ChatCommand,
      300_000,
    );
    return connected.connected;
  });
  if (!connected!.settled || connected!.connected < chatClients)
    throw new Error(`chat: ${connected!.connected} of ${chatClients} clients in, settled: ${connected!.settled}`);
  const after = await memories(deployment);
  // Redis at rest with the members in (heartbeats, the reaper): taken off the chat run's figures.
  const idle = await costOf(deployment, [], redis, async () => {
    await sleep(idleSeconds * 1000);
    return idleSeconds;
  });
  const run = (seconds: number): ChatCommand => ({
    cmd: 'run',
    serverPid: deployment.servers[0]!.child.pid,
    senders: CHAT_SENDERS,
    window: CHAT_WINDOW,
    warmupSeconds: 0,
    seconds,
  });
  await generator.request<ChatResult>(run(Math.min(1, chatSeconds)), 60_000);
  let result: ChatResult | undefined;
  const started = performance.now();
  const deliveries = await costOf(deployment, [], redis, async () => {
    result = await generator.request<ChatResult>(run(chatSeconds), chatSeconds * 1000 + 60_000);
    return result.deliveriesPerSecond * chatSeconds;
  });
  const idleShare = (performance.now() - started) / 1000 / idleSeconds;
  deliveries.redis = {
    cpuSeconds: deliveries.redis.cpuSeconds - idle.redis.cpuSeconds * idleShare,
    input: deliveries.redis.input - idle.redis.input * idleShare,
    output: deliveries.redis.output - idle.redis.output * idleShare,
  };
  row.chat = {
    deliveries,
    messages: result!.messagesPerSecond * chatSeconds,
    joins,
    rssPerConnection: rssPerConnection(before, after, connected!.connected),
    p99Ms: result!.p99Ms,
    lost: result!.lost + (result!.cross?.lost ?? 0),
    idleCpu: idle.nodeCpu / idleSeconds / deployment.servers.length,
  };
  progress(
    `scale, ${row.instances} instance(s), chat: ${integer(result!.deliveriesPerSecond)} deliveries/s, ` +
      `${integer(per(deliveries.units, deliveries.nodeCpu))} per Node CPU-s, ` +
      `Redis ${bytes(per(deliveries.redis.output, row.chat.messages))} out per message`,
  );
}

/** The frames a storm of `clients` delivers: a welcome each and a join notice to every earlier member. */
const stormFrames = (clients: number) => clients + (clients * (clients - 1)) / 2;

/** Node CPU seconds per delivered frame, from a row's chat run. */
const cpuPerDelivery = (row: CountRow | undefined) =>
  row?.chat ? per(row.chat.deliveries.nodeCpu, row.chat.deliveries.units) : NaN;
const redisPerMessage = (row: CountRow | undefined, field: 'cpuSeconds' | 'input' | 'output') =>
  row?.chat ? per(row.chat.deliveries.redis[field], row.chat.messages) : NaN;
const redisPerJoin = (row: CountRow | undefined, field: 'cpuSeconds' | 'input' | 'output') =>
  row?.chat ? per(row.chat.joins.redis[field], row.chat.joins.units) : NaN;
const restPerCpu = (row: CountRow | undefined, key: RestKey) => {
  const cell = row?.rest[key];
  return cell ? per(cell.cost.units, cell.cost.nodeCpu) : NaN;
};
const postgresPerRequest = (row: CountRow | undefined, key: RestKey) => {
  const cell = row?.rest[key];
  return cell ? per(cell.cost.postgresCpu, cell.cost.units) : NaN;
};
const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);

/**
 * The model's prediction for `instances` from the one-instance row (docs/capacity.md): Node and
 * PostgreSQL CPU per request and Node CPU per delivery do not change with the count of instances;
 * PostgreSQL connections are the one instance's times the count; Redis takes each message in once and
 * sends it out once per instance, and its CPU per message is half taking in (the script, the stream)
 * and half sending out, so it grows as (1 + n) / 2.
 */
function predict(one: CountRow, instances: number): Prediction {
  const figures: Prediction['figures'] = [];
  for (const key of REST_KEYS) {
    figures.push({ label: `${key}: requests per Node CPU-s`, predicted: restPerCpu(one, key), unit: 'req' });
    figures.push({
      label: `${key}: PostgreSQL CPU per request`,
      predicted: postgresPerRequest(one, key) * 1e6,
      unit: 'µs',
    });
  }
  figures.push({
    label: 'PostgreSQL connections, all instances',
    predicted: sum(one.postgresConnections) * instances,
    unit: '',
  });
  figures.push({ label: 'chat: deliveries per Node CPU-s', predicted: 1 / cpuPerDelivery(one), unit: '' });
  figures.push({ label: 'chat: RSS per connection', predicted: one.chat?.rssPerConnection ?? NaN, unit: 'B' });
  figures.push({
    label: 'Redis CPU per message',
    predicted: (redisPerMessage(one, 'cpuSeconds') * 1e6 * (1 + instances)) / 2,
    unit: 'µs',
  });
  figures.push({ label: 'Redis bytes in per message', predicted: redisPerMessage(one, 'input'), unit: 'B' });
  figures.push({
    label: 'Redis bytes out per message',
    predicted: redisPerMessage(one, 'output') * instances,
    unit: 'B',
  });
  figures.push({ label: 'Redis bytes in per join', predicted: redisPerJoin(one, 'input'), unit: 'B' });
  figures.push({ label: 'Redis bytes out per join', predicted: redisPerJoin(one, 'output') * instances, unit: 'B' });
  return { instances, figures };
}

function measured(row: CountRow, label: string): number {
  const key = REST_KEYS.find((candidate) => label.startsWith(`${candidate}:`));
  if (key && label.endsWith('per Node CPU-s')) return restPerCpu(row, key);
  if (key) return postgresPerRequest(row, key) * 1e6;
  switch (label) {
    case 'PostgreSQL connections, all instances':
      return sum(row.postgresConnections);
    case 'chat: deliveries per Node CPU-s':
      return 1 / cpuPerDelivery(row);
    case 'chat: RSS per connection':
      return row.chat?.rssPerConnection ?? NaN;
    case 'Redis CPU per message':
      return redisPerMessage(row, 'cpuSeconds') * 1e6;
    case 'Redis bytes in per message':
      return redisPerMessage(row, 'input');
    case 'Redis bytes out per message':
      return redisPerMessage(row, 'output');
    case 'Redis bytes in per join':
      return redisPerJoin(row, 'input');
    case 'Redis bytes out per join':
      return redisPerJoin(row, 'output');
  }
  return NaN;
}

const figure = (value: number, unit: string) =>
  !Number.isFinite(value)
    ? '–'
    : unit === 'B'
      ? bytes(value)
      : `${value < 100 ? value.toFixed(1) : integer(value)}${unit && unit !== 'req' ? ` ${unit}` : ''}`;

/**
 * One count of instances, on a schema of its own: the same users in the same table for every count
 * (the writes of an earlier count would otherwise grow the table and bloat its indexes).
 */
async function measureCount(
  plan: Plan,
  instances: number,
  databaseUrl: string,
  redisUrl: string,
  redis: Redis,
): Promise<CountRow> {
  const row: CountRow = { instances, rest: {}, postgresConnections: [], otherLoad: 0, errors: [] };
  const schema = await freshSchema({ databaseUrl, prefix: 'bench_scale_' });
  const others = otherLoadMeter(benchPids, true);
  let deployment: Deployment | undefined;
  const restGenerator = new BenchChild('REST load generator (scale)', benchScript('load/rest.js'), LOAD_CPU);
  const chatGenerator = new BenchChild('chat load generator (scale)', benchScript('load/chat.js'), LOAD_CPU);
  try {
    deployment = await deploy(instances, schema, redisUrl, plan.scale.users);
    await measureRest(plan, restGenerator, deployment, databaseUrl, redis, row);
    await measureChat(plan, chatGenerator, deployment, redis, row);
  } catch (error) {
    row.errors.push(errorText(error));
    progress(`scale, ${instances} instance(s): ${errorText(error)}`);
  } finally {
    row.otherLoad = others();
    await Promise.all([restGenerator.kill(), chatGenerator.kill()]);
    if (deployment) await stop(deployment);
    await schema.drop().catch(() => undefined);
  }
  return row;
}

async function measureStorm(
  plan: Plan,
  clients: number,
  instances: number,
  schema: TestSchema,
  redisUrl: string,
  redis: Redis,
  one: CountRow | undefined,
): Promise<StormRow> {
  const row: StormRow = { clients, instances, predictedNodeCpu: stormFrames(clients) * cpuPerDelivery(one) };
  progress(
    `scale, storm of ${integer(clients)} over ${instances}: predicted ${row.predictedNodeCpu.toFixed(1)} Node CPU-s for ${integer(stormFrames(clients))} frames`,
  );
  const others = otherLoadMeter(benchPids, true);
  const generator = new BenchChild('storm load generator (scale)', benchScript('load/storm.js'), LOAD_CPU);
  let deployment: Deployment | undefined;
  try {
    deployment = await deploy(instances, schema, redisUrl, plan.scale.users);
    const before = await memories(deployment);
    let result: StormResult | undefined;
    const servers = deployment.servers;
    row.cost = await costOf(deployment, [], redis, async () => {
      result = await generator.request<StormResult>(
        {
          cmd: 'storm',
          ports: servers.map((server) => server.wsPort),
          serverPid: servers[0]!.child.pid,
          clients,
          concurrency: STORM_CONCURRENCY,
          maxSeconds: plan.scale.stormSeconds,
          graceSeconds: 30,
          crowd: /\bCHAT_NOTICES_MAX_MEMBERS=\d/.test(process.env.BENCH_SCALE_ENV ?? ''),
        } satisfies StormCommand,
        (plan.scale.stormSeconds + 120) * 1000,
      );
      return result.notices + result.connected;
    });
    row.result = result!;
    row.rssPerConnection = rssPerConnection(before, await memories(deployment), result!.connected);
    progress(
      `scale, storm of ${integer(clients)} over ${instances}: ${integer(result!.connected)} in, ` +
        `${Number.isFinite(result!.seconds) ? `all notices in ${result!.seconds.toFixed(1)} s` : 'not complete'} ` +
        `(last welcome ${result!.connectSeconds.toFixed(1)} s; then one chat to all in ${result!.chatSeconds?.toFixed(2) ?? '–'} s), ` +
        `${row.cost.nodeCpu.toFixed(1)} Node CPU-s${result!.problems.length > 0 ? `; ${result!.problems.join('; ')}` : ''}`,
    );
  } catch (error) {
    row.error = errorText(error);
    progress(`scale, storm of ${integer(clients)}: ${row.error}`);
  } finally {
    row.otherLoad = others();
    await generator.kill();
    if (deployment) await stop(deployment);
  }
  return row;
}

const stormComplete = (row: StormRow) =>
  row.result !== undefined && row.result.connected === row.clients && Number.isFinite(row.result.seconds);

function miss(predicted: number, value: number | undefined): string {
  if (value === undefined || !Number.isFinite(value) || !Number.isFinite(predicted) || predicted === 0) return '–';
  const off = value / predicted - 1;
  const text = `${off >= 0 ? '+' : ''}${Math.round(off * 100)}%`;
  return Math.abs(off) > MISS ? `**${text}**` : text;
}

function report(
  plan: Plan,
  rows: CountRow[],
  predictions: Prediction[],
  storms: StormRow[],
  load: { before: number[]; after: number[] },
): SectionReport {
  const restHeader = [
    'Instances',
    ...REST_KEYS.map((key) => `${key} req/Node CPU-s`),
    ...REST_KEYS.map((key) => `${key} PG CPU µs/req`),
    'PG connections',
  ];
  const restRows = rows.map((row) => [
    row.instances,
    ...REST_KEYS.map((key) => rate(restPerCpu(row, key))),
    ...REST_KEYS.map((key) => (postgresPerRequest(row, key) * 1e6).toFixed(0)),
    row.postgresConnections.join(' + ') || '–',
  ]);
  const chatHeader = [
    'Instances',
    'deliveries/Node CPU-s',
    'RSS/connection',
    'Redis CPU µs/msg',
    'Redis B in/msg',
    'Redis B out/msg',
    'Redis CPU µs/join',
    'Redis B in/join',
    'Redis B out/join',
    'echo p99 ms',
    'lost',
    'idle Node CPU/instance',
    'others',
  ];
  const chatRows = rows.map((row) => [
    row.instances,
    integer(1 / cpuPerDelivery(row)),
    bytes(row.chat?.rssPerConnection ?? NaN),
    (redisPerMessage(row, 'cpuSeconds') * 1e6).toFixed(1),
    integer(redisPerMessage(row, 'input')),
    integer(redisPerMessage(row, 'output')),
    (redisPerJoin(row, 'cpuSeconds') * 1e6).toFixed(1),
    integer(redisPerJoin(row, 'input')),
    integer(redisPerJoin(row, 'output')),
    row.chat ? row.chat.p99Ms.toFixed(1) : '–',
    row.chat ? row.chat.lost : '–',
    row.chat ? `${(row.chat.idleCpu * 100).toFixed(1)}%` : '–',
    percent(row.otherLoad),
  ]);
  const one = rows.find((row) => row.instances === 1);
  const ratioRows = rows
    .filter((row) => row.instances !== 1)
    .map((row) => [
      `${row.instances} vs 1`,
      ...REST_KEYS.map((key) => (restPerCpu(one, key) / restPerCpu(row, key)).toFixed(2)),
      (cpuPerDelivery(row) / cpuPerDelivery(one)).toFixed(2),
      (redisPerMessage(row, 'cpuSeconds') / redisPerMessage(one, 'cpuSeconds')).toFixed(2),
      (redisPerMessage(row, 'output') / redisPerMessage(one, 'output')).toFixed(2),
    ]);
  const predictionRows = predictions.flatMap((prediction) =>
    prediction.figures.map((item) => [
      prediction.instances,
      item.label,
      figure(item.predicted, item.unit),
      figure(item.measured ?? NaN, item.unit),
      miss(item.predicted, item.measured),
    ]),
  );
  const stormRows = storms.map((row) => [
    `${integer(row.clients)} over ${row.instances}`,
    row.result ? integer(row.result.connected) : '–',
    row.result && Number.isFinite(row.result.seconds)
      ? row.result.seconds.toFixed(1)
      : row.error
        ? `error: ${row.error}`
        : '**not complete**',
    row.result ? row.result.connectSeconds.toFixed(1) : '–',
    row.result?.chatSeconds === undefined ? '–' : row.result.chatSeconds.toFixed(2),
    row.result ? `${integer(row.result.notices)} / ${integer(row.result.expectedNotices)}` : '–',
    row.cost ? row.cost.nodeCpu.toFixed(1) : '–',
    row.predictedNodeCpu.toFixed(1),
    row.cost ? miss(row.predictedNodeCpu, row.cost.nodeCpu) : '–',
    row.cost ? integer(per(row.cost.units, row.cost.nodeCpu)) : '–',
    row.cost ? megabytes(row.cost.redis.output) : '–',
    row.cost ? row.cost.redis.cpuSeconds.toFixed(2) : '–',
    bytes(row.rssPerConnection ?? NaN),
    row.result ? row.result.closes : '–',
    percent(row.otherLoad),
  ]);
  const problems = storms.flatMap((row) =>
    (row.result?.problems ?? []).map((problem) => `- Storm of ${integer(row.clients)}: ${problem}`),
  );
  const errors = rows.reduce((total, row) => total + row.errors.length, 0) + storms.filter((row) => row.error).length;
  const largest = Math.max(...rows.map((row) => row.instances));
  const lines = [
    '### Scale: 1, 2 and 4 instances on one PostgreSQL and one Redis',
    '',
    `Every instance pinned to the server CPU (all of them share it), the load generators to the other; PostgreSQL and Redis unpinned. ` +
      `CPU is per unit of work: each process's CPU time from /proc (Node: every instance, both threads; PostgreSQL: the instances' backends and its background processes), Redis's INFO cpu and net byte deltas. ` +
      `${integer(plan.scale.users)} users; REST with ${REST_CONNECTIONS} connections spread over the instances, ${plan.scale.restSeconds} s each; chat: ${integer(plan.scale.chatClients)} clients spread over the instances, ${CHAT_SENDERS} senders, window ${CHAT_WINDOW}, ${plan.scale.chatSeconds} s, CHAT_HISTORY at its default (a Redis stream). ` +
      `Redis's idle rate (heartbeats) is taken off the per-message figures. Load average before ${load.before.map((value) => value.toFixed(2)).join(' ')}, after ${load.after.map((value) => value.toFixed(2)).join(' ')}; "others": CPU of processes outside the bench meanwhile (a share of one CPU).`,
    '',
    '#### REST, per count of instances',
    '',
    table(restHeader, restRows),
    '',
    '#### Chat, per count of instances',
    '',
    table(chatHeader, chatRows),
    '',
    '#### n instances against one: per-unit cost ratios (above 1: dearer per unit)',
    '',
    table(
      [
        '',
        ...REST_KEYS.map((key) => `${key} Node CPU/req`),
        'Node CPU/delivery',
        'Redis CPU/msg',
        'Redis bytes out/msg',
      ],
      ratioRows,
    ),
    '',
    '#### Predicted from the one-instance row (before the others ran) against measured',
    '',
    table(['Instances', 'Figure', 'Predicted', 'Measured', 'Miss'], predictionRows),
    '',
    `#### Join storms over ${largest} instances`,
    '',
    'All clients at once, spread over the instances, ' +
      `${STORM_CONCURRENCY} handshakes in flight; every join notifies every member: N + N(N − 1)/2 frames. Predicted Node CPU: those frames times the one-instance chat row's CPU per delivery.`,
    '',
    table(
      [
        'Clients',
        'In',
        'All notified (s)',
        'Last welcome (s)',
        'Then 1 chat to all (s)',
        'Notices / due',
        'Node CPU-s',
        'Predicted',
        'Miss',
        'Frames/Node CPU-s',
        'Redis out',
        'Redis CPU-s',
        'RSS/connection',
        'Closed by server',
        'others',
      ],
      stormRows,
    ),
    ...(problems.length > 0 ? ['', ...problems] : []),
    ...rows.flatMap((row) => row.errors.map((error) => `- **${row.instances} instance(s)**: ${error}`)),
  ];
  return { markdown: lines.join('\n'), targets: [], errors };
}

/**
 * The storm sizes: the plan's, or BENCH_SCALE_STORMS (comma-separated; empty: no storm), to raise the
 * load past them; BENCH_SCALE_INSTANCES (comma-separated) likewise replaces the counts of instances.
 */
function stormSizes(plan: Plan): number[] {
  const asked = process.env.BENCH_SCALE_STORMS;
  return asked === undefined ? plan.scale.storms : asked.split(',').filter(Boolean).map(Number);
}

/** BENCH_SCALE_ENV: Roster settings for every instance, space-separated `NAME=value`, e.g. `CHAT_HISTORY=0`. */
function extraEnv(): Record<string, string> {
  return Object.fromEntries(
    (process.env.BENCH_SCALE_ENV ?? '')
      .split(/\s+/)
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
}

function instanceCounts(plan: Plan): number[] {
  return process.env.BENCH_SCALE_INSTANCES?.split(',').map(Number) ?? plan.scale.instances;
}

export async function scaleSection(plan: Plan): Promise<SectionReport> {
  const databaseUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!databaseUrl || !redisUrl) {
    return {
      markdown: '### Scale\n\nn/a: needs DATABASE_URL and REDIS_URL (one PostgreSQL and one Redis for every instance).',
      targets: [],
      errors: 0,
    };
  }
  const load = { before: loadavg(), after: [] as number[] };
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  const schema = await freshSchema({ databaseUrl, prefix: 'bench_scale_' });
  const rows: CountRow[] = [];
  const predictions: Prediction[] = [];
  const storms: StormRow[] = [];
  try {
    await redis.connect();
    const counts = instanceCounts(plan);
    for (const instances of counts) {
      const row = await measureCount(plan, instances, databaseUrl, redisUrl, redis);
      rows.push(row);
      if (instances === 1) {
        for (const other of counts.filter((count) => count !== 1)) {
          const prediction = predict(row, other);
          predictions.push(prediction);
          progress(
            `scale, predicted for ${other} instances before measuring: ${prediction.figures.map((item) => `${item.label} ${figure(item.predicted, item.unit)}`).join('; ')}`,
          );
        }
      }
      for (const prediction of predictions.filter((candidate) => candidate.instances === instances))
        for (const item of prediction.figures) item.measured = measured(row, item.label);
    }
    const largest = Math.max(...counts);
    const one = rows.find((row) => row.instances === 1);
    for (const clients of stormSizes(plan)) {
      const row = await measureStorm(plan, clients, largest, schema, redisUrl, redis, one);
      storms.push(row);
      // Larger storms only cost more: the first that does not complete is what gave.
      if (!stormComplete(row)) break;
    }
  } finally {
    load.after = loadavg();
    redis.disconnect();
    await schema.drop().catch(() => undefined);
  }
  return report(plan, rows, predictions, storms, load);
}
