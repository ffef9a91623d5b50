/**
 * A save refused with 412 PRECONDITION_FAILED, or a change seen live on the users feed (live.ts):
 * someone changed the user since the dialog opened. Their
 * values (read again) are shown, field by field of the field table; the form keeps this user's.
 * "Re-apply my changes" sends the same save over theirs (a PATCH only the fields changed here, a PUT
 * all), with their ETag; "Cancel my changes" keeps theirs.
 */
import type { TaggedUser, User } from '../api.js';
import { byId, h } from '../dom.js';
import { CHANGED_MEANWHILE } from './dialogs.js';
import type { ConsoleField } from './fields.js';

export type SaveAction = 'put' | 'patch';

export class ConflictView {
  readonly #box = byId('user-conflict', HTMLElement);
  readonly #text = byId('user-conflict-text', HTMLElement);
  readonly #values = byId('user-conflict-values', HTMLElement);
  readonly #reapply = byId('user-reapply', HTMLButtonElement);
  readonly #discard = byId('user-discard', HTMLButtonElement);
  /** The user as it is now, and the save to send again over it if asked. */
  #conflicted: { current: TaggedUser; action: SaveAction } | null = null;

  constructor(
    private readonly fields: readonly ConsoleField[],
    reapply: (current: TaggedUser, action: SaveAction) => void,
    discard: () => void,
  ) {
    this.#reapply.addEventListener('click', () => {
      if (this.#conflicted) reapply(this.#conflicted.current, this.#conflicted.action);
    });
    this.#discard.addEventListener('click', discard);
  }

  /** The user as it is now; `focus` moves the focus to "Re-apply" (not for a change seen live, while the user types). */
  /** The conflict on screen (the user as it is now, and the save offered), or null. */
  get shown(): { current: TaggedUser; action: SaveAction } | null {
    return this.#conflicted;
  }

  show(opened: User, current: TaggedUser, action: SaveAction, focus = true): void {
    this.#conflicted = { current, action };
    const now = current.user as Record<string, string | undefined>;
    this.#text.textContent = `${opened.name} ${CHANGED_MEANWHILE}. It now reads:`;
    this.#values.replaceChildren(
      ...this.fields
        .filter((field) => field.writable)
        .flatMap((field) => [h('dt', {}, field.label), h('dd', { 'data-field': field.name }, now[field.name] ?? '')]),
    );
    this.#reapply.replaceChildren(action === 'put' ? 'Replace with my values' : 'Re-apply my changes');
    this.#box.hidden = false;
    if (focus) this.#reapply.focus();
  }

  /** Hidden and emptied: a page (or a test) that waits for the next conflict's words does not read the last one's. */
  hide(): void {
    this.#box.hidden = true;
    this.#text.textContent = '';
    this.#values.replaceChildren();
    this.#conflicted = null;
  }

  setBusy(busy: boolean): void {
    this.#reapply.disabled = busy;
  }
}
