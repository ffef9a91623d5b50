/**
 * The one error type of Roster. Thrown wherever a rule lives (service, store, HTTP plumbing); framework
 * errors are translated to it in `http/error-handler.ts`, and `envelopeOf` below is the only code that turns
 * one into the error envelope, whichever way the reply is then written.
 */
import { RETRY_AFTER } from './protocol/http-headers.js';

export interface FieldDetail {
  field: string;
  message: string;
}

/**
 * Every error code Roster can send, with the one HTTP status it always travels with and what it means.
 * The envelope, the OpenAPI error replies (http/error-replies.ts) and docs/rest-api.md's table all come from
 * here, and a RosterError is made from a code, so a status can never disagree with its code.
 */
export const ERROR_CATALOG = {
  INVALID_JSON: {
    status: 400,
    meaning: 'The body is not valid JSON (an empty body declared as JSON included)',
    example: 'The request body is not valid JSON',
  },
  INVALID_BODY: {
    status: 400,
    meaning: 'The body is JSON but not an object, or POST/PUT/PATCH has no body',
    example: 'The request body must be a JSON object',
  },
  ERROR: {
    status: 400,
    meaning:
      "Any other malformed request: a bad URL, a missing Host, a non-WebSocket request on the chat port (the contract's default code)",
    example: 'The request is malformed',
  },
  UNAUTHORIZED: {
    status: 401,
    meaning: 'With AUTH on: no credentials or bad ones; WWW-Authenticate names the scheme',
    example: 'Authentication is required',
  },
  FORBIDDEN: {
    status: 403,
    meaning: 'Authenticated but not allowed (a reader writing), or a chat handshake from a foreign origin',
    example: 'This needs the admin role',
  },
  NOT_FOUND: { status: 404, meaning: 'No route at this path', example: 'No route for GET /api/v1/nothing' },
  USER_NOT_FOUND: {
    status: 404,
    meaning: 'No user with this id',
    example: 'No user with id "7d0f5e0c-0000-4000-8000-000000000000"',
  },
  METHOD_NOT_ALLOWED: {
    status: 405,
    meaning: 'The path exists but not with this method; Allow lists the methods',
    example: 'DELETE is not supported on this path; use GET, HEAD, POST',
  },
  REQUEST_TIMEOUT: {
    status: 408,
    meaning: 'The headers or the whole request took longer than HEADERS_TIMEOUT_MS / REQUEST_TIMEOUT_MS',
    example: 'The request took too long',
  },
  EMAIL_EXISTS: {
    status: 409,
    meaning: 'The email is held by another user (case-insensitive, trimmed)',
    example: 'A user with this email already exists',
  },
  IDEMPOTENCY_KEY_IN_USE: {
    status: 409,
    meaning: 'A create with this Idempotency-Key is still being processed; Retry-After says when to repeat it',
    example: 'A request with this Idempotency-Key is still in progress; retry shortly',
  },
  PRECONDITION_FAILED: {
    status: 412,
    meaning:
      "If-Match names none of the user's current ETag (it changed meanwhile), or is `*` for a missing user; nothing was changed",
    example: 'The user has changed since the ETag in If-Match was read',
  },
  CHANGES_RESET: {
    status: 410,
    meaning:
      'The change feed cannot serve this `since` without a gap (older than the log keeps, from another epoch, or ahead of it); reload the list and follow from the cursor in Roster-Changes-Cursor',
    example:
      'The change log no longer holds the changes after this cursor; reload and follow from Roster-Changes-Cursor',
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    meaning: 'The body is larger than BODY_LIMIT',
    example: 'The request body is too large',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    meaning: 'A body that is not JSON on POST, PUT or PATCH',
    example: 'The request body must be JSON (Content-Type: application/json)',
  },
  VALIDATION_ERROR: {
    status: 422,
    meaning: 'Invalid fields or parameters, each named in details',
    example: 'The request is not valid',
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    meaning: 'This Idempotency-Key was already used with a different request body',
    example: 'This Idempotency-Key was used with a different request body',
  },
  UPGRADE_REQUIRED: {
    status: 426,
    meaning: 'A chat handshake with a WebSocket version other than 13',
    example: 'Only WebSocket version 13 is supported',
  },
  PRECONDITION_REQUIRED: {
    status: 428,
    meaning: 'With REQUIRE_IF_MATCH=true: a PUT, PATCH or DELETE without If-Match, or with `If-Match: *`',
    example: 'This write needs an If-Match header with the ETag of the user',
  },
  RATE_LIMITED: {
    status: 429,
    meaning: 'Over RATE_LIMIT; Retry-After and RateLimit-* say when to come back',
    example: 'Too many requests; try again in 12 s',
  },
  TOO_MANY_CONNECTIONS: {
    status: 429,
    meaning:
      'A chat handshake past WS_MAX_CONNECTIONS_PER_CLIENT, or a change stream past CHANGES_MAX_STREAMS_PER_CLIENT (with Retry-After)',
    example: 'Too many chat connections from this client',
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    meaning: "The request headers are larger than Node's limit (16 KiB)",
    example: 'The request headers are too large',
  },
  INTERNAL_ERROR: {
    status: 500,
    meaning: 'An unexpected fault; the detail is in the log, never in the reply',
    example: 'An unexpected error occurred',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    meaning:
      'An engine is unreachable or busy (or, with SQLite, its disk refuses writes), the chat is full or shutting down, or logins are queued past their bound; nothing was changed',
    example: 'The database is unreachable; try again shortly',
  },
  INSUFFICIENT_STORAGE: {
    status: 507,
    meaning: 'A create while the store holds MAX_USERS users; reads, updates and deletes go on',
    example: 'The user store is full (1000 users, MAX_USERS); delete users or raise the limit',
  },
} as const satisfies Record<string, { status: number; meaning: string; example: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;
export type ErrorStatus = (typeof ERROR_CATALOG)[ErrorCode]['status'];

/** The codes that travel with `status`. */
export function codesOf(status: number): ErrorCode[] {
  return (Object.keys(ERROR_CATALOG) as ErrorCode[]).filter((code) => ERROR_CATALOG[code].status === status);
}

export class RosterError extends Error {
  /** HTTP status the error maps to: always the catalog's for its code. */
  readonly status: ErrorStatus;
  /** Per-field details; omitted from the envelope when absent. */
  readonly details?: readonly FieldDetail[];
  /** Response headers the error needs (`Allow` on 405, for example). */
  readonly headers?: Readonly<Record<string, string>>;

  constructor(
    /** Machine-readable code, `error.code` in the envelope. */
    readonly code: ErrorCode,
    message: string,
    options: { details?: readonly FieldDetail[]; headers?: Readonly<Record<string, string>> } = {},
  ) {
    super(message);
    this.name = 'RosterError';
    this.status = ERROR_CATALOG[code].status;
    if (options.details) this.details = options.details;
    if (options.headers) this.headers = options.headers;
  }
}

export const userNotFound = (id: string) =>
  new RosterError('USER_NOT_FOUND', `No user with id "${id.length > 64 ? `${id.slice(0, 64)}…` : id}"`);

/** If-Match named none of the user's current versions: nothing was written. */
export const preconditionFailed = () =>
  new RosterError('PRECONDITION_FAILED', 'The user has changed since the ETag in If-Match was read');

export const emailExists = () => new RosterError('EMAIL_EXISTS', 'A user with this email already exists');

/** An engine Roster depends on (PostgreSQL) cannot be reached: the request was not carried out. */
export const serviceUnavailable = (message: string, details?: readonly FieldDetail[]) =>
  new RosterError('SERVICE_UNAVAILABLE', message, { details });

/** A store's engine is busy or away for a moment: the request was not carried out; retry in a second. */
export const tryAgainShortly = (message: string) =>
  new RosterError('SERVICE_UNAVAILABLE', message, { headers: { [RETRY_AFTER]: '1' } });

/** MAX_USERS reached: nothing that grows the store is accepted until users are deleted. */
export const storeFull = (capacity: number) =>
  new RosterError(
    'INSUFFICIENT_STORAGE',
    `The user store is full (${capacity} users, MAX_USERS); delete users or raise the limit`,
  );

export const validationFailed = (details: readonly FieldDetail[]) =>
  new RosterError('VALIDATION_ERROR', 'The request is not valid', { details });

export interface ErrorEnvelope {
  status: 'error';
  error: { code: string; message: string; details?: FieldDetail[] };
}

export function envelopeOf(error: RosterError): ErrorEnvelope {
  const body: ErrorEnvelope = { status: 'error', error: { code: error.code, message: error.message } };
  if (error.details && error.details.length > 0) body.error.details = [...error.details];
  return body;
}
