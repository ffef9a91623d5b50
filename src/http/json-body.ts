/**
 * Request bodies: JSON only (`application/json` and any `type/subtype+json`), per docs/decisions.md. Every
 * other content type is left without a parser, so Fastify answers 415, which the error handler turns
 * into UNSUPPORTED_MEDIA_TYPE. Fastify validates no body (`requestValidators`): the service does.
 */
import type { Ajv } from 'ajv';
import type { FastifyInstance, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import secureJson from 'secure-json-parse';
import { RosterError } from '../errors.js';
import { digestOf } from './idempotency.js';
import { IDEMPOTENCY_KEY } from '../protocol/http-headers.js';

/** `*\/*+json` of docs/decisions.md: any media type whose subtype ends in `+json` (RFC 6839). */
const STRUCTURED_JSON = /^[^/\s;]+\/[^/\s;]+\+json$/i;

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

export function registerJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.decorateRequest('bodyDigest', undefined);
  const parse = (request: FastifyRequest, body: string, done: (error: Error | null, value?: unknown) => void): void => {
    // The fingerprint of a keyed create is of the body as received (http/idempotency.ts).
    if (request.headers[IDEMPOTENCY_KEY] !== undefined) request.bodyDigest = digestOf(body);
    if (body.length === 0) {
      // An empty body with a JSON content type is not JSON where a body is expected; elsewhere (a
      // DELETE sent with a JSON content type, say) it is simply no body.
      if (METHODS_WITH_BODY.has(request.method))
        return done(new RosterError('INVALID_JSON', 'The request body is empty'));
      return done(null, undefined);
    }
    try {
      // secure-json-parse: `__proto__` and `constructor.prototype` keys are dropped, so they can never
      // reach an object's prototype, whatever the service later does with the value.
      done(null, secureJson.parse(body, undefined, { protoAction: 'remove', constructorAction: 'remove' }));
    } catch {
      done(new RosterError('INVALID_JSON', 'The request body is not valid JSON'));
    }
  };
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parse);
  app.addContentTypeParser(STRUCTURED_JSON, { parseAs: 'string' }, parse);
}

/** The body schemas that only describe: `documentationOnly`. */
const DESCRIBING = new WeakSet<object>();

/**
 * A route's body schema for the OpenAPI document only: Fastify does not check the body against it. The
 * handler's service validates it (users/validation.ts), because the contract checks a user's existence
 * (404) before its body (422) and words the 422's details itself. Every body schema a route declares
 * goes through here; `requestValidators` refuses any other, so no route seems to validate what it does not.
 */
export function documentationOnly<T extends object>(schema: T): T {
  DESCRIBING.add(schema);
  return schema;
}

/**
 * Fastify's validator compiler: query strings, path parameters and headers by `ajv`, as the strings
 * they are; a body schema marked `documentationOnly` lets every body through, and any other body schema
 * is an error when the route is registered.
 */
export function requestValidators(ajv: Ajv): FastifySchemaCompiler<object> {
  return ({ schema, httpPart, method, url }) => {
    if (httpPart !== 'body') return ajv.compile(schema);
    if (!DESCRIBING.has(schema))
      throw new Error(`${method} ${url}: its body schema must be documentationOnly(); Fastify validates no body here`);
    return () => true;
  };
}
