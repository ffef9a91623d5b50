/**
 * The user resource as schemas, built from the field table (fields.ts): the service validates with
 * them (validation.ts), Fastify serialises replies with them, and the OpenAPI document publishes them,
 * with the enums of roles and of sortable fields, so a client's validator and the service accept the
 * same strings.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { DEFAULT_ROLE } from '../config/roles.js';
import { CURSOR_MAX_LENGTH } from './cursor.js';
import { FIELDS, fieldSpec, SORTABLE_FIELDS, WRITABLE_FIELDS, type FieldSpec, type UserShape } from './fields.js';
import { SEED_USERS } from './seed.js';

/** What each field must look like, worded once for both the schema descriptions and the error details. */
export const FIELD_RULES = {
  name: fieldSpec('name').rule!,
  email: fieldSpec('email').rule!,
  role: (roles: readonly string[]) => `must be one of: ${roles.join(', ')}`,
  /** The one rule of the contract's default PATCH beyond "a string". */
  bounded: (field: string) => `must be a string of at most ${fieldSpec(field).maxLength} characters`,
} as const;

/** The rule of `field` for a strict write. */
export const ruleOf = (field: string, roles: readonly string[]): string =>
  fieldSpec(field).isRole ? FIELD_RULES.role(roles) : (fieldSpec(field).rule ?? FIELD_RULES.bounded(field));

/** Whether `value` has at most `max` code points (what `maxLength` counts), without copying it. */
function withinLength(value: string, max: number): boolean {
  if (value.length <= max) return true; // never more code points than UTF-16 units
  if (value.length > 2 * max) return false; // never fewer than half
  let count = 0;
  for (let at = 0; at < value.length; at += value.codePointAt(at)! > 0xffff ? 2 : 1) if (++count > max) return false;
  return true;
}

/** A field's bound and pattern as a predicate (the browser console's form rules are checked against them). */
function format(field: FieldSpec): (value: string) => boolean {
  const pattern = new RegExp(field.pattern!, 'u');
  return (value) => withinLength(value, field.maxLength!) && pattern.test(value);
}
export const FORMATS = {
  'roster-name': format(fieldSpec('name')),
  'roster-email': format(fieldSpec('email')),
} as const;

const EXAMPLE_USER = {
  id: '3f1c2a9e-8d4b-4c6e-9a71-0b5d2e7f4c18',
  ...SEED_USERS[0], // the examples are the seed's users
  created_at: '2026-11-22T10:15:30.123456',
  updated_at: '2026-11-22T10:15:30.123456',
};

export const User = Type.Object(
  Object.fromEntries(
    (FIELDS as readonly FieldSpec[]).map((f) => {
      const schema = Type.String({ description: f.about ?? f.title });
      return [f.name, f.optional ? Type.Optional(schema) : schema];
    }),
  ),
  { title: 'User', additionalProperties: false, examples: [EXAMPLE_USER] },
);
export type User = UserShape;

/** The fields a client may write. */
export type UserFields = Pick<User, (typeof WRITABLE_FIELDS)[number]>;

/** A field of a strict write: its bounds, its pattern, its rule; the roles as the OpenAPI document's `Role` enum. */
function strictSchema(field: FieldSpec, roles: readonly string[], required: boolean): TSchema {
  if (field.isRole)
    return Type.Unsafe<string>({
      title: 'Role',
      type: 'string',
      enum: [...roles],
      description: `Role (optional, default "${DEFAULT_ROLE}"); ${FIELD_RULES.role(roles)}`,
    });
  return Type.String({
    ...(field.minLength === undefined ? {} : { minLength: field.minLength }),
    ...(field.maxLength === undefined ? {} : { maxLength: field.maxLength }),
    ...(field.pattern === undefined ? {} : { pattern: field.pattern }),
    description: `${field.title}${required ? ' (required)' : ''}; ${ruleOf(field.name, roles)}`,
  });
}

/** A field of the contract's default PATCH: any string within the field's bound. */
function bounded(field: FieldSpec) {
  return Type.String({
    ...(field.maxLength === undefined ? {} : { maxLength: field.maxLength }),
    description: `${field.title}; ${FIELD_RULES.bounded(field.name)}`,
  });
}

export interface UserSchemas {
  /** Body of create (POST) and full update (PUT). */
  readonly write: TSchema;
  /**
   * Body of partial update (PATCH): the contract applies no rules but "a string", and Roster its length
   * bounds (fields.ts `maxLength`); strict mode applies write's.
   */
  readonly patch: TSchema;
  readonly roles: readonly string[];
}

const WRITABLE = WRITABLE_FIELDS.map((name) => fieldSpec(name));

export function userSchemas(roles: readonly string[], strict: boolean): UserSchemas {
  const writeField = (f: FieldSpec) =>
    f.required ? strictSchema(f, roles, true) : Type.Optional(strictSchema(f, roles, false));
  const write = Type.Object(Object.fromEntries(WRITABLE.map((f) => [f.name, writeField(f)])), {
    title: 'UserInput',
    examples: [SEED_USERS[1]],
  });
  const patchField = (f: FieldSpec) => Type.Optional(strict ? strictSchema(f, roles, false) : bounded(f));
  const patchExample = strict ? { role: roles.at(-1) ?? DEFAULT_ROLE } : { name: 'Grace Brewster Hopper' };
  const patch = Type.Object(Object.fromEntries(WRITABLE.map((f) => [f.name, patchField(f)])), {
    title: 'UserPatch',
    examples: [patchExample],
  });
  return { write, patch, roles };
}

/** The fields `sort` can name, as the OpenAPI document's `UserSortField` enum. */
export const UserSortField = Type.Unsafe<(typeof SORTABLE_FIELDS)[number]>({
  title: 'UserSortField',
  type: 'string',
  enum: [...SORTABLE_FIELDS],
  description: 'A field the list can be sorted by',
});

export const UserId = Type.Object({ id: Type.String({ description: 'The user id' }) });

/**
 * Positive whole numbers in a query string, decimal digits only (docs/decisions.md: anything else, a
 * repeated parameter too, is a 422). Patterns, because coercion lets `1e309` through as Infinity. A
 * `limit` of any size is clamped; a `page` has at most 15 digits, to stay exact as a JavaScript number.
 */
const POSITIVE = '^0*[1-9][0-9]*$';
const PAGE = '^0*[1-9][0-9]{0,14}$';

/**
 * The longest `search`, in characters: no name (200) or email (254) is longer, so a longer search can
 * match nothing, and a bound keeps the cost of a search (in every store) proportional to the fields.
 */
export const SEARCH_MAX_LENGTH = 256;

/** Query of the list operation; role, search, sort and order are free strings by the contract. */
export const ListQuery = Type.Object({
  page: Type.Optional(
    Type.String({ pattern: PAGE, description: 'Page number, 1-based (default 1); a positive whole number' }),
  ),
  limit: Type.Optional(
    Type.String({
      pattern: POSITIVE,
      description: 'Page size (default 20); a positive whole number, clamped to the maximum page size',
    }),
  ),
  role: Type.Optional(Type.String({ description: 'Keep users whose role equals this exactly' })),
  search: Type.Optional(
    Type.String({
      maxLength: SEARCH_MAX_LENGTH,
      description: `Keep users whose name or email contains this, case-insensitive; at most ${SEARCH_MAX_LENGTH} characters`,
    }),
  ),
  // Any string, by the contract (one that names no field sorts in creation order); the enum says which do.
  sort: Type.Optional(
    Type.Union([UserSortField, Type.String()], {
      description: 'Field to sort by (default created_at); any other value keeps creation order',
    }),
  ),
  order: Type.Optional(Type.String({ description: '"desc" (default) sorts descending, anything else ascending' })),
  after: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: CURSOR_MAX_LENGTH,
      description:
        'Cursor: the users after the place it names, as taken from the `Link: rel="next"` header of the page before. ' +
        'An extension beside page numbers: leave `page` out, and keep role, search, sort and order as they were ' +
        '(limit may change). pagination.page is then 0.',
    }),
  ),
});
export type ListQuery = Static<typeof ListQuery>;

export const Pagination = Type.Object(
  {
    total: Type.Integer({ description: 'Users after filtering and search' }),
    page: Type.Integer({ description: 'The page number used' }),
    limit: Type.Integer({ description: 'The page size used' }),
    pages: Type.Integer({ description: 'ceil(total / limit)' }),
  },
  { title: 'Pagination' },
);

export const UserList = Type.Object({ users: Type.Array(User), pagination: Pagination }, { title: 'UserList' });
export type UserList = { users: User[]; pagination: Static<typeof Pagination> };
