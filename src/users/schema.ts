/**
 * The user resource as schemas, built from the field table (fields.ts): the service validates with
 * them (validation.ts), Fastify serialises replies with them, and the OpenAPI document publishes them,
 * with the enums of roles and of sortable fields, so a client's validator and the service accept the
 * same strings.
 */
import { Type, type Static, type TSchema } from 'typebox';
import { ADMIN_ROLE, DEFAULT_ROLE } from '../config/roles.js';
import { CURSOR_MAX_LENGTH } from './cursor.js';
import {
  EMAIL_PATTERN,
  FIELDS,
  fieldSpec,
  NAME_PATTERN,
  SORTABLE_FIELDS,
  WRITABLE_FIELDS,
  type FieldSpec,
  type UserShape,
  type WritableField,
} from './fields.js';

/** The most characters (code points, as `maxLength` counts them) each bounded field may hold. */
export const FIELD_MAX_LENGTH = Object.fromEntries(
  (FIELDS as readonly FieldSpec[]).filter((f) => f.maxLength !== undefined).map((f) => [f.name, f.maxLength!]),
) as Record<'name' | 'email' | 'role', number>;

/** What each field must look like, worded once for both the schema descriptions and the error details. */
export const FIELD_RULES = {
  ...(Object.fromEntries(
    (FIELDS as readonly FieldSpec[]).filter((f) => f.rule !== undefined).map((f) => [f.name, f.rule!]),
  ) as Record<'name' | 'email', string>),
  role: (roles: readonly string[]) => `must be one of: ${roles.join(', ')}`,
  /** The one rule of the contract's default PATCH beyond "a string". */
  bounded: (field: string) => `must be a string of at most ${fieldSpec(field as WritableField).maxLength} characters`,
} as const;

/** The rule of `field` for a strict write. */
export const ruleOf = (field: string, roles: readonly string[]): string =>
  fieldSpec(field as WritableField).isRole
    ? FIELD_RULES.role(roles)
    : (fieldSpec(field as WritableField).rule ?? FIELD_RULES.bounded(field));

/** Whether `value` has at most `max` code points (what `maxLength` counts), without copying it. */
export function withinLength(value: string, max: number): boolean {
  if (value.length <= max) return true; // never more code points than UTF-16 units
  if (value.length > 2 * max) return false; // never fewer than half
  let count = 0;
  for (let at = 0; at < value.length; at += value.codePointAt(at)! > 0xffff ? 2 : 1) if (++count > max) return false;
  return true;
}

/** The same rules as predicates (the browser console's form rules are checked against them). */
const NAME_REGEXP = new RegExp(NAME_PATTERN, 'u');
const EMAIL_REGEXP = new RegExp(EMAIL_PATTERN, 'u');
export const FORMATS = {
  'roster-name': (value: string): boolean => withinLength(value, FIELD_MAX_LENGTH.name) && NAME_REGEXP.test(value),
  'roster-email': (value: string): boolean => withinLength(value, FIELD_MAX_LENGTH.email) && EMAIL_REGEXP.test(value),
} as const;

const EXAMPLE_USER = {
  id: '3f1c2a9e-8d4b-4c6e-9a71-0b5d2e7f4c18',
  name: 'Ada Lovelace',
  email: 'ada.lovelace@example.com',
  role: ADMIN_ROLE,
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
export type UserFields = Pick<User, WritableField>;

/** The roles, as the OpenAPI document's `Role` enum. */
function roleSchema(roles: readonly string[]) {
  return Type.Unsafe<string>({
    title: 'Role',
    type: 'string',
    enum: [...roles],
    description: `Role (optional, default "${DEFAULT_ROLE}"); ${FIELD_RULES.role(roles)}`,
  });
}

/** A field of a strict write: its bounds, its pattern, its rule. */
function strictSchema(field: FieldSpec, roles: readonly string[], required: boolean): TSchema {
  if (field.isRole) return roleSchema(roles);
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
   * bounds (FIELD_MAX_LENGTH); strict mode applies write's.
   */
  readonly patch: TSchema;
  readonly roles: readonly string[];
}

const WRITABLE = WRITABLE_FIELDS.map((name) => fieldSpec(name));

export function userSchemas(roles: readonly string[], strict: boolean): UserSchemas {
  const write = Type.Object(
    Object.fromEntries(
      WRITABLE.map((f) => [
        f.name,
        f.required ? strictSchema(f, roles, true) : Type.Optional(strictSchema(f, roles, false)),
      ]),
    ),
    { title: 'UserInput', examples: [{ name: 'Grace Hopper', email: 'grace.hopper@example.com', role: DEFAULT_ROLE }] },
  );
  const patch = strict
    ? Type.Object(Object.fromEntries(WRITABLE.map((f) => [f.name, Type.Optional(strictSchema(f, roles, false))])), {
        title: 'UserPatch',
        examples: [{ role: roles.at(-1) ?? DEFAULT_ROLE }],
      })
    : Type.Object(Object.fromEntries(WRITABLE.map((f) => [f.name, Type.Optional(bounded(f))])), {
        title: 'UserPatch',
        examples: [{ name: 'Grace Brewster Hopper' }],
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
 * Positive whole numbers in a query string: decimal digits only, so `abc`, `0`, `-1`, `1.5`, `1e309`
 * and repeated parameters all fail, and docs/decisions.md makes each a 422 naming the parameter. Patterns
 * rather than coerced integers, because coercion lets `1e309` through as Infinity. A `limit` of any
 * size is valid (it is clamped to the maximum page size); a `page` has at most 15 digits, so that it
 * stays exact as a JavaScript number.
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
