/**
 * Benchmark child: one chat client that sends the contract's application `ping` every `intervalMs`
 * and times each `pong` (the round trip through the server's chat door), for `seconds`. A ping is
 * sent only after the previous pong (or after a second without one, counted as lost), so a stalled
 * server shows as long round trips, not as a queue of pings.
 */
import { WebSocket } from 'ws';
import { answerParent } from '../ipc.js';
import { percentile, sortedSamples } from '../stats.js';

export interface PingJob {
  cmd: 'ping';
  url: string;
  seconds: number;
  intervalMs: number;
}

export interface PingResult {
  pings: number;
  lost: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

const LOST_AFTER_MS = 1000;

answerParent<PingJob>(async (job) => {
  const ws = new WebSocket(job.url);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const rtts: number[] = [];
  let lost = 0;
  let answered: (() => void) | undefined;
  ws.on('message', (data) => {
    if (String(data).includes('"type":"pong"')) answered?.();
  });
  const end = performance.now() + job.seconds * 1000;
  while (performance.now() < end) {
    const sentAt = performance.now();
    const pong = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), LOST_AFTER_MS);
      answered = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
    ws.send('{"type":"ping"}');
    if (await pong) rtts.push(performance.now() - sentAt);
    else lost++;
    answered = undefined;
    await new Promise((resolve) => setTimeout(resolve, job.intervalMs));
  }
  ws.close();
  const sorted = sortedSamples(rtts);
  const result: PingResult = {
    pings: rtts.length,
    lost,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    maxMs: sorted.length > 0 ? sorted[sorted.length - 1]! : NaN,
  };
  return result;
});
