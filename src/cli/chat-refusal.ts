/**
 * Why a chat handshake got an HTTP answer instead of the upgrade, in words for `roster chat`: a refusal
 * of the chat port (401, 429, 503, … in the error envelope), shown with its message; or another HTTP
 * server, most likely Roster's REST port, whose console settings say where the chat is.
 */
import type { IncomingMessage } from 'node:http';
import { parseJson } from '../protocol/chat-codec.js';
import { printable } from './chat-view.js';

/** Chat refusals of a handshake that carry the error envelope: anything else answering is not a chat port. */
const CHAT_REFUSALS = new Set([400, 401, 403, 408, 426, 429, 503]);

/** The cause to show for `response`, the answer to a handshake with `url`. */
export async function refusalOf(response: IncomingMessage, url: string): Promise<string> {
  const status = response.statusCode ?? 0;
  const body = await readSome(response, 4096);
  if (CHAT_REFUSALS.has(status)) {
    const envelope = parseEnvelope(body);
    return `HTTP ${status}${envelope ? ` ${envelope}` : ''}`;
  }
  const chat = await chatAddressFrom(url);
  return (
    `an HTTP server answered ${status} instead of a chat: this looks like the REST port (PORT); ` +
    `the chat listens on its own port, WS_PORT (8765 by default)${chat ? `: roster chat ${chat}` : ''}`
  );
}

/** Up to `limit` bytes of a response body (the rest is not waited for), as text. */
async function readSome(response: IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  const timer = setTimeout(() => response.destroy(), 2_000);
  try {
    for await (const chunk of response as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) break;
    }
  } catch {
    // cut off: what arrived is enough
  } finally {
    clearTimeout(timer);
    response.destroy();
  }
  return Buffer.concat(chunks).subarray(0, limit).toString('utf8');
}

/** `CODE: message` of an error envelope, or undefined. */
function parseEnvelope(body: string): string | undefined {
  const error = (parseJson(body) as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  if (typeof error?.code === 'string' && typeof error.message === 'string')
    return printable(`${error.code}: ${error.message}`);
  return undefined;
}

/**
 * When `url` points at Roster's REST port, the chat URL its console would use (from
 * /console/config.json); undefined when that cannot be told within 2 s.
 */
async function chatAddressFrom(url: string): Promise<string | undefined> {
  try {
    const rest = new URL(url);
    const secure = rest.protocol === 'wss:' || rest.protocol === 'https:';
    rest.protocol = secure ? 'https:' : 'http:';
    rest.pathname = '/console/config.json';
    rest.search = '';
    const response = await fetch(rest, { signal: AbortSignal.timeout(2_000) });
    const settings = (await response.json()) as { chatPort?: unknown; chatUrl?: unknown };
    if (typeof settings.chatUrl === 'string' && /^wss?:\/\//.test(settings.chatUrl)) return settings.chatUrl;
    if (typeof settings.chatPort !== 'number') return undefined;
    return `${secure ? 'wss' : 'ws'}://${rest.hostname.includes(':') ? `[${rest.hostname}]` : rest.hostname}:${settings.chatPort}`;
  } catch {
    return undefined;
  }
}
