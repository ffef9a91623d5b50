/**
 * The one error type of Roster. Thrown wherever a rule lives (service, store, HTTP plumbing); framework
 * errors are translated to it in `http/errors.ts`, and `envelopeOf` below is the only code that turns
 * one into the error envelope, whichever way the reply is then written.
 */

export interface FieldDetail {
  field: string;
  message: string;
}

export class RosterError extends Error {
  constructor(
    /** HTTP status the error maps to. */
    readonly status: number,
    /** Machine-readable code, `error.code` in the envelope. */
    readonly code: string,
    message: string,
    /** Per-field details; omitted from the envelope when absent. */
    readonly details?: readonly FieldDetail[],
    /** Response headers the error needs (`Allow` on 405, for example). */
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
    this.name = 'RosterError';
  }
}

export const userNotFound = (id: string) =>
  new RosterError(404, 'USER_NOT_FOUND', `No user with id "${id.length > 64 ? `${id.slice(0, 64)}…` : id}"`);

export const emailExists = () => new RosterError(409, 'EMAIL_EXISTS', 'A user with this email already exists');

/** An engine Roster depends on (PostgreSQL) cannot be reached: the request was not carried out. */
export const serviceUnavailable = (message: string, details?: readonly FieldDetail[]) =>
  new RosterError(503, 'SERVICE_UNAVAILABLE', message, details);

/** MAX_USERS reached: nothing that grows the store is accepted until users are deleted. */
export const storeFull = (capacity: number) =>
  new RosterError(507, 'INSUFFICIENT_STORAGE', `The user store is full (${capacity} users, MAX_USERS); delete users or raise the limit`);

export const validationFailed = (details: readonly FieldDetail[]) =>
  new RosterError(422, 'VALIDATION_ERROR', 'The request is not valid', details);

export interface ErrorEnvelope {
  status: 'error';
  error: { code: string; message: string; details?: FieldDetail[] };
}

export function envelopeOf(error: RosterError): ErrorEnvelope {
  const body: ErrorEnvelope = { status: 'error', error: { code: error.code, message: error.message } };
  if (error.details && error.details.length > 0) body.error.details = [...error.details];
  return body;
}
