/**
 * "Drift against a fixed older build": the hot paths on this build and on commit 41a4c31 (the last
 * before the chat thread, built once into a cache folder by bench/baseline.ts), alternating round by
 * round in one run, so that slow loss across many issues shows (BENCH_BEFORE compares with the build
 * before only; given, that build is measured here too). Each server alone on one CPU, load on the other:
 *
 * - REST on the memory store at 10 000 users, 50 connections: GET by id, the default list (page 1 of
 *   20), creates (load/rest.ts);
 * - chat broadcast deliveries/s, 1 000 clients, 4 senders, with the default history and with
 *   CHAT_HISTORY=0 (load/chat.ts, as the thread-cost section measures it).
 *
 * Target: every figure ≥ 0.95× of 41a4c31 (the ratio of the medians of the rounds).
 *
 * BENCH_DRIFT_ROUNDS (3 by default): more rounds where the machine's speed wanders between them.
 * BENCH_DRIFT_FIGURES (comma-separated keys: id, list, create, chat, chat-no-history): some figures only.
 */
import { loadavg } from 'node:os';
import { BASELINE_COMMIT, buildBaseline } from '../baseline.js';
import { BenchChild, benchPids, LOAD_CPU, SERVER_CPU } from '../ipc.js';
import type { RestJob, RestResult, RestTarget } from '../load/rest.js';
import { integer, ratio, table, targetLines, type Target } from '../report.js';
import { otherLoadMeter, percentile, processCpuSeconds, sortedSamples } from '../stats.js';
import { idPool } from '../users.js';
import {
  benchScript,
  disturbed,
  errorText,
  isDisturbed,
  progress,
  ROSTER_ENV,
  rosterServer,
  type Plan,
  type SectionReport,
  numberSetting,
} from './common.js';
import { broadcast, withServer } from './thread-cost.js';

const USERS_PATH = '/api/v1/users';
const TARGET = 0.95;

interface Build {
  name: string;
  /** Where it is built; none for this build. */
  folder?: string;
}

interface RestFigure {
  key: string;
  label: string;
  target: (ids: string[]) => RestTarget;
}

/** The figures BENCH_DRIFT_FIGURES names, all by default. */
function chosen<T extends { key: string }>(figures: readonly T[]): T[] {
  const raw = process.env.BENCH_DRIFT_FIGURES;
  if (!raw) return [...figures];
  const keys = raw.split(',').map((key) => key.trim());
  const known = [...REST_FIGURES, ...CHAT_FIGURES].map((figure) => figure.key);
  const unknown = keys.filter((key) => !known.includes(key));
  if (unknown.length > 0) throw new Error(`BENCH_DRIFT_FIGURES: no figure ${unknown.join(', ')} (${known.join(', ')})`);
  return figures.filter((figure) => keys.includes(figure.key));
}

/** In this order on one server: creates last, as they add users. */
const REST_FIGURES: readonly RestFigure[] = [
  { key: 'id', label: 'GET by id', target: (ids) => ({ kind: 'get-by-id', ids }) },
  { key: 'list', label: 'default list, page 1 of 20', target: () => ({ kind: 'get', path: USERS_PATH }) },
  { key: 'create', label: 'create', target: () => ({ kind: 'create' }) },
];

const CHAT_FIGURES: readonly { key: string; label: string; env: Record<string, string> }[] = [
  { key: 'chat', label: 'chat broadcast, history on', env: {} },
  { key: 'chat-no-history', label: 'chat broadcast, CHAT_HISTORY=0', env: { CHAT_HISTORY: '0' } },
];

interface Sample {
  figure: string;
  build: string;
  round: number;
  value?: number;
  /** The server's CPU seconds per request or delivery (both its threads), when /proc tells. */
  cost?: number;
  otherLoad?: number;
  error?: string;
}

const median = (values: number[]) => (values.length === 0 ? NaN : percentile(sortedSamples(values), 50));

export async function driftSection(plan: Plan): Promise<SectionReport> {
  const quick = plan.idle === undefined;
  const rounds = quick ? 1 : numberSetting('BENCH_DRIFT_ROUNDS', 3);
  if (!Number.isInteger(rounds)) throw new Error(`BENCH_DRIFT_ROUNDS must be a whole number (got "${rounds}")`);
  const restFigures = chosen(REST_FIGURES);
  const chatFigures = chosen(CHAT_FIGURES);
  const users = quick ? 1_000 : 10_000;
  const builds: Build[] = [{ name: 'this build' }];
  const samples: Sample[] = [];
  try {
    builds.push({ name: BASELINE_COMMIT, folder: buildBaseline(progress) });
  } catch (error) {
    samples.push({ figure: 'build', build: BASELINE_COMMIT, round: 0, error: errorText(error) });
  }
  if (process.env.BENCH_BEFORE) builds.push({ name: 'BENCH_BEFORE', folder: process.env.BENCH_BEFORE });

  const rest = new BenchChild('REST load generator', benchScript('load/rest.js'), LOAD_CPU);
  const chat = new BenchChild('chat load generator', benchScript('load/chat.js'), LOAD_CPU);
  const ids = idPool(users, 1000);
  const record = async (
    figure: string,
    build: Build,
    round: number,
    run: (cost: (seconds: number) => void) => Promise<number>,
  ) => {
    const others = otherLoadMeter(benchPids);
    let cost: number | undefined;
    try {
      const value = await run((seconds) => (cost = seconds));
      samples.push({ figure, build: build.name, round, value, cost, otherLoad: others() });
      progress(`drift, round ${round + 1}, ${figure}, ${build.name}: ${integer(value)}/s`);
    } catch (error) {
      samples.push({ figure, build: build.name, round, error: errorText(error) });
    }
  };
  const restRates = (build: Build, round: number) =>
    withServer(rosterServer(build.folder), build.name, users, ROSTER_ENV, async (server, started) => {
      for (const figure of restFigures) {
        const job = (seconds: number): RestJob => ({
          cmd: 'run',
          url: `http://127.0.0.1:${started.port}`,
          serverPid: server.pid,
          target: figure.target(ids),
          connections: plan.rest.connections,
          seconds,
          timeoutSeconds: plan.rest.timeoutSeconds,
        });
        await record(figure.label, build, round, async (cost) => {
          await rest.request<RestResult>(job(plan.rest.warmupSeconds), 60_000);
          const before = processCpuSeconds(server.pid);
          const result = await rest.request<RestResult>(job(plan.rest.seconds), (plan.rest.seconds + 60) * 1000);
          const after = processCpuSeconds(server.pid);
          if (before !== undefined && after !== undefined)
            cost((after - before) / (result.requestsPerSecond * plan.rest.seconds));
          if (result.non2xx > 0 || result.errors > 0)
            throw new Error(`${result.non2xx} non-2xx, ${result.errors} errors: not measured`);
          return result.requestsPerSecond;
        });
      }
    });
  try {
    for (let round = 0; round < rounds; round++) {
      // Alternating which build goes first, round by round.
      const order = round % 2 === 0 ? builds : [...builds].reverse();
      for (const build of restFigures.length > 0 ? order : []) {
        try {
          await restRates(build, round);
        } catch (error) {
          samples.push({ figure: 'REST server', build: build.name, round, error: errorText(error) });
        }
      }
      for (const figure of chatFigures)
        for (const build of order)
          await record(figure.label, build, round, (cost) =>
            broadcast(rosterServer(build.folder), build.name, { ...ROSTER_ENV, ...figure.env }, plan, chat, cost),
          );
    }
  } finally {
    await Promise.all([rest.kill(), chat.kill()]);
  }
  const figures = [...restFigures, ...chatFigures].map((figure) => figure.label);
  return report(plan, builds, samples, rounds, users, figures);
}

function report(
  plan: Plan,
  builds: Build[],
  samples: Sample[],
  rounds: number,
  users: number,
  figures: string[],
): SectionReport {
  const values = (figure: string, build: string) =>
    samples.filter((s) => s.figure === figure && s.build === build && s.value !== undefined).map((s) => s.value!);
  const cell = (figure: string, build: string) => {
    const list = samples.filter((s) => s.figure === figure && s.build === build);
    return list.length === 0
      ? '–'
      : list
          .map((s) =>
            s.value === undefined
              ? (s.error ?? '–')
              : isDisturbed(s.otherLoad)
                ? `**${integer(s.value)}**`
                : integer(s.value),
          )
          .join(' / ');
  };
  const costs = (figure: string, build: string) =>
    samples.filter((s) => s.figure === figure && s.build === build && s.cost !== undefined).map((s) => s.cost!);
  /** Median CPU per unit: µs per request, or ns per delivery (chat). */
  const costCell = (figure: string, build: string) => {
    const value = median(costs(figure, build));
    return Number.isFinite(value)
      ? figure.startsWith('chat')
        ? `${integer(value * 1e9)} ns`
        : `${(value * 1e6).toFixed(0)} µs`
      : '–';
  };
  const current = builds[0]!.name;
  const others = builds.slice(1).map((build) => build.name);
  const targets: Target[] = [];
  const rows = figures.map((figure) => {
    const mine = median(values(figure, current));
    const ratios = others.map((other) => mine / median(values(figure, other)));
    const against = others.indexOf(BASELINE_COMMIT);
    if (against !== -1) {
      const value = ratios[against]!;
      targets.push({
        label: `${figure} against ${BASELINE_COMMIT}`,
        figure: ratio(value),
        goal: `≥ ${TARGET.toFixed(2)}×`,
        pass: Number.isFinite(value) ? value >= TARGET : undefined,
        disturbed: samples.some((s) => s.figure === figure && isDisturbed(s.otherLoad)),
      });
    }
    // CPU per unit, the other build's over this one's: below 1, this build spends more per request.
    const cheaper = others.map((other) => median(costs(figure, other)) / median(costs(figure, current)));
    return [
      figure,
      ...builds.map((build) => cell(figure, build.name)),
      ...ratios.map(ratio),
      builds.map((build) => costCell(figure, build.name)).join(' / '),
      ...cheaper.map(ratio),
    ];
  });
  const failures = samples.filter((s) => s.error !== undefined);
  const [one, five, fifteen] = loadavg().map((load) => load.toFixed(2));
  const markdown = [
    '### Drift against a fixed older build',
    '',
    `This build against ${BASELINE_COMMIT} (the last commit before the chat thread, built by \`node dist/bench/baseline.js\` into ${builds[1]?.folder ? `\`${builds[1].folder}\`` : 'its cache folder'})${others.includes('BENCH_BEFORE') ? ` and the build in BENCH_BEFORE (\`${process.env.BENCH_BEFORE}\`)` : ''}, ${rounds} round${rounds === 1 ? '' : 's'}, the builds alternating which goes first; each figure per round, the ratio is of the medians. Server CPU per unit: the server process's CPU time (both threads, from \`/proc\`) per request or per delivery during the measured run, medians; its ratio is the other build's over this one's (below 1: this build spends more), which other processes' load disturbs less than the rates. REST: memory store, ${integer(users)} users, ${plan.rest.connections} connections, ${plan.rest.seconds} s after ${plan.rest.warmupSeconds} s of warm-up, requests/s. Chat: deliveries/s, ${integer(Math.min(...plan.chat.clients))} clients, 4 senders, a fresh server per figure. Servers alone on CPU ${SERVER_CPU}, generators on CPU ${LOAD_CPU}. Load average at the end (\`uptime\`): ${one}, ${five}, ${fifteen}.`,
    '',
    table(
      [
        'Figure',
        ...builds.map((build) => (build.folder ? build.name : 'this build')),
        ...others.map((other) => `ratio to ${other}`),
        `server CPU per unit (${builds.map((build) => build.name).join(' / ')})`,
        ...others.map((other) => `CPU ratio (${other} / this)`),
      ],
      rows,
    ),
    ...disturbed(samples).map((line) => line.replace('(bold in the CPU column)', '(in bold)')),
    ...failures
      .filter((s) => !figures.includes(s.figure))
      .map((s) => `- **${s.figure} (${s.build}) failed**: ${s.error}`),
    '',
    'Targets:',
    '',
    targetLines(targets),
  ].join('\n');
  return { markdown, targets, errors: failures.length };
}
