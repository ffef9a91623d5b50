/**
 * Benchmark child: the REST load generator. Runs one autocannon scenario per command (keep-alive, a
 * fixed number of connections, a fixed duration) and reports throughput, latency percentiles (from
 * every response's own time, not autocannon's whole-millisecond histogram), failures, and how busy the
 * server and the generator were.
 */
import autocannon from 'autocannon';
import { answerParent } from '../ipc.js';
import { cpuMeter, percentile, sortedSamples } from '../stats.js';

const USERS_PATH = '/api/v1/users';
const JSON_HEADERS = { 'content-type': 'application/json' };

/** What each request of a scenario is. */
export type RestTarget =
  | { kind: 'get'; path: string }
  /** `headers`: sent with every request, such as credentials. */
  | { kind: 'get-by-id'; ids: string[]; headers?: Record<string, string> }
  | { kind: 'create' }
  | { kind: 'patch'; ids: string[] };

export interface RestJob {
  cmd: 'run';
  /** Several: the connections are spread evenly over them (several instances of one service). */
  url: string | string[];
  serverPid: number;
  target: RestTarget;
  connections: number;
  seconds: number;
  /** A request unanswered this long counts as an error (a timeout). */
  timeoutSeconds: number;
}

export interface RestResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  /** Connection errors and timeouts. */
  errors: number;
  /** How busy the server's CPU and the generator's CPU were while measuring (see cpuMeter). */
  serverCpu: number | undefined;
  generatorCpu: number | undefined;
}

/** Numbers created emails (each must be new) and patched names. */
let sequence = 0;
/**
 * Requests per connection for the scenarios on random ids: each connection cycles through its own
 * random list, built once. (A setupRequest makes autocannon rebuild the request every time, which
 * costs the generator more than a simple server spends answering it.)
 */
const REQUESTS_PER_CONNECTION = 100;

type Requests = Pick<autocannon.Options, 'requests' | 'setupClient'>;

function randomId(ids: readonly string[]): string {
  return ids[Math.floor(Math.random() * ids.length)]!;
}

function onRandomIds(ids: readonly string[], request: (id: string) => autocannon.Request): Requests {
  const list = () => Array.from({ length: REQUESTS_PER_CONNECTION }, () => request(randomId(ids)));
  return { requests: [request(ids[0]!)], setupClient: (client) => client.setRequests(list()) };
}

function requestsFor(target: RestTarget): Requests {
  switch (target.kind) {
    case 'get':
      return { requests: [{ method: 'GET', path: target.path }] };
    case 'get-by-id':
      return onRandomIds(target.ids, (id) => ({
        method: 'GET',
        path: `${USERS_PATH}/${id}`,
        ...(target.headers && { headers: target.headers }),
      }));
    case 'patch':
      return onRandomIds(target.ids, (id) => ({
        method: 'PATCH',
        path: `${USERS_PATH}/${id}`,
        headers: JSON_HEADERS,
        body: JSON.stringify({ name: `Renamed User ${++sequence}` }),
      }));
    case 'create':
      // Every email must be new, so this one is built per request.
      return {
        requests: [
          {
            method: 'POST',
            path: USERS_PATH,
            headers: JSON_HEADERS,
            setupRequest: (request) =>
              Object.assign(request, {
                body: JSON.stringify({
                  name: 'Bench Created',
                  email: `bench.${process.pid}.${++sequence}@example.com`,
                }),
              }),
          },
        ],
      };
  }
}

/** One autocannon run; `onResponse` sees each response's status and time in milliseconds. */
function cannon(job: RestJob, onResponse: (status: number, ms: number) => void): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        // autocannon takes several URLs at run time; its types know only one.
        url: job.url as string,
        connections: job.connections,
        // One request at a time per connection, stated rather than left to autocannon's default: with
        // one connection, latency is then the server's own time, without queueing.
        pipelining: 1,
        duration: job.seconds,
        // autocannon stops at a sample tick; at its default of 1 s, a run would overshoot by up to 1 s.
        sampleInt: 100,
        timeout: job.timeoutSeconds,
        ...requestsFor(job.target),
      },
      (error: unknown, result) =>
        error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(result),
    );
    instance.on('response', (_client, status, _bytes, ms) => onResponse(status, ms));
  });
}

answerParent<RestJob>(async (job) => {
  const latencies: number[] = [];
  let non2xx = 0;
  const cpu = cpuMeter(job.serverPid);
  const result = await cannon(job, (status, ms) => {
    latencies.push(ms);
    if (status < 200 || status > 299) non2xx++;
  });
  const usage = cpu();
  const sorted = sortedSamples(latencies);
  const outcome: RestResult = {
    requestsPerSecond: latencies.length / result.duration,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    non2xx,
    errors: result.errors,
    serverCpu: usage.server,
    generatorCpu: usage.generator,
  };
  return outcome;
});
