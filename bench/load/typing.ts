/**
 * Benchmark child: the "search as you type" section's clients (bench/sections/search.ts). `clients`
 * connections each send `GET /api/v1/users?search=<term>`, one request at a time, every request a term
 * this child has not sent to that server before, drawn as a person types: the first one to four
 * characters of a name, a last name or an email of a bench user, or four digits of a user's number.
 * Beside them, a probe sends `GET /livez` every PROBE_MS on a connection of its own. Times run from
 * the request's start to its body's end.
 */
import { Agent, request } from 'node:http';
import { answerParent } from '../ipc.js';
import { percentile, sortedSamples } from '../stats.js';
import { benchUser } from '../users.js';

/** How often the probe asks for /livez. */
const PROBE_MS = 20;

export interface TypingJob {
  cmd: 'type';
  url: string;
  clients: number;
  seconds: number;
  /** Users the server holds: the terms come from the first `users` bench users. */
  users: number;
}

export interface Timings {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  perSecond: number;
}

export interface TypingResult {
  searches: Timings;
  probe: Timings;
  /** Replies that were not 200, and the first of them. */
  failures: number;
  firstFailure?: string;
  /** Searches of one or two characters among them, and their p50. */
  short: Timings;
}

/** Terms already sent, per server: every request a fresh term, also across the rows of a run. */
const sent = new Map<string, Set<string>>();

/** The next fresh term for `url`: a random user, a random word of it, typed from its start. */
function typist(url: string, users: number): () => string {
  let used = sent.get(url);
  if (!used) sent.set(url, (used = new Set()));
  const seen = used;
  let typing: string[] = [];
  return () => {
    for (let attempt = 0; ; attempt++) {
      if (typing.length === 0) {
        const index = Math.floor(Math.random() * users);
        const user = benchUser(index);
        const [first, last] = user.name.split(' ').filter((word) => !word.endsWith('.'));
        const digits = String(index).padStart(4, '0');
        const at = Math.floor(Math.random() * (digits.length - 3));
        const words = [first ?? user.name, last ?? user.name, user.email, digits.slice(at, at + 4)];
        const word = words[Math.floor(Math.random() * words.length)]!.toLowerCase();
        // Keystrokes: a digit run is pasted whole; a word typed one character at a time, up to four.
        typing = /^\d{4}$/.test(word) ? [word] : [1, 2, 3, 4].map((length) => word.slice(0, length));
      }
      const term = typing.shift()!;
      if (!seen.has(term) || attempt > 10_000) {
        seen.add(term);
        return term;
      }
    }
  };
}

function get(agent: Agent, url: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(new URL(path, url), { agent }, (incoming) => {
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      incoming.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

function timings(times: number[], seconds: number): Timings {
  const sorted = sortedSamples(times);
  return {
    samples: times.length,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    perSecond: times.length / seconds,
  };
}

answerParent<TypingJob>(async (job) => {
  const agent = new Agent({ keepAlive: true, maxSockets: job.clients });
  const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const next = typist(job.url, job.users);
  const times: number[] = [];
  const short: number[] = [];
  const probes: number[] = [];
  let failures = 0;
  let firstFailure: string | undefined;
  const started = performance.now();
  const going = () => performance.now() - started < job.seconds * 1000;
  const client = async () => {
    while (going()) {
      const term = next();
      const at = performance.now();
      try {
        const reply = await get(agent, job.url, `/api/v1/users?search=${encodeURIComponent(term)}`);
        if (reply.status !== 200) {
          failures++;
          firstFailure ??= `${reply.status} ${reply.body.slice(0, 60)}`;
          continue;
        }
      } catch (error) {
        failures++;
        firstFailure ??= error instanceof Error ? error.message : String(error);
        continue;
      }
      const took = performance.now() - at;
      times.push(took);
      if ([...term].length <= 2) short.push(took);
    }
  };
  const probe = async () => {
    while (going()) {
      const at = performance.now();
      await get(probeAgent, job.url, '/livez').then(
        () => probes.push(performance.now() - at),
        () => failures++,
      );
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, PROBE_MS - (performance.now() - at))));
    }
  };
  try {
    await Promise.all([probe(), ...Array.from({ length: job.clients }, client)]);
  } finally {
    agent.destroy();
    probeAgent.destroy();
  }
  const seconds = (performance.now() - started) / 1000;
  const result: TypingResult = {
    searches: timings(times, seconds),
    probe: timings(probes, seconds),
    short: timings(short, seconds),
    failures,
    ...(firstFailure !== undefined && { firstFailure }),
  };
  return result;
});
