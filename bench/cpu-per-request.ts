/**
 * CPU time per request of health and get by id, on Roster, the Fastify floor and the node:http
 * baseline: the figure to trust on a shared machine, where req/s moves with whatever else runs.
 *
 *   npm run build && taskset -c 1 node dist/bench/cpu-per-request.js [users] [seconds] [rounds] [servers]
 *
 * Each server is a bench child (servers/*.ts) pinned to CPU 0 when taskset is there; this process is
 * the load generator (autocannon, 50 connections). After a warm-up, it reads the server's user + system
 * CPU time from /proc/<pid>/stat around a measured run and divides by the responses received. Rounds
 * alternate the servers, so a neighbour's burst lands on all of them. `servers` is a comma list of
 * roster, floor, node (default all three); ROSTER_ENV='{"METRICS":"false"}' adds settings to Roster's
 * environment, and CPU_PROF=<folder> runs every server under `node --cpu-prof`.
 */
import autocannon from 'autocannon';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pinned, SERVER_CPU } from './ipc.js';
import { processCpuSeconds } from './stats.js';
import { benchUser } from './users.js';

const SERVERS = {
  roster: 'servers/roster.js',
  floor: 'servers/fastify-floor.js',
  node: 'servers/http-baseline.js',
} as const;
type ServerName = keyof typeof SERVERS;

const [users = 1000, seconds = 5, rounds = 3] = process.argv.slice(2, 5).map(Number);
const names = (process.argv[5] ?? 'roster,floor,node').split(',') as ServerName[];
const rosterEnv = JSON.parse(process.env.ROSTER_ENV ?? '{}') as Record<string, string>;
const profileDir = process.env.CPU_PROF;

interface Started {
  child: ChildProcess;
  port: number;
}

/** Forks a bench server child (the IPC protocol of ipc.ts: one command, one reply) and starts it. */
async function start(name: ServerName): Promise<Started> {
  const script = fileURLToPath(new URL(SERVERS[name], import.meta.url));
  const execArgv = profileDir
    ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}.cpuprofile`]
    : [];
  const child = fork(script, [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // Pinned after the fact: taskset -p moves the running process (and its threads: -a).
  if (pinned) {
    const { execFileSync } = await import('node:child_process');
    execFileSync('/usr/bin/taskset', ['-a', '-p', '-c', String(SERVER_CPU), String(child.pid)], { stdio: 'ignore' });
  }
  const reply = await new Promise<{ ok: boolean; value?: { port: number }; error?: string }>((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)));
    child.send({ id: 1, cmd: 'start', users, env: rosterEnv });
  });
  if (!reply.ok || !reply.value) throw new Error(`${name}: ${reply.error}`);
  return { child, port: reply.value.port };
}

const ids = Array.from({ length: Math.min(users, 10_000) }, (_, index) => benchUser(index).id);

function run(port: number, scenario: 'health' | 'get', duration: number): Promise<autocannon.Result> {
  const url = `http://127.0.0.1:${port}`;
  const requests =
    scenario === 'health'
      ? { requests: [{ method: 'GET' as const, path: '/api/v1/health' }] }
      : {
          requests: [{ method: 'GET' as const, path: `/api/v1/users/${ids[0]}` }],
          setupClient: (client: autocannon.Client) =>
            client.setRequests(
              Array.from({ length: 100 }, () => ({
                method: 'GET' as const,
                path: `/api/v1/users/${ids[Math.floor(Math.random() * ids.length)]}`,
              })),
            ),
        };
  return autocannon({ url, connections: 50, pipelining: 1, duration, sampleInt: 100, ...requests });
}

const started = new Map<ServerName, Started>();
for (const name of names) started.set(name, await start(name));
const figures = new Map<string, number[]>();
for (let round = 0; round < rounds; round++) {
  for (const scenario of ['get', 'health'] as const) {
    for (const name of names) {
      const { child, port } = started.get(name)!;
      await run(port, scenario, round === 0 ? 3 : 1); // warm-up
      const before = processCpuSeconds(child.pid!)!;
      const result = await run(port, scenario, seconds);
      const cpu = processCpuSeconds(child.pid!)! - before;
      const answered = result['2xx'];
      if (result.non2xx > 0 || result.errors > 0)
        console.error(`${name} ${scenario}: ${result.non2xx} non-2xx, ${result.errors} errors`);
      const micros = (cpu / answered) * 1e6;
      const key = `${scenario} ${name}`;
      figures.set(key, [...(figures.get(key) ?? []), micros]);
      console.error(
        `round ${round + 1} ${key}: ${micros.toFixed(2)} µs/request (${answered} requests, ${(answered / seconds).toFixed(0)} req/s)`,
      );
    }
  }
}
console.log(`CPU per request at ${users} users (${rounds} rounds of ${seconds} s; min / median / max):`);
for (const [key, values] of figures) {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  console.log(
    `  ${key.padEnd(16)} ${sorted[0]!.toFixed(2)} / ${median.toFixed(2)} / ${sorted[sorted.length - 1]!.toFixed(2)} µs`,
  );
}
for (const { child } of started.values()) child.disconnect(); // children exit (and write profiles)
