/**
 * The route catalog (http/catalog.ts) on a Fastify app that never listens: what it records of each
 * route, and the `Allow` value of a request path (the 405 replies), including `:param` segments and
 * characters that would mean something in a regular expression.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import Fastify from 'fastify';
import { RouteCatalog } from '../../src/http/catalog.js';

async function catalogOf(register: (app: ReturnType<typeof Fastify>) => void): Promise<RouteCatalog> {
  const app = Fastify();
  const catalog = new RouteCatalog();
  catalog.track(app);
  register(app);
  await app.ready();
  await app.close();
  return catalog;
}

const ok = async () => ({});

describe('RouteCatalog', () => {
  const routes = (app: ReturnType<typeof Fastify>) => {
    app.get('/api/v1/users', { schema: { description: 'List users', querystring: { type: 'object' } } }, ok);
    app.post('/api/v1/users', { schema: { description: 'Create a user', body: { type: 'object' } } }, ok);
    app.route({ method: ['GET', 'PUT', 'PATCH', 'DELETE'], url: '/api/v1/users/:id', handler: ok });
    app.get('/api/v1/openapi.json', ok);
    app.get('/assets/:file', { schema: { hide: true } }, ok);
  };

  const allow: [path: string, expected: string | undefined][] = [
    ['/api/v1/users', 'GET, HEAD, POST'],
    ['/api/v1/users/42', 'DELETE, GET, HEAD, PATCH, PUT'],
    ['/api/v1/users/anything-at-all', 'DELETE, GET, HEAD, PATCH, PUT'],
    ['/api/v1/openapi.json', 'GET, HEAD'],
    ['/assets/app.js', 'GET, HEAD'],
    // Unknown paths: none.
    ['/api/v1/users/42/extra', undefined],
    ['/api/v1/users/', undefined],
    ['/api/v1', undefined],
    ['/api/v1/nope', undefined],
    // `.` is a character, not "any character"; `:id` is one segment, not several.
    ['/api/v1/openapiXjson', undefined],
    ['/api/v1/users/a/b', undefined],
    ['/API/V1/USERS', undefined],
  ];
  for (const [path, expected] of allow) {
    test(`allowedMethods(${JSON.stringify(path)}) is ${expected === undefined ? 'undefined' : JSON.stringify(expected)}`, async () => {
      const catalog = await catalogOf(routes);
      assert.equal(catalog.allowedMethods(path), expected);
    });
  }

  test('one entry per route and method, with its description, schemas and hidden flag', async () => {
    const catalog = await catalogOf(routes);
    const entries = catalog.entries.map(({ method, url, description, hidden, querystring, body }) => ({
      method,
      url,
      description,
      hidden,
      querystring,
      body,
    }));
    const byKey = new Map(entries.map((entry) => [`${entry.method} ${entry.url}`, entry]));
    assert.deepEqual(byKey.get('GET /api/v1/users'), {
      method: 'GET',
      url: '/api/v1/users',
      description: 'List users',
      hidden: false,
      querystring: { type: 'object' },
      body: undefined,
    });
    assert.deepEqual(byKey.get('POST /api/v1/users'), {
      method: 'POST',
      url: '/api/v1/users',
      description: 'Create a user',
      hidden: false,
      querystring: undefined,
      body: { type: 'object' },
    });
    assert.equal(byKey.get('GET /assets/:file')?.hidden, true);
    assert.deepEqual(
      entries
        .filter((entry) => entry.url === '/api/v1/users/:id')
        .map((entry) => entry.method)
        .sort(),
      ['DELETE', 'GET', 'HEAD', 'PATCH', 'PUT'],
    );
    assert.equal(entries.length, byKey.size, 'no route recorded twice');
  });

  test('routes registered before tracking began are not in it', async () => {
    const app = Fastify();
    app.get('/before', ok);
    const catalog = new RouteCatalog();
    catalog.track(app);
    app.get('/after', ok);
    await app.ready();
    await app.close();
    assert.equal(catalog.allowedMethods('/before'), undefined);
    assert.equal(catalog.allowedMethods('/after'), 'GET, HEAD');
  });
});
