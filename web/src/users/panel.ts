/**
 * The users panel: the list API's search, role filter, sort, order and pagination over the users table
 * (table.ts), with create and edit (form.ts, conflict.ts) and delete (delete.ts) in dialogs. Columns,
 * inputs and checks all come from the generated field table (`USER_FIELDS`), through fields.ts.
 */
import { USER_FIELDS } from '@roster/protocol';
import { ApiError, listUsers, type Change, type ListQuery, type User, type UserPage } from '../api.js';
import { byId, h } from '../dom.js';
import { DEFAULT_QUERY, readView, writeView } from '../view-url.js';
import { DeleteDialog } from './delete.js';
import { describe, ReturnFocus } from './dialogs.js';
import { consoleFields } from './fields.js';
import { UserForm } from './form.js';
import { LiveUsers } from './live.js';
import { UsersTable } from './table.js';

const SEARCH_DELAY_MS = 250;
/** Changes arriving close together (an import, a script) refresh the page once. */
const LIVE_REFRESH_MS = 150;

export class UsersPanel {
  readonly #filters = byId('user-filters', HTMLFormElement);
  readonly #search = byId('user-search', HTMLInputElement);
  readonly #roleFilter = byId('role-filter', HTMLSelectElement);
  readonly #order = byId('sort-order', HTMLButtonElement);
  readonly #orderText = byId('sort-order-text', HTMLElement);
  readonly #pageSize = byId('page-size', HTMLSelectElement);
  readonly #notice = byId('users-notice', HTMLElement);
  readonly #error = byId('users-error', HTMLElement);
  readonly #errorText = byId('users-error-text', HTMLElement);
  readonly #retry = byId('users-retry', HTMLButtonElement);
  readonly #prev = byId('prev-page', HTMLButtonElement);
  readonly #next = byId('next-page', HTMLButtonElement);
  readonly #pageInfo = byId('page-info', HTMLElement);
  readonly #add = byId('add-user', HTMLButtonElement);
  readonly #table: UsersTable;
  readonly #form: UserForm;
  readonly #delete: DeleteDialog;
  readonly #focus: ReturnFocus;
  readonly #live: LiveUsers;

  /** The view asked for (in the address too); `#shown` holds the users on screen, kept when a reload fails. */
  #query: ListQuery = { ...DEFAULT_QUERY };
  #shown: UserPage | null = null;
  #roles: string[] = [];
  #loading: AbortController | null = null;
  #searchTimer: number | undefined;
  #refreshTimer: number | undefined;

  constructor(roles: readonly string[]) {
    const fields = consoleFields(USER_FIELDS);
    this.#table = new UsersTable(fields, {
      sort: (sort) =>
        // The same column again flips the order; a new column starts ascending.
        this.#change(
          sort === this.#query.sort
            ? { order: this.#query.order === 'asc' ? 'desc' : 'asc' }
            : { sort, order: 'asc', page: 1 },
        ),
      edit: (user) => this.#form.open({ kind: 'edit', user, etag: undefined }),
      remove: (user) => this.#delete.open(user),
      copyId: (user) => void this.#copyId(user),
    });
    const host = {
      home: this.#add,
      roles: () => this.#roles,
      announce: (text: string) => this.#announce(text),
      clearNotice: () => this.#clearNotice(),
      reload: () => this.#load(),
    };
    const dialogs = [byId('user-dialog', HTMLDialogElement), byId('delete-dialog', HTMLDialogElement)];
    this.#focus = new ReturnFocus(this.#add, this.#table.body, dialogs);
    this.#form = new UserForm(fields, { ...host, focus: this.#focus });
    this.#delete = new DeleteDialog({ ...host, focus: this.#focus });
    this.#live = new LiveUsers({ reload: () => this.#load(), changed: (change) => this.#changed(change) });
    // The view in the address (a shared link, or a reload), shown in the controls.
    this.#query = readView(window.location.search);
    this.#search.value = this.#query.search;
    this.#offerPageSize(this.#query.limit);
    this.setRoles(roles);
    this.#wireList();
  }

  /** The roles offered by the filter and the form (the service's ROLES). */
  setRoles(roles: readonly string[]): void {
    this.#roles = [...roles];
    // The filtered role is kept even if it is not configured (a link from another Roster): it is what the list shows.
    const selected = this.#query.role;
    const offered = selected === '' || roles.includes(selected) ? roles : [...roles, selected];
    this.#roleFilter.replaceChildren(
      h('option', { value: '' }, 'All roles'),
      ...offered.map((role) => h('option', { value: role }, role)),
    );
    this.#roleFilter.value = selected;
  }

  /** A notice above the table (e.g. that Roster restarted), cleared by the next action like any other. */
  notify(text: string): void {
    this.#announce(text);
  }

  /** Loads the list; the first time (or after `clear`), through the live watch, which keeps it current. */
  load(): void {
    if (this.#live.running) return void this.#load();
    // The list is asked for only once the feed's head is known: the table says it is loading from now.
    this.#table.setBusy(true);
    this.#live.start();
  }

  /**
   * A change made elsewhere (or here): the page is read again, the view kept (page, sort, search,
   * filter), and an edit open on that user is warned.
   */
  #changed(change: Change): void {
    this.#form.changedElsewhere(change);
    window.clearTimeout(this.#refreshTimer);
    this.#refreshTimer = window.setTimeout(() => void this.#load(true), LIVE_REFRESH_MS);
  }

  /** Drops what was shown (on sign-out or a refused credential): the next user of the tab sees none of it. */
  clear(): void {
    this.#live.stop();
    window.clearTimeout(this.#refreshTimer);
    this.#loading?.abort();
    this.#loading = null;
    this.#focus.forget();
    if (this.#form.dialog.open) this.#form.dialog.close();
    if (this.#delete.dialog.open) this.#delete.dialog.close();
    this.#table.clear();
    this.#shown = null;
    this.#error.hidden = true;
    this.#clearNotice();
    this.#pageInfo.textContent = '';
  }

  #wireList(): void {
    this.#filters.addEventListener('submit', (event) => {
      event.preventDefault();
      this.#applySearch();
    });
    this.#search.addEventListener('input', () => {
      window.clearTimeout(this.#searchTimer);
      this.#searchTimer = window.setTimeout(() => this.#applySearch(), SEARCH_DELAY_MS);
    });
    this.#roleFilter.addEventListener('change', () => this.#change({ role: this.#roleFilter.value, page: 1 }));
    this.#pageSize.addEventListener('change', () => this.#change({ limit: Number(this.#pageSize.value), page: 1 }));
    this.#order.addEventListener('click', () => this.#change({ order: this.#query.order === 'asc' ? 'desc' : 'asc' }));
    this.#prev.addEventListener('click', () => this.#change({ page: Math.max(1, this.#query.page - 1) }));
    this.#next.addEventListener('click', () => this.#change({ page: this.#query.page + 1 }));
    this.#retry.addEventListener('click', () => {
      this.#clearNotice();
      this.load();
    });
    this.#add.addEventListener('click', () => this.#form.open({ kind: 'create' }));
  }

  #applySearch(): void {
    window.clearTimeout(this.#searchTimer);
    if (this.#search.value === this.#query.search) return;
    this.#change({ search: this.#search.value, page: 1 });
  }

  /** A change the user asked for: an earlier notice ("Created …") no longer applies. */
  #change(change: Partial<ListQuery>): void {
    this.#clearNotice();
    this.#update(change);
  }

  #update(change: Partial<ListQuery>): void {
    this.#query = { ...this.#query, ...change };
    const url = new URL(window.location.href);
    url.search = writeView(this.#query);
    if (url.href !== window.location.href) window.history.replaceState(window.history.state, '', url);
    this.load();
  }

  /** Reads the page asked for; `quiet` (a live refresh) leaves the table undimmed meanwhile. */
  async #load(quiet = false): Promise<void> {
    this.#loading?.abort();
    const loading = new AbortController();
    this.#loading = loading;
    this.#showQuery();
    if (!quiet) this.#table.setBusy(true);
    try {
      const page = await listUsers(this.#query, loading.signal);
      if (loading.signal.aborted) return;
      const { pages } = page.pagination;
      // Past the last page (after a delete, or a smaller total): show the last page instead.
      if (pages > 0 && this.#query.page > pages) {
        this.#update({ page: pages });
        return;
      }
      this.#error.hidden = true;
      this.#shown = page;
      this.#render(page);
    } catch (error) {
      if (loading.signal.aborted) return;
      const reason = error instanceof ApiError ? describe(error) : 'Something went wrong while loading users.';
      // The last users loaded stay on screen (marked stale), rather than a blank table.
      this.#errorText.textContent = this.#shown ? `${reason} The table still shows the users loaded before.` : reason;
      this.#error.hidden = false;
      if (this.#shown) {
        this.#table.setState('stale');
      } else {
        this.#table.clear();
        this.#table.setState('error');
        this.#pageInfo.textContent = '';
        this.#prev.disabled = true;
        this.#next.disabled = true;
      }
    } finally {
      if (this.#loading === loading) {
        this.#loading = null;
        this.#table.setBusy(false);
      }
    }
  }

  /** Reflects the query in the controls: sort headers (aria-sort), order toggle, caption. */
  #showQuery(): void {
    const { sort, order } = this.#query;
    this.#table.showSort(sort, order);
    this.#orderText.textContent = order === 'asc' ? 'Ascending' : 'Descending';
    this.#order.dataset.order = order;
  }

  #render(page: UserPage): void {
    const { users, pagination } = page;
    if (users.length === 0)
      this.#table.showEmpty(this.#query.search !== '' || this.#query.role !== '', this.#clearFiltersButton());
    else this.#table.showUsers(users);
    const pages = Math.max(1, pagination.pages);
    const total = `${pagination.total} ${pagination.total === 1 ? 'user' : 'users'}`;
    this.#pageInfo.textContent = `Page ${pagination.page} of ${pages} · ${total}`;
    this.#prev.disabled = pagination.page <= 1;
    this.#next.disabled = pagination.page >= pages;
    // The service may clamp the page size (MAX_PAGE_SIZE); show the size used.
    if (pagination.limit !== this.#query.limit) {
      this.#query.limit = pagination.limit;
      this.#offerPageSize(pagination.limit);
    }
  }

  /** Selects this page size, offered even when it is not one of the page's own. */
  #offerPageSize(limit: number): void {
    if (![...this.#pageSize.options].some((option) => option.value === String(limit)))
      this.#pageSize.append(h('option', { value: limit }, String(limit)));
    this.#pageSize.value = String(limit);
  }

  #clearFiltersButton(): HTMLButtonElement {
    const button = h('button', { type: 'button', class: 'button' }, 'Clear filters');
    button.addEventListener('click', () => {
      this.#search.value = '';
      this.#roleFilter.value = '';
      this.#change({ search: '', role: '', page: 1 });
      this.#search.focus();
    });
    return button;
  }

  #announce(text: string): void {
    this.#notice.textContent = text;
    this.#notice.dataset.visible = 'true';
  }

  #clearNotice(): void {
    this.#notice.textContent = '';
    delete this.#notice.dataset.visible;
  }

  async #copyId(user: User): Promise<void> {
    this.#clearNotice();
    try {
      await copyText(user.id);
      this.#announce(`Copied the id of ${user.name}: ${user.id}`);
    } catch {
      this.#announce(`Could not copy; the id of ${user.name} is ${user.id}`);
    }
  }
}

/** Puts text on the clipboard: the Clipboard API where the page may use it, else a selected field and copy. */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const field = h('textarea', { class: 'visually-hidden', readonly: true, 'aria-hidden': 'true' });
  field.value = text;
  document.body.append(field);
  field.select();
  const copied = document.execCommand('copy');
  field.remove();
  if (!copied) throw new Error('copy refused');
}
