/**
 * The contract's rules for users, in one place: the order of checks, the role default, ids and
 * timestamps, email uniqueness. Routes translate HTTP to these calls; stores only store.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { emailExists, userNotFound } from '../errors.js';
import type { ListResult } from './query.js';
import type { ListQuery, User, UserList } from './schema.js';
import type { UserStore } from './store.js';
import type { UserValidator } from './validation.js';

export const DEFAULT_ROLE = 'user';
export const DEFAULT_PAGE = 1;
export const DEFAULT_LIMIT = 20;

export interface UserServiceOptions {
  /** Larger `limit` values are clamped to this (decisions.md). */
  maxPageSize: number;
  /** decisions.md strict mode: PUT and PATCH also refuse an email held by another user. */
  strict: boolean;
}

export class UserService {
  constructor(
    private readonly store: UserStore,
    private readonly validator: UserValidator,
    private readonly clock: Clock,
    private readonly options: UserServiceOptions,
  ) {}

  async list(query: ListQuery): Promise<UserList> {
    // page and limit arrive as validated digit strings (see ListQuery); a huge limit is clamped.
    const page = query.page === undefined ? DEFAULT_PAGE : Number(query.page);
    const limit = Math.min(query.limit === undefined ? DEFAULT_LIMIT : Number(query.limit), this.options.maxPageSize);
    const { users, total }: ListResult = await this.store.list({
      role: query.role,
      search: query.search,
      sort: query.sort ?? 'created_at',
      descending: (query.order ?? 'desc') === 'desc',
      offset: (page - 1) * limit,
      limit,
    });
    return { users, pagination: { total, page, limit, pages: Math.ceil(total / limit) } };
  }

  async get(id: string): Promise<User> {
    const user = await this.store.get(id);
    if (!user) throw userNotFound(id);
    return user;
  }

  /** Create: required keys, then formats (both in the validator), then email uniqueness. */
  async create(body: unknown): Promise<User> {
    const fields = this.validator.write(body);
    const now = this.clock.next();
    const user: User = {
      id: randomUUID(),
      name: fields.name,
      email: fields.email,
      role: fields.role ?? DEFAULT_ROLE,
      created_at: now,
      updated_at: now,
    };
    const stored = await this.store.insert(user);
    if (stored === 'email_taken') throw emailExists();
    return stored;
  }

  /** Full update: existence (404) before validation (422); role resets to the default when omitted. */
  async replace(id: string, body: unknown): Promise<User> {
    await this.get(id);
    const fields = this.validator.write(body);
    return this.#apply(id, { name: fields.name, email: fields.email, role: fields.role ?? DEFAULT_ROLE });
  }

  /** Partial update: existence first; only name, email and role present in the body change. */
  async update(id: string, body: unknown): Promise<User> {
    await this.get(id);
    return this.#apply(id, this.validator.patch(body));
  }

  async remove(id: string): Promise<void> {
    if (!(await this.store.remove(id))) throw userNotFound(id);
  }

  async #apply(id: string, fields: Partial<Pick<User, 'name' | 'email' | 'role'>>): Promise<User> {
    const result = await this.store.update(id, { ...fields, updated_at: this.clock.next() }, { uniqueEmail: this.options.strict });
    if (result === 'not_found') throw userNotFound(id); // deleted between the check and the write
    if (result === 'email_taken') throw emailExists();
    return result;
  }
}
