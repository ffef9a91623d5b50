/**
 * The feed of user changes (`GET /api/v1/users/changes`) for clients: its JSON pages, and `watchChanges`,
 * an async iterator over its Server-Sent Events that resumes across reconnects from the last cursor
 * (Last-Event-ID) and hands a reset over as an item of its own, never as a silent gap.
 *
 * The stream is read with fetch, not EventSource: Node has no EventSource, and a browser's cannot send
 * headers, which every credential of Roster's AUTH is (X-API-Key, Authorization). The text/event-stream
 * framing is parsed by eventsource-parser (small, no dependencies, the parser the `eventsource` package
 * itself uses); the reconnecting, the cursor and the backoff are ours (../backoff.ts, as the chat's).
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { backoffDelay, type BackoffOptions } from '../backoff.js';
import { LAST_EVENT_ID, RETRY_AFTER, ROSTER_CHANGES_CURSOR } from '../http-headers.js';
import type { components } from './openapi.js';
import { retryAfterMs } from './retry.js';

type ErrorEnvelope = components['schemas']['ErrorEnvelope'];

/** One change of the feed: the user as written (null for a delete) and the ETag it had after. */
export type Change = components['schemas']['Change'];
/** A JSON page of changes, oldest first, and the cursor to ask from next. */
export type ChangesPage = components['schemas']['ChangePage'];
export type ChangeType = Change['type'];

/** What the feed is asked for: after a cursor (none: from now), one role's users, or one user. */
export interface ChangesFilter {
  since?: string;
  role?: string;
  id?: string;
}

export interface ChangesPageQuery extends ChangesFilter {
  /** 1..1000 (the service clamps). */
  limit?: number;
  /** Seconds (0..60) to wait for a first change before answering an empty page: a long poll. */
  wait?: number;
}

/**
 * An item of `watchChanges`: a change, or a reset: `since` was older than the log keeps (or of another
 * log), so changes may have been missed. The caller reloads what it holds; the watch goes on from `cursor`.
 */
export type WatchItem = { kind: 'change'; change: Change } | { kind: 'reset'; cursor: string };

/** The connection's state, for an indicator: open (streaming), or waiting `delayMs` before reconnecting. */
export type WatchState = { state: 'open' } | { state: 'retrying'; delayMs: number; reason: string };

export interface WatchOptions extends ChangesFilter {
  /** Ends the watch (the iterator finishes; no error). */
  signal?: AbortSignal;
  /** Told each time the stream opens, or drops and will be tried again. */
  onState?: (state: WatchState) => void;
  /**
   * The waits between reconnections. The first wait is the service's `retry:` advice unless `initialMs`
   * is given here; each failed attempt in a row doubles it up to `maxMs`.
   */
  backoff?: Partial<BackoffOptions>;
  /** A stream silent this long (no event, no heartbeat) is taken as dead and reopened. Default 45 s (3 heartbeats). */
  idleMs?: number;
}

/** Where the feed is and how to ask it: the client's root URL, its headers and its fetch. */
export interface FeedTransport {
  root: string;
  headers: Record<string, string>;
  fetch: (request: Request) => Promise<Response>;
}

/** A reply the watch cannot go on from (a credential refused, a bad filter): its status and envelope. */
export class WatchError extends Error {
  constructor(
    readonly status: number,
    readonly envelope: ErrorEnvelope | undefined,
  ) {
    super(
      envelope?.error
        ? `${status} ${envelope.error.code}: ${envelope.error.message}`
        : `the change feed answered ${status}`,
    );
    this.name = 'WatchError';
  }
}

const DEFAULT_WATCH_BACKOFF: BackoffOptions = { initialMs: 2_000, maxMs: 30_000, jitter: 0.5 };
const DEFAULT_IDLE_MS = 45_000;

/** The feed's URL with this query (the parameters given, none empty). */
export function changesUrl(root: string, query: ChangesPageQuery): string {
  const url = new URL(`${root}/api/v1/users/changes`);
  for (const [name, value] of Object.entries(query))
    if (value !== undefined && value !== '') url.searchParams.set(name, String(value));
  return url.href;
}

/** `Accept` and the client's headers, with the caller's on top. */
function requestFor(transport: FeedTransport, url: string, headers: Record<string, string>, signal?: AbortSignal) {
  return new Request(url, { headers: { ...transport.headers, ...headers }, ...(signal ? { signal } : {}) });
}

async function envelopeOf(response: Response): Promise<ErrorEnvelope | undefined> {
  return (await response.json().catch(() => undefined)) as ErrorEnvelope | undefined;
}

const abortedBy = (signal: AbortSignal | undefined) => signal?.aborted === true;

/** Waits `ms`, or less if `signal` aborts (then resolves all the same: the caller checks the signal). */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * The changes as Server-Sent Events, for as long as `options.signal` lets it. Without `since` the head
 * cursor is read first (a JSON page), so nothing written between that read and the stream's opening is
 * missed. Each (re)connection sends the last cursor seen as Last-Event-ID. A 410 or a `reset` event is
 * yielded as `{ kind: 'reset' }`; a reply that trying again will not change (401, 403, 422 …) throws a
 * WatchError; a dropped connection, a 5xx, a 429 or a network failure is tried again after a backoff
 * (Retry-After when the reply names one).
 */
export async function* watchChanges(transport: FeedTransport, options: WatchOptions = {}): AsyncGenerator<WatchItem> {
  const { signal, onState, role, id } = options;
  const backoff = { ...DEFAULT_WATCH_BACKOFF, ...options.backoff };
  const idleMs = options.idleMs ?? DEFAULT_IDLE_MS;
  let cursor = options.since;
  let failures = 0;
  while (!abortedBy(signal)) {
    let wait: number | undefined;
    let reason = 'the stream ended';
    const connection = new AbortController();
    const stop = () => connection.abort(signal?.reason);
    signal?.addEventListener('abort', stop, { once: true });
    try {
      if (cursor === undefined) {
        const head = await readPage(transport, { limit: 1 }, connection.signal);
        if ('reset' in head) cursor = head.reset;
        else if (head.page) cursor = head.page.next;
        else {
          wait = head.retryAfter;
          throw head.error;
        }
      }
      const url = changesUrl(transport.root, { since: cursor, role, id });
      const response = await transport.fetch(
        requestFor(
          transport,
          url,
          { accept: 'text/event-stream', [LAST_EVENT_ID]: cursor, 'cache-control': 'no-cache' },
          connection.signal,
        ),
      );
      const contentType = response.headers.get('content-type') ?? '';
      if (response.status === 410) {
        const next = response.headers.get(ROSTER_CHANGES_CURSOR);
        await response.body?.cancel().catch(() => undefined);
        if (next === null) throw new WatchError(410, undefined);
        cursor = next;
        yield { kind: 'reset', cursor: next };
        continue;
      }
      if (response.status === 429 || response.status >= 500) {
        wait = retryAfterMs(response.headers.get(RETRY_AFTER), Date.now());
        reason = `the change feed answered ${response.status}`;
        await response.body?.cancel().catch(() => undefined);
      } else if (response.status !== 200 || !contentType.startsWith('text/event-stream') || !response.body) {
        throw new WatchError(response.status, await envelopeOf(response));
      } else {
        onState?.({ state: 'open' });
        failures = 0;
        const events = readEvents(response.body, idleMs, connection);
        for await (const event of events) {
          if (event.kind === 'retry') {
            if (options.backoff?.initialMs === undefined) backoff.initialMs = event.ms;
            continue;
          }
          if (event.id !== undefined) cursor = event.id;
          if (event.item) yield event.item;
          if (event.item?.kind === 'reset') cursor = event.item.cursor;
        }
        reason = connection.signal.aborted ? 'the stream fell silent' : 'the stream ended';
      }
    } catch (error) {
      if (abortedBy(signal)) return;
      if (error instanceof WatchError) throw error;
      // The connection is aborted here only by the idle timer (the caller's abort returned above).
      reason = connection.signal.aborted ? 'the stream fell silent' : (error as Error).message;
    } finally {
      signal?.removeEventListener('abort', stop);
      connection.abort();
    }
    if (abortedBy(signal)) return;
    const delayMs = wait ?? backoffDelay(failures, backoff);
    failures++;
    onState?.({ state: 'retrying', delayMs, reason });
    await pause(delayMs, signal);
  }
}

/** An event of the stream as the watch needs it: its id, the item it carries, or the `retry:` advice. */
type StreamEvent =
  { kind: 'event'; id: string | undefined; item: WatchItem | undefined } | { kind: 'retry'; ms: number };

/**
 * The events of one text/event-stream body, as they are read (one chunk read per turn, so a consumer
 * that waits holds the socket's flow control, and the service drops it at its bound). A body silent
 * for `idleMs` aborts `connection`, which ends the reading.
 */
async function* readEvents(
  body: ReadableStream<Uint8Array>,
  idleMs: number,
  connection: AbortController,
): AsyncGenerator<StreamEvent> {
  const parsed: StreamEvent[] = [];
  const parser = createParser({
    onEvent: (message) => parsed.push({ kind: 'event', id: message.id, item: itemOf(message) }),
    onRetry: (ms) => parsed.push({ kind: 'retry', ms }),
  });
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let idle = setTimeout(() => connection.abort(), idleMs);
  const quiet = () => void reader.cancel().catch(() => undefined);
  connection.signal.addEventListener('abort', quiet, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      clearTimeout(idle);
      idle = setTimeout(() => connection.abort(), idleMs);
      parser.feed(decoder.decode(value, { stream: true }));
      while (parsed.length > 0) yield parsed.shift()!;
    }
  } finally {
    clearTimeout(idle);
    connection.signal.removeEventListener('abort', quiet);
    await reader.cancel().catch(() => undefined);
  }
}

/** A `change` or `reset` event as an item; any other event (a later version's) is skipped. */
function itemOf(message: EventSourceMessage): WatchItem | undefined {
  if (message.event === 'change') return { kind: 'change', change: JSON.parse(message.data) as Change };
  if (message.event === 'reset') {
    const { next } = JSON.parse(message.data) as { next?: unknown };
    const cursor = typeof next === 'string' ? next : message.id;
    return cursor === undefined ? undefined : { kind: 'reset', cursor };
  }
  return undefined;
}

/** A JSON page as the watch reads it: the page, a reset's cursor, an error to throw, or a wait before trying again. */
type PageRead =
  | { page: ChangesPage; error?: undefined }
  | { reset: string }
  | { page?: undefined; error: Error; retryAfter?: number };

async function readPage(transport: FeedTransport, query: ChangesPageQuery, signal?: AbortSignal): Promise<PageRead> {
  const reply = await fetchChangesPage(transport, query, signal);
  if (reply.data) return { page: reply.data };
  if (reply.reset !== undefined) return { reset: reply.reset };
  const { status, headers } = reply.response;
  if (status !== 429 && status < 500) return { error: new WatchError(status, reply.error) };
  const error = new Error(`the change feed answered ${status}`);
  const retryAfter = retryAfterMs(headers.get(RETRY_AFTER), Date.now());
  return retryAfter === undefined ? { error } : { error, retryAfter };
}

/** What `changesPage` resolves to: the page, or the error envelope; `reset` is the head cursor of a 410. */
export interface ChangesReply {
  data?: ChangesPage;
  error?: ErrorEnvelope;
  /** On 410 CHANGES_RESET: reload, then ask again from this cursor. */
  reset?: string;
  response: Response;
}

/** One JSON page of the feed (a long poll with `wait`). */
export async function fetchChangesPage(
  transport: FeedTransport,
  query: ChangesPageQuery = {},
  signal?: AbortSignal,
): Promise<ChangesReply> {
  const response = await transport.fetch(
    requestFor(transport, changesUrl(transport.root, query), { accept: 'application/json' }, signal),
  );
  if (response.status === 200) return { data: (await response.json()) as ChangesPage, response };
  const error = await envelopeOf(response);
  const reset = response.status === 410 ? (response.headers.get(ROSTER_CHANGES_CURSOR) ?? undefined) : undefined;
  return { ...(error ? { error } : {}), ...(reset !== undefined ? { reset } : {}), response };
}
