/**
 * The delete confirmation: it reads the user again for its ETag, sent as If-Match, so that a delete of
 * a user changed meanwhile is refused (412 PRECONDITION_FAILED), shown as it now is, and asked again.
 */
import { ApiError, deleteUser, failedWith, getUser, type TaggedUser, type User } from '../api.js';
import { breakableEmail, byId, h } from '../dom.js';
import { CHANGED_MEANWHILE, describe, type ReturnFocus, wireClose } from './dialogs.js';

/** What the dialog asks of the panel around it. */
export interface DeleteHost {
  readonly focus: ReturnFocus;
  /** Where focus goes once the row is gone (the "Add user" button). */
  readonly home: HTMLElement;
  announce(text: string): void;
  clearNotice(): void;
  reload(): Promise<void>;
}

export class DeleteDialog {
  readonly dialog = byId('delete-dialog', HTMLDialogElement);
  readonly #form = byId('delete-form', HTMLFormElement);
  readonly #text = byId('delete-dialog-text', HTMLElement);
  readonly #error = byId('delete-form-error', HTMLElement);
  readonly #confirm = byId('delete-confirm', HTMLButtonElement);
  #deleting: TaggedUser | null = null;

  constructor(private readonly host: DeleteHost) {
    wireClose(this.dialog);
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#confirmDelete();
    });
  }

  open(user: User): void {
    this.host.clearNotice();
    const deleting: TaggedUser = { user, etag: undefined };
    this.#deleting = deleting;
    this.host.focus.remember();
    this.#show(user);
    this.#error.hidden = true;
    this.#confirm.replaceChildren('Delete');
    this.#confirm.disabled = true;
    this.dialog.showModal();
    void this.#read(deleting);
  }

  #show(user: User, before: string[] = []): void {
    this.#text.replaceChildren(
      ...before,
      h('strong', {}, user.name),
      ' (',
      breakableEmail(user.email),
      ') will be removed. This cannot be undone.',
    );
  }

  /** The user as it is now and its ETag. */
  async #read(deleting: TaggedUser): Promise<void> {
    try {
      const { user, etag } = await getUser(deleting.user.id);
      deleting.user = user;
      deleting.etag = etag;
      if (this.#deleting === deleting) this.#show(user);
    } catch {
      // Deleted already, or unreadable: the delete itself says which (USER_NOT_FOUND is shown as done).
    }
    if (this.#deleting === deleting) this.#confirm.disabled = false;
  }

  async #confirmDelete(): Promise<void> {
    const deleting = this.#deleting;
    if (!deleting || this.#confirm.disabled) return;
    const { user } = deleting;
    this.#confirm.disabled = true;
    try {
      await deleteUser(user.id, deleting.etag);
      this.host.announce(`Deleted ${user.name}.`);
    } catch (error) {
      if (failedWith(error, 'PRECONDITION_FAILED')) {
        // Changed since the dialog opened: show it as it is now, and ask again.
        const opened = user.name;
        deleting.etag = undefined;
        await this.#read(deleting);
        this.#show(deleting.user, [`${opened} ${CHANGED_MEANWHILE}. Now `]);
        this.#confirm.replaceChildren('Delete anyway');
        return;
      }
      if (!failedWith(error, 'USER_NOT_FOUND')) {
        this.#error.textContent = error instanceof ApiError ? describe(error) : 'Something went wrong. Try again.';
        this.#error.hidden = false;
        this.#confirm.disabled = false;
        return;
      }
      this.host.announce(`${user.name} was already deleted.`);
    }
    // The row and its buttons are about to go: focus returns to the table's heading area.
    this.host.focus.target = this.host.home;
    this.#deleting = null;
    this.dialog.close();
    await this.host.reload();
  }
}
