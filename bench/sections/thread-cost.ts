/**
 * "What the chat thread costs": the same three figures on this build and on an earlier one
 * (BENCH_BEFORE, see chat-under-load.ts for how it is made), alternating, in one run: chat broadcast
 * throughput (1 000 clients, 4 senders: load/chat.ts), REST point reads (GET /users/:id at 100 000
 * users, 50 connections: load/rest.ts), and RSS per idle chat connection (10 000 held: load/storm.ts).
 * Targets: broadcast ≥ before, point reads ≥ 0.95× before, an idle connection < 20 KiB.
 */
import { BenchChild, benchPids, LOAD_CPU, SERVER_CPU, SERVER_NODE_ARGS, type Memory } from '../ipc.js';
import type { ChatCommand, ChatConnected, ChatResult } from '../load/chat.js';
import type { RestJob, RestResult } from '../load/rest.js';
import type { StormCommand, StormResult } from '../load/storm.js';
import { integer, ratio, table, targetLines, type Target } from '../report.js';
import type { RosterCommand, RosterStarted } from '../servers/roster.js';
import { otherLoadMeter, processCpuSeconds } from '../stats.js';
import { idPool } from '../users.js';
import {
  benchScript,
  errorText,
  isDisturbed,
  progress,
  ROSTER_ENV,
  rosterServer,
  type Plan,
  type SectionReport,
} from './common.js';

type Build = 'before' | 'after';
type Figure = 'broadcast' | 'point reads' | 'idle';

interface Sample {
  figure: Figure;
  build: Build;
  value?: number;
  otherLoad?: number;
  error?: string;
}

const ROUNDS = 2;
const READ_USERS = 100_000;
const IDLE_BYTES = 20 * 1024;

function serverScript(build: Build): URL {
  return rosterServer(build === 'after' ? undefined : process.env.BENCH_BEFORE!);
}

/** Runs `use` on a Roster bench server (`script`: rosterServer) alone on the server CPU, then stops it. */
export async function withServer<T>(
  script: URL,
  name: string,
  users: number,
  env: Record<string, string>,
  use: (server: BenchChild, started: RosterStarted) => Promise<T>,
): Promise<T> {
  const server = new BenchChild(`Roster ${name}`, script, SERVER_CPU, SERVER_NODE_ARGS);
  try {
    const started = await server.request<RosterStarted>(
      { cmd: 'start', users, env } satisfies RosterCommand,
      60_000 + users / 10,
    );
    return await use(server, started);
  } finally {
    await server.kill();
  }
}

/**
 * Chat broadcast deliveries/s on a fresh server (`script`, settings `env`): the plan's smallest count of
 * clients, 4 senders (load/chat.ts).
 */
export async function broadcast(
  script: URL,
  name: string,
  env: Record<string, string>,
  plan: Plan,
  chat: BenchChild,
  /** Hears the server's CPU seconds per delivery during the measured run (both its threads). */
  cost?: (secondsPerDelivery: number) => void,
): Promise<number> {
  const clients = Math.min(...plan.chat.clients);
  try {
    return await withServer(script, name, 0, env, async (server, started) => {
      const connected = await chat.request<ChatConnected>(
        {
          cmd: 'connect',
          ports: [started.wsPort],
          serverPid: server.pid,
          clients,
          senders: 4,
          expectWelcome: true,
          maxSeconds: plan.chat.connectSeconds,
        } satisfies ChatCommand,
        (plan.chat.connectSeconds + 120) * 1000,
      );
      if (connected.connected < clients || !connected.settled) throw new Error('clients not all in: not measured');
      const cpuBefore = processCpuSeconds(server.pid);
      const result = await chat.request<ChatResult>(
        {
          cmd: 'run',
          serverPid: server.pid,
          senders: 4,
          window: plan.chat.window,
          warmupSeconds: plan.chat.warmupSeconds,
          seconds: plan.chat.seconds,
        } satisfies ChatCommand,
        (plan.chat.warmupSeconds + plan.chat.seconds) * 1000 + 60_000,
      );
      const cpuAfter = processCpuSeconds(server.pid);
      if (cost && cpuBefore !== undefined && cpuAfter !== undefined)
        // The run's warm-up is inside the CPU figure: counted at the measured rate.
        cost((cpuAfter - cpuBefore) / (result.deliveriesPerSecond * (plan.chat.warmupSeconds + plan.chat.seconds)));
      return result.deliveriesPerSecond;
    });
  } finally {
    await chat.request({ cmd: 'reset' } satisfies ChatCommand, 60_000).catch(() => undefined);
  }
}

async function pointReads(build: Build, plan: Plan, rest: BenchChild, users: number): Promise<number> {
  const ids = idPool(users, 1000);
  return withServer(serverScript(build), build, users, ROSTER_ENV, async (server, started) => {
    const job = (seconds: number): RestJob => ({
      cmd: 'run',
      url: `http://127.0.0.1:${started.port}`,
      serverPid: server.pid,
      target: { kind: 'get-by-id', ids },
      connections: plan.rest.connections,
      seconds,
      timeoutSeconds: plan.rest.timeoutSeconds,
    });
    await rest.request<RestResult>(job(plan.rest.warmupSeconds), 60_000);
    return (await rest.request<RestResult>(job(plan.rest.seconds), (plan.rest.seconds + 60) * 1000)).requestsPerSecond;
  });
}

async function idleBytes(build: Build, plan: Plan, storm: BenchChild): Promise<number> {
  const idle = plan.idle ?? { connections: 1000, seconds: 30 };
  try {
    return await withServer(serverScript(build), build, 0, ROSTER_ENV, async (server, started) => {
      const before = (await server.request<Memory>({ cmd: 'memory' }, 60_000)).rss;
      const result = await storm.request<StormResult>(
        {
          cmd: 'storm',
          ports: [started.wsPort],
          serverPid: server.pid,
          clients: idle.connections,
          concurrency: plan.storm.concurrency,
          maxSeconds: idle.seconds,
          graceSeconds: 30,
        } satisfies StormCommand,
        (idle.seconds + 120) * 1000,
      );
      if (result.connected < idle.connections || !result.settled)
        throw new Error(`${integer(result.connected)} of ${integer(idle.connections)} held: not measured`);
      const after = (await server.request<Memory>({ cmd: 'memory' }, 60_000)).rss;
      return (after - before) / result.connected;
    });
  } finally {
    await storm.request({ cmd: 'reset' } satisfies StormCommand, 60_000).catch(() => undefined);
  }
}

export async function threadCostSection(plan: Plan): Promise<SectionReport> {
  const builds: Build[] = process.env.BENCH_BEFORE === undefined ? ['after'] : ['before', 'after'];
  const users = plan.idle === undefined ? 1_000 : READ_USERS;
  const chat = new BenchChild('chat load generator', benchScript('load/chat.js'), LOAD_CPU);
  const rest = new BenchChild('REST load generator', benchScript('load/rest.js'), LOAD_CPU);
  const storm = new BenchChild('storm load generator', benchScript('load/storm.js'), LOAD_CPU);
  const samples: Sample[] = [];
  const measure = async (figure: Figure, build: Build, run: () => Promise<number>) => {
    const others = otherLoadMeter(benchPids);
    try {
      const value = await run();
      samples.push({ figure, build, value, otherLoad: others() });
      progress(`${figure}, ${build}: ${integer(value)}`);
    } catch (error) {
      samples.push({ figure, build, error: errorText(error) });
    }
  };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating which build goes first, round by round.
      const order = round % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order)
        await measure('broadcast', build, () => broadcast(serverScript(build), build, ROSTER_ENV, plan, chat));
      for (const build of order) await measure('point reads', build, () => pointReads(build, plan, rest, users));
    }
    for (const build of builds) await measure('idle', build, () => idleBytes(build, plan, storm));
  } finally {
    await Promise.all([chat.kill(), rest.kill(), storm.kill()]);
  }

  const best = (figure: Figure, build: Build) => {
    const values = samples.filter((s) => s.figure === figure && s.build === build && s.value !== undefined);
    if (values.length === 0) return NaN;
    // Idle bytes: the smaller is the better figure; rates: the larger.
    return figure === 'idle' ? Math.min(...values.map((s) => s.value!)) : Math.max(...values.map((s) => s.value!));
  };
  const shaken = samples.some((s) => isDisturbed(s.otherLoad));
  const after = (figure: Figure) => best(figure, 'after');
  const before = (figure: Figure) => best(figure, 'before');
  const targets: Target[] = [
    {
      label: 'chat broadcast with the chat thread, against the build before (1 000 clients, 4 senders)',
      figure: ratio(after('broadcast') / before('broadcast')),
      goal: '≥ 1.00×',
      pass: Number.isFinite(before('broadcast') / after('broadcast'))
        ? after('broadcast') >= before('broadcast')
        : undefined,
      disturbed: shaken,
    },
    {
      label: `REST point reads with the chat thread, against the build before (${integer(users)} users)`,
      figure: ratio(after('point reads') / before('point reads')),
      goal: '≥ 0.95×',
      pass: Number.isFinite(before('point reads') / after('point reads'))
        ? after('point reads') >= 0.95 * before('point reads')
        : undefined,
      disturbed: shaken,
    },
    {
      label: 'RSS per idle chat connection with the chat thread',
      figure: Number.isFinite(after('idle')) ? `${(after('idle') / 1024).toFixed(1)} KiB` : 'not measured',
      goal: `< ${IDLE_BYTES / 1024} KiB`,
      pass: Number.isFinite(after('idle')) ? after('idle') < IDLE_BYTES : undefined,
      disturbed: shaken,
    },
  ];
  const cell = (figure: Figure, build: Build) => {
    const list = samples.filter((s) => s.figure === figure && s.build === build);
    return list.length === 0
      ? '–'
      : list
          .map((s) =>
            s.value === undefined
              ? (s.error ?? '–')
              : figure === 'idle'
                ? `${(s.value / 1024).toFixed(1)} KiB`
                : `${integer(s.value)}/s`,
          )
          .join(', ');
  };
  const figures: Figure[] = ['broadcast', 'point reads', 'idle'];
  const markdown = [
    '### What the chat thread costs',
    '',
    `Each figure on this build and on the build in BENCH_BEFORE${process.env.BENCH_BEFORE ? ` (\`${process.env.BENCH_BEFORE}\`)` : ' (not given: this build only)'}, alternating, ${ROUNDS} rounds for the rates (the best of each is compared): chat broadcast deliveries/s (1 000 clients, 4 senders), REST point reads/s (GET /users/:id, ${integer(users)} users in memory, ${plan.rest.connections} connections), and RSS per idle chat connection (${integer(plan.idle?.connections ?? 1000)} held). Servers alone on CPU ${SERVER_CPU}, generators on CPU ${LOAD_CPU}.`,
    '',
    table(
      ['Figure', 'before', 'after (chat thread)'],
      figures.map((figure) => [figure, cell(figure, 'before'), cell(figure, 'after')]),
    ),
    '',
    'Targets:',
    '',
    targetLines(targets),
  ].join('\n');
  return { markdown, targets, errors: samples.filter((s) => s.error !== undefined).length };
}
