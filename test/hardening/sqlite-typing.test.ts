/**
 * Issue 43's acceptance test on SQLite, through real HTTP to Roster in a process of its own: a client
 * cycling 200 distinct one- and two-character search terms (more than the 64 needles the store keeps,
 * so that none is ever answered from what a repeat kept) while another client reads users by id; the
 * point reads' p99 stays under 10 ms at 100 000 users. Before the counts of short needles and the
 * reader threads, every such search was a scan of the table on the REST thread (tens of milliseconds
 * at this size), and each point read waited behind it.
 *
 * A latency assertion, which the unit tests otherwise leave to `npm run bench`: the issue makes this
 * figure its condition. The users are written to the file directly, in one transaction, before Roster
 * opens it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { after, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';
import { INSERT_USER, toRow } from '../../src/users/stores/sqlite/sqlite-rows.js';
import { SqliteUserStore } from '../../src/users/stores/sqlite/sqlite-store.js';
import { freePort, readsP99Bound, RosterProcess, until, within } from '../support/index.js';

const USERS = 100_000;
const TERMS = 200;
const POINT_READS = 1_500;
const P99_MS = 10;

const FIRST = ['James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David', 'Elizabeth'];
const LAST = ['Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez'];

const folder = mkdtempSync(join(tmpdir(), 'roster-sqlite-typing-'));
after(() => rmSync(folder, { recursive: true, force: true }));

/** Fills `file` with USERS users (first and last names and a number); returns some of their ids. */
async function fill(file: string): Promise<string[]> {
  const store = await SqliteUserStore.open({ path: file, synchronous: 'NORMAL' }, pino({ level: 'silent' }));
  const ids: string[] = [];
  try {
    const insert = store.database.prepare(INSERT_USER);
    const start = Date.UTC(2025, 0, 1) * 1000;
    store.database.transaction(() => {
      for (let index = 0; index < USERS; index++) {
        const [first, last] = [FIRST[index % FIRST.length]!, LAST[Math.floor(index / 7) % LAST.length]!];
        const user = {
          id: randomUUID(),
          name: `${first} ${last} ${index}`,
          email: `${first.toLowerCase()}.${last.toLowerCase()}${index}@example.com`,
          role: index % 10 === 0 ? 'admin' : 'user',
        };
        if (index % 100 === 0) ids.push(user.id);
        insert.run(...toRow(user, start + index));
      }
    })();
  } finally {
    // Closing indexes every user for search (the trigram index and the counts of short needles).
    await store.close();
  }
  return ids;
}

/** TERMS distinct terms of one and two characters: every letter and digit, then pieces of the names and emails. */
function shortTerms(): string[] {
  const terms = new Set<string>('abcdefghijklmnopqrstuvwxyz0123456789.@'.split(''));
  const texts = [...FIRST, ...LAST].map((text) => text.toLowerCase());
  for (const text of texts) for (let at = 0; at + 2 <= text.length; at++) terms.add(text.slice(at, at + 2));
  for (const a of 'aeiou') for (const b of 'bcdfghklmnrst0123456789') terms.add(a + b);
  return [...terms].slice(0, TERMS);
}

/** The searching client: each term in turn, one request at a time, until told to stop; counts its searches. */
const SEARCHER = `
const { workerData } = require('node:worker_threads');
const { api, terms, shared } = workerData;
// Niced (Linux), as a client on another machine would take nothing from the server's CPU: the test
// measures what the server's own threads do to each other.
try {
  const { readlinkSync } = require('node:fs');
  require('node:os').setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), 10);
} catch {}
(async () => {
  for (let at = 0; Atomics.load(shared, 0) === 0; at++) {
    const term = terms[at % terms.length];
    const reply = await fetch(api + '/users?search=' + encodeURIComponent(term) + '&limit=20');
    await reply.arrayBuffer();
    if (reply.status !== 200) throw new Error('search ' + term + ': ' + reply.status);
    Atomics.add(shared, 1, 1);
  }
})().catch((error) => { throw error; });
`;

/** POINT_READS reads of users by id, one at a time, 2 ms apart: their times, sorted. */
async function pointReads(api: string, ids: readonly string[]): Promise<number[]> {
  const latencies: number[] = [];
  for (let read = 0; read < POINT_READS; read++) {
    const at = performance.now();
    const reply = await fetch(`${api}/users/${ids[read % ids.length]!}`);
    await reply.arrayBuffer();
    latencies.push(performance.now() - at);
    assert.equal(reply.status, 200);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return latencies.sort((a, b) => a - b);
}

const percentile = (sorted: number[], share: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]!;

test(`SQLite, ${USERS} users: a client cycling ${TERMS} short search terms leaves another's point reads under ${P99_MS} ms p99`, async (t) => {
  const file = join(folder, 'roster.db');
  const ids = await fill(file);
  const terms = shortTerms();
  assert.equal(terms.length, TERMS);
  const [port, wsPort] = [await freePort(), await freePort()];
  const { REDIS_URL: _redis, DATABASE_URL: _database, ...inherited } = process.env as Record<string, string>;
  const roster = new RosterProcess(t, {
    ...inherited,
    DATABASE_URL: `sqlite:${file}`,
    PORT: String(port),
    WS_PORT: String(wsPort),
    LOG_LEVEL: 'warn',
  });
  const api = `http://127.0.0.1:${port}/api/v1`;
  await within(
    (async () => {
      for (;;) {
        if (roster.exit) throw new Error(`Roster exited: ${roster.describe()}`);
        if (
          await fetch(`${api}/health`).then(
            (reply) => reply.ok,
            () => false,
          )
        )
          return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })(),
    30_000,
    'Roster on the filled file to answer health',
  );

  // The same reads first without the searcher: the machine's own noise, named when the assertion fails.
  const alone = await pointReads(api, ids);
  // The searching client on a thread of its own, so that its replies never delay the reading client's.
  const shared = new Int32Array(new SharedArrayBuffer(8)); // [stop, searches]
  const searcher = new Worker(SEARCHER, { eval: true, workerData: { api, terms, shared } });
  const failed = new Promise<never>((_, reject) => searcher.once('error', reject));
  const searches = () => Atomics.load(shared, 1);
  let latencies: number[] = [];
  try {
    // Warm: the first searches start the reader threads; then every term once before measuring.
    await Promise.race([failed, until(`${TERMS} searches`, () => searches() >= TERMS, 60_000, 20)]);
    const measuredFrom = searches();
    latencies = await pointReads(api, ids);
    const measured = searches() - measuredFrom;
    assert.ok(measured >= TERMS, `the searcher cycled through the terms while the reads ran (${measured} searches)`);
  } finally {
    Atomics.store(shared, 0, 1);
    await within(Promise.race([once(searcher, 'exit'), failed]), 30_000, 'the searcher to stop');
  }
  const [p50, p99] = [percentile(latencies, 0.5), percentile(latencies, 0.99)];
  const quiet = `without the searcher: p50 ${percentile(alone, 0.5).toFixed(2)} ms, p99 ${percentile(alone, 0.99).toFixed(2)} ms`;
  t.diagnostic(`point reads: p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms; ${searches()} searches; ${quiet}`);
  const bound = readsP99Bound(percentile(alone, 0.99), P99_MS);
  assert.ok(
    p99 < bound,
    `point reads p99 ${p99.toFixed(2)} ms (p50 ${p50.toFixed(2)} ms; ${quiet}), at most ${bound.toFixed(1)} ms`,
  );
});
