/**
 * Validation of user bodies: a JSON object (400 INVALID_BODY), then stages 1 and 2 of docs/decisions.md
 * ("Validation of create and full update": required keys, then types and formats; the email's uniqueness,
 * stage 3, is the store's), and the fields of a PATCH. It runs inside `UserService` rather than in Fastify's
 * pre-handler validation because the contract puts the existence check of PUT and PATCH (404) before
 * validation (422).
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { RosterError, validationFailed } from '../errors.js';
import { WRITABLE_FIELDS, type RequiredField } from './fields.js';
import { FIELD_RULES, ruleOf, type UserFields, type UserSchemas } from './schema.js';

export interface UserValidator {
  /** Create and full update: the required fields (fields.ts) present, the others optional. */
  write(body: unknown): Pick<UserFields, RequiredField> & Partial<UserFields>;
  /** Partial update: any writable field; other keys are ignored. */
  patch(body: unknown): Partial<UserFields>;
}

export function createUserValidator(schemas: UserSchemas): UserValidator {
  // Coercion off: `"name": 123` is an error, never the string "123". All errors, so every bad field is named.
  const ajv = new Ajv({ allErrors: true, coerceTypes: false, useDefaults: false });
  const write = ajv.compile(schemas.write);
  const patch = ajv.compile(schemas.patch);
  const rule = (field: string): string => ruleOf(field, schemas.roles);

  return {
    write: (body) => check(write, body, rule) as ReturnType<UserValidator['write']>,
    patch: (body) => check(patch, body, rule),
  };
}

function check(validate: ValidateFunction, body: unknown, rule: (field: string) => string): Partial<UserFields> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new RosterError('INVALID_BODY', 'The request body must be a JSON object');
  }
  if (!validate(body)) {
    const errors = validate.errors ?? [];
    const missing = errors.filter((e) => e.keyword === 'required').map((e) => String(e.params.missingProperty));
    if (missing.length > 0) {
      throw validationFailed(missing.map((field) => ({ field, message: `${field} is required` })));
    }
    throw validationFailed(
      WRITABLE_FIELDS.filter((field) => errors.some((e) => fieldOf(e) === field)).map((field) => {
        const own = errors.filter((e) => fieldOf(e) === field);
        // The contract's default PATCH has no rule but the type and the length bound: name only those.
        const message = own.some((e) => e.keyword === 'type')
          ? 'must be a string'
          : own.every((e) => e.keyword === 'maxLength')
            ? FIELD_RULES.bounded(field)
            : rule(field);
        return { field, message: `${field} ${message}` };
      }),
    );
  }
  // Copy only the writable keys into a fresh object: unknown keys are ignored and never stored, and
  // nothing from the body can reach a prototype.
  const source = body as Record<string, unknown>;
  const fields: Partial<UserFields> = {};
  for (const key of WRITABLE_FIELDS) {
    if (Object.hasOwn(source, key)) fields[key] = source[key] as string;
  }
  return fields;
}

function fieldOf(error: ErrorObject): string | undefined {
  return error.instancePath.split('/')[1];
}
