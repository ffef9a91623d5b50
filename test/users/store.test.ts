/** emailKey (src/users/store.ts): the key under which email uniqueness is decided in every store. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emailKey } from '../../src/users/store.js';

test('emailKey trims surrounding white space and folds ASCII case', () => {
  assert.equal(emailKey('  Ada.Lovelace@Example.COM\t\n'), 'ada.lovelace@example.com');
  assert.equal(emailKey('ada@example.com'), 'ada@example.com');
});

test('emailKey keeps inner white space and everything but case', () => {
  assert.notEqual(emailKey('a da@example.com'), emailKey('ada@example.com'));
  assert.notEqual(emailKey('ada+1@example.com'), emailKey('ada@example.com'));
});

test('emailKey folds case beyond ASCII, where lower-casing alone does not', () => {
  assert.equal(emailKey('STRASSE@example.com'), emailKey('straße@example.com'));
  assert.equal(emailKey('ſam@example.com'), emailKey('sam@example.com'));
  assert.equal(emailKey('ΟΔΟΣ@example.com'), emailKey('οδοσ@example.com'));
  assert.equal(emailKey('ÉCOLE@example.com'), emailKey('école@example.com'));
});

test('an email that is its own key keeps its text; any other is changed', () => {
  const email = 'already.a.key@example.com';
  assert.equal(emailKey(email), email);
  assert.notEqual(emailKey('Not.A.Key@example.com'), 'Not.A.Key@example.com');
});
