/**
 * A SQL store's columns, from the field table (fields.ts): one column per field, named after it, plus
 * the columns that serve search and uniqueness, which hold what the stores compare rather than what
 * the client sent. Both SQL stores keep this layout (migrations/ and migrations/sqlite/).
 */
import { CLEARABLE_FIELDS, FIELD_NAMES, SEARCHABLE_FIELDS, WRITABLE_FIELDS, type FieldName } from '../../fields.js';
import { emailKey, type NewUser } from '../../store.js';
import { toStored } from './stored-text.js';

/** The lower-cased copy of a searchable field, which search reads. */
export const searchColumn = (field: string): string => `${field}_lower`;

/** emailKey() of the email (users/store.ts), which decides uniqueness. */
export const EMAIL_KEY = 'email_key';

/** The columns derived from others: lower-cased copies for search, then the email key. */
export const DERIVED_COLUMNS: readonly string[] = [...SEARCHABLE_FIELDS.map(searchColumn), EMAIL_KEY];

/** The stored lower-cased copy of a searchable field's value, which search reads. */
export const searchText = (value: string): string => toStored(value.toLowerCase());

/** The user's search copies, one per searchable field (null where absent). */
export function searchTexts(user: NewUser): (string | null)[] {
  const fields = user as Readonly<Record<string, string | undefined>>;
  return SEARCHABLE_FIELDS.map((field) => {
    const value = fields[field];
    return value === undefined ? null : searchText(value);
  });
}

/** DERIVED_COLUMNS' values for `user`. */
export const derivedValues = (user: NewUser): (string | null)[] => [
  ...searchTexts(user),
  toStored(emailKey(user.email)),
];

/** Every column a user's row holds, fields first. */
export const ROW_COLUMNS: readonly string[] = [...FIELD_NAMES, ...DERIVED_COLUMNS];

/**
 * The columns an update may change: each writable field and its lower-cased copy if it has one;
 * `clearable` where the field is optional, so that a PUT may set it to NULL.
 */
export const UPDATED_COLUMNS: readonly { field: FieldName; column: string; lower: boolean; clearable: boolean }[] =
  WRITABLE_FIELDS.flatMap((field) => {
    const clearable = (CLEARABLE_FIELDS as readonly string[]).includes(field);
    return [
      { field, column: field as string, lower: false, clearable },
      ...((SEARCHABLE_FIELDS as readonly string[]).includes(field)
        ? [{ field, column: searchColumn(field), lower: true, clearable }]
        : []),
    ];
  });
