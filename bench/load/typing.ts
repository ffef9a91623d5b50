/**
 * Benchmark child: the "search as you type" section's clients (bench/sections/search.ts). `clients`
 * connections each send `GET /api/v1/users?search=<term>`, one request at a time, every request a term
 * this child has not sent to that server before, drawn as a person types: the first one to four
 * characters of a name, a last name or an email of a bench user, or four digits of a user's number.
 * Beside them, a probe sends `GET /livez` every 20 ms on a connection and a thread of its own
 * (load/probe.ts). Times run from the request's start to its body's end.
 *
 * Terms of one to four characters are few: about 10 700 at a million bench users, nearly all of them
 * four digits. One client at 1 300 searches a second sends nearly all of them in 8 s, after which
 * finding a fresh one by typing took 10 000 draws (10 ms of this process's CPU a term, so the next row
 * measured this generator, and sent terms already seen). So every term there is, is listed once per
 * server (#pool), each row gets its `share` of those not yet sent, and a row whose share runs out
 * before its time ends there, saying when.
 */
import { Agent } from 'node:http';
import { Worker } from 'node:worker_threads';
import { answerParent } from '../ipc.js';
import { get } from './get.js';
import type { ProbeData, ProbeTimes } from './probe.js';
import { percentile, sortedSamples } from '../stats.js';
import { benchUser } from '../users.js';

export interface TypingJob {
  cmd: 'type';
  url: string;
  clients: number;
  seconds: number;
  /** Users the server holds: the terms come from the first `users` bench users. */
  users: number;
  /** The part of the terms not yet sent to this server that this row may send (1: all of them). */
  share: number;
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
  /** The row's share of fresh terms, sent before its time was up: when, in seconds. */
  ranOutAfterSeconds?: number;
}

/** The words a bench user is searched by: first name, last name, email, and its number's four-digit runs. */
function wordsOf(index: number): { words: string[]; digits: string[] } {
  const user = benchUser(index);
  const [first, last] = user.name.split(' ').filter((word) => !word.endsWith('.'));
  const number = String(index).padStart(4, '0');
  const digits = Array.from({ length: number.length - 3 }, (_, at) => number.slice(at, at + 4));
  return { words: [first ?? user.name, last ?? user.name, user.email].map((word) => word.toLowerCase()), digits };
}

/** What a word is typed as: a digit run pasted whole; a word one character at a time, up to four. */
const keystrokes = (word: string): string[] =>
  /^\d{4}$/.test(word) ? [word] : [1, 2, 3, 4].map((length) => word.slice(0, length));

/** Per server: the terms not yet sent to it, of every term its users can be searched by. */
const unsent = new Map<string, Set<string>>();

function pool(url: string, users: number): Set<string> {
  let terms = unsent.get(url);
  if (!terms) {
    terms = new Set();
    for (let index = 0; index < users; index++) {
      const { words, digits } = wordsOf(index);
      for (const word of [...words, ...digits]) for (const term of keystrokes(word)) terms.add(term);
    }
    unsent.set(url, terms);
  }
  return terms;
}

/**
 * The next fresh term for `url`, of at most `budget`: a random user, a random word of it, typed from
 * its start; when a few draws find only terms sent before, the next unsent one. Undefined once the
 * budget is spent or nothing is left.
 */
function typist(url: string, users: number, budget: number): () => string | undefined {
  const terms = pool(url, users);
  let typing: string[] = [];
  let left = budget;
  return () => {
    if (left <= 0 || terms.size === 0) return undefined;
    left--;
    for (let attempt = 0; attempt < 64; attempt++) {
      if (typing.length === 0) {
        const { words, digits } = wordsOf(Math.floor(Math.random() * users));
        const choices = [...words, digits[Math.floor(Math.random() * digits.length)]!];
        typing = keystrokes(choices[Math.floor(Math.random() * choices.length)]!);
      }
      const term = typing.shift()!;
      if (terms.delete(term)) return term;
    }
    const term = terms.values().next().value!;
    terms.delete(term);
    return term;
  };
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
  const fresh = pool(job.url, job.users).size;
  const next = typist(job.url, job.users, Math.floor(fresh * Math.min(1, job.share)));
  let ranOut: number | undefined;
  const times: number[] = [];
  const short: number[] = [];
  let failures = 0;
  let firstFailure: string | undefined;
  const started = performance.now();
  const going = () => ranOut === undefined && performance.now() - started < job.seconds * 1000;
  const client = async () => {
    while (going()) {
      const term = next();
      if (term === undefined) {
        ranOut ??= performance.now();
        return;
      }
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
  const data: ProbeData = { url: job.url };
  const probe = new Worker(new URL('./probe.js', import.meta.url), { workerData: data });
  const probed = new Promise<ProbeTimes>((resolve, reject) => {
    probe.once('message', resolve);
    probe.once('error', reject);
  });
  try {
    await Promise.all(Array.from({ length: job.clients }, client));
  } finally {
    agent.destroy();
    probe.postMessage('stop');
  }
  const seconds = (performance.now() - started) / 1000;
  const { times: probes, failures: probeFailures } = await probed;
  failures += probeFailures;
  await probe.terminate();
  const result: TypingResult = {
    searches: timings(times, seconds),
    probe: timings(probes, seconds),
    short: timings(short, seconds),
    failures,
    ...(firstFailure !== undefined && { firstFailure }),
    ...(ranOut !== undefined && { ranOutAfterSeconds: (ranOut - started) / 1000 }),
  };
  return result;
});
