/**
 * A user as a SQLite row and back (sql/columns.ts names the columns): the fields as BLOBs (blob-text.ts),
 * the stamps as microseconds since the epoch, the search copies and the email key as escaped text
 * (sql/stored-text.ts). The store's inserts and updates, its seed and the benchmark's bulk fill all
 * write rows through here.
 */
import { formatMicros } from '../../../clock.js';
import { FIELDS, type FieldSpec } from '../../fields.js';
import type { User } from '../../schema.js';
import type { Changes, NewUser } from '../../store.js';
import { derivedValues, EMAIL_KEY, ROW_COLUMNS, searchText, UPDATED_COLUMNS } from '../sql/columns.js';
import { fromBlob, toBlob } from './blob-text.js';

/** A row as read: fields as BLOBs (null where an optional field is absent), stamps as integers. */
export type Row = Record<string, Buffer | number | null>;

const SPECS = FIELDS as readonly FieldSpec[];

/** The user's fields as SELECT lists them. */
export const USER_COLUMNS = SPECS.map((field) => field.name).join(', ');

export const INSERT_USER = `INSERT INTO users (${ROW_COLUMNS.join(', ')}) VALUES (${ROW_COLUMNS.map(() => '?').join(', ')})`;

/** `2026-11-22T10:15:30.123456` as microseconds since the epoch (formatMicros' inverse). */
export function microsOf(stamp: string): number {
  return Date.parse(`${stamp.slice(0, 19)}Z`) * 1000 + Number(stamp.slice(20));
}

/** INSERT_USER's values for `user`, stamped `at` (microseconds: created and updated alike). */
export function toRow(user: NewUser, at: number): unknown[] {
  const fields = user as Readonly<Record<string, string | undefined>>;
  const values: unknown[] = SPECS.map((field) => {
    if (field.stamp) return at;
    const value = fields[field.name];
    return value === undefined ? null : toBlob(value);
  });
  values.push(...derivedValues(user));
  return values;
}

/**
 * The UPDATE of `changes` to the user at `rowid`, stamped `at`, and its values: `key` is the new email
 * key when the email changes. Only the columns that change are SET: SQLite rewrites the entry of every
 * index over a column a statement SETs, even to its own value (12 pages a patch of the name instead of
 * 5: migrations/sqlite/005_search_index_later.sql). A statement per set of changed fields: at most a few
 * dozen, each prepared once by the store.
 */
export function toUpdate(
  changes: Changes,
  key: string | undefined,
  at: number,
  rowid: number,
): { sql: string; values: unknown[] } {
  const fields = changes as Readonly<Record<string, string | undefined>>;
  const columns: string[] = [];
  const values: unknown[] = [];
  for (const { field, column, lower } of UPDATED_COLUMNS) {
    const value = fields[field];
    if (value === undefined) continue;
    columns.push(column);
    values.push(lower ? searchText(value) : toBlob(value));
  }
  if (key !== undefined) {
    columns.push(EMAIL_KEY);
    values.push(key);
  }
  columns.push('updated_at');
  values.push(at, rowid);
  return {
    sql: `UPDATE users SET ${columns.map((column) => `${column} = ?`).join(', ')} WHERE created_at = ?`,
    values,
  };
}

/** A row as read by `SELECT ${USER_COLUMNS}`, as a user. */
export function fromRow(row: Row): User {
  const user: Record<string, string> = {};
  for (const field of SPECS) {
    const value = row[field.name];
    if (value === null || value === undefined) continue;
    user[field.name] = field.stamp ? formatMicros(value as number) : fromBlob(value as Buffer);
  }
  return user as User;
}
