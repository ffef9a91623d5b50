/**
 * What the SQLite store keeps of its recent searches: per needle, the number of matching users per role,
 * and while they are few, the matches themselves (rowid and role). The store is the file's only writer,
 * so it tells this of every write, and what is kept stays exact: a search repeated right after a write
 * counts nothing again, and a needle too short for the trigram index (one or two characters) scans the
 * table once, not at every search. Bounded: the last KEPT_NEEDLES needles searched, and KEPT_MATCHES
 * matches per needle.
 */
import { containsAligned, likePattern } from '../sql/stored-text.js';

/** Needles kept at most; past this many, the one searched longest ago is forgotten. */
export const KEPT_NEEDLES = 64;
/** Matches of a needle kept at most: 10 000 users, about 0.5 MB; a needle with more keeps its counts alone. */
export const KEPT_MATCHES = 10_000;

/** A user as search sees it: its role, and the stored lower-cased text of each searchable field (null where absent). */
export interface Searched {
  role: string;
  texts: readonly (string | null)[];
}

export class KeptNeedle {
  /** Matching users per role. */
  readonly perRole = new Map<string, number>();
  /** The role of each matching user, by rowid, while there are at most `maxMatches`; otherwise undefined. */
  matches: Map<number, string> | undefined;
  readonly #contains: (text: string) => boolean;

  constructor(
    needle: string,
    counts: Iterable<[string, number]>,
    matches: Map<number, string> | undefined,
    readonly maxMatches: number,
  ) {
    for (const [role, users] of counts) this.perRole.set(role, users);
    this.matches = matches;
    // A plain substring test is exact unless the needle may start inside an escape (sql/stored-text.ts).
    this.#contains =
      likePattern(needle) === undefined ? (text) => containsAligned(text, needle) : (text) => text.includes(needle);
  }

  /** Matching users of `role`, or of every role. */
  total(role: string | undefined): number {
    if (role !== undefined) return this.perRole.get(role) ?? 0;
    let total = 0;
    for (const users of this.perRole.values()) total += users;
    return total;
  }

  holds(user: Searched): boolean {
    return user.texts.some((text) => text !== null && this.#contains(text));
  }

  changed(rowid: number, before: Searched | undefined, after: Searched | undefined): void {
    if (before !== undefined && this.holds(before)) {
      this.#count(before.role, -1);
      this.matches?.delete(rowid);
    }
    if (after !== undefined && this.holds(after)) {
      this.#count(after.role, 1);
      if (this.matches !== undefined && this.matches.size >= this.maxMatches) this.matches = undefined;
      this.matches?.set(rowid, after.role);
    }
  }

  #count(role: string, change: number): void {
    const users = (this.perRole.get(role) ?? 0) + change;
    if (users === 0) this.perRole.delete(role);
    else this.perRole.set(role, users);
  }
}

export class KeptSearches {
  /** By stored needle, the one searched longest ago first. */
  readonly #needles = new Map<string, KeptNeedle>();

  /** What is kept of `needle`, now the needle searched last; undefined if nothing is. */
  get(needle: string): KeptNeedle | undefined {
    const kept = this.#needles.get(needle);
    if (kept === undefined) return undefined;
    this.#needles.delete(needle);
    this.#needles.set(needle, kept);
    return kept;
  }

  keep(needle: string, kept: KeptNeedle): KeptNeedle {
    if (this.#needles.size >= KEPT_NEEDLES) this.#needles.delete(this.#needles.keys().next().value!);
    this.#needles.set(needle, kept);
    return kept;
  }

  /** Whether anything is kept: a write that finds nothing kept need not look at its user's text. */
  get empty(): boolean {
    return this.#needles.size === 0;
  }

  /** A committed write of the user at `rowid`: as it was (undefined: created) and as it is (undefined: deleted). */
  changed(rowid: number, before: Searched | undefined, after: Searched | undefined): void {
    for (const kept of this.#needles.values()) kept.changed(rowid, before, after);
  }

  clear(): void {
    this.#needles.clear();
  }
}
