/**
 * Benchmark child: the changes section's writer (bench/sections/changes.ts). It creates a user a
 * millisecond for `seconds` and reports each create's latency (request start to body end). It runs in
 * a process of its own, so that the stream readers' work (bench/load/change-readers.ts) does not delay
 * its own event loop and show up as the server's latency.
 *
 * Pacing: every turn it sends the creates that are due by now, then sleeps a millisecond; kept-alive
 * sockets with TCP_NODELAY.
 */
import { Agent, request } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { answerParent } from '../ipc.js';

export interface WriteJob {
  cmd: 'write';
  /** The API's base URL, `http://host:port/api/v1`. */
  api: string;
  seconds: number;
}

export interface WriteResult {
  /** Latencies of the creates answered 201, ms. */
  latencies: number[];
  /** Creates not answered 201 (or failed), and the first of them. */
  failures: number;
  firstFailure?: string;
  /**
   * How late this process's own event loop ran while it wrote, p99 in ms: the writer's own waits (its
   * CPU shared with the readers), which add to the latencies it measures.
   */
  loopDelayP99: number;
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

async function write({ api, seconds }: WriteJob): Promise<WriteResult> {
  // At most 256 sockets: when replies are slow, an unbounded pool opened thousands of connections (and
  // got resets); a create that waits for a socket counts that wait in its latency.
  const agent = new Agent({ keepAlive: true, maxSockets: 256, noDelay: true });
  const latencies: number[] = [];
  let failures = 0;
  let firstFailure: string | undefined;
  const fail = (why: string) => {
    failures++;
    firstFailure ??= why;
  };
  let inFlight = 0;
  const tag = Date.now().toString(36);
  const create = (n: number) => {
    inFlight++;
    const body = JSON.stringify({ name: `w${n}`, email: `w${n}-${tag}@example.com` });
    const sent = performance.now();
    const req = request(`${api}/users`, {
      agent,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (response) => {
      response.resume();
      response.on('end', () => {
        inFlight--;
        if (response.statusCode === 201) latencies.push(performance.now() - sent);
        else fail(`status ${response.statusCode}`);
      });
    });
    req.on('error', (error) => {
      inFlight--;
      fail(error.message);
    });
    req.end(body);
  };
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const start = performance.now();
  const end = start + seconds * 1000;
  let n = 0;
  for (let now = start; now < end; now = performance.now()) {
    for (const due = Math.min(now, end) - start; n <= due; n++) create(n);
    await tick();
  }
  delay.disable();
  for (const deadline = Date.now() + 60_000; inFlight > 0 && Date.now() < deadline;) await tick();
  agent.destroy();
  // The histogram holds each interval between its samples: the 1 ms interval is taken off.
  return { latencies, failures, firstFailure, loopDelayP99: delay.percentile(99) / 1e6 - 1 };
}

answerParent<WriteJob>((job) => write(job));
