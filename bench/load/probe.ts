/**
 * The REST probe of the "search as you type" clients (load/typing.ts), on a worker thread of its
 * own: `GET /livez` every PROBE_MS on a connection of its own, timed from the request's start to
 * its body's end, until the main thread says stop; then it posts back its times. On its own thread
 * so that the searching clients' replies, read on the main thread, do not delay it: on the main
 * thread it shared one event loop with 2 500 replies a second, and what it measured was partly that.
 */
import { Agent } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { get } from './get.js';

/** How often the probe asks for /livez. */
const PROBE_MS = 20;

export interface ProbeData {
  url: string;
}

export interface ProbeTimes {
  times: number[];
  failures: number;
}

const { url } = workerData as ProbeData;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
let stopped = false;
parentPort!.once('message', () => (stopped = true));

/** A /livez answered 200; anything else, or no answer, rejects (a failure). */
async function livez(): Promise<void> {
  const reply = await get(agent, url, '/livez');
  if (reply.status !== 200) throw new Error(`/livez answered ${reply.status}`);
}

const times: number[] = [];
let failures = 0;
while (!stopped) {
  const at = performance.now();
  await livez().then(
    () => times.push(performance.now() - at),
    () => failures++,
  );
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, PROBE_MS - (performance.now() - at))));
}
agent.destroy();
const result: ProbeTimes = { times, failures };
parentPort!.postMessage(result);
