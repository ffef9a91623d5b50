/**
 * A catalog of the routes the app registers, collected from Fastify's `onRoute` hook. Two things are
 * derived from it, so neither can drift from the real routes: the 405 replies (a known path asked with
 * a method it does not support, including methods Fastify's router does not know) and the
 * `/api/v1/docs` description.
 */
import type { FastifyInstance, RouteOptions } from 'fastify';

declare module 'fastify' {
  interface FastifySchema {
    /** What the operation does: shown by `/api/v1/docs` (and the OpenAPI document). */
    description?: string;
    /** Left out of the OpenAPI document (asset routes of the reference page and the console). */
    hide?: boolean;
  }
}

export interface CatalogEntry {
  url: string;
  method: string;
  description?: string;
  hidden: boolean;
  querystring?: unknown;
  body?: unknown;
}

export class RouteCatalog {
  readonly entries: CatalogEntry[] = [];
  /** Path patterns (`:id` matching one segment) with the methods each supports. */
  readonly #paths = new Map<string, { pattern: RegExp; methods: Set<string> }>();

  /** Starts recording every route registered on `app` from now on. */
  track(app: FastifyInstance): void {
    app.addHook('onRoute', (route: RouteOptions) => {
      const schema = route.schema ?? {};
      for (const method of [route.method].flat()) {
        this.entries.push({
          url: route.url,
          method,
          description: schema.description,
          hidden: schema.hide === true,
          querystring: schema.querystring,
          body: schema.body,
        });
        this.#pathOf(route.url).methods.add(method);
      }
    });
  }

  /** The `Allow` value for a request path that some route serves, or undefined for an unknown path. */
  allowedMethods(path: string): string | undefined {
    for (const { pattern, methods } of this.#paths.values()) {
      if (pattern.test(path)) return [...methods].sort().join(', ');
    }
    return undefined;
  }

  #pathOf(url: string) {
    let path = this.#paths.get(url);
    if (!path) {
      const source = url
        .split('/')
        .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/');
      path = { pattern: new RegExp(`^${source}$`), methods: new Set() };
      this.#paths.set(url, path);
    }
    return path;
  }
}
