/**
 * The console's create rules (web/src/users/fields.ts, in words for the form, from the generated field
 * table) agree with the API's own (src/users/schema.ts FORMATS): whatever the form lets through, Create
 * accepts, and the reverse; and a field the console has no words for is checked by its bounds alone.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { USER_FIELDS, type UserFieldSpec } from '../../src/protocol/client/user-fields.js';
import { FORMATS } from '../../src/users/schema.js';
import {
  changedValues,
  checkedValues,
  consoleFields,
  fieldProblem as problemOf,
  problems,
} from '../../web/src/users/fields.js';

const FIELDS = consoleFields(USER_FIELDS);
const fieldProblem = (name: string, value: string, roles: readonly string[]) =>
  problemOf(
    FIELDS.find((field) => field.name === name)!,
    value,
    roles,
  );

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

test('a field with no words of the console (an optional phone, at most 40) is checked by its bounds', () => {
  const phone: UserFieldSpec = {
    name: 'phone',
    title: 'Phone number',
    writable: true,
    required: false,
    optional: true,
    sortable: true,
    isRole: false,
    maxLength: 40,
  };
  const fields = consoleFields([...USER_FIELDS, phone]);
  const field = fields.at(-1)!;
  assert.deepEqual([field.label, field.cell, field.sortColumn, field.inputType], ['Phone', 'text', true, 'text']);
  assert.equal(problemOf(field, '', ['user']), null, 'optional: empty is no problem');
  assert.equal(problemOf(field, '+1 555 0100', ['user']), null);
  assert.equal(problemOf(field, '1'.repeat(41), ['user']), 'Phone must be at most 40 characters');
  // A create with every field but the phone: nothing stops it (no field falls through unchecked).
  assert.deepEqual(problems(fields, { name: 'Ada', email: 'ada@example.com', phone: '' }, ['user']), {});
  assert.deepEqual(problems(fields, { name: 'Ada', email: 'ada@example.com', phone: '1'.repeat(41) }, ['user']), {
    phone: 'Phone must be at most 40 characters',
  });
});

test('a required field with a pattern and no words of its own says so generically', () => {
  const code: UserFieldSpec = {
    name: 'badge_code',
    title: 'Badge code',
    writable: true,
    required: true,
    optional: false,
    sortable: false,
    isRole: false,
    maxLength: 8,
    pattern: '^[A-Z]+$',
  };
  const [field] = consoleFields([code]);
  assert.equal(problemOf(field!, ' ', []), 'Badge code is required');
  assert.equal(problemOf(field!, 'abc', []), 'Badge code is not in the expected form');
  assert.equal(problemOf(field!, 'ABC', []), null);
  assert.equal(field!.sortColumn, false);
});

test('a PATCH sends what changed: an optional field the user never had, left empty, is no change', () => {
  const values = { name: 'Ada Lovelace', email: 'ada@example.com', role: 'admin', phone: '' };
  const had = { id: 'u-1', name: 'Ada', email: 'ada@example.com', role: 'admin' };
  assert.deepEqual(changedValues(values, had), { name: 'Ada Lovelace' });
  assert.deepEqual(changedValues({ ...values, phone: '+1 555 0100' }, had), {
    name: 'Ada Lovelace',
    phone: '+1 555 0100',
  });
  // Emptied, a phone the user had is a change (the API then says what it makes of it).
  assert.deepEqual(changedValues(values, { ...had, name: 'Ada Lovelace', phone: '+1 555 0100' }), { phone: '' });
});

test('a create or PUT checks every field but an empty optional one; an empty required one is checked', () => {
  const phone: UserFieldSpec = {
    name: 'phone',
    title: 'Phone number',
    writable: true,
    required: false,
    optional: true,
    sortable: false,
    isRole: false,
    maxLength: 40,
  };
  const fields = consoleFields([...USER_FIELDS, phone]);
  assert.deepEqual(checkedValues(fields, { name: '', email: 'a@b.co', role: '', phone: '' }), {
    name: '',
    email: 'a@b.co',
  });
});
