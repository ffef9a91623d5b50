/**
 * The chat section: Roster's chat and the stock ws broadcast baseline, each with N raw clients of the
 * chat load generator, with one and with several senders; then, with REDIS_URL, two Roster instances
 * sharing the room over Redis, the clients split between them.
 */
import { BenchChild, benchPids, LOAD_CPU, SERVER_CPU, SERVER_NODE_ARGS } from '../ipc.js';
import type { ChatCommand, ChatConnected, ChatResult } from '../load/chat.js';
import { integer, ms, percent, ratio, table, targetLines, type Target } from '../report.js';
import type { RosterCommand, RosterStarted } from '../servers/roster.js';
import type { WsBaselineCommand } from '../servers/ws-baseline.js';
import { engineLoadMeter, otherLoadMeter } from '../stats.js';
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
  type Plan,
  type SectionReport,
  type ServerName,
} from './common.js';

export interface ChatServer {
  child: BenchChild;
  wsPort: number;
  /** Roster's REST port (the baseline has none). */
  port?: number;
}

/**
 * Roster, or the stock ws baseline: with `joinNotices`, the baseline greets each newcomer and tells
 * the others, as Roster always does; without, it sends nothing on connect.
 */
export async function startChatServer(
  name: ServerName,
  options: { joinNotices?: boolean; env?: Record<string, string>; label?: string; users?: number } = {},
): Promise<ChatServer> {
  const child =
    name === 'Roster'
      ? new BenchChild(options.label ?? 'Roster (chat)', benchScript('servers/roster.js'), SERVER_CPU, SERVER_NODE_ARGS)
      : new BenchChild('ws baseline', benchScript('servers/ws-baseline.js'), SERVER_CPU, SERVER_NODE_ARGS);
  try {
    if (name === 'Roster') {
      const started = await child.request<RosterStarted>(
        { cmd: 'start', users: options.users ?? 0, env: { ...ROSTER_ENV, ...options.env } } satisfies RosterCommand,
        60_000,
      );
      return { child, wsPort: started.wsPort, port: started.port };
    }
    const started = await child.request<{ wsPort: number }>(
      { cmd: 'start', ...options } satisfies WsBaselineCommand,
      60_000,
    );
    return { child, wsPort: started.wsPort };
  } catch (error) {
    await child.kill();
    throw error;
  }
}

interface ChatRow {
  clients: number;
  senders: number;
  server: ServerName;
  result?: ChatResult;
  /** CPU used by processes outside the benchmark meanwhile, as a share of one CPU. */
  otherLoad?: number;
  error?: string;
}

/** A row of the two-instance run: Roster twice, on one Redis. */
interface PairRow {
  clients: number;
  senders: number;
  result?: ChatResult;
  /** CPU of Redis (and PostgreSQL, if anyone uses it meanwhile), as a share of one CPU. */
  engineLoad?: number;
  otherLoad?: number;
  error?: string;
}

/** A row of the history comparison: Roster with CHAT_HISTORY off and on, the same clients. */
interface HistoryRow {
  clients: number;
  senders: number;
  /** Deliveries/s of each run with CHAT_HISTORY=0, then with it on, in the order run (alternating). */
  off: number[];
  on: number[];
  /** The most CPU other processes used during any of its runs, as a share of one CPU. */
  otherLoad: number;
  errors: string[];
}

/** CHAT_HISTORY of the "on" runs: the default. */
const HISTORY_ON = '500';
/** Runs of each setting, alternating off and on, so that drift of the machine hits both alike. */
const HISTORY_ROUNDS = 3;

interface ChatFindings {
  rows: ChatRow[];
  notes: string[];
  historyRows?: HistoryRow[];
  /** Undefined without REDIS_URL. */
  pairRows?: PairRow[];
  pairNotes: string[];
}

/** How long the parent waits for a connect command: its own deadline, its grace to settle, and some. */
const connectTimeout = (plan: Plan) => (plan.chat.connectSeconds + 120) * 1000;

async function measureChat(plan: Plan): Promise<ChatFindings> {
  const findings: ChatFindings = { rows: [], notes: [], pairNotes: [] };
  const generator = new BenchChild('chat load generator', benchScript('load/chat.js'), LOAD_CPU);
  const { window, warmupSeconds, seconds } = plan.chat;
  try {
    for (const clients of plan.chat.clients) {
      for (const name of SERVERS) {
        let server: ChatServer | undefined;
        try {
          server = await startChatServer(name);
          const senders = Math.max(...plan.chat.senders);
          const connect: ChatCommand = {
            cmd: 'connect',
            ports: [server.wsPort],
            serverPid: server.child.pid,
            clients,
            senders,
            expectWelcome: name === 'Roster',
            maxSeconds: plan.chat.connectSeconds,
          };
          const connected = await generator.request<ChatConnected>(connect, connectTimeout(plan));
          findings.notes.push(connectNote(name, clients, connected));
          progress(findings.notes[findings.notes.length - 1]!);
          if (connected.connected < clients)
            throw new Error(`only ${integer(connected.connected)} clients connected in time: not measured`);
          if (!connected.settled) throw new Error('join notices still arriving: not measured');
          for (const active of plan.chat.senders) {
            const run: ChatCommand = {
              cmd: 'run',
              serverPid: server.child.pid,
              senders: active,
              window,
              warmupSeconds,
              seconds,
            };
            const row: ChatRow = { clients, senders: active, server: name };
            try {
              const others = otherLoadMeter(benchPids);
              row.result = await generator.request<ChatResult>(run, (warmupSeconds + seconds) * 1000 + 60_000);
              row.otherLoad = others();
              progress(
                `chat ${integer(clients)} clients, ${active} sender(s), ${name}: ${integer(row.result.deliveriesPerSecond)} deliveries/s`,
              );
            } catch (error) {
              row.error = errorText(error);
            }
            findings.rows.push(row);
          }
        } catch (error) {
          for (const active of plan.chat.senders)
            findings.rows.push({ clients, senders: active, server: name, error: errorText(error) });
        } finally {
          // The server first: clients leaving one by one would make Roster send everyone a leave notice.
          await server?.child.kill();
          await resetClients(generator);
        }
      }
    }
    findings.historyRows = await measureHistory(plan, generator);
    const redisUrl = process.env.REDIS_URL;
    // Not in quick mode, which stays under a minute.
    if (redisUrl && plan.postgres === 'all')
      findings.pairRows = await measurePair(plan, generator, redisUrl, findings.pairNotes);
  } finally {
    await generator.kill();
  }
  return findings;
}

/** The clients of the two-instance run (the smallest size of the plan's, 1 000). */
const pairClients = (plan: Plan) => Math.min(...plan.chat.clients);

/**
 * Two Roster instances on one Redis, both on the server CPU (the one instance's budget, so the figures
 * compare), the clients split evenly between them and each sender watched from the other instance.
 */
async function measurePair(plan: Plan, generator: BenchChild, redisUrl: string, notes: string[]): Promise<PairRow[]> {
  const rows: PairRow[] = [];
  const clients = pairClients(plan);
  const { window, warmupSeconds, seconds } = plan.chat;
  const env = { REDIS_URL: benchRedisUrl(redisUrl) };
  const servers: ChatServer[] = [];
  try {
    for (const label of ['Roster A (chat, Redis)', 'Roster B (chat, Redis)'])
      servers.push(await startChatServer('Roster', { env, label }));
    const senders = Math.max(...plan.chat.senders);
    const connect: ChatCommand = {
      cmd: 'connect',
      ports: servers.map((server) => server.wsPort),
      serverPid: servers[0]!.child.pid,
      clients,
      senders,
      expectWelcome: true,
      maxSeconds: plan.chat.connectSeconds,
    };
    const connected = await generator.request<ChatConnected>(connect, connectTimeout(plan));
    notes.push(connectNote('Roster', clients, connected).replace(/^Roster:/, 'Two instances:'));
    progress(notes[notes.length - 1]!);
    if (connected.connected < clients)
      throw new Error(`only ${integer(connected.connected)} clients connected in time: not measured`);
    if (!connected.settled) throw new Error('join notices still arriving: not measured');
    for (const active of plan.chat.senders) {
      const row: PairRow = { clients, senders: active };
      try {
        const others = otherLoadMeter(benchPids, true);
        const engines = engineLoadMeter();
        row.result = await generator.request<ChatResult>(
          {
            cmd: 'run',
            serverPid: servers[0]!.child.pid,
            senders: active,
            window,
            warmupSeconds,
            seconds,
          } satisfies ChatCommand,
          (warmupSeconds + seconds) * 1000 + 60_000,
        );
        row.otherLoad = others();
        row.engineLoad = engines();
        progress(
          `chat ${integer(clients)} clients, ${active} sender(s), two instances: ${integer(row.result.deliveriesPerSecond)} deliveries/s`,
        );
      } catch (error) {
        row.error = errorText(error);
      }
      rows.push(row);
    }
  } catch (error) {
    for (const active of plan.chat.senders) rows.push({ clients, senders: active, error: errorText(error) });
  } finally {
    await Promise.all(servers.map((server) => server.child.kill()));
    await resetClients(generator);
  }
  return rows;
}

/**
 * Broadcast with the room's history on (CHAT_HISTORY, the default) against off (0): the smallest client
 * count of the plan, each sender count, alternating off and on HISTORY_ROUNDS times; the clients do not
 * ask for history (as the contract's clients), so the difference is what keeping it costs.
 */
async function measureHistory(plan: Plan, generator: BenchChild): Promise<HistoryRow[]> {
  const clients = Math.min(...plan.chat.clients);
  const rows = plan.chat.senders.map((senders): HistoryRow => ({
    clients,
    senders,
    off: [],
    on: [],
    otherLoad: 0,
    errors: [],
  }));
  const { window, warmupSeconds, seconds } = plan.chat;
  for (let round = 0; round < HISTORY_ROUNDS; round++) {
    for (const setting of ['0', HISTORY_ON]) {
      let server: ChatServer | undefined;
      try {
        server = await startChatServer('Roster', {
          env: { CHAT_HISTORY: setting },
          label: `Roster (chat, CHAT_HISTORY=${setting})`,
        });
        const connect: ChatCommand = {
          cmd: 'connect',
          ports: [server.wsPort],
          serverPid: server.child.pid,
          clients,
          senders: Math.max(...plan.chat.senders),
          expectWelcome: true,
          maxSeconds: plan.chat.connectSeconds,
        };
        const connected = await generator.request<ChatConnected>(connect, connectTimeout(plan));
        if (connected.connected < clients || !connected.settled)
          throw new Error('clients not all connected and settled: not measured');
        for (const row of rows) {
          const run: ChatCommand = {
            cmd: 'run',
            serverPid: server.child.pid,
            senders: row.senders,
            window,
            warmupSeconds,
            seconds,
          };
          const others = otherLoadMeter(benchPids);
          const result = await generator.request<ChatResult>(run, (warmupSeconds + seconds) * 1000 + 60_000);
          row.otherLoad = Math.max(row.otherLoad, others());
          (setting === '0' ? row.off : row.on).push(result.deliveriesPerSecond);
          progress(
            `chat history ${setting === '0' ? 'off' : 'on'}, ${integer(clients)} clients, ${row.senders} sender(s): ${integer(result.deliveriesPerSecond)} deliveries/s`,
          );
        }
      } catch (error) {
        for (const row of rows) row.errors.push(errorText(error));
      } finally {
        await server?.child.kill();
        await resetClients(generator);
      }
    }
  }
  return rows;
}

/** Drops the generator's clients. If the generator is gone, the next command says so: nothing to add here. */
async function resetClients(generator: BenchChild): Promise<void> {
  await generator.request({ cmd: 'reset' } satisfies ChatCommand, 60_000).catch(() => undefined);
}

function connectNote(name: ServerName, clients: number, connected: ChatConnected): string {
  const what = name === 'Roster' ? 'join notices delivered' : 'ready';
  const count =
    connected.connected < clients
      ? `**only ${integer(connected.connected)} of ${integer(clients)} clients connected in time**`
      : `${integer(clients)} clients connected`;
  const timing = connected.settled
    ? `${what} in ${connected.seconds.toFixed(1)} s`
    : `**join notices still arriving after ${connected.seconds.toFixed(0)} s**`;
  const closes = connected.closes > 0 ? `; **${connected.closes} closed by the server**` : '';
  const cpu = `CPU server / generator ${percent(connected.serverCpu)} / ${percent(connected.generatorCpu)}`;
  return `${name}: ${count}, ${timing} (${cpu})${closes}.`;
}

function chatReport(plan: Plan, findings: ChatFindings): SectionReport {
  const rowOf = (clients: number, senders: number, server: ServerName) =>
    findings.rows.find((row) => row.clients === clients && row.senders === senders && row.server === server);
  const deliveries = (clients: number, senders: number, server: ServerName) =>
    rowOf(clients, senders, server)?.result?.deliveriesPerSecond ?? NaN;
  const rows = findings.rows.map((row) => {
    const r = row.result;
    const vsBaseline =
      row.server === 'Roster'
        ? ratio(deliveries(row.clients, row.senders, 'Roster') / deliveries(row.clients, row.senders, 'baseline'))
        : '';
    if (!r)
      return [
        integer(row.clients),
        row.senders,
        row.server,
        `error: ${row.error ?? '?'}`,
        '',
        '',
        '',
        '',
        '',
        '',
        vsBaseline,
      ];
    return [
      integer(row.clients),
      row.senders,
      row.server,
      integer(r.deliveriesPerSecond),
      integer(r.messagesPerSecond),
      ms(r.p50Ms),
      ms(r.p99Ms),
      integer(r.lost),
      integer(r.closes),
      cpuCell(r, row.otherLoad),
      vsBaseline,
    ];
  });
  const chatTable = table(
    [
      'Clients',
      'Senders',
      'Server',
      'deliveries/s',
      'messages/s',
      'p50 ms',
      'p99 ms',
      'lost',
      'closed',
      'CPU server / generator / others',
      'Roster / baseline',
    ],
    rows,
  );
  const targets: Target[] = [];
  for (const clients of plan.chat.clients) {
    for (const senders of plan.chat.senders) {
      const value = deliveries(clients, senders, 'Roster') / deliveries(clients, senders, 'baseline');
      targets.push({
        label: `chat deliveries/s, ${integer(clients)} clients, ${senders} sender(s)`,
        figure: `${ratio(value)} baseline`,
        goal: '≥ 3×',
        pass: judge(value, (v) => v >= 3),
        disturbed: SERVERS.some((server) => isDisturbed(rowOf(clients, senders, server)?.otherLoad)),
      });
    }
  }

  // Before the targets are printed below: the history subsection adds its own to them.
  const history = historyReport(findings.historyRows ?? [], targets);
  const sections = [
    '### Chat',
    '',
    `Raw-socket clients counting frames; ${plan.chat.warmupSeconds} s warm-up then ${plan.chat.seconds} s measured. ` +
      'Deliveries: chat frames received by all clients together per second. ' +
      `Latency: from a sender's send to its own echo; senders are the last clients to connect, so their echo is the last delivery of each broadcast. ` +
      `Each sender keeps ${plan.chat.window} messages in flight. ` +
      `Roster runs with ${Object.entries(ROSTER_ENV)
        .map(([key, value]) => `${key}=${value}`)
        .join(', ')}.`,
    '',
    chatTable,
    '',
    ...findings.notes.map((note) => `- ${note}`),
    ...disturbed(findings.rows),
    '',
    'Targets:',
    '',
    targetLines(targets),
    '',
    ...history,
    '',
    ...pairReport(plan, findings, (clients, senders) => deliveries(clients, senders, 'Roster')),
  ];
  const errors = [...findings.rows, ...(findings.pairRows ?? [])].filter((row) => row.error !== undefined).length;
  return { markdown: sections.join('\n'), targets, errors };
}

/** The history subsection: deliveries/s with CHAT_HISTORY on against off; adds its targets to `targets`. */
function historyReport(rows: readonly HistoryRow[], targets: Target[]): string[] {
  const median = (values: readonly number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted.length === 0
      ? NaN
      : sorted.length % 2 === 1
        ? sorted[(sorted.length - 1) / 2]!
        : (sorted[sorted.length / 2 - 1]! + sorted[sorted.length / 2]!) / 2;
  };
  const lines = rows.map((row) => {
    const value = median(row.on) / median(row.off);
    targets.push({
      label: `chat deliveries/s with history on / off, ${integer(row.clients)} clients, ${row.senders} sender(s)`,
      figure: ratio(value),
      goal: '≥ 0.9×',
      pass: judge(value, (v) => v >= 0.9),
      disturbed: isDisturbed(row.otherLoad),
    });
    return [
      integer(row.clients),
      row.senders,
      row.off.map(integer).join(', '),
      row.on.map(integer).join(', '),
      ratio(value),
      isDisturbed(row.otherLoad) ? `**${percent(row.otherLoad)}**` : percent(row.otherLoad),
      row.errors.length > 0 ? `error: ${row.errors[0]}` : '',
    ];
  });
  return [
    '### Chat: history on and off',
    '',
    `Roster alone with CHAT_HISTORY=0 and with CHAT_HISTORY=${HISTORY_ON} (the default), the same clients (none of them asks for history), ` +
      `alternating off and on ${HISTORY_ROUNDS} times; each figure is one run's deliveries/s, the ratio is of the medians.`,
    '',
    table(
      ['Clients', 'Senders', 'history off: deliveries/s', 'history on: deliveries/s', 'on / off', 'others (most)', ''],
      lines,
    ),
  ];
}

/** The two-instance subsection, compared with one instance (`single`: Roster's deliveries/s above). */
function pairReport(
  plan: Plan,
  findings: ChatFindings,
  single: (clients: number, senders: number) => number,
): string[] {
  const heading = '### Chat: two instances on one Redis';
  if (!findings.pairRows)
    return [heading, '', process.env.REDIS_URL ? 'n/a: not in --quick.' : 'n/a: REDIS_URL not set.'];
  const rows = findings.pairRows.map((row) => {
    const r = row.result;
    const vsOne = ratio((r?.deliveriesPerSecond ?? NaN) / single(row.clients, row.senders));
    if (!r)
      return [
        integer(row.clients),
        row.senders,
        `error: ${row.error ?? '?'}`,
        '',
        '',
        '',
        '',
        '',
        '',
        '',
        '',
        '',
        '',
        vsOne,
      ];
    return [
      integer(row.clients),
      row.senders,
      integer(r.deliveriesPerSecond),
      integer(r.messagesPerSecond),
      ms(r.p50Ms),
      ms(r.p99Ms),
      ms(r.cross?.p50Ms ?? NaN),
      ms(r.cross?.p99Ms ?? NaN),
      integer(r.lost),
      integer(r.cross?.lost ?? NaN),
      integer(r.closes),
      cpuCell(r, row.otherLoad),
      percent(row.engineLoad),
      vsOne,
    ];
  });
  const pairTable = table(
    [
      'Clients',
      'Senders',
      'deliveries/s',
      'messages/s',
      'echo p50 ms',
      'echo p99 ms',
      'across p50 ms',
      'across p99 ms',
      'lost',
      'lost across',
      'closed',
      'CPU server / generator / others',
      'Redis CPU',
      'two instances / one',
    ],
    rows,
  );
  return [
    heading,
    '',
    `Two Roster processes with REDIS_URL on one Redis (a key prefix of this run's own), both pinned to CPU ${SERVER_CPU}, the one CPU a single instance has, so the comparison is at the same CPU budget; Redis itself runs unpinned. ` +
      `${integer(pairClients(plan))} clients split evenly between them, senders alternating; each sender has a watcher on the other instance, connected last. ` +
      "Echo latency: from the send to the sender's own echo (its instance delivers locally). Across: from the send to the watcher on the other instance (through Redis). " +
      '"Lost across": messages a watcher never saw. "Redis CPU": the CPU of the redis-server and postgres processes meanwhile (not counted in "others"). ' +
      'Compared with Roster alone (no Redis) in the table above; otherwise as above.',
    '',
    pairTable,
    '',
    ...findings.pairNotes.map((note) => `- ${note}`),
    ...disturbed(findings.pairRows),
  ];
}

/** Runs the chat section and reports it. */
export async function chatSection(plan: Plan): Promise<SectionReport> {
  return chatReport(plan, await measureChat(plan));
}
