/** The service's own endpoints: health and the machine-readable description (`/api/v1/docs`). */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { timestamp } from '../clock.js';
import type { CatalogEntry, RouteCatalog } from './catalog.js';
import { success, successSchema } from './envelope.js';

export const API_VERSION = '1.0.0';
export const API_TITLE = 'Roster User Management and Chat API';

const HealthData = Type.Object({ status: Type.Literal('healthy'), timestamp: Type.String() });

const Endpoint = Type.Object({
  path: Type.String(),
  method: Type.String(),
  description: Type.String(),
  parameters: Type.Optional(Type.Record(Type.String(), Type.String())),
  body: Type.Optional(Type.Record(Type.String(), Type.String())),
});
const Description = Type.Object({ version: Type.String(), title: Type.String(), endpoints: Type.Array(Endpoint) });

type Endpoint = Static<typeof Endpoint>;

export async function systemRoutes(app: FastifyInstance, options: { catalog: RouteCatalog }): Promise<void> {
  app.get(
    '/health',
    { schema: { description: 'Health check of the service', response: { 200: successSchema(HealthData) } } },
    async () => success('Service is healthy', { status: 'healthy' as const, timestamp: timestamp() }),
  );

  let endpoints: Endpoint[] | undefined;
  app.get(
    '/docs',
    { schema: { description: 'Machine-readable list of the API endpoints', response: { 200: successSchema(Description) } } },
    async () => {
      // Built on first use, when every route is registered; routes cannot change after start-up.
      endpoints ??= describe(options.catalog.entries);
      return success('API description', { version: API_VERSION, title: API_TITLE, endpoints });
    },
  );
}

/** One entry per described operation; `:id` path parameters are written `<id>` (contract). */
function describe(entries: readonly CatalogEntry[]): Endpoint[] {
  return entries
    .filter((entry) => entry.description !== undefined && entry.method !== 'HEAD')
    .map((entry) => {
      const endpoint: Endpoint = {
        path: entry.url.replace(/:(\w+)/g, '<$1>'),
        method: entry.method,
        description: entry.description!,
      };
      const parameters = fieldTexts(entry.querystring);
      const body = fieldTexts(entry.body);
      if (parameters) endpoint.parameters = parameters;
      if (body) endpoint.body = body;
      return endpoint;
    });
}

function fieldTexts(schema: unknown): Record<string, string> | undefined {
  const properties = (schema as { properties?: Record<string, { description?: string }> } | undefined)?.properties;
  if (!properties) return undefined;
  return Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, property.description ?? name]));
}
