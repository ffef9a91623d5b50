/**
 * What the SQLite store keeps of a recent search (docs/decisions.md, "Search on SQLite"; search.ts keeps
 * the last KEPT_NEEDLES): the number of matching users per role, and while they are few, the matches
 * themselves (rowid and role), kept exact by every write the store tells of.
 */
import { containsAligned, likePattern } from '../sql/stored-text.js';

/** Needles kept at most; past this many, the one searched longest ago is forgotten. */
export const KEPT_NEEDLES = 64;
/** Matches of a needle kept at most: 10 000 users, about 0.5 MB; a needle with more keeps its counts alone. */
export const KEPT_MATCHES = 10_000;
/** Roles whose count a needle keeps at most, when it keeps the count of each role as it is asked for. */
const KEPT_ROLES = 16;

/** A user as search sees it: its role, and the stored lower-cased text of each searchable field (null where absent). */
export interface Searched {
  role: string;
  texts: readonly (string | null)[];
}

/** A needle's counts and matches. */
export class KeptNeedle {
  /** The role of each matching user, by rowid, while there are at most `maxMatches`; otherwise undefined. */
  matches: Map<number, string> | undefined;
  /** Matching users of every role. */
  #total: number;
  /** Matching users per role: of every role when `#everyRole` (a role missing has none), else of the roles counted so far. */
  readonly #perRole = new Map<string, number>();
  readonly #everyRole: boolean;
  readonly #contains: (text: string) => boolean;

  /** `perRole`: the count of every role, or undefined to count each role when it is first asked for. */
  constructor(
    needle: string,
    total: number,
    perRole: Iterable<[string, number]> | undefined,
    matches: Map<number, string> | undefined,
    readonly maxMatches: number,
  ) {
    this.#total = total;
    this.#everyRole = perRole !== undefined;
    for (const [role, users] of perRole ?? []) this.#perRole.set(role, users);
    this.matches = matches;
    // A plain substring test is exact unless the needle may start inside an escape (sql/stored-text.ts).
    this.#contains =
      likePattern(needle) === undefined ? (text) => containsAligned(text, needle) : (text) => text.includes(needle);
  }

  /** Matching users of `role`, or of every role; undefined for a role not counted yet. */
  total(role: string | undefined): number | undefined {
    if (role === undefined) return this.#total;
    return this.#perRole.get(role) ?? (this.#everyRole ? 0 : undefined);
  }

  /** The count of `role`, just taken; kept for at most KEPT_ROLES roles, the one counted longest ago forgotten first. */
  counted(role: string, users: number): number {
    if (this.#perRole.size >= KEPT_ROLES) this.#perRole.delete(this.#perRole.keys().next().value!);
    this.#perRole.set(role, users);
    return users;
  }

  holds(user: Searched): boolean {
    return user.texts.some((text) => text !== null && this.#contains(text));
  }

  /** A committed write of the user at `rowid`: as it was (undefined: created) and as it is (undefined: deleted). */
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
    this.#total += change;
    const users = this.#perRole.get(role);
    if (users !== undefined || this.#everyRole) this.#perRole.set(role, (users ?? 0) + change);
  }
}
