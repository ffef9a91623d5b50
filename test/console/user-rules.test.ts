/**
 * The console's create rules (web/src/user-rules.ts, in words for the form) agree with the API's own
 * (src/users/schema.ts FORMATS): whatever the form lets through, Create accepts, and the reverse.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { FORMATS } from '../../src/users/schema.js';
import { fieldProblem } from '../../web/src/user-rules.js';

const nameLike = fc.oneof(
  fc.string({ maxLength: 210 }),
  fc.string({ unit: 'grapheme', maxLength: 205 }),
  fc.constantFrom('', ' ', ' a ', 'a'.repeat(200), 'a'.repeat(201), '😀'.repeat(200), '😀'.repeat(201)),
);
const emailLike = fc.oneof(
  fc.emailAddress(),
  fc.string({ maxLength: 40 }),
  fc.constantFrom(
    '',
    'a@b',
    'a@b.c',
    ' a@b.c ',
    'a@@b.c',
    'a@b..c',
    'a b@c.d',
    `${'a'.repeat(250)}@b.cd`,
    `${'a'.repeat(249)}@b.cd`,
  ),
);

test('the form refuses a name exactly when Create would', () => {
  fc.assert(
    fc.property(nameLike, (name) => (fieldProblem('name', name, ['user']) === null) === FORMATS['roster-name'](name)),
    { numRuns: 2000 },
  );
});

test('the form refuses an email exactly when Create would', () => {
  fc.assert(
    fc.property(
      emailLike,
      (email) => (fieldProblem('email', email, ['user']) === null) === FORMATS['roster-email'](email),
    ),
    { numRuns: 2000 },
  );
});

test('empty fields say they are required, in words', () => {
  assert.equal(fieldProblem('name', '  ', ['user']), 'Name is required');
  assert.equal(fieldProblem('email', '', ['user']), 'Email is required');
  assert.equal(fieldProblem('role', 'root', ['admin', 'user']), 'Role must be one of: admin, user');
});
