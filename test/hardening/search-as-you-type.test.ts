/**
 * Search as you type must not be another client's latency (issue 43): over real HTTP, one client
 * cycles 200 distinct short terms (one to four characters, each new to the server) while another
 * reads users by id, and the reads' p99 stays under 10 ms on the memory store holding 100 000 users,
 * where a scan of every user per search (about 30 ms here) would hold each read behind it.
 *
 * One of the two latency bounds among the tests (the other is SQLite's, sqlite-typing.test.ts), because
 * the issue asks for exactly this one. The p99 is over thousands of reads, in rounds that alternate with
 * rounds of reads alone; on a machine so loaded that reads alone miss 10 ms at p99, the bound widens as
 * test/support/latency.ts rules: a search that held the thread (30 ms and more for a scan of 100 000
 * users) still fails it.
 */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { MemoryUserStore } from '../../src/users/stores/memory/memory-store.js';
import { restApp } from '../support/app.js';
import { readsStayUnder, within } from '../support/index.js';

const USERS = 100_000;
/** Reads measured per round, and rounds of each kind: the p99 of each kind is its 30th slowest. */
const READS = 1_000;
const ROUNDS = 3;
/** Measurements, each of ROUNDS rounds of each kind, until one meets the bound. */
const ATTEMPTS = 3;
const P99_MS = 10;

const FIRST = [
  'Olivia',
  'Liam',
  'Emma',
  'Noah',
  'Amelia',
  'Sophia',
  'Mateo',
  'Priya',
  'Kenji',
  'Björn',
  'Zoë',
  'Chidi',
];
const LAST = ['Hansen', 'Eriksen', 'Smith', 'García', 'Nguyen', 'Okafor', 'Tanaka', 'Kowalski', "O'Brien", 'Silva'];

/** 200 distinct terms of one to four characters, as a person types them: pieces of names, emails and numbers. */
function terms(): string[] {
  const pieces = new Set<string>();
  const sources = [...FIRST, ...LAST, 'example.com', '0123456789', '9876543210'].map((text) => text.toLowerCase());
  for (let length = 1; pieces.size < 200; length = (length % 4) + 1) {
    const grown = pieces.size;
    for (const source of sources) {
      for (let at = 0; at + length <= source.length && pieces.size < 200; at++) {
        const piece = source.slice(at, at + length);
        if (!pieces.has(piece)) {
          pieces.add(piece);
          break;
        }
      }
    }
    if (pieces.size === grown && length === 4) break;
  }
  return [...pieces];
}

/** One GET over `agent`; resolves with the status and the milliseconds it took. */
function get(port: number, agent: Agent, path: string): Promise<{ status: number; ms: number }> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ port, path, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, ms: performance.now() - start }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

test('a client cycling 200 fresh short terms leaves another client’s reads by id under 10 ms p99 (memory, 100 000 users)', async (t) => {
  const store = new MemoryUserStore();
  const ids: string[] = [];
  for (let i = 0; i < USERS; i++) {
    const first = FIRST[i % FIRST.length]!;
    const last = LAST[(i * 7 + (i >> 4)) % LAST.length]!;
    const user = await store.insert({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      name: `${first} ${last} ${i}`,
      email: `${first.toLowerCase()}.${i}@example.com`,
      role: i % 10 === 0 ? 'admin' : 'user',
    });
    assert.notEqual(user, 'email_taken');
    if (i % 97 === 0) ids.push(`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
  }
  // The REST door over the filled store (support/app.ts), listening on a real socket.
  const app = await restApp(t, {}, store);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const searcher = new Agent({ keepAlive: true, maxSockets: 1 });
  const reader = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => {
    searcher.destroy();
    reader.destroy();
  });

  const cycle = terms();
  assert.equal(cycle.length, 200);
  let searches = 0;
  /** Reads by id, timed; while `beside`, with the searcher cycling the terms beside them. */
  const round = async (beside: boolean): Promise<number[]> => {
    let reading = true;
    const searching = (async () => {
      while (reading && beside) {
        const term = cycle[searches % cycle.length]!;
        const { status } = await get(port, searcher, `/api/v1/users?search=${encodeURIComponent(term)}`);
        assert.equal(status, 200, term);
        searches++;
      }
    })();
    const times: number[] = [];
    try {
      for (let i = 0; i < READS; i++) {
        const { status, ms } = await get(port, reader, `/api/v1/users/${ids[(i * 31) % ids.length]!}`);
        assert.equal(status, 200);
        times.push(ms);
      }
    } finally {
      reading = false;
    }
    await searching;
    return times;
  };
  // Warm-up, not measured: the first requests compile the routes and the search's paths.
  for (let i = 0; i < 100; i++) await get(port, reader, `/api/v1/users/${ids[i % ids.length]!}`);
  await readsStayUnder(t, P99_MS, ATTEMPTS, async () => {
    const [alone, beside]: [number[], number[]] = [[], []];
    const from = searches;
    await within(
      (async () => {
        for (let r = 0; r < ROUNDS; r++) {
          alone.push(...(await round(false)));
          beside.push(...(await round(true)));
        }
      })(),
      90_000,
      'the rounds of reads',
    );
    t.diagnostic(`${searches - from} searches beside the reads`);
    assert.ok(searches - from >= cycle.length, `every term searched at least once (${searches - from} searches)`);
    return { alone, beside };
  });
});
