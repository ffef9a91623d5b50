/**
 * Request bodies: JSON only (`application/json` and any `type/subtype+json`), per docs/decisions.md. Every
 * other content type is left without a parser, so Fastify answers 415, which the error handler turns
 * into UNSUPPORTED_MEDIA_TYPE.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
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
