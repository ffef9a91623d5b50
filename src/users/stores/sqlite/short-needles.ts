/**
 * The counts behind a search of one or two characters on SQLite (migrations/sqlite/006;
 * docs/decisions.md, "Search on SQLite"): for every piece of one or two characters (a "gram") of the
 * users' lower-cased searchable text, and every role, how many users hold it in any searchable field.
 * A short needle's total is then one read, whatever the number of users; the trigram index, which
 * has no pieces shorter than three characters, answers the longer ones.
 *
 * The counts follow the trigram index: the same batch (search-index.ts) that indexes the users written
 * since the last time adjusts them, from the text and role each noted user had when last indexed and
 * the text and role it has now. Hand-written, because SQLite has no index of substrings this short.
 */
import type Database from 'better-sqlite3';
import { fromStored, toStored } from '../sql/stored-text.js';

/** Characters (code points) at most of a needle the counts answer. */
export const SHORT_NEEDLE = 2;

/** Whether the stored `needle` is answered by the counts: at most SHORT_NEEDLE characters as the client sent them. */
export function isShort(needle: string): boolean {
  let characters = 0;
  for (const _ of fromStored(needle)) if (++characters > SHORT_NEEDLE) return false;
  return characters > 0;
}

/**
 * The grams of a user's stored lower-cased texts, stored as the needles are (toStored): each piece of
 * one or two characters of the original text, once per user however many fields hold it. Characters
 * are code points, as the SQL stores' search matches them (stored-text.ts: containsAligned).
 */
export function gramsOf(texts: readonly (string | null)[]): Set<string> {
  const grams = new Set<string>();
  for (const text of texts) {
    if (text === null) continue;
    let previous: string | undefined;
    for (const character of fromStored(text)) {
      grams.add(character);
      if (previous !== undefined) grams.add(previous + character);
      previous = character;
    }
  }
  const stored = new Set<string>();
  for (const gram of grams) stored.add(toStored(gram));
  return stored;
}

/** Changes to the counts, gathered over a batch and then written at once: by role (a BLOB's hex), by gram. */
export class GramChanges {
  readonly #byRole = new Map<string, Map<string, number>>();

  /** A user as it was indexed (`change` -1) or is now (+1): its role (BLOB) and stored lower-cased texts. */
  add(role: Buffer, texts: readonly (string | null)[], change: 1 | -1): void {
    const key = role.toString('hex');
    let grams = this.#byRole.get(key);
    if (grams === undefined) this.#byRole.set(key, (grams = new Map()));
    for (const gram of gramsOf(texts)) grams.set(gram, (grams.get(gram) ?? 0) + change);
  }

  /** Writes the changes that are not zero (a user whose text and role stayed changes nothing). */
  write(upsert: Database.Statement): void {
    for (const [role, grams] of this.#byRole) {
      const blob = Buffer.from(role, 'hex');
      for (const [gram, change] of grams) if (change !== 0) upsert.run(gram, blob, change);
    }
  }
}

/** Adds a change to a gram's count (creating its row), for GramChanges.write. */
export const UPSERT_GRAM = `INSERT INTO users_search_grams (gram, role, users) VALUES (?, ?, ?)
  ON CONFLICT (gram, role) DO UPDATE SET users = users + excluded.users`;
