/**
 * The changes section (`--only changes`): Roster on the memory store, pinned to the server CPU, with
 * STREAMS open Server-Sent Events streams of the change feed, and one write a millisecond for
 * BENCH_CHANGES_SECONDS (60 by default). Rounds alternate without streams and with them (each
 * round's own streams, opened before its writes): a write's latency is compared, p50 and p99, and
 * every stream must have received every change of its round, in order, none twice.
 * The load (writer and streams) runs in this process, pinned to the load CPU.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { request as httpRequest, Agent, type IncomingMessage } from 'node:http';
import { LOAD_CPU, pinned, SERVER_CPU } from '../ipc.js';
import { ms, ratio, table, targetLines, type Target } from '../report.js';
import { percentile, sortedSamples } from '../stats.js';
import { progress, sleep, type Plan, type SectionReport } from './common.js';
import { freePort } from '../../test/support/http.js';

const STREAMS = Number(process.env.BENCH_CHANGES_STREAMS ?? 1000);
const SECONDS = Number(process.env.BENCH_CHANGES_SECONDS ?? 60);
const ROUNDS = 2; // of each kind, alternating
/** The target: a write's latency with the streams open, against none, at p50 and p99. */
const RATIO = 1.1;

interface Stream {
  seqs: number[];
  response: IncomingMessage;
}

function openStream(url: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false, headers: { accept: 'text/event-stream' } });
    req.on('error', reject);
    req.on('response', (response) => {
      const stream: Stream = { seqs: [], response };
      let rest = '';
      response.setEncoding('latin1');
      response.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        // Only the ids are read: `id: <epoch>.<seq>`.
        for (const line of lines)
          if (line.startsWith('id: ')) stream.seqs.push(Number(line.slice(line.lastIndexOf('.') + 1)));
      });
      resolve(stream);
    });
    req.end();
  });
}

async function writes(api: string, seconds: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const latencies: number[] = [];
  const start = performance.now();
  const pending: Promise<void>[] = [];
  for (let n = 0; performance.now() - start < seconds * 1000; n++) {
    const due = start + n;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      new Promise<void>((resolve) => {
        const sent = performance.now();
        const body = JSON.stringify({ name: `w${n}`, email: `w${n}-${start}@example.com` });
        const req = httpRequest(`${api}/users`, {
          agent,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        });
        req.on('response', (response) => {
          response.resume();
          response.on('end', () => {
            latencies.push(performance.now() - sent);
            resolve();
          });
        });
        req.on('error', () => resolve());
        req.end(body);
      }),
    );
  }
  await Promise.all(pending);
  agent.destroy();
  return latencies;
}

async function startServer(port: number): Promise<ChildProcess> {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    WS_PORT: '0',
    LOG_LEVEL: 'warn',
    MAX_CONNECTIONS_PER_ADDRESS: '0',
    MAX_USERS: '0',
    CONSOLE: 'false',
  };
  delete env.DATABASE_URL;
  const main = new URL('../../src/main.js', import.meta.url).pathname;
  const args = pinned ? ['-c', String(SERVER_CPU), process.execPath, main] : [main];
  const child = spawn(pinned ? '/usr/bin/taskset' : process.execPath, args, { env, stdio: 'ignore' });
  for (let tries = 0; tries < 200; tries++) {
    try {
      await fetch(`http://127.0.0.1:${port}/readyz`);
      return child;
    } catch {
      await sleep(100);
    }
  }
  throw new Error('Roster did not start');
}

export async function changesSection(_plan: Plan): Promise<SectionReport> {
  if (pinned) spawn('/usr/bin/taskset', ['-pc', String(LOAD_CPU), String(process.pid)], { stdio: 'ignore' });
  const port = await freePort();
  const server = await startServer(port);
  const api = `http://127.0.0.1:${port}/api/v1`;
  const rows: (string | number)[][] = [];
  const samples: Record<'none' | 'streams', number[]> = { none: [], streams: [] };
  let complete = true;
  try {
    for (let round = 0; round < ROUNDS * 2; round++) {
      const withStreams = round % 2 === 1;
      const head = ((await (await fetch(`${api}/users/changes`)).json()) as { next: string }).next;
      const streams: Stream[] = [];
      if (withStreams)
        for (let i = 0; i < STREAMS; i++) streams.push(await openStream(`${api}/users/changes?since=${head}`));
      progress(`changes: round ${round + 1}, ${withStreams ? STREAMS : 0} streams, ${SECONDS} s of writes`);
      const latencies = await writes(api, SECONDS);
      samples[withStreams ? 'streams' : 'none'].push(...latencies);
      if (withStreams) {
        const first = Number(head.split('.')[1]) + 1;
        const expected = latencies.length;
        const deadline = Date.now() + 30_000;
        while (Date.now() < deadline && streams.some((stream) => stream.seqs.length < expected)) await sleep(100);
        const whole = streams.filter((stream) =>
          stream.seqs.length === expected ? stream.seqs.every((seq, index) => seq === first + index) : false,
        ).length;
        if (whole < streams.length) complete = false;
        rows.push([`${round + 1} (streams)`, expected, `${whole} / ${streams.length}`]);
        for (const stream of streams) stream.response.destroy();
      } else rows.push([`${round + 1} (none)`, latencies.length, '–']);
    }
  } finally {
    server.kill();
  }
  const none = sortedSamples(samples.none);
  const streams = sortedSamples(samples.streams);
  const p = (sorted: Float64Array, q: number) => percentile(sorted, q);
  const targets: Target[] = [50, 99].map((q) => ({
    label: `write p${q} with ${STREAMS} streams against none`,
    figure: `${ratio(p(streams, q) / p(none, q))} (${ms(p(streams, q))} against ${ms(p(none, q))})`,
    goal: `≤ ${RATIO}×`,
    pass: p(streams, q) / p(none, q) <= RATIO,
  }));
  targets.push({
    label: 'every stream saw every change of its round, in order, once',
    figure: complete ? 'yes' : 'no',
    goal: 'yes',
    pass: complete,
  });
  const markdown = [
    `## Change feed: ${STREAMS} streams, a write a millisecond for ${SECONDS} s per round`,
    table(['round', 'writes', 'streams complete'], rows),
    targetLines(targets),
  ].join('\n\n');
  return { markdown, targets, errors: 0 };
}
