/**
 * The user dialog: create, and edit by full PUT or partial PATCH. Its inputs are built from the
 * writable fields of the generated field table, checked with its rules (fields.ts) before anything is
 * sent, and the API's validation errors are shown next to the fields they name.
 */
import {
  createUser,
  failedWith,
  getUser,
  replaceUser,
  updateUser,
  ApiError,
  type Change,
  type FieldDetail,
  type TaggedUser,
  type User,
  type UserValues,
} from '../api.js';
import { byId, h } from '../dom.js';
import { ConflictView, type SaveAction } from './conflict.js';
import { describe, type ReturnFocus, wireClose } from './dialogs.js';
import { changedValues, checkedValues, problems, type ConsoleField } from './fields.js';

/**
 * What the dialog edits. An edit holds the user as read when the dialog opened (the values a PATCH is
 * compared with) and its ETag, sent as If-Match on save: a save over someone else's change meanwhile is
 * refused (412) instead of undoing it.
 */
export type Mode = { kind: 'create' } | { kind: 'edit'; user: User; etag: string | undefined };

/** What the form asks of the panel around it. */
export interface FormHost {
  readonly focus: ReturnFocus;
  /** Where focus goes after a create (the "Add user" button). */
  readonly home: HTMLElement;
  roles(): readonly string[];
  announce(text: string): void;
  clearNotice(): void;
  /** Loads the list again; resolves once it is shown. */
  reload(): Promise<void>;
}

/** The field EMAIL_EXISTS is about. */
const UNIQUE_FIELD = 'email';

/** "a", "a and b", "a, b and c". */
const listed = (words: readonly string[]) =>
  words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} and ${words.at(-1)}`;

/** A user's value of a field; a field it never had reads as empty, as its input shows it. */
const valueOf = (user: User, name: string) => (user as Record<string, string | undefined>)[name] ?? '';

export class UserForm {
  readonly dialog = byId('user-dialog', HTMLDialogElement);
  readonly #form = byId('user-form', HTMLFormElement);
  readonly #title = byId('user-dialog-title', HTMLElement);
  readonly #hint = byId('user-dialog-hint', HTMLElement);
  readonly #error = byId('user-form-error', HTMLElement);
  readonly #submit = byId('user-submit', HTMLButtonElement);
  readonly #put = byId('user-put', HTMLButtonElement);
  readonly #fields: readonly ConsoleField[];
  readonly #inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();
  readonly #conflict: ConflictView;
  #mode: Mode = { kind: 'create' };
  /** The edit values the user was warned about (Create would refuse them); saving them again goes ahead. */
  #warned: string | null = null;

  constructor(
    fields: readonly ConsoleField[],
    private readonly host: FormHost,
  ) {
    this.#fields = fields.filter((field) => field.writable);
    const actions = this.#form.querySelector('.dialog-actions');
    if (!actions) throw new Error('Console page is missing the user form’s .dialog-actions');
    actions.before(...this.#fields.map((field) => this.#fieldBox(field)));
    this.#conflict = new ConflictView(
      fields,
      (current, action) => {
        if (this.#mode.kind !== 'edit') return;
        this.#mode.etag = current.etag;
        void this.#save(action);
      },
      () => {
        this.dialog.close();
        void host.reload();
      },
    );
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      const action = (event.submitter as HTMLButtonElement | null)?.value ?? this.#submit.value;
      void this.#save(action === 'put' ? 'put' : this.#mode.kind === 'edit' ? 'patch' : 'create');
    });
    wireClose(this.dialog);
  }

  /** A field's label, input and error line; its error is cleared once the user changes it. */
  #fieldBox(field: ConsoleField): HTMLElement {
    const id = `user-${field.name}`;
    const input = field.isRole
      ? h('select', { id, name: field.name })
      : h('input', {
          id,
          name: field.name,
          type: field.inputType,
          autocomplete: 'off',
          spellcheck: field.inputType === 'email' ? 'false' : null,
          required: field.required,
          'aria-required': field.required ? 'true' : null,
        });
    this.#inputs.set(field.name, input);
    input.addEventListener('input', () => {
      this.#setFieldError(field.name, null);
      this.#warned = null;
    });
    return h(
      'div',
      { class: 'field' },
      h('label', { for: id }, field.label),
      input,
      h('p', { id: `${id}-error`, class: 'field-error', hidden: true }),
    );
  }

  #input(name: string): HTMLInputElement | HTMLSelectElement {
    return this.#inputs.get(name)!;
  }

  open(mode: Mode): void {
    this.host.clearNotice();
    this.#warned = null;
    this.#mode = mode;
    this.host.focus.remember();
    const user = mode.kind === 'edit' ? mode.user : null;
    const labels = this.#fields.map((field) => field.label);
    const required = this.#fields.filter((field) => field.required).map((field) => field.label);
    const role = this.#fields.find((field) => field.isRole);
    this.#title.textContent = user ? `Edit ${user.name}` : 'Add user';
    this.#hint.textContent = user
      ? `Save changes sends only the fields you changed (PATCH). Replace all fields sends ${listed(labels.map((l) => l.toLowerCase()))} (PUT).`
      : `${listed(required.map((l, i) => (i === 0 ? l : l.toLowerCase())))} ${required.length === 1 ? 'is' : 'are'} required` +
        (role ? `; left at default, the ${role.label.toLowerCase()} is the one the service gives.` : '.');
    this.#submit.replaceChildren(
      ...(user ? ['Save changes ', h('span', { class: 'method' }, 'PATCH')] : ['Create user']),
    );
    this.#submit.value = user ? 'patch' : 'create';
    this.#put.hidden = user === null;
    this.#show(user);
    this.#clearErrors();
    this.#setBusy(false);
    this.dialog.showModal();
    this.#inputs.values().next().value?.focus();
    if (mode.kind === 'edit') void this.#readEdited(mode);
  }

  /** The user's values in the inputs (none: empty, the role at "default"). */
  #show(user: User | null): void {
    for (const field of this.#fields) {
      if (field.isRole) this.#fillRoles(field.name, user ? valueOf(user, field.name) : null);
      else this.#input(field.name).value = user ? valueOf(user, field.name) : '';
    }
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
      if (this.#mode !== mode || !this.dialog.open) return;
      mode.user = user;
      mode.etag = etag;
      this.#title.textContent = `Edit ${user.name}`;
      this.#show(user);
    } catch (error) {
      if (this.#mode !== mode) return;
      if (failedWith(error, 'USER_NOT_FOUND')) {
        void this.host.reload();
        this.#setBusy(false, false);
        this.#showGone();
        return;
      }
      this.#showError(error instanceof ApiError ? describe(error) : 'Could not read this user.');
    }
    this.#setBusy(false);
  }

  /** The edited user is gone: said, and nothing can be saved. */
  #showGone(): void {
    this.#conflict.hide();
    this.#showError('This user no longer exists; it may have been deleted meanwhile.');
    this.#submit.disabled = true;
    this.#put.disabled = true;
  }

  /**
   * A change from the users feed. When it is to the user being edited and is not the state the form
   * holds (the ETag read when it opened), the form warns as a save refused with 412 would: their values,
   * "Re-apply my changes" or "Cancel my changes"; a delete says the user is gone. While a save or the
   * opening read is out, their answer decides (the change may be the form's own save).
   */
  changedElsewhere(change: Change): void {
    const mode = this.#mode;
    if (!this.dialog.open || mode.kind !== 'edit' || mode.user.id !== change.id) return;
    if (this.#form.getAttribute('aria-busy') === 'true') return;
    if (change.type === 'deleted' || change.user === null) return this.#showGone();
    // The state the form holds (a change that reached the feed after the form read it): no warning, or no longer.
    if (change.etag !== null && change.etag === mode.etag) return this.#conflict.hide();
    // Shown already for this state (a 412 of the form's own save): kept, with the save it offers.
    const shown = this.#conflict.shown;
    if (shown && shown.current.etag === (change.etag ?? undefined)) return;
    this.#conflict.show(
      mode.user,
      { user: change.user, etag: change.etag ?? undefined },
      shown?.action ?? 'patch',
      false,
    );
  }

  /**
   * The configured roles, plus the user's current role should it be another (PATCH stores any string).
   * A new user (`current` null) starts at "default", sent as no role at all: the service applies its own
   * default role, which the console does not restate.
   */
  #fillRoles(name: string, current: string | null): void {
    const configured = this.host.roles();
    const roles = current === null || configured.includes(current) ? configured : [...configured, current];
    const select = this.#input(name);
    select.replaceChildren(
      ...(current === null ? [h('option', { value: '' }, 'default')] : []),
      ...roles.map((role) => h('option', { value: role }, role)),
    );
    select.value = current ?? '';
  }

  async #save(action: 'create' | SaveAction): Promise<void> {
    if (this.#form.getAttribute('aria-busy') === 'true') return;
    this.#clearErrors();
    const values: UserValues = Object.fromEntries(this.#fields.map((f) => [f.name, this.#input(f.name).value]));
    const user = this.#mode.kind === 'edit' ? this.#mode.user : null;
    // What is checked: for a PATCH the fields changed; otherwise every field but an empty one that may
    // be left out (the role at "default").
    const changes =
      action === 'patch' && user
        ? changedValues(values, user as Record<string, string | undefined>)
        : checkedValues(this.#fields, values);
    if (action === 'patch' && Object.keys(changes).length === 0) {
      this.#showError('Nothing to save: no field has changed.');
      return;
    }
    // The create rules, in words, before anything is sent. Create and PUT would be refused (422): they
    // wait for a fix. PATCH would store it (the contract lets it): a warning first, and the same
    // values saved again go ahead.
    const found = problems(this.#fields, changes, this.host.roles());
    if (Object.keys(found).length > 0) {
      for (const [name, problem] of Object.entries(found)) this.#setFieldError(name, problem);
      if (action !== 'patch') return this.#focusFirstInvalid();
      const warned = JSON.stringify(changes);
      if (this.#warned !== warned) {
        this.#warned = warned;
        this.#showError(
          'Create would refuse this data (see the fields marked). Press Save changes again to save it anyway.',
        );
        return this.#focusFirstInvalid();
      }
    }
    // Empty fields are left out of a create or PUT, so what the API says is that they are required (not
    // that "" is too short), and a PUT clears an optional field left empty.
    const sent = Object.fromEntries(Object.entries(values).filter(([, value]) => value.trim() !== ''));
    this.#setBusy(true);
    try {
      let saved: User;
      const etag = this.#mode.kind === 'edit' ? this.#mode.etag : undefined;
      if (action === 'create') saved = await createUser(sent);
      else if (!user) return;
      else if (action === 'put') saved = await replaceUser(user.id, sent, etag);
      else saved = await updateUser(user.id, changes, etag);
      if (action === 'create') this.host.focus.target = this.host.home;
      this.dialog.close();
      this.host.announce(
        action === 'create'
          ? `Created ${saved.name}.`
          : action === 'put'
            ? `Replaced ${saved.name} (all fields).`
            : `Updated ${saved.name} (${Object.keys(changes).join(', ')}).`,
      );
      await this.host.reload();
      this.host.focus.restore();
    } catch (error) {
      if (failedWith(error, 'PRECONDITION_FAILED') && user && action !== 'create')
        await this.#showConflict(user, action);
      else this.#showSaveError(error);
    } finally {
      this.#setBusy(false);
    }
  }

  async #showConflict(opened: User, action: SaveAction): Promise<void> {
    let current: TaggedUser;
    try {
      current = await getUser(opened.id);
    } catch (error) {
      this.#showSaveError(failedWith(error, 'USER_NOT_FOUND') ? error : new Error('unreadable'));
      return;
    }
    this.#conflict.show(opened, current, action);
  }

  #showSaveError(error: unknown): void {
    if (!(error instanceof ApiError)) {
      this.#showError('Something went wrong. Try again.');
    } else if (error.code === 'EMAIL_EXISTS' && this.#inputs.has(UNIQUE_FIELD)) {
      this.#setFieldError(UNIQUE_FIELD, error.message);
    } else if (error.code === 'VALIDATION_ERROR' && error.details.length > 0) {
      const other: FieldDetail[] = [];
      for (const detail of error.details) {
        if (this.#inputs.has(detail.field)) this.#setFieldError(detail.field, detail.message);
        else other.push(detail);
      }
      if (other.length > 0)
        this.#showError(
          error.message,
          other.map((detail) => `${detail.field}: ${detail.message}`),
        );
    } else if (error.code === 'USER_NOT_FOUND') {
      this.#showError('This user no longer exists; it may have been deleted meanwhile.');
      void this.host.reload();
    } else {
      this.#showError(describe(error));
    }
    this.#focusFirstInvalid();
  }

  /** Focus on the first field with an error, so keyboard and screen reader users land on it. */
  #focusFirstInvalid(): void {
    [...this.#inputs.values()].find((input) => input.getAttribute('aria-invalid') === 'true')?.focus();
  }

  #setFieldError(name: string, message: string | null): void {
    const input = this.#input(name);
    const output = byId(`user-${name}-error`, HTMLElement);
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

  #showError(message: string, lines: string[] = []): void {
    this.#error.replaceChildren(h('p', {}, message));
    if (lines.length > 0) this.#error.append(h('ul', {}, ...lines.map((line) => h('li', {}, line))));
    this.#error.hidden = false;
  }

  #clearErrors(): void {
    for (const name of this.#inputs.keys()) this.#setFieldError(name, null);
    this.#error.hidden = true;
    this.#error.replaceChildren();
    this.#conflict.hide();
  }

  /** While a save is out, or (`reading`) while the user is read: the buttons wait, and the fields too while reading. */
  #setBusy(busy: boolean, reading = false): void {
    this.#form.setAttribute('aria-busy', String(busy));
    this.#submit.disabled = busy;
    this.#put.disabled = busy;
    this.#conflict.setBusy(busy);
    for (const input of this.#inputs.values()) {
      if (input instanceof HTMLInputElement) input.readOnly = reading;
      else input.disabled = reading;
    }
  }
}
