/**
 * The machinery of `npm run bench -- --only changes` at a tiny size, on real sockets: a round without
 * streams, one with Roster's streams and one with the floor's (the same fan-out in a process of its own,
 * bench/servers/change-floor.ts). Every stream of both kinds must be whole (the readers check the floor's
 * frames as they check Roster's: consecutive sequence numbers, the same bytes on every stream), and the
 * floor's ratios are printed. Only that it runs and checks; the figures are the bench's business.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runBench } from './support/index.js';

const STREAMS = 20;

const run = () =>
  runBench(['--only', 'changes'], {
    BENCH_CHANGES_STREAMS: String(STREAMS),
    BENCH_CHANGES_SECONDS: '2',
    // One of each kind: none, streams, floor.
    BENCH_CHANGES_ROUNDS: '1',
  });

describe('npm run bench -- --only changes, tiny', () => {
  test(
    'measures writes without streams, with Roster’s and with the floor’s, every stream whole',
    { timeout: 300_000 },
    async () => {
      const { status, stdout, stderr } = await run();
      assert.equal(status, 0, `the bench failed:\n${stdout}\n${stderr.slice(-3000)}`);
      const row = (kind: string) => {
        const line = stdout
          .split('\n')
          .find((candidate) => candidate.startsWith('| ') && candidate.includes(`(${kind}) |`));
        assert.ok(line, `no ${kind} round in:\n${stdout}`);
        return line.slice(2, -2).split(' | ');
      };
      assert.equal(row('none').at(-1), '–');
      assert.equal(row('streams').at(-1), `${STREAMS} / ${STREAMS}`);
      const floor = row('floor');
      assert.equal(floor.at(-1), `${STREAMS} / ${STREAMS}`);
      assert.match(floor[2]!, /^\d+ % \(floor \d+ %\)$/);
      assert.match(stdout, /- PASS every stream saw every change of its round, in order, once: yes/);
      for (const q of [50, 99])
        assert.match(
          stdout,
          new RegExp(
            `- write p${q} with the streams in a process of their own \\(floor\\) against none: [\\d.]+× .*; Roster's streams against the floor: [\\d.]+×`,
          ),
        );
    },
  );
});
