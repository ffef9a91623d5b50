/**
 * The access rules of the REST port (accessOf in http/protection.ts), as a table: which routes are
 * public, which need a reader, which an admin, and that a route nobody listed is denied by default.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { accessOf, type Access } from '../../src/http/protection.js';

const cases: [method: string, route: string | undefined, expected: Access][] = [
  // No route matched (404/405 answer before credentials are asked for).
  ['GET', undefined, 'public'],
  ['DELETE', undefined, 'public'],
  // Health, the description, the OpenAPI document, metrics, the console's page: public, any method.
  ['GET', '/api/v1/health', 'public'],
  ['HEAD', '/api/v1/health', 'public'],
  ['POST', '/api/v1/health', 'public'],
  ['GET', '/api/v1/docs', 'public'],
  ['GET', '/api/v1/openapi.json', 'public'],
  ['GET', '/metrics', 'public'],
  ['GET', '/', 'public'],
  ['GET', '*', 'public'],
  // The reference page and the console's files, by prefix.
  ['GET', '/api/v1/reference', 'public'],
  ['GET', '/api/v1/reference/static/index.js', 'public'],
  ['GET', '/console/app.js', 'public'],
  // CORS preflights, on any route.
  ['OPTIONS', '/api/v1/users', 'public'],
  ['OPTIONS', '/api/v1/users/:id', 'public'],
  // The user routes: reading needs a principal, writing an admin.
  ['GET', '/api/v1/users', 'reader'],
  ['HEAD', '/api/v1/users', 'reader'],
  ['GET', '/api/v1/users/:id', 'reader'],
  ['POST', '/api/v1/users', 'admin'],
  ['PUT', '/api/v1/users/:id', 'admin'],
  ['PATCH', '/api/v1/users/:id', 'admin'],
  ['DELETE', '/api/v1/users/:id', 'admin'],
  // A route added later and listed nowhere: denied by default.
  ['GET', '/api/v1/reports', 'reader'],
  ['POST', '/api/v1/reports', 'admin'],
  // Near misses of the public names are not public.
  ['GET', '/api/v1/healthz', 'reader'],
  ['GET', '/metrics/extra', 'reader'],
  ['GET', '/consoles', 'reader'],
  ['POST', '/api/v1/documents', 'admin'],
];

describe('accessOf', () => {
  for (const [method, route, expected] of cases) {
    test(`${method} ${route ?? '(no route)'}: ${expected}`, () => {
      assert.equal(accessOf(method, route), expected);
      assert.equal(accessOf(method, route), expected, 'the same when asked again (decided once, then remembered)');
    });
  }
});
