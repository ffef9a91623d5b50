/**
 * The functions Roster's SQL asks of every SQLite connection it opens (the store's, and each reader's:
 * sqlite-readers.ts), written in JavaScript because SQLite's own text functions do not know the stored
 * text's escapes (sql/stored-text.ts) or JavaScript's case folding.
 */
import type Database from 'better-sqlite3';
import { containsAligned } from '../sql/stored-text.js';
import { gramsOf } from './short-needles.js';

export function registerSqlFunctions(db: Database.Database): void {
  // An optional field's search copy is NULL where the user has none: nothing is found in it.
  db.function('roster_contains_aligned', { deterministic: true }, (haystack, needle) =>
    haystack !== null && containsAligned(String(haystack), String(needle)) ? 1 : 0,
  );
  // Over the rows of a group, the users holding each gram (short-needles.ts), as a JSON object from
  // gram to count: migration 006 back-fills the counts with it.
  db.aggregate('roster_gram_counts', {
    varargs: true,
    start: () => new Map<string, number>(),
    step: (counts: Map<string, number>, ...texts: unknown[]) => {
      for (const gram of gramsOf(texts.map((text) => (text === null ? null : String(text)))))
        counts.set(gram, (counts.get(gram) ?? 0) + 1);
    },
    result: (counts: Map<string, number>) => JSON.stringify(Object.fromEntries(counts)),
  });
}
