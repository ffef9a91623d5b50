/**
 * GET /api/v1/users/changes: the change feed (docs/rest-api.md "Live changes"), as JSON pages (with a
 * long poll, `wait`) or, for `Accept: text/event-stream`, as Server-Sent Events (change-streams.ts). A
 * cursor that the log cannot serve without a gap is answered with 410 CHANGES_RESET (JSON) or a `reset`
 * event (a stream), both naming the cursor to follow from after reloading the list.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Static } from 'typebox';
import { RosterError, validationFailed } from '../../errors.js';
import type { ChangeFilter, ChangeLog } from '../../users/changes.js';
import { JSON_CONTENT_TYPE, COMMON_HEADERS } from '../../edge/raw-reply.js';
import { LAST_EVENT_ID, RETRY_AFTER, ROSTER_CHANGES_CURSOR, X_REQUEST_ID } from '../../protocol/http-headers.js';
import { clientKey } from '../../edge/client-identity.js';
import { OpenCounts } from '../../edge/open-counts.js';
import { errorReplies } from '../error-replies.js';
import { cursorOf, pageJson, sinceOf } from '../change-json.js';
import { ChangeStreams } from '../change-streams.js';
import {
  ChangePage,
  changesQuery,
  CHANGES_MAX_LIMIT,
  CHANGES_DEFAULT_LIMIT,
  WAIT_MAX_SECONDS,
} from './change-schema.js';

export interface ChangeRoutesOptions {
  log: ChangeLog;
  /** CHANGES_MAX_BACKLOG. */
  maxBacklog: number;
  /** CHANGES_MAX_STREAMS_PER_CLIENT; 0: no cap. */
  maxStreamsPerClient: number;
}

/** How long a client refused a stream is told to wait (Retry-After, seconds): the streams' own retry advice. */
const STREAM_RETRY_AFTER_S = '2';

type ChangesQuery = Static<typeof changesQuery>;
const EVENT_STREAM = 'text/event-stream';

export async function changeRoutes(
  app: FastifyInstance,
  { log, maxBacklog, maxStreamsPerClient }: ChangeRoutesOptions,
): Promise<void> {
  const streams = new ChangeStreams(log, { maxBacklog, logger: app.log });
  /** Open streams per client (clientKey: the rate limiter's identity), for CHANGES_MAX_STREAMS_PER_CLIENT. */
  const perClient = new OpenCounts();
  /** Long polls waiting: woken at shutdown, so that none holds it up. */
  const waiting = new Set<() => void>();
  app.addHook('preClose', async () => {
    streams.close();
    for (const wake of waiting) wake();
  });

  app.get<{ Querystring: ChangesQuery }>(
    '/users/changes',
    {
      schema: {
        operationId: 'listUserChanges',
        summary: 'Follow changes of users',
        description:
          'Every create, update and delete of a user, numbered, oldest first: JSON pages (`since`, `limit`, and a long ' +
          'poll with `wait`), or with `Accept: text/event-stream` a stream of Server-Sent Events that resumes from ' +
          '`Last-Event-ID`. A cursor the log can no longer serve without a gap gets 410 CHANGES_RESET (a `reset` event ' +
          'on a stream): reload the list, then follow from the cursor it names.',
        tags: ['users'],
        querystring: changesQuery,
        response: {
          200: {
            description: 'A page of changes (JSON), or the stream (text/event-stream)',
            content: {
              'application/json': { schema: ChangePage },
              [EVENT_STREAM]: {
                schema: {
                  type: 'string',
                  description:
                    '`retry: 2000`, then per change `id: <cursor>`, `event: change`, `data: <Change>`; a `reset` ' +
                    'event (`data: {"next": <cursor>}`) when the cursor cannot be served; `: heartbeat` every 15 s',
                },
              },
            },
          },
          ...errorReplies(410, 422, 429),
        },
      },
    },
    async (request, reply) => {
      const query = request.query;
      const filter: ChangeFilter | undefined =
        query.role === undefined && query.id === undefined ? undefined : { role: query.role, id: query.id };
      const stream = (request.headers.accept ?? '').includes(EVENT_STREAM);
      const given = stream ? (headerOf(request, LAST_EVENT_ID) ?? query.since) : query.since;
      const since = given === undefined ? undefined : sinceOf(given, log.epoch);
      if (since === 'malformed')
        throw validationFailed([{ field: 'since', message: 'since must be a cursor of this feed: <epoch>.<seq>' }]);
      const wait = waitOf(query.wait, stream);
      const from = since === undefined ? await log.head() : since === 'foreign' ? undefined : since.seq;

      if (stream) {
        const client = clientKey(request.principal, request.ip);
        if (maxStreamsPerClient > 0 && perClient.of(client) >= maxStreamsPerClient)
          throw new RosterError('TOO_MANY_CONNECTIONS', 'Too many open change streams from this client', {
            headers: { [RETRY_AFTER]: STREAM_RETRY_AFTER_S },
          });
        perClient.hold(client, reply.raw);
        openStream(request, reply);
        // A foreign epoch, or a place the log cannot serve: the stream says so (reset) and follows from its head.
        const start = from === undefined ? { reset: await log.head() } : from;
        await streams.open(reply.raw, start, filter);
        return reply;
      }

      const limit = Math.min(
        query.limit === undefined ? CHANGES_DEFAULT_LIMIT : Number(query.limit),
        CHANGES_MAX_LIMIT,
      );
      const deadline = Date.now() + wait * 1000;
      if (from === undefined) throw changesReset(cursorOf(log.epoch, await log.head()));
      for (let at = from; ;) {
        const read = await log.read(at, limit, filter);
        if ('reset' in read) throw changesReset(cursorOf(log.epoch, read.head));
        const left = deadline - Date.now();
        if (read.changes.length > 0 || left <= 0 || reply.raw.destroyed)
          return reply.type(JSON_CONTENT_TYPE).send(pageJson(log.epoch, read.changes, read.next));
        await nextChange(log, left, waiting, reply.raw);
        // Changes the filter left out move the place on: the next read starts after them.
        at = read.next;
      }
    },
  );
}

/** A request header given once, as text. */
function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** `wait` (JSON only): whole seconds up to WAIT_MAX_SECONDS. */
function waitOf(wait: string | undefined, stream: boolean): number {
  if (wait === undefined || stream) return 0;
  const seconds = /^[0-9]{1,4}$/.test(wait) ? Number(wait) : NaN;
  if (!(seconds <= WAIT_MAX_SECONDS))
    throw validationFailed([{ field: 'wait', message: `wait must be whole seconds from 0 to ${WAIT_MAX_SECONDS}` }]);
  return seconds;
}

/** 410: reload, then follow from `cursor`. */
function changesReset(cursor: string): RosterError {
  return new RosterError(
    'CHANGES_RESET',
    'The change log cannot serve this cursor without a gap; reload the list and follow from the cursor given',
    {
      details: [{ field: 'since', message: `since is no longer served; reload, then follow from ${cursor}` }],
      headers: { [ROSTER_CHANGES_CURSOR]: cursor },
    },
  );
}

/** Resolves at the log's next change, after `ms`, when the client goes, or at shutdown. */
function nextChange(log: ChangeLog, ms: number, waiting: Set<() => void>, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      unsubscribe();
      waiting.delete(done);
      res.off('close', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const unsubscribe = log.subscribe(done);
    waiting.add(done);
    res.once('close', done);
  });
}

/**
 * Writes the stream's head and takes the reply out of Fastify's hands (hijack): the stream outlives the
 * handler. Hijacked replies skip the onSend hooks, so the headers they add to every reply are set here:
 * those already on the reply (helmet's, CORS', RateLimit-*), X-Content-Type-Options and X-Request-Id.
 */
function openStream(request: FastifyRequest, reply: FastifyReply): void {
  reply.hijack();
  const started = performance.now();
  reply.raw.writeHead(200, {
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    ...COMMON_HEADERS,
    [X_REQUEST_ID]: request.id,
    'content-type': `${EVENT_STREAM}; charset=utf-8`,
    'cache-control': 'no-store',
    // Proxies that buffer replies (nginx) pass this one through as it comes.
    'x-accel-buffering': 'no',
  });
  // No log line comes from Fastify for a hijacked reply: one here when the stream ends.
  reply.raw.once('close', () =>
    request.log.info(
      { method: request.method, url: request.url, status: 200, ms: Math.round(performance.now() - started) },
      'change stream ended',
    ),
  );
}
