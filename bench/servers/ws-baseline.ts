/**
 * Benchmark child: the chat ceiling, a stock `ws` broadcast server. Each chat message is serialised
 * once and sent to every client, the sender included, as the `ws` README shows; nothing else (no
 * join or leave notices, no limits, no heartbeat).
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { answerParent, memoryNow } from '../ipc.js';

export type WsBaselineCommand = { cmd: 'start' } | { cmd: 'memory' };

function broadcast(wss: WebSocketServer, from: string, data: Buffer): void {
  let message: unknown;
  try {
    message = (JSON.parse(data.toString('utf8')) as { message?: unknown }).message;
  } catch {
    message = data.toString('utf8');
  }
  const text = JSON.stringify({ type: 'chat', from, message: message ?? '', timestamp: new Date().toISOString() });
  for (const client of wss.clients) client.send(text);
}

answerParent<WsBaselineCommand>(async (command) => {
  if (command.cmd === 'memory') return memoryNow();
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false, backlog: 4096 });
  wss.on('connection', (ws: WebSocket) => {
    const from = randomUUID();
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) broadcast(wss, from, data);
    });
  });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  return { wsPort: (wss.address() as AddressInfo).port };
});
