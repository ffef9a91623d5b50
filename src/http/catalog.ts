/**
 * A catalog of the routes the app registers, collected from Fastify's `onRoute` hook. Two things are
 * derived from it, so neither can drift from the real routes: the 405 replies (a known path with an
 * unsupported method) and the `/api/v1/docs` description.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';
import { RosterError } from '../errors.js';

declare module 'fastify' {
  interface FastifySchema {
    /** What the operation does: shown by `/api/v1/docs` (and the OpenAPI document). */
    description?: string;
  }
}

export interface CatalogEntry {
  url: string;
  method: string;
  description?: string;
  querystring?: unknown;
  body?: unknown;
}

interface DescribedSchema {
  description?: string;
  querystring?: unknown;
  body?: unknown;
}

export class RouteCatalog {
  readonly entries: CatalogEntry[] = [];

  /** Starts recording every route registered on `app` from now on. */
  track(app: FastifyInstance): void {
    app.addHook('onRoute', (route: RouteOptions) => {
      if ((route.config as { methodNotAllowed?: boolean } | undefined)?.methodNotAllowed) return;
      const schema = (route.schema ?? {}) as DescribedSchema;
      for (const method of [route.method].flat()) {
        this.entries.push({
          url: route.url,
          method,
          description: schema.description,
          querystring: schema.querystring,
          body: schema.body,
        });
      }
    });
  }

  /**
   * For every known path, answers the methods it does not support with 405 METHOD_NOT_ALLOWED and an
   * `Allow` header. Call after all other routes are registered.
   */
  registerMethodNotAllowed(app: FastifyInstance): void {
    const byUrl = new Map<string, Set<string>>();
    for (const { url, method } of this.entries) {
      const methods = byUrl.get(url) ?? new Set<string>();
      methods.add(method);
      if (method === 'GET') methods.add('HEAD');
      byUrl.set(url, methods);
    }
    for (const [url, methods] of byUrl) {
      const allow = [...methods].sort().join(', ');
      const others = app.supportedMethods.filter((method) => !methods.has(method));
      app.route({
        method: others,
        url,
        config: { methodNotAllowed: true },
        handler: async (request) => {
          throw new RosterError(405, 'METHOD_NOT_ALLOWED', `${request.method} is not supported on this path; use ${allow}`, undefined, {
            allow,
          });
        },
      });
    }
  }
}
