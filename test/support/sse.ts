/**
 * A Server-Sent Events client for the change feed's tests, over a connection of its own: it records
 * every event and comment as it arrives, and can be cut at any moment or stop reading. By hand: a
 * browser's EventSource (or a package of one) reconnects by itself and hides the socket, which is what
 * these tests need to hold; the parsing is the few lines of the format's own rules the feed uses.
 */
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { eventually, within } from './wait.js';

export interface SseEvent {
  id: string | undefined;
  event: string;
  data: string;
}

export class SseClient {
  readonly events: SseEvent[] = [];
  readonly comments: string[] = [];
  retry: number | undefined;
  ended = false;
  #buffer = '';

  private constructor(
    readonly status: number,
    readonly headers: IncomingHttpHeaders,
    private readonly response: IncomingMessage,
  ) {
    response.setEncoding('utf8');
    response.on('data', (chunk: string) => this.#take(chunk));
    response.on('close', () => (this.ended = true));
    response.on('error', () => (this.ended = true));
  }

  /** Opens the stream at `url` (Accept: text/event-stream); resolves once the head has arrived. */
  static open(url: string, headers: Record<string, string> = {}, ms = 10_000): Promise<SseClient> {
    return within(
      new Promise<SseClient>((resolve, reject) => {
        const req = httpRequest(url, { agent: false, headers: { accept: 'text/event-stream', ...headers } });
        req.on('response', (response) => resolve(new SseClient(response.statusCode ?? 0, response.headers, response)));
        req.on('error', reject);
        req.end();
      }),
      ms,
      `the head of ${url}`,
    );
  }

  /** The events named `change`, parsed. */
  get changes(): { seq: number; cursor: string; type: string; id: string; user: unknown; etag: unknown }[] {
    return this.events.filter((event) => event.event === 'change').map((event) => JSON.parse(event.data));
  }

  /** The id of the last event received. */
  get lastId(): string | undefined {
    return this.events.at(-1)?.id;
  }

  /** Waits until `count` events have arrived. */
  async waitFor(count: number, ms = 10_000): Promise<void> {
    await eventually(() => this.events.length >= count, `${count} events (have ${this.events.length})`, ms, 10);
  }

  /** Cuts the connection at once, as a network failure would. */
  cut(): void {
    this.response.socket?.destroy();
  }

  /** Stops reading: the server's writes pile up in the socket until it gives up on this client. */
  stopReading(): void {
    this.response.pause();
    this.response.socket?.pause();
  }

  /** Reads again. */
  resume(): void {
    this.response.socket?.resume();
    this.response.resume();
  }

  #take(chunk: string): void {
    this.#buffer += chunk;
    for (let end = this.#buffer.indexOf('\n\n'); end !== -1; end = this.#buffer.indexOf('\n\n')) {
      const block = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 2);
      const event: SseEvent = { id: undefined, event: 'message', data: '' };
      let isEvent = false;
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) this.comments.push(line.slice(1).trim());
        else if (line.startsWith('retry: ')) this.retry = Number(line.slice(7));
        else if (line.startsWith('id: ')) event.id = line.slice(4);
        else if (line.startsWith('event: ')) event.event = line.slice(7);
        else if (line.startsWith('data: ')) {
          event.data = line.slice(6);
          isEvent = true;
        }
      }
      if (isEvent) this.events.push(event);
    }
  }
}
