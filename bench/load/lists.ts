/**
 * Benchmark child: the list queries' client (the lists section). Sends one kind of request over
 * keep-alive connections, each connection one request at a time, and times every response from the
 * request's start to its body's end. A run lasts `seconds`, and longer until it has `minSamples`
 * responses, but never past `maxSeconds` (a query that takes seconds still yields a figure).
 *
 * - `get`: the paths in turn, on one connection (the list queries).
 * - `search-after-write`: one PATCH of a user's name, then one search, in turn, on one connection;
 *   the search's times alone are reported.
 * - `create` / `patch`: a burst of writes on `clients` connections (new emails; names of random users).
 */
import { Agent, request } from 'node:http';
import { answerParent } from '../ipc.js';
import { percentile, sortedSamples } from '../stats.js';

const USERS_PATH = '/api/v1/users';

interface Run {
  url: string;
  seconds: number;
  minSamples: number;
  maxSeconds: number;
}

export type ListsJob =
  | (Run & { cmd: 'get'; paths: string[] })
  | (Run & { cmd: 'search-after-write'; ids: string[]; searchPath: string })
  | (Run & { cmd: 'create' | 'patch'; ids: string[]; clients: number });

export interface ListsResult {
  samples: number;
  p50Ms: number;
  p95Ms: number;
  /** Responses (of the kind reported) per second of the run. */
  perSecond: number;
  /** Responses that were not 2xx (a list the database did not answer in time is a 503). */
  failures: number;
  /** The slowest of them, in ms: how long the server took to give up. */
  failedMaxMs: number;
  /** Requests that got no response at all (the connection failed). */
  errors: number;
  /** The first failure or error, short: `503 SERVICE_UNAVAILABLE`. */
  firstFailure?: string;
  /** `pagination.total` of the last list reply, when the run read lists. */
  total?: number;
}

interface Reply {
  status: number;
  body: string;
}

/** Numbers the created emails and the patched names: unique within this process. */
let sequence = 0;

function send(agent: Agent, url: string, method: string, path: string, body?: object): Promise<Reply> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      new URL(path, url),
      {
        method,
        agent,
        headers: payload === undefined ? {} : { 'content-type': 'application/json' },
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('end', () =>
          resolve({ status: incoming.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        incoming.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

function totalOf(reply: Reply): number | undefined {
  try {
    return (JSON.parse(reply.body) as { data?: { pagination?: { total?: number } } }).data?.pagination?.total;
  } catch {
    return undefined;
  }
}

/** The error envelope's code, or the start of the body when it has none. */
function codeOf(reply: Reply): string {
  try {
    return (JSON.parse(reply.body) as { error?: { code?: string } }).error?.code ?? reply.body.slice(0, 40);
  } catch {
    return reply.body.slice(0, 40);
  }
}

const pick = (ids: readonly string[]) => ids[Math.floor(Math.random() * ids.length)]!;

answerParent<ListsJob>(async (job) => {
  const clients = job.cmd === 'create' || job.cmd === 'patch' ? job.clients : 1;
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const times: number[] = [];
  let failures = 0;
  let failedMaxMs = NaN;
  let errors = 0;
  let firstFailure: string | undefined;
  let last: Reply | undefined;
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;
  const going = () =>
    elapsed() < job.maxSeconds && (elapsed() < job.seconds || times.length + failures + errors < job.minSamples);

  /** Sends one request, timing it into `times` when `timed`. */
  const timedSend = async (method: string, path: string, body: object | undefined, timed: boolean) => {
    const at = performance.now();
    try {
      const reply = await send(agent, job.url, method, path, body);
      if (reply.status < 200 || reply.status > 299) {
        failures++;
        failedMaxMs = Math.max(Number.isNaN(failedMaxMs) ? 0 : failedMaxMs, performance.now() - at);
        firstFailure ??= `${method} ${reply.status} ${codeOf(reply)}`;
        return undefined;
      }
      if (timed) times.push(performance.now() - at);
      return reply;
    } catch (error) {
      errors++;
      firstFailure ??= `${method}: ${error instanceof Error ? error.message : String(error)}`;
      return undefined;
    }
  };

  const worker = async () => {
    let turn = 0;
    while (going()) {
      switch (job.cmd) {
        case 'get':
          last = (await timedSend('GET', job.paths[turn++ % job.paths.length]!, undefined, true)) ?? last;
          break;
        case 'search-after-write':
          await timedSend('PATCH', `${USERS_PATH}/${pick(job.ids)}`, { name: `Lists Patched ${++sequence}` }, false);
          last = (await timedSend('GET', job.searchPath, undefined, true)) ?? last;
          break;
        case 'create':
          await timedSend(
            'POST',
            USERS_PATH,
            { name: 'Lists Created', email: `lists.${process.pid}.${++sequence}@example.com` },
            true,
          );
          break;
        case 'patch':
          await timedSend('PATCH', `${USERS_PATH}/${pick(job.ids)}`, { name: `Lists Patched ${++sequence}` }, true);
          break;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: clients }, worker));
  } finally {
    agent.destroy();
  }
  const sorted = sortedSamples(times);
  const result: ListsResult = {
    samples: times.length,
    p50Ms: percentile(sorted, 50),
    p95Ms: percentile(sorted, 95),
    perSecond: times.length / elapsed(),
    failures,
    failedMaxMs,
    errors,
    ...(firstFailure !== undefined && { firstFailure }),
    ...(last && job.cmd !== 'create' && job.cmd !== 'patch' && { total: totalOf(last) }),
  };
  return result;
});
