/**
 * The memory store's list pages read off its ordered indexes (memory-store.ts): the asked order
 * (Order) as runs of users from a position, where a numbered page or a cursor starts in it, and the
 * page taken off runs (of an index, or of a search's matches: search-text.ts) with a role filter.
 */
import { codePointOrderKey, type Position } from '../../query.js';
import type { KeyedField } from './field-indexes.js';
import type { OrderedIndex } from './ordered-index.js';
import type { Seq, UserColumn } from './search-text.js';
import type { User } from '../../schema.js';

/**
 * How to read the asked order: an index, and how to walk it.
 * - `ascending`: the index in its own order.
 * - `reversed`: the index backwards; right when no two users share a key (creation order, id).
 * - `descendingGroups`: descending by key, but users with equal keys keep creation order (docs/decisions.md:
 *   ties are stable in both directions), so groups of equal keys are read backwards, each forwards.
 * - `byRole`: the per-role creation indexes one after the other, in ascending or descending role
 *   order, each forwards: users of one role tie, and ties keep creation order both ways.
 */
export interface Order {
  index: OrderedIndex<Seq>;
  read: 'ascending' | 'reversed' | 'descendingGroups' | 'byRole';
  /** The field sorted by, and a user's code-point key of it (field-indexes.ts: keyOf); none for creation order. */
  field?: KeyedField;
  key?: (seq: Seq) => string;
  /** Whether the field's keys descend. */
  descending?: boolean;
  /** For `byRole`: the per-role creation indexes, by the code-point key of their role, in the order's role order. */
  roles?: { key: string; index: OrderedIndex<Seq> }[];
}

/**
 * The order's users (every role of its index) from `position` on (0: the first), as runs to read
 * forwards, each of at most `batch` users.
 */
export function* runs(order: Order, position: number, batch: number): Generator<readonly Seq[]> {
  const { index } = order;
  if (order.read === 'ascending') {
    for (let rank = position; rank < index.size; rank += batch) yield index.slice(rank, batch);
  } else if (order.read === 'reversed') {
    for (let rank = index.size - 1 - position; rank >= 0; rank -= batch) yield index.sliceDown(rank, batch);
  } else if (order.read === 'byRole') {
    // Whole roles skipped by their size, then slices of the next ones.
    for (const role of order.roles!) {
      for (let rank = position; rank < role.index.size; rank += batch) yield role.index.slice(rank, batch);
      position = Math.max(0, position - role.index.size);
    }
  } else {
    yield* descendingGroups(order, position, batch);
  }
}

/**
 * Position p of descending groups lies in the group holding ascending rank size-1-p; if that group
 * spans ascending ranks [lo, hi], its users take positions size-1-hi .. size-1-lo, in ascending order.
 * The groups that end within the next `batch` ranks down are read off one slice; a group that may go
 * on below the slice is found by rank.
 */
function* descendingGroups(order: Order, position: number, batch: number): Generator<readonly Seq[]> {
  const { index } = order;
  const key = order.key!;
  const size = index.size;
  if (position >= size) return;
  const top = key(index.at(size - 1 - position)!);
  let hi = index.firstRank((seq) => key(seq) > top) - 1;
  // The users of the first group that come before `position`.
  let skip = position - (size - 1 - hi);
  while (hi >= 0) {
    const below = index.sliceDown(hi, batch);
    let i = 0;
    while (i < below.length) {
      let j = i + 1;
      const value = key(below[i]!);
      while (j < below.length && key(below[j]!) === value) j++;
      if (j === below.length && hi - j >= 0) break;
      yield below.slice(i, j - skip).reverse();
      skip = 0;
      i = j;
    }
    hi -= i;
    if (i < below.length) {
      const value = key(below[i]!);
      const lo = index.firstRank((seq) => key(seq) >= value);
      for (let from = lo + skip; from <= hi; from += batch) yield index.slice(from, Math.min(batch, hi - from + 1));
      skip = 0;
      hi = lo - 1;
    }
  }
}

/**
 * Where a walk of the users of `role` (the index's tag `tag`) in the order can start to reach position
 * `offset` among them: a position in the order, and how many users of the role come before it. Whole
 * chunks are skipped by their counts per role (ordered-index.ts: skipTagged); reading by descending
 * groups, the start is moved up to the end of a group of equal keys, as the group is read forwards.
 */
export function roleStart(
  order: Order,
  users: UserColumn,
  role: string,
  tag: number,
  offset: number,
): { position: number; skipped: number } {
  const { index } = order;
  let { rank, skipped } = index.skipTagged(tag, offset, order.read !== 'ascending');
  if (order.read === 'ascending') return { position: rank, skipped };
  if (order.read === 'descendingGroups' && rank > 0 && rank < index.size) {
    const key = order.key!;
    const value = key(index.at(rank)!);
    if (key(index.at(rank - 1)!) === value) {
      const end = index.firstRank((seq) => key(seq) > value);
      for (const seq of index.slice(rank, end - rank)) if (users[seq]!.role === role) skipped--;
      rank = end;
    }
  }
  return { position: index.size - rank, skipped };
}

/**
 * How many users of the order (all roles of its index) come before `after`, found in O(log n) by
 * comparing keys: the users' own place may have moved, or they may be gone.
 */
export function positionAfter(order: Order, users: UserColumn, after: Position): number {
  const { index, key: keyOf } = order;
  const key = codePointOrderKey(after.key);
  const created = after.created_at;
  /** -1, 0 or 1 as `seq` comes before, at or after the cursor in the index's own (ascending) order. */
  const versus = (seq: Seq): number => {
    const own = keyOf?.(seq);
    // Creation order (created_at, or a sort where every user ties): created_at alone places the cursor.
    if (own !== undefined && own !== key) return own < key ? -1 : 1;
    const stamp = users[seq]!.created_at;
    return stamp < created ? -1 : stamp > created ? 1 : 0;
  };
  if (order.read === 'byRole') {
    // Whole roles before the cursor's, then the users of its role created up to it.
    let position = 0;
    for (const role of order.roles!) {
      if (order.descending ? role.key > key : role.key < key) position += role.index.size;
      else if (role.key === key) position += role.index.firstRank((seq) => versus(seq) > 0);
    }
    return position;
  }
  if (order.read === 'ascending') return index.firstRank((seq) => versus(seq) > 0);
  if (order.read === 'reversed') return index.size - index.firstRank((seq) => versus(seq) >= 0);
  // Descending groups: every key above the cursor's, then its own group up to the cursor.
  const above = index.size - index.firstRank((seq) => keyOf!(seq) > key);
  return above + index.firstRank((seq) => versus(seq) > 0) - index.firstRank((seq) => keyOf!(seq) >= key);
}

/**
 * Up to `limit` users off `runs`, in their order: only those of `role` when it is given, from the
 * first that `from` accepts when it is given, and the first `skip` of those left out.
 */
export function take(
  runs: Iterable<ArrayLike<Seq>>,
  users: UserColumn,
  role: string | undefined,
  skip: number,
  limit: number,
  from?: (user: User) => boolean,
): Seq[] {
  const out: Seq[] = [];
  if (limit <= 0) return out;
  let started = from === undefined;
  for (const run of runs) {
    for (let i = 0; i < run.length; i++) {
      const seq = run[i]!;
      if (role !== undefined && users[seq]!.role !== role) continue;
      if (!started && !(started = from!(users[seq]!))) continue;
      if (skip > 0) skip--;
      else if (out.push(seq) === limit) return out;
    }
  }
  return out;
}
