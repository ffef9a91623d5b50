/**
 * The default store: users in memory, for the life of the process (contract). All operations are
 * synchronous underneath, so each one is atomic with respect to concurrent requests.
 */
import { queryUsers, type ListParams, type ListResult } from './query.js';
import type { User } from './schema.js';
import { emailKey, type Changes, type UserStore } from './store.js';

export class MemoryUserStore implements UserStore {
  /** By id. A Map iterates in insertion order, which is creation order since ids are never reused. */
  readonly #users = new Map<string, User>();
  /**
   * Ids by email key. A set, not one id: the contract's default PUT and PATCH apply no uniqueness
   * check, so two users can come to share an email after creation.
   */
  readonly #byEmail = new Map<string, Set<string>>();

  async get(id: string): Promise<User | undefined> {
    return this.#users.get(id);
  }

  async list(params: ListParams): Promise<ListResult> {
    return queryUsers(this.#users.values(), params);
  }

  async insert(user: User): Promise<'ok' | 'email_taken'> {
    const key = emailKey(user.email);
    if (this.#byEmail.get(key)?.size) return 'email_taken';
    this.#users.set(user.id, user);
    this.#index(key, user.id);
    return 'ok';
  }

  async update(id: string, changes: Changes, options: { uniqueEmail: boolean }): Promise<User | 'not_found' | 'email_taken'> {
    const current = this.#users.get(id);
    if (!current) return 'not_found';
    const next: User = { ...current, ...changes };
    const oldKey = emailKey(current.email);
    const newKey = emailKey(next.email);
    if (options.uniqueEmail && [...(this.#byEmail.get(newKey) ?? [])].some((other) => other !== id)) {
      return 'email_taken';
    }
    this.#users.set(id, next);
    if (oldKey !== newKey) {
      this.#unindex(oldKey, id);
      this.#index(newKey, id);
    }
    return next;
  }

  async remove(id: string): Promise<boolean> {
    const user = this.#users.get(id);
    if (!user) return false;
    this.#users.delete(id);
    this.#unindex(emailKey(user.email), id);
    return true;
  }

  async close(): Promise<void> {}

  #index(key: string, id: string): void {
    const ids = this.#byEmail.get(key);
    if (ids) ids.add(id);
    else this.#byEmail.set(key, new Set([id]));
  }

  #unindex(key: string, id: string): void {
    const ids = this.#byEmail.get(key);
    ids?.delete(id);
    if (ids?.size === 0) this.#byEmail.delete(key);
  }
}
