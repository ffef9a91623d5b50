/**
 * roster_chat_closes_total{code} (metrics.ts closeCodeLabel): the peer chooses its close code, so only
 * the standard codes are labels of their own; 3000–4999 count by range. Through real sockets: clients
 * that close with many private codes make a handful of series, not one a code.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { WebSocket } from 'ws';
import { closeCodeLabel } from '../../src/ops/metrics.js';
import { ChatClient, startRoster, until } from '../support/index.js';

/** The closes_total lines of an exposition, by label. */
async function closes(origin: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    const match = /^roster_chat_closes_total\{code="([^"]*)"\} (\S+)$/.exec(line);
    if (match) series.set(match[1]!, Number(match[2]));
  }
  return series;
}

describe('roster_chat_closes_total', () => {
  const cases: [code: number, label: string][] = [
    [1000, '1000'],
    [1001, '1001'],
    [1006, '1006'],
    [1011, '1011'],
    [1015, '1015'],
    [1004, 'other'],
    [1016, 'other'],
    [2999, 'other'],
    [3000, '3xxx'],
    [3999, '3xxx'],
    [4000, '4xxx'],
    [4999, '4xxx'],
    [5000, 'other'],
  ];
  for (const [code, label] of cases)
    test(`close code ${code} is counted as "${label}"`, () => assert.equal(closeCodeLabel(code), label));

  test('clients closing with 40 private codes make three series, not 40', async (t) => {
    const running = await startRoster({ LOG_LEVEL: 'silent' });
    t.after(() => running.stop());
    const codes = [
      1000,
      ...Array.from({ length: 20 }, (_, i) => 3000 + i * 37),
      ...Array.from({ length: 20 }, (_, i) => 4000 + i * 41),
    ];
    for (const code of codes) {
      const client = await ChatClient.connect(running.wsUrl);
      const closed = once(client.ws, 'close');
      client.ws.close(code);
      await closed;
    }
    await until(
      'every close counted',
      async () => [...(await closes(running.origin)).values()].reduce((a, b) => a + b, 0) === codes.length,
      5000,
      50,
    );
    const series = await closes(running.origin);
    assert.deepEqual(Object.fromEntries(series), { '1000': 1, '3xxx': 20, '4xxx': 20 });
    // The room is left as it was: the socket still opens.
    const after = new WebSocket(running.wsUrl);
    await once(after, 'open');
    after.close();
  });
});
