/**
 * The connections section: the connection storm (N clients connecting at once, each due a join notice
 * for every client after it) on Roster and on the stock ws baseline; then the idle connections held on
 * Roster for the memory each costs. Both use the storm load generator.
 */
import { BenchChild, benchPids, LOAD_CPU, type Memory } from '../ipc.js';
import { HANDSHAKE_GRACE_MS, type StormCommand, type StormResult } from '../load/storm.js';
import { bytes, integer, megabytes, percent, ratio, table, targetLines, type Target } from '../report.js';
import { otherLoadMeter } from '../stats.js';
import { startChatServer, type ChatServer } from './chat.js';
import {
  benchScript,
  errorText,
  isDisturbed,
  progress,
  ROSTER_ENV,
  SERVERS,
  type Plan,
  type SectionReport,
  type ServerName,
} from './common.js';

/** The storm target: this many clients, all in with every notice, within so many seconds. */
const STORM_CLIENTS = 5_000;
const STORM_SECONDS = 30;
/** The idle target: RSS per connection under this. */
const IDLE_BYTES = 20 * 1024;
/** How long clients already in may take to get their notices once the idle connections' time is up. */
const IDLE_GRACE_SECONDS = 30;

interface StormRow {
  server: ServerName;
  clients: number;
  /** How long the server was given. */
  capSeconds: number;
  result?: StormResult;
  otherLoad?: number;
  error?: string;
}

type Idle =
  | { connections: number; capSeconds: number; rssBefore: number; rssWith: number; result: StormResult }
  | { connections: number; error: string };

interface ConnectionFindings {
  storms: StormRow[];
  idle?: Idle;
}

/** How long the parent waits for a storm: the generator's own bounds, and some. */
const stormTimeout = (maxSeconds: number, graceSeconds: number) =>
  (maxSeconds + graceSeconds) * 1000 + HANDSHAKE_GRACE_MS + 60_000;

async function storm(
  generator: BenchChild,
  server: ChatServer,
  clients: number,
  concurrency: number,
  maxSeconds: number,
  graceSeconds: number,
): Promise<StormResult> {
  const command: StormCommand = {
    cmd: 'storm',
    ports: [server.wsPort],
    serverPid: server.child.pid,
    clients,
    concurrency,
    maxSeconds,
    graceSeconds,
  };
  return generator.request<StormResult>(command, stormTimeout(maxSeconds, graceSeconds));
}

/** Drops the generator's clients. If the generator is gone, the next command says so: nothing to add here. */
async function resetClients(generator: BenchChild): Promise<void> {
  await generator.request({ cmd: 'reset' } satisfies StormCommand, 60_000).catch(() => undefined);
}

async function measureStorm(generator: BenchChild, plan: Plan, name: ServerName): Promise<StormRow> {
  const clients = name === 'Roster' ? plan.storm.clients : plan.storm.baselineClients;
  const capSeconds = name === 'Roster' ? plan.storm.rosterSeconds : plan.storm.baselineSeconds;
  const row: StormRow = { server: name, clients, capSeconds };
  let server: ChatServer | undefined;
  try {
    server = await startChatServer(name, { joinNotices: true });
    const others = otherLoadMeter(benchPids);
    row.result = await storm(generator, server, clients, plan.storm.concurrency, capSeconds, 0);
    row.otherLoad = others();
    progress(`storm of ${integer(clients)} clients, ${name}: ${stormFigure(row)}`);
  } catch (error) {
    row.error = errorText(error);
    progress(`storm of ${integer(clients)} clients, ${name}: ${row.error}`);
  } finally {
    // The server first: clients leaving one by one would make it send everyone a leave notice.
    await server?.child.kill();
    await resetClients(generator);
  }
  return row;
}

async function measureIdle(generator: BenchChild, plan: Plan, connections: number, capSeconds: number): Promise<Idle> {
  let server: ChatServer | undefined;
  try {
    server = await startChatServer('Roster');
    const rssBefore = (await server.child.request<Memory>({ cmd: 'memory' }, 60_000)).rss;
    const result = await storm(generator, server, connections, plan.storm.concurrency, capSeconds, IDLE_GRACE_SECONDS);
    const rssWith = (await server.child.request<Memory>({ cmd: 'memory' }, 60_000)).rss;
    progress(
      `${integer(result.connected)} idle connections on Roster: ${bytes((rssWith - rssBefore) / result.connected)} each`,
    );
    return { connections, capSeconds, rssBefore, rssWith, result };
  } catch (error) {
    return { connections, error: errorText(error) };
  } finally {
    await server?.child.kill();
    await resetClients(generator);
  }
}

async function measureConnections(plan: Plan): Promise<ConnectionFindings> {
  const findings: ConnectionFindings = { storms: [] };
  const generator = new BenchChild('storm load generator', benchScript('load/storm.js'), LOAD_CPU);
  try {
    for (const name of SERVERS) findings.storms.push(await measureStorm(generator, plan, name));
    if (plan.idle) findings.idle = await measureIdle(generator, plan, plan.idle.connections, plan.idle.seconds);
  } finally {
    await generator.kill();
  }
  return findings;
}

/** Whether the storm is over: every client in, every notice delivered, nothing wrong, none closed. */
function stormComplete(result: StormResult): boolean {
  return Number.isFinite(result.seconds) && result.problems.length === 0 && result.closes === 0;
}

function stormFigure(row: StormRow): string {
  const r = row.result;
  if (!r) return `error: ${row.error ?? '?'}`;
  if (Number.isFinite(r.seconds)) return `${r.seconds.toFixed(1)} s`;
  return `> ${row.capSeconds} s (${integer(r.connected)} of ${integer(row.clients)} in, ${percent(r.notices / ((row.clients * (row.clients - 1)) / 2))} of the notices)`;
}

/** Roster's time over the baseline's, for as many clients; below the cap's share when the baseline ran out of time. */
function timeRatio(roster: StormRow | undefined, baseline: StormRow | undefined): string {
  const rosterSeconds = roster?.result?.seconds ?? NaN;
  const baselineSeconds = baseline?.result?.seconds ?? NaN;
  if (!roster || !baseline?.result || roster.clients !== baseline.clients || !Number.isFinite(rosterSeconds))
    return '–';
  return Number.isFinite(baselineSeconds)
    ? ratio(rosterSeconds / baselineSeconds)
    : `< ${ratio(rosterSeconds / baseline.capSeconds)}`;
}

function stormReport(
  plan: Plan,
  findings: ConnectionFindings,
): { markdown: string; targets: Target[]; errors: number } {
  const rowOf = (name: ServerName) => findings.storms.find((row) => row.server === name);
  const roster = rowOf('Roster');
  const baseline = rowOf('baseline');
  const rosterSeconds = roster?.result?.seconds ?? NaN;
  const vsBaseline = timeRatio(roster, baseline);
  const rows = findings.storms.map((row) => {
    const r = row.result;
    const comparison = row.server === 'Roster' ? vsBaseline : '';
    if (!r) return [integer(row.clients), row.server, `error: ${row.error ?? '?'}`, '', '', '', '', '', comparison];
    const others = percent(row.otherLoad);
    return [
      integer(row.clients),
      row.server,
      r.connected === row.clients ? integer(r.connected) : `**${integer(r.connected)}**`,
      r.connected === row.clients ? `${r.connectSeconds.toFixed(1)} s` : '–',
      Number.isFinite(r.seconds) ? `${r.seconds.toFixed(1)} s` : `> ${row.capSeconds} s`,
      `${integer(r.notices)} of ${integer((row.clients * (row.clients - 1)) / 2)}`,
      integer(r.closes),
      `${percent(r.serverCpu)} / ${percent(r.generatorCpu)} / ${isDisturbed(row.otherLoad) ? `**${others}**` : others}`,
      comparison,
    ];
  });
  const stormTable = table(
    [
      'Clients',
      'Server',
      'in',
      'all in after',
      'every notice after',
      'join notices',
      'closed',
      'CPU server / generator / others',
      'Roster / baseline (time)',
    ],
    rows,
  );
  const problems = findings.storms.flatMap((row) =>
    (row.result?.problems ?? []).map((problem) => `- **${row.server}: ${problem}**`),
  );
  const measured = roster?.clients === STORM_CLIENTS;
  const target: Target = {
    label: `connection storm: ${integer(STORM_CLIENTS)} clients in at once, every join notice delivered (Roster)`,
    figure: measured
      ? roster?.result && !stormComplete(roster.result)
        ? `${stormFigure(roster)}${roster.result.problems.length > 0 ? ', notices wrong' : ''}${roster.result.closes > 0 ? `, ${integer(roster.result.closes)} closed` : ''}`
        : stormFigure(roster)
      : `not measured (needs ${integer(STORM_CLIENTS)} clients; ${integer(plan.storm.clients)} took ${roster ? stormFigure(roster) : '–'})`,
    goal: `< ${STORM_SECONDS} s`,
    pass: !measured || !roster?.result ? undefined : stormComplete(roster.result) && rosterSeconds < STORM_SECONDS,
    disturbed: isDisturbed(roster?.otherLoad),
  };
  const markdown = [
    '### Connection storm',
    '',
    `Clients connect at once from raw sockets, at most ${integer(plan.storm.concurrency)} handshakes in flight. ` +
      'The contract sends `user_join` to every other connection, so N clients are due N(N − 1)/2 join notices on top of their welcomes. ' +
      'Time: from the first handshake until every client is in and has every notice it is due. ' +
      'Each client counts its frames: sorted, the counts of join notices must be 0 … N − 1, once each; every 100th client also checks each message it gets (a welcome, then join notices with online_count going up by one to N). ' +
      `Roster runs with ${Object.entries(ROSTER_ENV)
        .map(([key, value]) => `${key}=${value}`)
        .join(', ')}; ` +
      'the baseline is the stock ws server, sending on connect a welcome to the newcomer and a `user_join` to every other open client. ' +
      `Roster is given ${plan.storm.rosterSeconds} s, the baseline ${plan.storm.baselineSeconds} s.`,
    '',
    stormTable,
    '',
    ...problems,
    ...(problems.length > 0 ? [''] : []),
    'Targets:',
    '',
    targetLines([target]),
  ].join('\n');
  return { markdown, targets: [target], errors: findings.storms.filter((row) => row.error !== undefined).length };
}

function idleReport(idle: Idle): { markdown: string; target: Target } {
  const label = `Roster RSS per idle connection, ${integer(idle.connections)} held, each with its welcome and join notices`;
  if ('error' in idle) {
    return {
      markdown: `Could not hold ${integer(idle.connections)} connections: ${idle.error}`,
      target: { label, figure: 'not measured', goal: `< ${IDLE_BYTES / 1024} KiB`, pass: undefined },
    };
  }
  const { result } = idle;
  const perConnection = (idle.rssWith - idle.rssBefore) / result.connected;
  const all = result.connected === idle.connections;
  // Fewer connections, or notices still queued, do not show the cost of all of them idle.
  const complete = all && result.settled && result.problems.length === 0 && result.closes === 0;
  const time = Number.isFinite(result.seconds)
    ? `${result.seconds.toFixed(1)} s`
    : `> ${idle.capSeconds} s${result.settled ? ` (settled ${IDLE_GRACE_SECONDS} s later at most)` : ' (join notices still arriving)'}`;
  const markdown = [
    'Roster with no users; clients connect as in the storm, keep reading, and are all in with every notice before the RSS is read (after a full garbage collection). ' +
      `Connecting may take ${idle.capSeconds} s, and the clients in by then ${IDLE_GRACE_SECONDS} s more to get their notices.`,
    '',
    table(
      ['Connections held', 'RSS before', 'RSS with connections', 'per connection', 'every notice after', 'closed'],
      [
        [
          all ? integer(result.connected) : `${integer(result.connected)} of ${integer(idle.connections)}`,
          megabytes(idle.rssBefore),
          megabytes(idle.rssWith),
          bytes(perConnection),
          time,
          integer(result.closes),
        ],
      ],
    ),
    ...(result.problems.length > 0 ? ['', ...result.problems.map((problem) => `- **${problem}**`)] : []),
  ].join('\n');
  const figure = complete
    ? bytes(perConnection)
    : `${bytes(perConnection)} with ${integer(result.connected)} held${result.settled ? '' : ', join notices still arriving'}`;
  return {
    markdown,
    target: {
      label,
      figure,
      goal: `< ${IDLE_BYTES / 1024} KiB`,
      pass: complete ? perConnection < IDLE_BYTES : undefined,
    },
  };
}

function connectionsReport(plan: Plan, findings: ConnectionFindings): SectionReport {
  const storms = stormReport(plan, findings);
  const sections = [storms.markdown];
  const targets = [...storms.targets];
  let errors = storms.errors;
  if (findings.idle) {
    const { markdown, target } = idleReport(findings.idle);
    targets.push(target);
    if ('error' in findings.idle) errors++;
    sections.push('', '### Idle chat connections (Roster)', '', markdown, '', 'Targets:', '', targetLines([target]));
  }
  return { markdown: sections.join('\n'), targets, errors };
}

/** Runs the connections section and reports it. */
export async function connectionsSection(plan: Plan): Promise<SectionReport> {
  return connectionsReport(plan, await measureConnections(plan));
}
