/**
 * The API's create rules for a user's fields, checked in the form before anything is sent, in words
 * for people. They are the rules of src/users/schema.ts (FORMATS): the name at most 200 characters and
 * not only white space, the email at most 254 characters shaped like local@domain.tld (both counted as
 * code points, surrounding white space included, as it is stored), the role one of the configured roles.
 * test/console/users.test.ts checks that the API agrees.
 */
import type { components } from '@roster/protocol';
/** The fields the form checks, each a writable field of the generated `UserInput`. */
export type UserInput = Required<Pick<components['schemas']['UserInput'], 'name' | 'email'>> & { role: string };

export type UserField = keyof UserInput;

const NAME_MAX = 200;
const EMAIL_MAX = 254;
const EMAIL_SHAPE = /^[^\s@]+@(?:[^\s@.]+\.)+[^\s@.]+$/;

/** What is wrong with one field under the create rules, in words; null when Create would accept it. */
export function fieldProblem(field: UserField, value: string, roles: readonly string[]): string | null {
  const trimmed = value.trim();
  switch (field) {
    case 'name':
      if (trimmed === '') return 'Name is required';
      if ([...value].length > NAME_MAX) return `Name must be at most ${NAME_MAX} characters`;
      return null;
    case 'email':
      if (trimmed === '') return 'Email is required';
      if ([...value].length > EMAIL_MAX) return `Email must be at most ${EMAIL_MAX} characters`;
      if (!EMAIL_SHAPE.test(trimmed)) return 'Enter an email address like name@example.com';
      return null;
    case 'role':
      return roles.includes(value) ? null : `Role must be one of: ${roles.join(', ')}`;
  }
}

/** The problems of the given fields, field by field (only those with one). */
export function problems(input: Partial<UserInput>, roles: readonly string[]): Partial<Record<UserField, string>> {
  const found: Partial<Record<UserField, string>> = {};
  for (const [field, value] of Object.entries(input) as [UserField, string][]) {
    const problem = fieldProblem(field, value, roles);
    if (problem !== null) found[field] = problem;
  }
  return found;
}
