/**
 * The checks of an error reply the tests share: the envelope with its JSON content type and the
 * headers every reply carries, a validation error naming its fields, and a 401/403/429 refusal with
 * (for 401) its challenge.
 */
import assert from 'node:assert/strict';
import type { Handshake } from './chat-client.js';
import type { JsonResponse, PlainResponse } from './http.js';

/** Headers every reply of Roster carries (docs/decisions.md). */
export function assertCommonHeaders(headers: Record<string, string | string[] | undefined>, what: string): void {
  assert.equal(headers['x-powered-by'], undefined, `no X-Powered-By on ${what}`);
  assert.equal(headers['x-content-type-options'], 'nosniff', `nosniff on ${what}`);
}

/**
 * The error envelope with JSON content type, the common headers, and (when given) the status and code.
 * Accepts the headers of node:http, of fetch, or of the raw parser in frames.ts.
 */
export function assertErrorEnvelope(
  response: {
    status: number;
    headers: Headers | Record<string, string | string[] | undefined>;
    text?: string;
    body?: unknown;
  },
  expected: { status?: number | number[]; code?: string | string[] } = {},
  what = 'the reply',
): { code: string; message: string; details?: { field: string; message: string }[] } {
  const headers = response.headers instanceof Headers ? Object.fromEntries(response.headers) : response.headers;
  const text = response.text ?? (typeof response.body === 'string' ? response.body : JSON.stringify(response.body));
  const statuses = expected.status === undefined ? undefined : [expected.status].flat();
  if (statuses)
    assert.ok(
      statuses.includes(response.status),
      `${what}: status ${response.status}, expected ${statuses.join(' or ')}; ${text}`,
    );
  assert.ok(response.status >= 400 && response.status < 500, `${what}: a 4xx, got ${response.status}; ${text}`);
  assert.equal(headers['content-type'], 'application/json; charset=utf-8', `${what}: JSON content type`);
  assertCommonHeaders(headers, what);
  let body: { status?: unknown; error?: { code?: unknown; message?: unknown; details?: unknown } };
  try {
    body = JSON.parse(text);
  } catch {
    assert.fail(`${what}: the body is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
  }
  assert.equal(body.status, 'error', `${what}: ${text}`);
  assert.deepEqual(Object.keys(body).sort(), ['error', 'status'], `${what}: nothing beside status and error`);
  assert.equal(typeof body.error?.code, 'string', `${what}: error.code`);
  assert.equal(typeof body.error?.message, 'string', `${what}: error.message`);
  if (body.error?.details !== undefined) {
    assert.ok(Array.isArray(body.error.details), `${what}: details is an array`);
    for (const detail of body.error.details as unknown[]) {
      assert.equal(typeof (detail as { field?: unknown }).field, 'string');
      assert.equal(typeof (detail as { message?: unknown }).message, 'string');
    }
  }
  const codes = expected.code === undefined ? undefined : [expected.code].flat();
  if (codes)
    assert.ok(
      codes.includes(body.error!.code as string),
      `${what}: code ${String(body.error!.code)}, expected ${codes.join(' or ')}`,
    );
  return body.error as { code: string; message: string; details?: { field: string; message: string }[] };
}

/** 422 VALIDATION_ERROR whose details name exactly these fields, in this order. */
export function assertValidationError(
  response: PlainResponse | { status: number; headers: Headers; text: string },
  fields: string[],
  what = 'the reply',
): void {
  const error = assertErrorEnvelope(response, { status: 422, code: 'VALIDATION_ERROR' }, what);
  assert.deepEqual(
    (error.details ?? []).map((detail) => detail.field),
    fields,
    `${what}: details name ${fields.join(', ')}`,
  );
}

/** A refusal in the envelope with the status and code, and (for 401) a challenge naming `scheme`. */
export function assertRefused(
  response: JsonResponse | Handshake,
  status: number,
  code: string,
  scheme?: RegExp,
  what = 'the reply',
): void {
  const headers =
    response.headers instanceof Headers
      ? Object.fromEntries(response.headers)
      : (response.headers as Record<string, string>);
  assertErrorEnvelope({ status: response.status, headers, text: response.text }, { status, code }, what);
  if (scheme) assert.match(headers['www-authenticate'] ?? '', scheme, `${what}: WWW-Authenticate`);
  if (status === 403) assert.equal(headers['www-authenticate'], undefined, `${what}: no challenge on 403`);
}
