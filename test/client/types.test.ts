/**
 * The typed client's generated files cannot drift: regenerated here from the documents a Roster serves
 * (as `npm run client:types` does), they must equal the committed ones byte for byte. When this fails,
 * the service's description changed: run `npm run client:types` and commit the result.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CHAT_TYPES, generateClientTypes, OPENAPI_TYPES, USER_FIELDS_FILE } from '../../scripts/client-types.js';
import { CHAT_MESSAGES } from '../../src/protocol/chat-messages.js';
import { USER_FIELDS, USER_SORT_FIELDS, type UserFieldSpec } from '../../src/protocol/client/user-fields.js';
import { FIELDS, SORTABLE_FIELDS, type FieldSpec } from '../../src/users/fields.js';

test('src/protocol/client/openapi.ts, chat-types.ts and user-fields.ts are what the served documents generate', async () => {
  const generated = await generateClientTypes();
  const advice = 'the documents changed: run `npm run client:types` and commit the result';
  assert.equal(readFileSync(OPENAPI_TYPES, 'utf8'), generated.openapi, `openapi.ts: ${advice}`);
  assert.equal(readFileSync(CHAT_TYPES, 'utf8'), generated.chat, `chat-types.ts: ${advice}`);
  assert.equal(readFileSync(USER_FIELDS_FILE, 'utf8'), generated.fields, `user-fields.ts: ${advice}`);
});

test('every chat message of the AsyncAPI document has its generated type, in the union of its direction', () => {
  const text = readFileSync(CHAT_TYPES, 'utf8');
  const union = (name: string) => new RegExp(`export type ${name} =([^;]*);`).exec(text)?.[1] ?? '';
  for (const [key, spec] of Object.entries(CHAT_MESSAGES)) {
    const type = `${key[0]!.toUpperCase()}${key.slice(1)}Message`;
    assert.match(text, new RegExp(`export interface ${type} \\{`), type);
    assert.match(union(spec.sender === 'server' ? 'ServerMessage' : 'ClientMessage'), new RegExp(`\\b${type}\\b`));
  }
});

test("the clients' field table says what the server's field table says, field by field", () => {
  const server = (FIELDS as readonly FieldSpec[]).map((field) => ({
    name: field.name,
    title: field.title,
    writable: field.writable,
    required: field.required === true,
    optional: field.optional === true,
    sortable: field.sortable,
    isRole: field.isRole === true,
    maxLength: field.writable ? field.maxLength : undefined,
    pattern: field.pattern,
  }));
  const clients = (USER_FIELDS as readonly UserFieldSpec[]).map((field) => ({
    name: field.name,
    title: field.title,
    writable: field.writable,
    required: field.required,
    optional: field.optional,
    sortable: field.sortable,
    isRole: field.isRole,
    maxLength: field.maxLength,
    pattern: field.pattern,
  }));
  assert.deepEqual(clients, server);
  assert.deepEqual(USER_SORT_FIELDS, SORTABLE_FIELDS);
});
