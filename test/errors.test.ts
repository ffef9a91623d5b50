/**
 * The error catalog (errors.ts) is the one home of every code: the envelope carries code, message and
 * details only, the translation of framework errors lands on its codes, a real reply's status is its
 * code's, the OpenAPI document lists every code, and docs/rest-api.md's error table is the catalog, row for
 * row.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { envelopeOf, ERROR_CATALOG, RosterError, type ErrorCode } from '../src/errors.js';
import { toRosterError } from '../src/http/error-handler.js';
import { request, startRoster, type JsonResponse } from './support/index.js';

const CODES = Object.keys(ERROR_CATALOG) as ErrorCode[];

describe('the error catalog', () => {
  test('every status of the catalog is an error status, and the envelope carries code, message and details only', () => {
    for (const code of CODES) {
      const error = new RosterError(code, 'message', {
        details: [{ field: 'f', message: 'm' }],
        headers: { 'X-Test': '1' },
      });
      assert.deepEqual(envelopeOf(error), {
        status: 'error',
        error: { code, message: 'message', details: [{ field: 'f', message: 'm' }] },
      });
      assert.ok(error.status >= 400 && error.status < 600, code);
    }
    assert.deepEqual(envelopeOf(new RosterError('ERROR', 'plain')), {
      status: 'error',
      error: { code: 'ERROR', message: 'plain' },
    });
  });

  const frameworkCases: [what: string, error: unknown, code: ErrorCode][] = [
    ['a RosterError passes through', new RosterError('EMAIL_EXISTS', 'x'), 'EMAIL_EXISTS'],
    [
      'unsupported media type',
      Object.assign(new Error('x'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 }),
      'UNSUPPORTED_MEDIA_TYPE',
    ],
    [
      'body too large',
      Object.assign(new Error('x'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 }),
      'PAYLOAD_TOO_LARGE',
    ],
    [
      'bad content length',
      Object.assign(new Error('x'), { code: 'FST_ERR_CTP_INVALID_CONTENT_LENGTH', statusCode: 400 }),
      'ERROR',
    ],
    ['bad URL', Object.assign(new Error('x'), { code: 'FST_ERR_BAD_URL', statusCode: 400 }), 'ERROR'],
    [
      'a parameter too long for the router',
      Object.assign(new Error('x'), { code: 'FST_ERR_MAX_PARAM_LENGTH', statusCode: 414 }),
      'NOT_FOUND',
    ],
    [
      'another client error of the framework',
      Object.assign(new Error('x'), { code: 'FST_SOMETHING', statusCode: 418 }),
      'ERROR',
    ],
    ["a plugin's 403 (a static folder)", Object.assign(new Error('x'), { statusCode: 403 }), 'FORBIDDEN'],
    ["a plugin's 404", Object.assign(new Error('x'), { statusCode: 404 }), 'NOT_FOUND'],
    [
      'query validation',
      Object.assign(new Error('x'), {
        validation: [{ keyword: 'pattern', instancePath: '/page', params: {}, parentSchema: { pattern: '^1$' } }],
      }),
      'VALIDATION_ERROR',
    ],
    ['anything else', new TypeError('boom'), 'INTERNAL_ERROR'],
    ['a thrown string', 'boom', 'INTERNAL_ERROR'],
  ];
  for (const [what, error, code] of frameworkCases) {
    test(`framework errors: ${what} -> ${code}`, () => {
      assert.equal(toRosterError(error).code, code);
    });
  }
  test('internal detail never reaches the message of a 500', () => {
    assert.equal(toRosterError(new Error('password=hunter2 at db.js:12')).message, 'An unexpected error occurred');
  });

  test("a real reply's status is its code's in the catalog", async (t) => {
    const roster = await startRoster();
    t.after(() => roster.stop());
    const users = `${roster.api}/users`;
    const ada = { name: 'Ada', email: 'ada@example.com' };
    assert.equal((await request(users, { method: 'POST', body: ada })).status, 201);
    const cases: [code: ErrorCode, reply: Promise<JsonResponse>][] = [
      ['NOT_FOUND', request(`${roster.api}/nothing`)],
      ['USER_NOT_FOUND', request(`${users}/00000000-0000-4000-8000-000000000000`)],
      ['METHOD_NOT_ALLOWED', request(users, { method: 'DELETE' })],
      ['EMAIL_EXISTS', request(users, { method: 'POST', body: ada })],
      ['VALIDATION_ERROR', request(users, { method: 'POST', body: { name: 'No email' } })],
      ['INVALID_JSON', request(users, { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } })],
      [
        'UNSUPPORTED_MEDIA_TYPE',
        request(users, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } }),
      ],
    ];
    for (const [code, reply] of cases) {
      const response = await reply;
      assert.equal(response.body?.error?.code, code, response.text);
      assert.equal(response.status, ERROR_CATALOG[code].status, code);
    }
  });

  test('the OpenAPI document lists every code', async (t) => {
    const roster = await startRoster();
    t.after(() => roster.stop());
    const document = (await request(`${roster.api}/openapi.json`)).body;
    assert.deepEqual(document.components.schemas.ErrorCode.enum, CODES);
    for (const code of CODES)
      assert.match(
        document.components.schemas.ErrorCode.description,
        new RegExp(`^${code} \\(${ERROR_CATALOG[code].status}\\)`, 'm'),
      );
  });

  test("docs/rest-api.md's error table is the catalog, row for row", () => {
    const page = readFileSync(new URL('../../docs/rest-api.md', import.meta.url), 'utf8');
    const rows = [...page.matchAll(/^\| (\d{3}) \| `([A-Z_]+)` \| (.+) \|$/gm)].map(([, status, code, when]) => [
      Number(status),
      code,
      when,
    ]);
    const expected = CODES.map((code) => [ERROR_CATALOG[code].status, code, `${ERROR_CATALOG[code].meaning}.`]).sort(
      (a, b) => (a[0] as number) - (b[0] as number),
    );
    assert.deepEqual(rows, expected);
  });
});
