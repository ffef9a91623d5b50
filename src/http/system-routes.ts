/** The service's own endpoints: health and the machine-readable description (`/api/v1/docs`). */
import type { FastifyInstance, onRequestHookHandler } from 'fastify';
import { randomUUID } from 'node:crypto';
import { Type, type Static } from 'typebox';
import { timestamp } from '../clock.js';
import { serviceUnavailable } from '../errors.js';
import { healthOf, type Dependency, type HealthReport } from '../ops/health.js';
import { NEAR_FULL, type Storage } from '../users/service.js';
import type { CatalogEntry, RouteCatalog } from './catalog.js';
import { success, successSchema } from './envelope.js';
import { errorReplies } from './error-replies.js';
import { API_TITLE, API_VERSION } from './openapi.js';
import type { Metrics } from '../ops/metrics.js';
import { API_PREFIX } from './prefix.js';

const HealthData = Type.Object(
  {
    status: Type.Union([Type.Literal('healthy'), Type.Literal('degraded')], {
      description:
        '`healthy`; `degraded` (still 200) when a dependency the REST API can do without, the Redis chat bus, is down',
    }),
    timestamp: Type.String(),
    instance: Type.String({ description: 'Random id of this run of the service: a new one after every restart' }),
    started_at: Type.String({
      description: 'When this run of the service started, UTC, ISO 8601 without offset, microseconds',
    }),
    storage: Type.Optional(
      Type.Object(
        { users: Type.Integer(), capacity: Type.Integer() },
        {
          description:
            'Only under a MAX_USERS cap, and not under AUTH (health is public): users stored and the cap; from 90 % of it the status is `degraded`',
        },
      ),
    ),
    checks: Type.Optional(
      Type.Record(Type.String(), Type.Union([Type.Literal('up'), Type.Literal('down')]), {
        description:
          'Only when Roster runs on engines (DATABASE_URL, REDIS_URL), or while its chat thread does not serve (`chat`): each one, `up` or `down`',
      }),
    ),
  },
  { title: 'Health' },
);

const Endpoint = Type.Object(
  {
    path: Type.String(),
    method: Type.String(),
    description: Type.String(),
    parameters: Type.Optional(Type.Record(Type.String(), Type.String())),
    body: Type.Optional(Type.Record(Type.String(), Type.String())),
  },
  { title: 'Endpoint' },
);
const Description = Type.Object(
  { version: Type.String(), title: Type.String(), endpoints: Type.Array(Endpoint) },
  { title: 'ApiDescription' },
);

type Endpoint = Static<typeof Endpoint>;

export async function systemRoutes(
  app: FastifyInstance,
  options: {
    catalog: RouteCatalog;
    dependencies: readonly Dependency[];
    storage: () => Promise<Storage | undefined>;
    /** Whether `storage` and the numbers of a nearly full store appear (not under AUTH: health is public). */
    countsShown: boolean;
  },
): Promise<void> {
  // One run of the service: a client that sees another instance id knows Roster restarted (and, with
  // users in memory, lost them).
  const run = { instance: randomUUID(), started_at: timestamp() };
  app.get(
    '/health',
    {
      schema: {
        operationId: 'getHealth',
        summary: 'Health of the service',
        description: 'Health check of the service. 503 (in the error envelope) when the database is down.',
        tags: ['service'],
        response: {
          200: successSchema(HealthData, 'HealthEnvelope'),
          // 503 only with a dependency whose loss makes health answer so (PostgreSQL).
          ...(options.dependencies.some((dependency) => dependency.critical) ? errorReplies(503) : errorReplies()),
        },
      },
    },
    async () => {
      const { status, checks, down } = healthOf(options.dependencies);
      refuseIfCriticalDown('Service is degraded', down, down);
      const storage = await options.storage();
      const nearFull = storage !== undefined && storage.users >= NEAR_FULL * storage.capacity;
      const problems = down.map((d) => `${d.name} down`);
      if (nearFull)
        problems.push(
          `user store ${storage.users >= storage.capacity ? 'full' : 'nearly full'}${options.countsShown ? ` (${storage.users} of ${storage.capacity} users)` : ''}`,
        );
      const data = {
        status: problems.length === 0 ? status : ('degraded' as const),
        timestamp: timestamp(),
        ...run,
        ...(storage && options.countsShown ? { storage } : {}),
        ...(checks ? { checks } : {}),
      };
      return success(
        problems.length === 0 ? 'Service is healthy' : `Service is degraded: ${problems.join(' and ')}`,
        data,
      );
    },
  );

  let endpoints: Endpoint[] | undefined;
  app.get(
    '/docs',
    {
      schema: {
        operationId: 'getDocs',
        summary: 'List the API endpoints',
        description: 'Machine-readable list of the API endpoints',
        tags: ['service'],
        response: { 200: successSchema(Description, 'ApiDescriptionEnvelope'), ...errorReplies() },
      },
    },
    async () => {
      // Built on first use, when every route is registered; routes cannot change after start-up.
      endpoints ??= describe(options.catalog.entries);
      return success('API description', { version: API_VERSION, title: API_TITLE, endpoints });
    },
  );
}

/** Prometheus metrics, off the API prefix (`/metrics`, where scrapers look). */
export async function metricsRoute(
  app: FastifyInstance,
  options: { metrics: Metrics; guard?: onRequestHookHandler | undefined },
): Promise<void> {
  const { registry } = options.metrics;
  app.get(
    '/metrics',
    {
      // METRICS_AUTH: an admin credential (protection.ts, requireAdmin).
      ...(options.guard ? { onRequest: options.guard } : {}),
      schema: {
        operationId: 'getMetrics',
        summary: 'Prometheus metrics',
        description: 'Metrics in the Prometheus text format: HTTP requests, chat connections and messages, the process',
        tags: ['service'],
        response: {
          200: {
            description: 'Prometheus text exposition format',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...(options.guard ? errorReplies(401, 403) : errorReplies()),
        },
      },
    },
    async (_request, reply) => reply.type(registry.contentType).send(await options.metrics.text()),
  );
}

/**
 * Probes for orchestrators, at the root of the REST port (where Kubernetes and Docker look), public
 * and exempt from rate limiting. `/livez`: the process answers (200; restart it when not).
 * `/readyz`: it can serve users: 200 unless a critical engine (the database) is down or it is shutting
 * down, then 503 in the error envelope (take it out of rotation, do not restart it).
 */
export async function probeRoutes(
  app: FastifyInstance,
  options: { dependencies: readonly Dependency[]; closing: () => boolean },
): Promise<void> {
  const probe = (operationId: string, summary: string, description: string) => ({
    schema: {
      operationId,
      summary,
      description,
      tags: ['service'],
      response: {
        200: successSchema(Type.Object({ status: Type.String() }, { title: 'Probe' }), 'ProbeEnvelope'),
        ...errorReplies(503),
      },
    },
  });
  app.get('/livez', probe('getLiveness', 'Liveness probe', 'Liveness: 200 while the process answers'), async () =>
    success('Alive', { status: 'alive' }),
  );
  app.get(
    '/readyz',
    probe(
      'getReadiness',
      'Readiness probe',
      'Readiness: 200 when the user store is reachable and the instance is not shutting down; 503 otherwise',
    ),
    async () => {
      if (options.closing()) throw serviceUnavailable('Not ready: shutting down');
      const { down } = healthOf(options.dependencies);
      refuseIfCriticalDown(
        'Not ready',
        down,
        down.filter((dependency) => dependency.critical),
      );
      return success('Ready', { status: 'ready' });
    },
  );
}

/** 503 when a critical engine is down, naming them, with `listed` in its details. */
function refuseIfCriticalDown(why: string, down: HealthReport['down'], listed: HealthReport['down']): void {
  const critical = down.filter((dependency) => dependency.critical);
  if (critical.length === 0) return;
  throw serviceUnavailable(
    `${why}: ${critical.map((dependency) => dependency.name).join(' and ')} down`,
    listed.map((dependency) => ({ field: dependency.name, message: `down: ${dependency.reason}` })),
  );
}

/** One entry per described operation of the API (under its prefix, so not /metrics); `:id` path parameters are written `<id>` (contract). */
function describe(entries: readonly CatalogEntry[]): Endpoint[] {
  return entries
    .filter((entry) => entry.description !== undefined && entry.method !== 'HEAD' && entry.url.startsWith(API_PREFIX))
    .map((entry) => {
      const parameters = fieldTexts(entry.querystring);
      const body = fieldTexts(entry.body);
      return {
        path: entry.url.replace(/:(\w+)/g, '<$1>'),
        method: entry.method,
        description: entry.description!,
        ...(parameters && { parameters }),
        ...(body && { body }),
      };
    });
}

function fieldTexts(schema: unknown): Record<string, string> | undefined {
  const properties = (schema as { properties?: Record<string, { description?: string }> } | undefined)?.properties;
  if (!properties) return undefined;
  return Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, property.description ?? name]));
}
