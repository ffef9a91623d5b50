/**
 * The contract's rules for users, in one place: the order of checks, the role default, ids, email
 * uniqueness, MAX_USERS, the seed. Routes translate HTTP to these calls; stores store and stamp (store.ts).
 */
import { randomUUID } from 'node:crypto';
import { emailExists, preconditionFailed, storeFull, userNotFound, validationFailed } from '../errors.js';
import { decodeCursor, encodeCursor, type CursorList } from './cursor.js';
import { nextPosition, type ListParams, type Position } from './query.js';
import type { ListQuery, User, UserList } from './schema.js';
import { DEFAULT_ROLE } from '../config/roles.js';
import { SEED_USERS } from './seed.js';
import { CHANGED, type Changes, type Expected, type Keep, type NewUser, type UserStore } from './store.js';
import type { UserValidator } from './validation.js';
import type { Storage } from '../ops/health.js';

export const DEFAULT_PAGE = 1;
export const DEFAULT_LIMIT = 20;
/** `pagination.page` of a page asked for by cursor (`after`), which has no page number (docs/decisions.md). */
const CURSOR_PAGE = 0;

/** A list page, and the cursor of the next one when more users follow it (`Link: rel="next"`). */
export type ListPage = UserList & { next?: string };

/**
 * A write's precondition (docs/decisions.md "Retries and concurrent edits"): If-Match's versions (store.ts
 * `Expected`), or `any` (`*`, see `missing`), or If-Unmodified-Since (milliseconds since the epoch, whole seconds).
 */
export type IfMatch = Expected | 'any' | { unmodifiedSince: number };

export interface UserServiceOptions {
  /** Larger `limit` values are clamped to this (docs/decisions.md). */
  maxPageSize: number;
  /** docs/decisions.md strict mode: PUT and PATCH also refuse an email held by another user. */
  strict: boolean;
  /** MAX_USERS: creates past it get 507; 0 or absent, no cap. */
  maxUsers?: number;
}

/** How full the store is, for health and metrics (ops/ declares it): the count as of the last create or delete. */
export type { Storage };

/** Health calls the store nearly full from this share of MAX_USERS on, before creates are refused. */
export const NEAR_FULL = 0.9;

export class UserService {
  /** The store's count as last read or kept up to date by this instance (other instances may write too). */
  #stored: number | undefined;

  constructor(
    private readonly store: UserStore,
    private readonly validator: UserValidator,
    private readonly options: UserServiceOptions,
  ) {}

  async list(query: ListQuery): Promise<ListPage> {
    // page and limit arrive as validated digit strings (see ListQuery); a huge limit is clamped.
    const limit = Math.min(query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit), this.options.maxPageSize);
    const list: CursorList = {
      role: query.role,
      search: query.search,
      sort: query.sort ?? 'created_at',
      descending: (query.order ?? 'desc') === 'desc',
    };
    const after = query.after === undefined ? undefined : afterOf(list, query);
    const page = after !== undefined ? CURSOR_PAGE : query.page === undefined ? DEFAULT_PAGE : Number(query.page);
    const offset = after !== undefined ? 0 : (page - 1) * limit;
    const params: ListParams = { ...list, offset, limit, after };
    const result = await this.store.list(params);
    const { users, total } = result;
    const position = nextPosition(params, result);
    return {
      users,
      pagination: { total, page, limit, pages: Math.ceil(total / limit) },
      ...(position && { next: encodeCursor(list, position) }),
    };
  }

  async get(id: string): Promise<User> {
    const user = await this.store.get(id);
    if (!user) throw userNotFound(id);
    return user;
  }

  /**
   * Create: required keys, then formats (both in the validator), then email uniqueness. With `keep`
   * (a keyed create), its reply is stored with the user, atomically (store.ts: Keep).
   */
  async create(body: unknown, keep?: Keep): Promise<User> {
    const fields = this.validator.write(body);
    await this.#admit();
    // The validator copied the writable fields alone (fields.ts); the store keeps the table's order.
    const user: NewUser = { ...fields, id: randomUUID(), role: fields.role ?? DEFAULT_ROLE };
    const stored = await this.store.insert(user, keep);
    if (stored === 'email_taken') throw emailExists();
    if (this.#stored !== undefined) this.#stored++;
    return stored;
  }

  /** Full update: existence (404) before validation (422); role resets to the default when omitted. */
  async replace(id: string, body: unknown, ifMatch?: IfMatch): Promise<User> {
    const fields = await this.#validFor(id, () => this.validator.write(body), ifMatch);
    return this.#apply(id, { ...fields, role: fields.role ?? DEFAULT_ROLE }, ifMatch);
  }

  /** Partial update: existence first; only the writable fields present in the body change. */
  async update(id: string, body: unknown, ifMatch?: IfMatch): Promise<User> {
    return this.#apply(id, await this.#validFor(id, () => this.validator.patch(body), ifMatch), ifMatch);
  }

  /**
   * The body's fields, or, when it is invalid, 404 if the user does not exist and the validation
   * error otherwise: existence before validation, as the contract orders them. A valid body goes
   * straight to the write, which answers 404 itself for a missing user, so a database store makes one
   * round trip per update instead of a read and then the write.
   */
  async #validFor<T>(id: string, validate: () => T, ifMatch: IfMatch | undefined): Promise<T> {
    try {
      return validate();
    } catch (error) {
      if (!(await this.store.get(id))) throw missing(id, ifMatch);
      throw error;
    }
  }

  /** The contract's three users at start-up, into a store that holds none yet (one that outlived a restart keeps its own). */
  async seed(): Promise<void> {
    await this.store.seed(SEED_USERS.map((seed) => ({ id: randomUUID(), ...seed })));
  }

  async remove(id: string, ifMatch?: IfMatch): Promise<void> {
    const removed = await this.store.remove(id, { expected: await this.#expected(id, ifMatch) });
    if (removed === CHANGED) throw preconditionFailed();
    if (!removed) throw missing(id, ifMatch);
    if (this.#stored !== undefined && this.#stored > 0) this.#stored--;
  }

  /** How full the store is under MAX_USERS (undefined without a cap): what health and metrics report. */
  async storage(): Promise<Storage | undefined> {
    const capacity = this.options.maxUsers;
    if (!capacity) return undefined;
    this.#stored ??= await this.store.count();
    return { users: this.#stored, capacity };
  }

  /**
   * MAX_USERS refuses a create past it, like Redis' maxmemory; updates keep within the fields' bounds
   * and go on. The count is read just before the insert; creates in flight at once may pass together.
   */
  async #admit(): Promise<void> {
    const capacity = this.options.maxUsers;
    if (!capacity) return;
    this.#stored = await this.store.count();
    if (this.#stored >= capacity) throw storeFull(capacity);
  }

  /**
   * What the store checks of a precondition: If-Match's versions; nothing for `*` (existence only);
   * If-Unmodified-Since decided here, then as the version read (docs/decisions.md).
   */
  async #expected(id: string, ifMatch: IfMatch | undefined): Promise<Expected | undefined> {
    if (ifMatch === undefined || ifMatch === 'any') return undefined;
    if (!('unmodifiedSince' in ifMatch)) return ifMatch;
    const user = await this.get(id);
    const modified = Math.floor(Date.parse(`${user.updated_at}Z`) / 1000) * 1000;
    if (modified > ifMatch.unmodifiedSince) throw preconditionFailed();
    return [user.updated_at];
  }

  async #apply(id: string, fields: Changes, ifMatch: IfMatch | undefined): Promise<User> {
    const result = await this.store.update(id, fields, {
      uniqueEmail: this.options.strict,
      expected: await this.#expected(id, ifMatch),
    });
    if (result === 'not_found') throw missing(id, ifMatch); // or deleted between the check and the write
    if (result === CHANGED) throw preconditionFailed();
    if (result === 'email_taken') throw emailExists();
    return result;
  }
}

/** The position of the list's cursor `after`; 422 for one that is not this list's, or with `page`. */
function afterOf(list: CursorList, query: ListQuery): Position {
  if (query.page !== undefined)
    throw validationFailed([
      { field: 'page', message: 'must be left out when after is given (a cursor names its page)' },
    ]);
  const position = decodeCursor(list, query.after!);
  if (position === undefined)
    throw validationFailed([
      {
        field: 'after',
        message: 'is not a cursor of this list: altered, or made for another role, search, sort or order',
      },
    ]);
  return position;
}

/** A missing user: 404, except under `If-Match: *`, which a missing user fails (412, RFC 9110 13.1.1). */
const missing = (id: string, ifMatch: IfMatch | undefined) =>
  ifMatch === 'any' ? preconditionFailed() : userNotFound(id);
