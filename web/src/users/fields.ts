/**
 * The console's view of a user's fields: the generated field table (src/protocol/client/user-fields.ts,
 * read off the OpenAPI document) with words of the console's own only where a field needs better ones
 * than its name, and the create rules checked in the form before anything is sent, in words for people.
 * The rules are the table's: required, `maxLength` and `minLength` (counted as code points, surrounding
 * white space included, as stored), `pattern`, and the configured roles for the role. A field the
 * console has never heard of gets a column, an input and these checks with no edit here.
 *
 * Pure (no DOM, no value import of `@roster/protocol`), so that Node tests load it with the table.
 */
import type { UserFieldSpec } from '@roster/protocol';

/** How a field's cell shows its value. */
export type CellKind = 'id' | 'text' | 'email' | 'role' | 'time';

/** A field as the console shows it: the table's entry, and how it is named and drawn. */
export interface ConsoleField extends UserFieldSpec {
  /** Column header, form label, and the start of its messages ("Name is required"). */
  readonly label: string;
  /** The words after "sorted by" in the table's caption. */
  readonly sortWords: string;
  readonly cell: CellKind;
  /** Whether its column header sorts the list (a sortable field the console may still not offer). */
  readonly sortColumn: boolean;
  readonly inputType: 'text' | 'email';
  /** What a value failing the field's pattern is told; without it, the generic words. */
  readonly shape?: string;
  /** The pattern, compiled once (`u`, as JSON Schema patterns are). */
  readonly matcher?: RegExp;
}

type Words = Partial<Pick<ConsoleField, 'label' | 'sortWords' | 'cell' | 'sortColumn' | 'inputType' | 'shape'>>;

/** Where a field's name is not the best word, or its value is more than text. Nothing else is said per field. */
const WORDS: Readonly<Record<string, Words>> = {
  // A random UUID orders nothing a person looks for: its column copies, it does not sort.
  id: { label: 'Id', cell: 'id', sortColumn: false },
  email: { cell: 'email', inputType: 'email', shape: 'Enter an email address like name@example.com' },
  created_at: { label: 'Created', sortWords: 'creation time', cell: 'time' },
  updated_at: { label: 'Updated', sortWords: 'update time', cell: 'time' },
};

/** `created_at` → "Created at". */
const labelOf = (name: string) => {
  const words = name.replace(/_/g, ' ');
  return `${words.charAt(0).toUpperCase()}${words.slice(1)}`;
};

/** The table's fields as the console shows them, in the table's order. */
export function consoleFields(table: readonly UserFieldSpec[]): ConsoleField[] {
  return table.map((spec) => {
    const words = WORDS[spec.name] ?? {};
    const label = words.label ?? labelOf(spec.name);
    return {
      ...spec,
      label,
      sortWords: words.sortWords ?? label.toLowerCase(),
      cell: words.cell ?? (spec.isRole ? 'role' : 'text'),
      sortColumn: spec.sortable && words.sortColumn !== false,
      inputType: words.inputType ?? 'text',
      ...(words.shape === undefined ? {} : { shape: words.shape }),
      ...(spec.pattern === undefined ? {} : { matcher: new RegExp(spec.pattern, 'u') }),
    };
  });
}

/** What is wrong with one field's value under the create rules, in words; null when Create would accept it. */
export function fieldProblem(field: ConsoleField, value: string, roles: readonly string[]): string | null {
  if (field.isRole) return roles.includes(value) ? null : `${field.label} must be one of: ${roles.join(', ')}`;
  if (value.trim() === '') return field.required ? `${field.label} is required` : null;
  const length = [...value].length;
  if (field.maxLength !== undefined && length > field.maxLength)
    return `${field.label} must be at most ${field.maxLength} characters`;
  if (field.minLength !== undefined && length < field.minLength)
    return `${field.label} must be at least ${field.minLength} characters`;
  if (field.matcher && !field.matcher.test(value)) return field.shape ?? `${field.label} is not in the expected form`;
  return null;
}

/** The problems of the given values, field by field (only those with one; a name not in `fields` has none). */
export function problems(
  fields: readonly ConsoleField[],
  values: Readonly<Record<string, string>>,
  roles: readonly string[],
): Record<string, string> {
  const found: Record<string, string> = {};
  for (const [name, value] of Object.entries(values)) {
    const field = fields.find((candidate) => candidate.name === name);
    const problem = field ? fieldProblem(field, value, roles) : null;
    if (problem !== null) found[name] = problem;
  }
  return found;
}

/**
 * What a PATCH sends: the values that differ from the user's, a field the user never had reading as
 * empty, as its input shows it (so an optional field left empty is no change, not `""`).
 */
export function changedValues(
  values: Readonly<Record<string, string>>,
  user: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  return Object.fromEntries(Object.entries(values).filter(([name, value]) => value !== (user[name] ?? '')));
}

/** What a create or a PUT is checked on: every value but an empty one of a field that may be left out. */
export function checkedValues(
  fields: readonly ConsoleField[],
  values: Readonly<Record<string, string>>,
): Record<string, string> {
  const required = (name: string) => fields.find((field) => field.name === name)?.required === true;
  return Object.fromEntries(Object.entries(values).filter(([name, value]) => value.trim() !== '' || required(name)));
}
