/**
 * Instructions per request, this build against 41a4c31 (baseline.ts), counted by valgrind's callgrind:
 * a figure that does not wander with the machine. This machine's speed moves by up to half between
 *  rounds of the drift section (BENCHMARKS.md), so a few percent there takes many rounds to see;
 * instruction counts of the same requests agree run to run within about 2 %. They leave
 * out what the CPU's caches add (the creates' search index costs more in time than in instructions),
 * so they find where drift is, and the drift section still says whether it is gone.
 *
 *   apt-get install valgrind   # once
 *   npm run build && node dist/bench/baseline.js && node dist/bench/instructions.js [list|create|id] [requests]
 *
 * Each build's bench server (servers/roster.ts, 10 000 users) runs under callgrind, a hundred times
 * slower than alone. After `requests` of warm-up (so that V8 has optimised the hot paths), callgrind's
 * counters are zeroed (`callgrind_control --dump`) and `requests` more are sent; the second dump's total
 * over `requests` is the figure, over all of the process's threads. With BENCH_PERF_MAP=1 the servers
 * run with `--perf-basic-prof`, so that /tmp/perf-<pid>.map names the JIT code's addresses in
 * `callgrind_annotate`'s list. Both builds run at once (one CPU each): counts do not depend on timing.
 * By hand: no package counts a child's instructions; this is a bench child (ipc.ts) under valgrind
 * and two control calls.
 */
import autocannon from 'autocannon';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baselineFolder, baselineLabel, baselineReady } from './baseline.js';
import { BenchChild, LOAD_CPU, SERVER_CPU } from './ipc.js';
import { rosterServer } from './sections/common.js';
import type { RosterStarted } from './servers/roster.js';
import { benchUser } from './users.js';

const VALGRIND = '/usr/bin/valgrind';
const USERS = 10_000;
const scenarios = ['list', 'create', 'id'] as const;
type Scenario = (typeof scenarios)[number];

const scenario = (process.argv[2] ?? 'list') as Scenario;
const requests = Number(process.argv[3] ?? 2000);
if (!scenarios.includes(scenario) || !(requests > 0)) {
  console.error(`usage: node dist/bench/instructions.js [${scenarios.join('|')}] [requests]`);
  process.exit(2);
}
if (!existsSync(VALGRIND)) {
  console.error('valgrind is not installed (apt-get install valgrind)');
  process.exit(2);
}
if (!baselineReady()) {
  console.error('41a4c31 is not built: node dist/bench/baseline.js');
  process.exit(2);
}

/** Numbers created emails, which must be new. */
let created = 0;

function load(url: string, amount: number): Promise<autocannon.Result> {
  const base = { url, connections: 10, amount };
  if (scenario === 'list') return autocannon({ ...base, url: `${url}/api/v1/users` });
  if (scenario === 'id') return autocannon({ ...base, url: `${url}/api/v1/users/${benchUser(5).id}` });
  return autocannon({
    ...base,
    url: `${url}/api/v1/users`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (request) =>
          Object.assign(request, {
            body: JSON.stringify({ name: 'Bench Created', email: `bench.${process.pid}.${++created}@example.com` }),
          }),
      },
    ],
  });
}

/** A server's start under callgrind: ten thousand users stored at a hundredth of the usual speed. */
const START_MS = 10 * 60_000;

/** The instructions per request of a build's bench server (`server`: rosterServer of its folder), on `cpu`. */
async function count(server: URL, name: string, cpu: number, out: string): Promise<number> {
  const file = join(out, `${name}.%p`);
  const child = new BenchChild(name, server, cpu, process.env.BENCH_PERF_MAP === '1' ? ['--perf-basic-prof'] : [], [
    VALGRIND,
    '-q',
    '--tool=callgrind',
    `--callgrind-out-file=${file}`,
  ]);
  try {
    const { port } = await child.request<RosterStarted>({ cmd: 'start', users: USERS, env: {} }, START_MS);
    const url = `http://127.0.0.1:${port}`;
    const dump = () => execFileSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'ignore' });
    await load(url, requests);
    dump();
    const result = await load(url, requests);
    dump();
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${name}: ${result.non2xx} replies not 2xx`);
    const measured = file.replace('%p', `${child.pid}.2`);
    const total = /^totals: (\d+)$/m.exec(readFileSync(measured, 'utf8'))?.[1];
    if (total === undefined) throw new Error(`${name}: no totals in callgrind's second dump`);
    console.error(`[instructions] ${name}: ${measured}`);
    return Number(total) / result.requests.total;
  } finally {
    await child.kill();
  }
}

const out = mkdtempSync(join(tmpdir(), 'roster-instructions-'));
const [mine, theirs] = await Promise.all([
  count(rosterServer(), 'this-build', SERVER_CPU, out),
  count(rosterServer(baselineFolder()), baselineLabel(), LOAD_CPU, out),
]);
const thousands = (value: number) => `${(value / 1000).toFixed(1)}k`;
console.log(
  `${scenario}, ${requests} requests after as many of warm-up, memory store, ${USERS} users: ` +
    `this build ${thousands(mine)} instructions a request, ${baselineLabel()} ${thousands(theirs)} ` +
    `(ratio ${(mine / theirs).toFixed(3)})`,
);
