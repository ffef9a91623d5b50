/**
 * The one place where errors become the error envelope. `RosterError`s thrown by the service and the
 * plumbing pass through as they are; errors raised by Fastify itself (bad JSON, unsupported content
 * type, body too large, query validation, malformed requests) are translated to the codes of
 * docs/decisions.md first. Anything else is a fault: 500 INTERNAL_ERROR, detail in the log, none in the body.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { codesOf, envelopeOf, ERROR_CATALOG, RosterError, validationFailed } from '../errors.js';
import type { RouteCatalog } from './catalog.js';
import { COMMON_HEADERS, JSON_CONTENT_TYPE, writeRawError } from '../edge/raw-reply.js';

/** Fastify's own error codes, by the reply docs/decisions.md gives them. */
const FRAMEWORK_ERRORS: Record<string, () => RosterError> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () =>
    new RosterError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be JSON (Content-Type: application/json)'),
  FST_ERR_CTP_BODY_TOO_LARGE: () => new RosterError('PAYLOAD_TOO_LARGE', 'The request body is too large'),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () =>
    new RosterError('ERROR', 'The Content-Length header does not match the body'),
  FST_ERR_BAD_URL: () => new RosterError('ERROR', 'The request URL is malformed'),
  FST_ERR_MAX_PARAM_LENGTH: () => new RosterError('NOT_FOUND', 'No such resource'),
};

export function toRosterError(error: unknown): RosterError {
  if (error instanceof RosterError) return error;
  const fastifyError = error as Partial<FastifyError>;
  if (fastifyError.validation) return fromSchemaValidation(fastifyError as FastifyError);
  const code = fastifyError.code;
  if (code !== undefined && Object.hasOwn(FRAMEWORK_ERRORS, code)) return FRAMEWORK_ERRORS[code]!();
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // A client error Fastify (or a plugin: @fastify/static's 403 for a folder) raised with no code of
    // ours: the catalog's first code for its status, else the contract's default code (400 ERROR); and
    // no more than the status text.
    const ours = status === 400 ? 'ERROR' : (codesOf(status)[0] ?? 'ERROR');
    return new RosterError(ours, STATUS_CODES[ERROR_CATALOG[ours].status] ?? 'Bad request');
  }
  return new RosterError('INTERNAL_ERROR', 'An unexpected error occurred');
}

/** Query and path validation failures (Fastify + Ajv) become VALIDATION_ERROR naming each parameter. */
function fromSchemaValidation(error: FastifyError): RosterError {
  const details = new Map<string, string>();
  for (const issue of error.validation ?? []) {
    const field =
      issue.keyword === 'required' ? String(issue.params.missingProperty) : (issue.instancePath.split('/')[1] ?? '');
    const schema = (issue as { parentSchema?: { type?: string; pattern?: string } }).parentSchema;
    const rule =
      issue.keyword === 'maxLength'
        ? `must be at most ${String(issue.params.limit)} characters`
        : schema?.pattern
          ? 'must be a positive integer'
          : `must be a single ${schema?.type ?? 'value'}`;
    if (!details.has(field))
      details.set(field, issue.keyword === 'required' ? `${field} is required` : `${field} ${rule}`);
  }
  return validationFailed([...details].map(([field, message]) => ({ field, message })));
}

function sendError(reply: FastifyReply, error: RosterError): FastifyReply {
  // COMMON_HEADERS here too: replies to router errors (frameworkErrors) skip the onSend hooks.
  reply.headers({ ...COMMON_HEADERS, ...error.headers });
  return reply.code(error.status).type(JSON_CONTENT_TYPE).send(envelopeOf(error));
}

/**
 * The error handler, and the not-found handler with its 404/405. Returns that 404/405 (`noRoute`): the
 * app raises it from its first onRequest hook already (app.ts), before Fastify looks at a body for a
 * route that does not exist (it refuses a QUERY without Content-Type with a 400, for instance).
 */
export function registerErrorHandling(
  app: FastifyInstance,
  catalog: RouteCatalog,
): (request: FastifyRequest) => RosterError {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const mapped = toRosterError(error);
    if (mapped.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(reply, mapped);
  });
  // No route for this method and path: a 405 when the path exists with other methods, else a 404.
  const noRoute = (request: FastifyRequest) => notFoundOrNotAllowed(catalog, request.method, request.url);
  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => sendError(reply, noRoute(request)));
  // CONNECT never reaches Fastify: Node hands it to the 'connect' event, and without a listener
  // drops the socket without a word.
  app.server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    writeRawError(socket, notFoundOrNotAllowed(catalog, 'CONNECT', request.url ?? ''));
  });
  return noRoute;
}

function notFoundOrNotAllowed(catalog: RouteCatalog, method: string, url: string): RosterError {
  const path = url.split('?')[0] ?? '';
  const allow = catalog.allowedMethods(path);
  if (allow === undefined) return new RosterError('NOT_FOUND', `No route for ${method} ${path.slice(0, 200)}`);
  return new RosterError('METHOD_NOT_ALLOWED', `${method} is not supported on this path; use ${allow}`, {
    headers: { allow },
  });
}

/** Errors the router raises before any route runs (malformed URL, over-long parameter). */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  void sendError(reply, toRosterError(error));
}
