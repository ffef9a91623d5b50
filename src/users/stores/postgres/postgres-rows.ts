/**
 * A user as a PostgreSQL row and back (sql/columns.ts names the columns): every field text, escaped
 * where text cannot hold it (sql/stored-text.ts), the stamps read as `to_char` text. The store's
 * inserts and updates, and the benchmark's bulk fill, write rows through here.
 */
import { FIELD_NAMES, FIELDS, type FieldSpec } from '../../fields.js';
import type { User } from '../../schema.js';
import type { Changes, NewUser } from '../../store.js';
import { DERIVED_COLUMNS, derivedValues, searchText, UPDATED_COLUMNS } from '../sql/columns.js';
import { fromStored, toStored } from '../sql/stored-text.js';

const SPECS = FIELDS as readonly FieldSpec[];
export const FORMAT = `'YYYY-MM-DD"T"HH24:MI:SS.US'`;

/** A user as read: every field text (null where an optional one is absent), some of it escaped. */
export type Row = Record<string, string | null>;

/** A user's columns as `Row`, from `table` (a prefix such as `users.` where a statement joins others). */
export const columns = (table = ''): string =>
  SPECS.map((field) =>
    field.stamp ? `to_char(${table}${field.name}, ${FORMAT}) AS ${field.name}` : `${table}${field.name}`,
  ).join(', ');

/** The fields as stored, unformatted: what a subquery hands on to `columns`. */
export const RAW_COLUMNS = FIELD_NAMES.join(', ');

/** The columns a new row is given (the stamps aside, which the database's clock sets): toRow's order. */
export const INSERT_COLUMNS: readonly string[] = [
  ...SPECS.filter((field) => !field.stamp).map((field) => field.name),
  ...DERIVED_COLUMNS,
];

/** INSERT_COLUMNS' values for `user`. */
export function toRow(user: NewUser): (string | null)[] {
  const fields = user as Readonly<Record<string, string | undefined>>;
  const values = SPECS.filter((field) => !field.stamp).map((field) => nullable(fields[field.name], toStored));
  values.push(...derivedValues(user));
  return values;
}

export function fromRow(row: Row): User {
  const user: Record<string, string> = {};
  for (const field of SPECS) {
    const value = row[field.name];
    if (value === null || value === undefined) continue;
    user[field.name] = field.stamp ? value : fromStored(value);
  }
  return user as User;
}

/**
 * `SET` clauses that keep a column where the change is absent (`coalesce`), numbered from `$first`,
 * with their values: every writable field (and its search copy), or all but the email's.
 */
export function updateSet(first: number, withEmail: boolean): { sql: string; values(changes: Changes): unknown[] } {
  const updated = UPDATED_COLUMNS.filter(({ field }) => withEmail || field !== 'email');
  return {
    sql: updated.map(({ column }, at) => `${column} = coalesce($${first + at}, ${column})`).join(', '),
    values: (changes) =>
      updated.map(({ field, lower }) =>
        nullable((changes as Readonly<Record<string, string | undefined>>)[field], (value) =>
          lower ? searchText(value) : toStored(value),
        ),
      ),
  };
}

export function nullable<T>(value: string | undefined, map: (value: string) => T): T | null {
  return value === undefined ? null : map(value);
}
