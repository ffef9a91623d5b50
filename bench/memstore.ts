/**
 * In-process figures of the memory store alone, without HTTP: µs per insert and per patch,
 * live heap per user after a full GC, the time of a forced full GC, and search time, at one size.
 *
 *   node --expose-gc dist/bench/memstore.js 1000000
 *
 * Prints one JSON line. Run alone on a quiet core for figures worth comparing; the times are of this
 * process only (process.cpuUsage), so other load on the machine inflates them less than wall time.
 */
import { MemoryUserStore } from '../src/users/stores/memory/memory-store.js';
import type { ListParams } from '../src/users/query.js';
import { percentile, sortedSamples } from './stats.js';
import { benchUser, idPool, SEARCH_TERM } from './users.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');

const size = Number(process.argv[2] ?? 100_000);

function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** The median time (ms) of 21 runs of one search, after the first. */
async function searchMedianMs(params: ListParams): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 21; i++) {
    const start = performance.now();
    await store.list(params);
    times.push(performance.now() - start);
  }
  return percentile(sortedSamples(times), 50);
}

/** The live heap after a full collection, and how long that collection took (ms). */
function settledHeap(): { heap: number; gcMs: number } {
  gc!();
  const start = performance.now();
  gc!();
  const gcMs = performance.now() - start;
  return { heap: process.memoryUsage().heapUsed, gcMs };
}

const empty = settledHeap().heap;
const store = new MemoryUserStore();
const fillStart = performance.now();
for (let index = 0; index < size; index++) await store.insert(benchUser(index));
const fillSeconds = (performance.now() - fillStart) / 1000;
const filled = settledHeap();

// Inserts on top of the filled store: the users past `size`, generated first so only the store is timed.
const extra = Array.from({ length: 20_000 }, (_, i) => benchUser(size + i));
let cpu = cpuMicros();
for (const user of extra) await store.insert(user);
const insertMicros = (cpuMicros() - cpu) / extra.length;

// Patches of the name, as the bench's patch scenario sends, over 10 000 known ids.
const ids = idPool(size, 10_000);
cpu = cpuMicros();
const patches = 50_000;
for (let i = 0; i < patches; i++)
  await store.update(ids[i % ids.length]!, { name: `Patched ${i & 1023}` }, { uniqueEmail: false });
const patchMicros = (cpuMicros() - cpu) / patches;

const searchParams = { search: SEARCH_TERM, sort: 'created_at', descending: false, offset: 0, limit: 20 };
const first = performance.now();
const found = await store.list(searchParams);
const firstSearchMs = performance.now() - first;
const searchMs = await searchMedianMs(searchParams);
// The same scan for a term no user has, with the same first letter: the native indexOf stops at each
// occurrence of a needle's first character, so that, more than the text's length, is what a scan
// costs ('qqxz' takes a fifth of the time of 'sqx'). The difference is what the matches cost.
const missMs = await searchMedianMs({ ...searchParams, search: 'sqx' });
const afterSearch = settledHeap();
const users = size + extra.length;

console.log(
  JSON.stringify({
    users,
    fillSeconds: +fillSeconds.toFixed(1),
    heapPerUserFilled: Math.round((filled.heap - empty) / size),
    heapPerUserAfterSearch: Math.round((afterSearch.heap - empty) / users),
    heapMiBAfterSearch: +(afterSearch.heap / 2 ** 20).toFixed(1),
    fullGcMs: +afterSearch.gcMs.toFixed(1),
    insertMicros: +insertMicros.toFixed(2),
    patchMicros: +patchMicros.toFixed(2),
    searchTotal: found.total,
    firstSearchMs: +firstSearchMs.toFixed(1),
    searchP50Ms: +searchMs.toFixed(2),
    noMatchP50Ms: +missMs.toFixed(2),
    nsPerScannedUser: +((missMs * 1e6) / users).toFixed(1),
    nsPerMatchedUser: +(((searchMs - missMs) * 1e6) / found.total).toFixed(0),
  }),
);
