/**
 * Benchmark child: the chat ceiling, a stock `ws` broadcast server. Each chat message is serialised
 * once and sent to every client, the sender included, as the `ws` README shows; nothing else (no
 * limits, no heartbeat). With `joinNotices` (the connection storm), it also does what the contract
 * asks on connect, the README's way: a welcome to the newcomer and a `user_join` to every other open
 * client; without, it sends nothing on connect (the chat runs).
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { answerParent, memoryNow } from '../ipc.js';

export type WsBaselineCommand = { cmd: 'start'; joinNotices?: boolean } | { cmd: 'memory' };

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

function announce(wss: WebSocketServer, newcomer: WebSocket): void {
  const online = wss.clients.size;
  const timestamp = new Date().toISOString();
  newcomer.send(JSON.stringify({ type: 'system', message: `Welcome to the chat! ${online} users online.`, timestamp }));
  const text = JSON.stringify({
    type: 'user_join',
    message: 'A user joined the chat',
    online_count: online,
    timestamp,
  });
  for (const client of wss.clients) {
    if (client !== newcomer && client.readyState === WebSocket.OPEN) client.send(text);
  }
}

answerParent<WsBaselineCommand>(async (command) => {
  if (command.cmd === 'memory') return memoryNow();
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false, backlog: 4096 });
  wss.on('connection', (ws: WebSocket) => {
    const from = randomUUID();
    if (command.joinNotices) announce(wss, ws);
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) broadcast(wss, from, data);
    });
  });
  await new Promise<void>((resolve) => wss.once('listening', () => resolve()));
  return { wsPort: (wss.address() as AddressInfo).port };
});
