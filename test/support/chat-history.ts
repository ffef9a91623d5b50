/**
 * A chat client that asked for history (`?history=`, `?since=`): every message it took in, in order,
 * and a way to lose its connection after a given number of chat messages, as a dropped client would
 * (whatever arrives after that is never read). Every frame is checked against the AsyncAPI document's
 * schemas (schemas.ts): one that is not makes `until` reject.
 */
import { WebSocket } from 'ws';
import type { Message } from './chat-client.js';
import { frameProblem } from './schemas.js';

export class Listening {
  readonly ws: WebSocket;
  readonly messages: Message[] = [];
  readonly texts: string[] = [];
  readonly closed: Promise<void>;
  /** Frames off the AsyncAPI document, with why. */
  readonly invalid: string[] = [];
  #gone = false;
  #waiters = new Set<() => void>();

  /** `dropAfter`: terminates the connection once this many chat messages are in. */
  constructor(url: string, options: { dropAfter?: number } = {}) {
    this.ws = new WebSocket(url);
    this.ws.on('error', () => {});
    this.closed = new Promise((resolve) => this.ws.once('close', () => resolve()));
    this.ws.on('message', (data) => {
      if (this.#gone) return;
      const text = data.toString();
      this.texts.push(text);
      const message = JSON.parse(text);
      const problem = frameProblem(message);
      if (problem) this.invalid.push(`${text}: ${problem}`);
      this.messages.push(message);
      if (options.dropAfter !== undefined && this.chats().length === options.dropAfter) {
        this.#gone = true;
        this.ws.terminate();
      }
      for (const wake of this.#waiters) wake();
    });
  }

  chats(): Message[] {
    return this.messages.filter((m) => m.type === 'chat');
  }

  /** Resolves once a message taken in matches (already, or later); rejects after `ms`. */
  until(predicate: (m: Message) => boolean, ms = 10_000): Promise<Message> {
    if (this.invalid.length > 0)
      return Promise.reject(new Error(`frame off the AsyncAPI document: ${this.invalid[0]}`));
    const found = this.messages.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(
          new Error(`timed out; got ${this.messages.length} messages, last ${JSON.stringify(this.messages.at(-1))}`),
        );
      }, ms);
      const check = () => {
        const match = this.messages.find(predicate);
        if (!match) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve(match);
      };
      this.#waiters.add(check);
    });
  }

  terminate(): void {
    this.#gone = true;
    this.ws.terminate();
  }
}

/** `count` chat texts `prefix-0` … in order. */
export function texts(prefix: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}-${i}`);
}
