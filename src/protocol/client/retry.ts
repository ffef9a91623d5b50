/**
 * The typed client's retries: a request Roster answered 503 (briefly unavailable) or 429 (rate limited),
 * or a keyed create answered 409 IDEMPOTENCY_KEY_IN_USE (its first attempt still being processed), is
 * sent again, the same bytes and headers (so a create's Idempotency-Key too), after the wait the
 * reply's Retry-After asks for, or a jittered backoff when it names none. Only a request that is safe to
 * repeat is: GET, HEAD, OPTIONS, PUT and DELETE (idempotent by HTTP's definition), a POST that carries
 * an idempotency key, a PATCH that carries If-Match (a repeat whose first attempt went through fails
 * its precondition, 412, rather than applying twice). The clock and the sleep are injectable, so tests
 * need no real waiting.
 */
import { backoffDelay, type BackoffOptions } from '../backoff.js';
import { IDEMPOTENCY_KEY, IF_MATCH, RETRY_AFTER } from '../http-headers.js';

export interface RetryPolicy {
  /** Retries after the first attempt (0: none). */
  retries: number;
  /**
   * The longest wait before one retry. A Retry-After longer than this is not cut short (the service
   * said when to come back): the reply is handed over instead.
   */
  maxWaitMs: number;
  /** The waits when the reply has no Retry-After: retry n waits backoffDelay(n). */
  backoff: BackoffOptions;
  /** Waits `ms`; rejects if `signal` aborts meanwhile. */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Milliseconds since the epoch, for a Retry-After given as a date. */
  now: () => number;
  /** 0..1, for the backoff's jitter. */
  random: () => number;
}

/** The statuses that ask to be tried again later. */
export const RETRIED_STATUSES: readonly number[] = [429, 503];

/** The error code of a keyed create whose first attempt is still being processed (409, with Retry-After). */
export const KEY_IN_USE = 'IDEMPOTENCY_KEY_IN_USE';

/** Whether the reply asks for the same request again later. */
async function asksAgain(request: Request, response: Response): Promise<boolean> {
  if (RETRIED_STATUSES.includes(response.status)) return true;
  if (response.status !== 409 || !request.headers.has(IDEMPOTENCY_KEY)) return false;
  const body = (await response
    .clone()
    .json()
    .catch(() => undefined)) as { error?: { code?: unknown } } | undefined;
  return body?.error?.code === KEY_IN_USE;
}

export const DEFAULT_RETRY: RetryPolicy = {
  retries: 3,
  maxWaitMs: 30_000,
  backoff: { initialMs: 500, maxMs: 8_000, jitter: 0.5 },
  sleep,
  now: () => Date.now(),
  random: () => Math.random(),
};

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason as Error);
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}

const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** Whether sending `request` twice can do no more than sending it once (see the module's comment). */
export function safeToRetry(request: Request): boolean {
  const method = request.method.toUpperCase();
  if (method === 'POST') return request.headers.has(IDEMPOTENCY_KEY);
  if (method === 'PATCH') return request.headers.has(IF_MATCH);
  return IDEMPOTENT_METHODS.has(method);
}

/** A Retry-After value in milliseconds (delay-seconds or an HTTP date, RFC 9110 §10.2.3); undefined if absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * `send`, with the retries of `policy` for the requests safe to repeat. Each attempt sends a copy of
 * the request, the same headers and body; the answer is the last reply (a retried 503 that
 * still failed is handed over as it came).
 */
export function retrying(
  send: (request: Request) => Promise<Response>,
  policy: RetryPolicy = DEFAULT_RETRY,
): (request: Request) => Promise<Response> {
  return async (request) => {
    if (policy.retries <= 0 || !safeToRetry(request)) return send(request);
    // The body read once, and given to each attempt's copy: a clone's would be a stream, which a
    // browser sends differently (and its tools do not show).
    const body = request.body === null ? null : await request.arrayBuffer();
    for (let retry = 0; ; retry++) {
      const response = await send(body === null ? new Request(request) : new Request(request, { body }));
      if (retry >= policy.retries || !(await asksAgain(request, response))) return response;
      const wait =
        retryAfterMs(response.headers.get(RETRY_AFTER), policy.now()) ??
        backoffDelay(retry, policy.backoff, policy.random);
      if (wait > policy.maxWaitMs) return response;
      await response.body?.cancel().catch(() => undefined); // the connection goes back to the pool
      await policy.sleep(wait, request.signal);
    }
  };
}

/** A random key for one logical create (a UUID v4), the same on each of its retries. */
export function newIdempotencyKey(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  // randomUUID is only there in a secure context; a console served over plain http to another host is not one.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
