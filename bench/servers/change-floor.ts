/**
 * Benchmark child: the changes section's floor (bench/sections/changes.ts). Roster's own fan-out
 * (src/http/change-streams.ts, its batching and frames) over a memory change log, in a process that
 * does nothing else: it serves the streams of a "floor" round while the writer's creates go to a
 * Roster server without streams. A write's latency then meets the same stream traffic on the same
 * machine, without Roster's process doing any of it: what a fan-out in a process of its own (the plan
 * of BENCHMARKS.md "Change feed") could give at best.
 *
 * The changes are appended here, one a millisecond (the writer's pace), each a user as a create writes
 * it, so the streams carry the same frames as in a "streams" round.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { ChangeStreams } from '../../src/http/change-streams.js';
import { sinceOf } from '../../src/http/change-json.js';
import { MemoryChangeLog } from '../../src/users/stores/memory/memory-changes.js';
import type { User } from '../../src/users/schema.js';
import { answerParent } from '../ipc.js';

export type FloorCommand = { cmd: 'start' } | { cmd: 'feed'; seconds: number };

/** The log's bound: the section's rounds are a minute of a change a millisecond. */
const MAX_CHANGES = 100_000;

const log = new MemoryChangeLog({ maxChanges: MAX_CHANGES, maxAgeMs: 3_600_000 });
const quiet = { warn: () => undefined } as unknown as FastifyBaseLogger;
const streams = new ChangeStreams(log, { maxBacklog: 16 * 1024 * 1024, logger: quiet });

/** A stream as Roster opens one (change-routes.ts openStream), from `since` (a cursor of this log). */
function serve(request: IncomingMessage, response: ServerResponse): void {
  const since = sinceOf(new URL(request.url ?? '/', 'http://floor').searchParams.get('since') ?? '', log.epoch);
  if (typeof since !== 'object') return void response.writeHead(422).end();
  response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' });
  void streams.open(response, since.seq, undefined);
}

/** Appends a change a millisecond for `seconds` (the ones due each turn, as the writer paces); the last seq. */
async function feed(seconds: number): Promise<number> {
  const started = performance.now();
  let appended = 0;
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(performance.now() - started);
    for (; appended < due; appended++) {
      const at = new Date().toISOString();
      const n = appended + 1;
      const user: User = Object.freeze({
        id: crypto.randomUUID(),
        name: `w${n}`,
        email: `w${n}-floor@example.com`,
        role: 'user',
        created_at: at,
        updated_at: at,
      });
      log.append('created', user.id, user, null, at);
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return log.head();
}

answerParent<FloorCommand>(async (command) => {
  if (command.cmd === 'feed') return { last: await feed(command.seconds) };
  const server = createServer(serve);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, epoch: log.epoch };
});
