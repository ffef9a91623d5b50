/**
 * The users panel: the list API's search, role filter, sort, order and pagination as a table, and
 * create, edit (full PUT or partial PATCH) and delete through dialogs, with the API's validation
 * errors shown next to the fields they name.
 */
import {
  ApiError,
  createUser,
  deleteUser,
  getUser,
  listUsers,
  replaceUser,
  updateUser,
  type FieldDetail,
  type ListQuery,
  type TaggedUser,
  type User,
  type UserFields,
  type UserPage,
} from './api.js';
import type { components } from '@roster/protocol';
import { breakableEmail, byId, h, hiddenText, timeElement } from './dom.js';
import { problems, type UserField } from './user-rules.js';
import { DEFAULT_QUERY, readView, SORT_LABELS, writeView } from './view-url.js';

/** The fields the form edits: writable fields of the generated `UserInput`, as the compiler checks. */
const FIELDS = ['name', 'email', 'role'] as const satisfies readonly (keyof components['schemas']['UserInput'])[];
type Field = (typeof FIELDS)[number];

const SEARCH_DELAY_MS = 250;

/**
 * What the dialog edits. An edit holds the user as read when the dialog opened (the values a PATCH is
 * compared with) and its ETag, sent as If-Match on save: a save over someone else's change meanwhile is
 * refused (412) instead of undoing it.
 */
type Mode = { kind: 'create' } | { kind: 'edit'; user: User; etag: string | undefined };

/** The words of a save or a delete refused because the user changed since the dialog opened (412). */
const CHANGED_MEANWHILE = 'was changed by someone else since you opened it';

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
  readonly #table = byId('users-table', HTMLTableElement);
  readonly #caption = byId('users-caption', HTMLElement);
  readonly #body = byId('users-body', HTMLTableSectionElement);
  readonly #prev = byId('prev-page', HTMLButtonElement);
  readonly #next = byId('next-page', HTMLButtonElement);
  readonly #pageInfo = byId('page-info', HTMLElement);
  readonly #add = byId('add-user', HTMLButtonElement);

  readonly #dialog = byId('user-dialog', HTMLDialogElement);
  readonly #form = byId('user-form', HTMLFormElement);
  readonly #dialogTitle = byId('user-dialog-title', HTMLElement);
  readonly #dialogHint = byId('user-dialog-hint', HTMLElement);
  readonly #formError = byId('user-form-error', HTMLElement);
  readonly #submit = byId('user-submit', HTMLButtonElement);
  readonly #put = byId('user-put', HTMLButtonElement);
  readonly #conflict = byId('user-conflict', HTMLElement);
  readonly #conflictText = byId('user-conflict-text', HTMLElement);
  readonly #conflictValues = byId('user-conflict-values', HTMLElement);
  readonly #reapply = byId('user-reapply', HTMLButtonElement);
  readonly #discard = byId('user-discard', HTMLButtonElement);
  readonly #inputs: Record<Field, HTMLInputElement | HTMLSelectElement> = {
    name: byId('user-name', HTMLInputElement),
    email: byId('user-email', HTMLInputElement),
    role: byId('user-role', HTMLSelectElement),
  };

  readonly #deleteDialog = byId('delete-dialog', HTMLDialogElement);
  readonly #deleteForm = byId('delete-form', HTMLFormElement);
  readonly #deleteText = byId('delete-dialog-text', HTMLElement);
  readonly #deleteError = byId('delete-form-error', HTMLElement);
  readonly #deleteConfirm = byId('delete-confirm', HTMLButtonElement);

  /** The view asked for (in the address too); `#shown` holds the users on screen, kept when a reload fails. */
  #query: ListQuery = { ...DEFAULT_QUERY };
  #shown: UserPage | null = null;
  /** The edit values the user was warned about (Create would refuse them); saving them again goes ahead. */
  #warned: string | null = null;
  #roles: string[] = [];
  #loading: AbortController | null = null;
  #searchTimer: number | undefined;
  #mode: Mode = { kind: 'create' };
  /** After a 412: the user as it is now, and the save to send again over it if asked. */
  #conflicted: { current: TaggedUser; action: 'put' | 'patch' } | null = null;
  #deleting: TaggedUser | null = null;
  /** Where focus goes back to when a dialog closes. */
  #returnFocus: HTMLElement | null = null;
  /** What had focus when the open dialog was opened: the browser itself puts focus back there on close. */
  #openedFrom: Element | null = null;

  constructor(roles: readonly string[]) {
    // The view in the address (a shared link, or a reload), shown in the controls.
    this.#query = readView(window.location.search);
    this.#search.value = this.#query.search;
    if (![...this.#pageSize.options].some((option) => option.value === String(this.#query.limit))) {
      this.#pageSize.append(h('option', { value: this.#query.limit }, String(this.#query.limit)));
    }
    this.#pageSize.value = String(this.#query.limit);
    this.setRoles(roles);
    this.#wireList();
    this.#wireUserDialog();
    this.#wireDeleteDialog();
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

  load(): void {
    void this.#load();
  }

  /** Drops what was shown (on sign-out or a refused credential): the next user of the tab sees none of it. */
  clear(): void {
    this.#loading?.abort();
    this.#loading = null;
    this.#returnFocus = null;
    this.#openedFrom = null;
    if (this.#dialog.open) this.#dialog.close();
    if (this.#deleteDialog.open) this.#deleteDialog.close();
    this.#body.replaceChildren();
    this.#shown = null;
    this.#table.setAttribute('aria-busy', 'false');
    delete this.#table.dataset.state;
    this.#error.hidden = true;
    this.#notice.textContent = '';
    delete this.#notice.dataset.visible;
    this.#pageInfo.textContent = '';
  }

  // ---- The list ---------------------------------------------------------------------------------

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
    for (const header of this.#sortHeaders()) {
      header.querySelector('button')?.addEventListener('click', () => {
        const sort = header.dataset.sort ?? 'created_at';
        // The same column again flips the order; a new column starts ascending.
        this.#change(
          sort === this.#query.sort
            ? { order: this.#query.order === 'asc' ? 'desc' : 'asc' }
            : { sort, order: 'asc', page: 1 },
        );
      });
    }
    this.#prev.addEventListener('click', () => this.#change({ page: Math.max(1, this.#query.page - 1) }));
    this.#next.addEventListener('click', () => this.#change({ page: this.#query.page + 1 }));
    this.#retry.addEventListener('click', () => {
      this.#clearNotice();
      this.load();
    });
    this.#add.addEventListener('click', () => this.#openUserDialog({ kind: 'create' }));
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
    const search = writeView(this.#query);
    const url = new URL(window.location.href);
    url.search = search;
    if (url.href !== window.location.href) window.history.replaceState(window.history.state, '', url);
    this.load();
  }

  #sortHeaders(): HTMLTableCellElement[] {
    return [...this.#table.querySelectorAll<HTMLTableCellElement>('th[data-sort]')];
  }

  async #load(): Promise<void> {
    this.#loading?.abort();
    const loading = new AbortController();
    this.#loading = loading;
    this.#showQuery();
    this.#table.setAttribute('aria-busy', 'true');
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
        this.#table.dataset.state = 'stale';
      } else {
        this.#body.replaceChildren();
        this.#table.dataset.state = 'error';
        this.#pageInfo.textContent = '';
        this.#prev.disabled = true;
        this.#next.disabled = true;
      }
    } finally {
      if (this.#loading === loading) {
        this.#loading = null;
        this.#table.setAttribute('aria-busy', 'false');
      }
    }
  }

  /** Reflects the query in the controls: sort headers (aria-sort), order toggle, caption. */
  #showQuery(): void {
    const { sort, order } = this.#query;
    for (const header of this.#sortHeaders()) {
      if (header.dataset.sort === sort) header.setAttribute('aria-sort', order === 'asc' ? 'ascending' : 'descending');
      else header.removeAttribute('aria-sort');
    }
    this.#orderText.textContent = order === 'asc' ? 'Ascending' : 'Descending';
    this.#order.dataset.order = order;
    this.#caption.textContent = `Users, sorted by ${SORT_LABELS[sort] ?? sort}, ${order === 'asc' ? 'ascending' : 'descending'}`;
  }

  #render(page: UserPage): void {
    const { users, pagination } = page;
    this.#table.dataset.state = users.length === 0 ? 'empty' : 'rows';
    if (users.length === 0) {
      const filtered = this.#query.search !== '' || this.#query.role !== '';
      this.#body.replaceChildren(
        h(
          'tr',
          { class: 'empty-row' },
          h(
            'td',
            { colspan: 7 },
            h('p', { class: 'empty-title' }, filtered ? 'No users match' : 'No users yet'),
            h(
              'p',
              { class: 'empty-text' },
              filtered ? 'Try another search or role, or clear the filters.' : 'Add the first one with “Add user”.',
            ),
            filtered ? this.#clearFiltersButton() : null,
          ),
        ),
      );
    } else {
      this.#body.replaceChildren(...users.map((user) => this.#row(user)));
    }
    const pages = Math.max(1, pagination.pages);
    const total = `${pagination.total} ${pagination.total === 1 ? 'user' : 'users'}`;
    this.#pageInfo.textContent = `Page ${pagination.page} of ${pages} · ${total}`;
    this.#prev.disabled = pagination.page <= 1;
    this.#next.disabled = pagination.page >= pages;
    // The service may clamp the page size (MAX_PAGE_SIZE); show the size used.
    if (pagination.limit !== this.#query.limit) {
      this.#query.limit = pagination.limit;
      if (![...this.#pageSize.options].some((option) => option.value === String(pagination.limit))) {
        this.#pageSize.append(h('option', { value: pagination.limit }, String(pagination.limit)));
      }
      this.#pageSize.value = String(pagination.limit);
    }
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

  #row(user: User): HTMLTableRowElement {
    const edit = h(
      'button',
      { type: 'button', class: 'button small', 'data-action': 'edit', 'data-user-id': user.id },
      'Edit',
      hiddenText(` ${user.name}`),
    );
    const remove = h(
      'button',
      { type: 'button', class: 'button small danger-outline', 'data-action': 'delete', 'data-user-id': user.id },
      'Delete',
      hiddenText(` ${user.name}`),
    );
    const copy = h(
      'button',
      {
        type: 'button',
        class: 'icon-button',
        'data-action': 'copy-id',
        'data-user-id': user.id,
        title: 'Copy the id',
        'aria-label': `Copy the id of ${user.name}`,
      },
      h('span', { class: 'copy-icon', 'aria-hidden': 'true' }),
    );
    edit.addEventListener('click', () => this.#openUserDialog({ kind: 'edit', user, etag: undefined }));
    remove.addEventListener('click', () => this.#openDeleteDialog(user));
    copy.addEventListener('click', () => void this.#copyId(user));
    return h(
      'tr',
      { 'data-id': user.id },
      h(
        'td',
        { class: 'cell-id', 'data-label': 'Id' },
        h(
          'span',
          { class: 'id-text', title: user.id },
          h('span', { 'aria-hidden': 'true' }, `${user.id.slice(0, 8)}…`),
          hiddenText(user.id),
        ),
        copy,
      ),
      // One line each; a name or email longer than its column ends in an ellipsis, whole in the tooltip.
      h('td', { class: 'cell-name', 'data-label': 'Name' }, h('span', { class: 'clip', title: user.name }, user.name)),
      h(
        'td',
        { class: 'cell-email', 'data-label': 'Email' },
        h('span', { class: 'clip', title: user.email }, breakableEmail(user.email)),
      ),
      h(
        'td',
        { class: 'cell-role', 'data-label': 'Role' },
        h('span', { class: `role-badge role-${cssToken(user.role)}` }, user.role),
      ),
      h('td', { class: 'cell-date', 'data-label': 'Created' }, timeElement(user.created_at)),
      h('td', { class: 'cell-date', 'data-label': 'Updated' }, timeElement(user.updated_at)),
      h('td', { class: 'cell-actions' }, h('div', { class: 'row-actions' }, edit, remove)),
    );
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

  // ---- Create and edit --------------------------------------------------------------------------

  #wireUserDialog(): void {
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      const action = (event.submitter as HTMLButtonElement | null)?.value ?? this.#submit.value;
      void this.#saveUser(action === 'put' ? 'put' : this.#mode.kind === 'edit' ? 'patch' : 'create');
    });
    wireClose(this.#dialog);
    this.#dialog.addEventListener('close', () => this.#restoreFocus());
    // After a 412: send the same changes again over the current user, or leave it as it now is.
    this.#reapply.addEventListener('click', () => {
      const conflicted = this.#conflicted;
      if (!conflicted || this.#mode.kind !== 'edit') return;
      this.#mode.etag = conflicted.current.etag;
      void this.#saveUser(conflicted.action);
    });
    this.#discard.addEventListener('click', () => {
      this.#dialog.close();
      this.load();
    });
    // A field's error is cleared once the user changes it.
    for (const field of FIELDS) {
      this.#inputs[field].addEventListener('input', () => {
        this.#setFieldError(field, null);
        this.#warned = null;
      });
    }
  }

  #openUserDialog(mode: Mode): void {
    this.#clearNotice();
    this.#warned = null;
    this.#mode = mode;
    this.#returnFocus = this.#focusedBeforeOpening();
    const user = mode.kind === 'edit' ? mode.user : null;
    this.#dialogTitle.textContent = user ? `Edit ${user.name}` : 'Add user';
    this.#dialogHint.textContent = user
      ? 'Save changes sends only the fields you changed (PATCH). Replace all fields sends name, email and role (PUT).'
      : 'Name and email are required; left at default, the role is the one the service gives.';
    this.#submit.replaceChildren(
      ...(user ? ['Save changes ', h('span', { class: 'method' }, 'PATCH')] : ['Create user']),
    );
    this.#submit.value = user ? 'patch' : 'create';
    this.#put.hidden = user === null;
    this.#fillRoles(user?.role ?? null);
    this.#inputs.name.value = user?.name ?? '';
    this.#inputs.email.value = user?.email ?? '';
    this.#clearErrors();
    this.#setBusy(false);
    this.#dialog.showModal();
    this.#inputs.name.focus();
    if (mode.kind === 'edit') void this.#readEdited(mode);
  }

  /**
   * An edit starts from the user as Roster has it now, and its ETag: the form waits (read-only) for the
   * read, then shows those values. Should the read fail, the list's values stay and a save goes without
   * If-Match.
   */
  async #readEdited(mode: Mode & { kind: 'edit' }): Promise<void> {
    this.#setBusy(true, true);
    try {
      const { user, etag } = await getUser(mode.user.id);
      if (this.#mode !== mode || !this.#dialog.open) return;
      mode.user = user;
      mode.etag = etag;
      this.#dialogTitle.textContent = `Edit ${user.name}`;
      this.#fillRoles(user.role);
      this.#inputs.name.value = user.name;
      this.#inputs.email.value = user.email;
    } catch (error) {
      if (this.#mode !== mode) return;
      if (error instanceof ApiError && error.status === 404) {
        this.#showFormError('This user no longer exists; it may have been deleted meanwhile.');
        this.load();
        this.#setBusy(false, false);
        this.#submit.disabled = true;
        this.#put.disabled = true;
        return;
      }
      this.#showFormError(error instanceof ApiError ? describe(error) : 'Could not read this user.');
    }
    this.#setBusy(false);
  }
  /**
   * The configured roles, plus the user's current role should it be another (PATCH stores any string).
   * A new user (`current` null) starts at "default", sent as no role at all: the service applies its own
   * default role, which the console does not restate.
   */
  #fillRoles(current: string | null): void {
    const roles = current === null || this.#roles.includes(current) ? this.#roles : [...this.#roles, current];
    this.#inputs.role.replaceChildren(
      ...(current === null ? [h('option', { value: '' }, 'default')] : []),
      ...roles.map((role) => h('option', { value: role }, role)),
    );
    this.#inputs.role.value = current ?? '';
  }

  async #saveUser(action: 'create' | 'put' | 'patch'): Promise<void> {
    if (this.#form.getAttribute('aria-busy') === 'true') return;
    this.#clearErrors();
    let fields: UserFields = {
      name: this.#inputs.name.value,
      email: this.#inputs.email.value,
      role: this.#inputs.role.value,
    };
    const user = this.#mode.kind === 'edit' ? this.#mode.user : null;
    // A role left at "default" is no change to check: it is not sent (empty fields are left out below).
    const { role: _default, ...named } = fields;
    let changes: Partial<UserFields> = fields.role === '' ? named : fields;
    if (action === 'patch' && user) {
      changes = Object.fromEntries(
        FIELDS.filter((field) => fields[field] !== user[field]).map((field) => [field, fields[field]]),
      );
      if (Object.keys(changes).length === 0) {
        this.#showFormError('Nothing to save: no field has changed.');
        return;
      }
    }
    // The create rules, in words, before anything is sent. Create and PUT would be refused (422): they
    // wait for a fix. PATCH would store it (the contract lets it): a warning first, and the same
    // values saved again go ahead.
    const found = problems(changes, this.#roles);
    const wrong = Object.keys(found) as UserField[];
    if (wrong.length > 0) {
      for (const field of wrong) this.#setFieldError(field, found[field] ?? null);
      const values = JSON.stringify(changes);
      if (action !== 'patch') {
        this.#focusFirstInvalid();
        return;
      }
      if (this.#warned !== values) {
        this.#warned = values;
        this.#showFormError(
          'Create would refuse this data (see the fields marked). Press Save changes again to save it anyway.',
        );
        this.#focusFirstInvalid();
        return;
      }
    }
    // Empty fields are left out, so what the API says is that they are required, not that "" is too short.
    if (action !== 'patch')
      fields = Object.fromEntries(Object.entries(fields).filter(([, value]) => value.trim() !== '')) as UserFields;
    this.#setBusy(true);
    try {
      let saved: User;
      if (action === 'create') saved = await createUser(fields);
      else if (!user) return;
      else if (action === 'put') saved = await replaceUser(user.id, fields, this.#editTag());
      else saved = await updateUser(user.id, changes, this.#editTag());
      this.#returnFocus = action === 'create' ? this.#add : this.#returnFocus;
      this.#dialog.close();
      this.#announce(
        action === 'create'
          ? `Created ${saved.name}.`
          : action === 'put'
            ? `Replaced ${saved.name} (all fields).`
            : `Updated ${saved.name} (${Object.keys(changes).join(', ')}).`,
      );
      await this.#load();
      this.#restoreFocus();
    } catch (error) {
      if (error instanceof ApiError && error.status === 412 && user && action !== 'create')
        await this.#showConflict(user, action);
      else this.#showSaveError(error);
    } finally {
      this.#setBusy(false);
    }
  }

  #editTag(): string | undefined {
    return this.#mode.kind === 'edit' ? this.#mode.etag : undefined;
  }

  /**
   * A save refused with 412: someone changed the user since the dialog opened. Their values (read now)
   * are shown; the form keeps this user's; "Re-apply my changes" sends the same save over theirs (a
   * PATCH only the fields changed here), "Cancel my changes" keeps theirs.
   */
  async #showConflict(opened: User, action: 'put' | 'patch'): Promise<void> {
    let current: TaggedUser;
    try {
      current = await getUser(opened.id);
    } catch (error) {
      this.#showSaveError(error instanceof ApiError && error.status === 404 ? error : new Error('unreadable'));
      return;
    }
    this.#conflicted = { current, action };
    const { user } = current;
    this.#conflictText.textContent = `${opened.name} ${CHANGED_MEANWHILE}. It now reads:`;
    this.#conflictValues.replaceChildren(
      ...FIELDS.flatMap((field) => [h('dt', {}, FIELD_LABELS[field]), h('dd', { 'data-field': field }, user[field])]),
    );
    this.#reapply.replaceChildren(action === 'put' ? 'Replace with my values' : 'Re-apply my changes');
    this.#conflict.hidden = false;
    this.#reapply.focus();
  }
  #showSaveError(error: unknown): void {
    if (!(error instanceof ApiError)) {
      this.#showFormError('Something went wrong. Try again.');
      return;
    }
    if (error.status === 409 && error.code === 'EMAIL_EXISTS') {
      this.#setFieldError('email', error.message);
    } else if (error.status === 422 && error.details.length > 0) {
      const other: FieldDetail[] = [];
      for (const detail of error.details) {
        if (isField(detail.field)) this.#setFieldError(detail.field, detail.message);
        else other.push(detail);
      }
      if (other.length > 0)
        this.#showFormError(
          error.message,
          other.map((detail) => `${detail.field}: ${detail.message}`),
        );
    } else if (error.status === 404) {
      this.#showFormError('This user no longer exists; it may have been deleted meanwhile.');
      this.load();
    } else {
      this.#showFormError(describe(error));
    }
    this.#focusFirstInvalid();
  }

  /** Focus on the first field with an error, so keyboard and screen reader users land on it. */
  #focusFirstInvalid(): void {
    const invalid = FIELDS.map((field) => this.#inputs[field]).find(
      (input) => input.getAttribute('aria-invalid') === 'true',
    );
    invalid?.focus();
  }

  #setFieldError(field: Field, message: string | null): void {
    const input = this.#inputs[field];
    const output = byId(`user-${field}-error`, HTMLElement);
    output.textContent = message ?? '';
    output.hidden = message === null;
    if (message === null) {
      input.removeAttribute('aria-invalid');
      input.removeAttribute('aria-describedby');
    } else {
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', output.id);
    }
  }

  #showFormError(message: string, lines: string[] = []): void {
    this.#formError.replaceChildren(h('p', {}, message));
    if (lines.length > 0) this.#formError.append(h('ul', {}, ...lines.map((line) => h('li', {}, line))));
    this.#formError.hidden = false;
  }

  #clearErrors(): void {
    for (const field of FIELDS) this.#setFieldError(field, null);
    this.#formError.hidden = true;
    this.#formError.replaceChildren();
    this.#conflict.hidden = true;
    this.#conflicted = null;
  }

  /** While a save is out, or (`reading`) while the user is read: the buttons wait, and the fields too while reading. */
  #setBusy(busy: boolean, reading = false): void {
    this.#form.setAttribute('aria-busy', String(busy));
    this.#submit.disabled = busy;
    this.#put.disabled = busy;
    this.#reapply.disabled = busy;
    for (const field of FIELDS) {
      const input = this.#inputs[field];
      if (input instanceof HTMLInputElement) input.readOnly = reading;
      else input.disabled = reading;
    }
  }

  // ---- Delete -----------------------------------------------------------------------------------

  #wireDeleteDialog(): void {
    wireClose(this.#deleteDialog);
    this.#deleteDialog.addEventListener('close', () => this.#restoreFocus());
    this.#deleteForm.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#confirmDelete();
    });
  }

  #openDeleteDialog(user: User): void {
    this.#clearNotice();
    const deleting: TaggedUser = { user, etag: undefined };
    this.#deleting = deleting;
    this.#returnFocus = this.#focusedBeforeOpening();
    this.#showDeleted(user);
    this.#deleteError.hidden = true;
    this.#deleteConfirm.replaceChildren('Delete');
    this.#deleteConfirm.disabled = true;
    this.#deleteDialog.showModal();
    void this.#readDeleted(deleting);
  }

  #showDeleted(user: User, before: string[] = []): void {
    this.#deleteText.replaceChildren(
      ...before,
      h('strong', {}, user.name),
      ' (',
      breakableEmail(user.email),
      ') will be removed. This cannot be undone.',
    );
  }

  /** The user as it is now and its ETag, sent as If-Match: a delete of a user changed meanwhile is refused (412). */
  async #readDeleted(deleting: TaggedUser): Promise<void> {
    try {
      const { user, etag } = await getUser(deleting.user.id);
      deleting.user = user;
      deleting.etag = etag;
      if (this.#deleting === deleting) this.#showDeleted(user);
    } catch {
      // Deleted already, or unreadable: the delete itself says which (404 is shown as done).
    }
    if (this.#deleting === deleting) this.#deleteConfirm.disabled = false;
  }

  async #confirmDelete(): Promise<void> {
    const deleting = this.#deleting;
    if (!deleting || this.#deleteConfirm.disabled) return;
    const { user } = deleting;
    this.#deleteConfirm.disabled = true;
    try {
      await deleteUser(user.id, deleting.etag);
      this.#announce(`Deleted ${user.name}.`);
    } catch (error) {
      if (error instanceof ApiError && error.status === 412) {
        // Changed since the dialog opened: show it as it is now, and ask again.
        const opened = user.name;
        deleting.etag = undefined;
        await this.#readDeleted(deleting);
        this.#showDeleted(deleting.user, [`${opened} ${CHANGED_MEANWHILE}. Now `]);
        this.#deleteConfirm.replaceChildren('Delete anyway');
        return;
      }
      if (!(error instanceof ApiError && error.status === 404)) {
        this.#deleteError.textContent =
          error instanceof ApiError ? describe(error) : 'Something went wrong. Try again.';
        this.#deleteError.hidden = false;
        this.#deleteConfirm.disabled = false;
        return;
      }
      this.#announce(`${user.name} was already deleted.`);
    }
    // The row and its buttons are about to go: focus returns to the table's heading area.
    this.#returnFocus = this.#add;
    this.#deleting = null;
    this.#deleteDialog.close();
    await this.#load();
  }

  #focusedBeforeOpening(): HTMLElement {
    this.#openedFrom = document.activeElement;
    return this.#openedFrom instanceof HTMLElement ? this.#openedFrom : this.#add;
  }

  #restoreFocus(): void {
    if (this.#dialog.open || this.#deleteDialog.open) return;
    // A dialog's close event comes a task after it closed, and a save's reload later still. Focus that
    // has moved on meanwhile (the user tabbed on from where the browser put it back) stays where it is;
    // only focus left where the dialog was opened, or lost with a redrawn row, is moved.
    const active = document.activeElement;
    if (active !== null && active !== document.body && active !== this.#openedFrom) return;
    let target = this.#returnFocus;
    // The table was drawn again meanwhile: the same button of the same user's new row.
    if (target && !target.isConnected && target.dataset.userId !== undefined) {
      const selector = `[data-user-id="${CSS.escape(target.dataset.userId)}"][data-action="${CSS.escape(target.dataset.action ?? '')}"]`;
      target = this.#body.querySelector<HTMLElement>(selector) ?? this.#add;
    }
    if (target?.isConnected) target.focus();
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

/** Buttons marked `data-close` close their dialog; Escape does too (the dialog's own behaviour). */
function wireClose(dialog: HTMLDialogElement): void {
  for (const button of dialog.querySelectorAll<HTMLButtonElement>('[data-close]')) {
    button.addEventListener('click', () => dialog.close());
  }
}

const FIELD_LABELS: Record<Field, string> = { name: 'Name', email: 'Email', role: 'Role' };

function isField(field: string): field is Field {
  return (FIELDS as readonly string[]).includes(field);
}

function cssToken(value: string): string {
  return value.toLowerCase().replace(/[^a-z0-9_-]/g, '-');
}

/** A one-line explanation of an API failure for the error states. */
function describe(error: ApiError): string {
  if (error.status === 0) return error.message;
  if (error.status === 403)
    return `${error.message}: you are signed in with a credential that may read users but not change them (403 ${error.code}).`;
  if (error.status >= 500) return `The server had a problem (${error.status} ${error.code}). Try again in a moment.`;
  return `${error.message} (${error.status} ${error.code}).`;
}
