/**
 * The memory store's sorted index per sortable field (fields.ts). Each index holds sequence numbers
 * (search-text.ts: Seq) ordered by (the field's code-point key, creation order).
 */
import { SORTABLE_FIELDS, type SortableField } from '../../fields.js';
import { OrderedIndex } from './ordered-index.js';
import type { Seq, UserColumn } from './search-text.js';

/** The fields a sort can name besides `created_at`, which is the creation index itself. */
export type KeyedField = Exclude<SortableField, 'created_at'>;
export const KEYED = SORTABLE_FIELDS.filter((field): field is KeyedField => field !== 'created_at');
/** The fields with a sorted index of their own: all but role (per-role creation indexes) and created_at. */
export type IndexedField = Exclude<KeyedField, 'role'>;
export const INDEXED = KEYED.filter((field): field is IndexedField => field !== 'role');
/**
 * Code-point sort keys of a user with characters from U+D800 up (emoji, say), whose UTF-16 order differs
 * (query.ts). Everyone else sorts by the field itself.
 */
export type Keys = Record<KeyedField, string>;

/**
 * A user's value of `field`, or the empty string where an optional field is absent: a user lacking the
 * field sorts as the empty string (contract; docs/decisions.md "Sorting by an optional field").
 */
export const valueOf = (users: UserColumn, seq: Seq, field: KeyedField): string => users[seq]![field] ?? '';

export function keyOf(odd: Map<Seq, Keys>, users: UserColumn, seq: Seq, field: KeyedField): string {
  return odd.get(seq)?.[field] ?? valueOf(users, seq, field);
}

/**
 * One index per IndexedField over `users`, each tagging its items with `tag` (the store's role number,
 * so that a role filter skips whole chunks of other roles: ordered-index.ts). The comparisons run a few
 * hundred times per write. Each closure reads one property name; written out per field or through a shared key function measured
 * the same (bench/memstore.ts at 200 000 users, four runs each: insert 15.3 / 15.9 µs and patch 11.0 /
 * 10.9 µs at best, the noise larger).
 */
export function fieldIndexes(
  users: UserColumn,
  odd: Map<Seq, Keys>,
  maxChunk: number,
  tag: (seq: Seq) => number,
): Record<IndexedField, OrderedIndex<Seq>> {
  const ordered = (x: string, y: string, a: Seq, b: Seq): number => (x < y ? -1 : x > y ? 1 : a - b);
  /** The index of a field whose keys may be the odd ones (`odd`, see Keys) of users being moved. */
  const byKey = (field: IndexedField) =>
    new OrderedIndex<Seq>(
      (a, b) =>
        odd.size === 0
          ? ordered(valueOf(users, a, field), valueOf(users, b, field), a, b)
          : ordered(keyOf(odd, users, a, field), keyOf(odd, users, b, field), a, b),
      { maxChunk, tag, key: (seq) => (odd.size === 0 ? valueOf(users, seq, field) : keyOf(odd, users, seq, field)) },
    );
  return Object.fromEntries(INDEXED.map((field) => [field, byKey(field)])) as Record<IndexedField, OrderedIndex<Seq>>;
}
