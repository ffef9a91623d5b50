/**
 * What the users screen's dialogs share: closing, where focus goes back to, and the words of a failed
 * call (decided on its code, the catalog's, not on its HTTP status, which the words only show).
 */
import type { ApiError, FailureCode } from '../api.js';

/** The words of a save or a delete refused because the user changed since the dialog opened (412). */
export const CHANGED_MEANWHILE = 'was changed by someone else since you opened it';

/** Failures of the server itself: nothing about the request to fix, only to try again. */
const SERVER_TROUBLE: ReadonlySet<FailureCode> = new Set(['INTERNAL_ERROR', 'SERVICE_UNAVAILABLE']);

/** A one-line explanation of an API failure for the error states. */
export function describe(error: ApiError): string {
  if (error.code === 'NETWORK_ERROR' || error.code === 'UNREADABLE_REPLY') return error.message;
  if (error.code === 'FORBIDDEN')
    return `${error.message}: you are signed in with a credential that may read users but not change them (${error.status} ${error.code}).`;
  if (SERVER_TROUBLE.has(error.code))
    return `The server had a problem (${error.status} ${error.code}). Try again in a moment.`;
  return `${error.message} (${error.status} ${error.code}).`;
}

/** Buttons marked `data-close` close their dialog; Escape does too (the dialog's own behaviour). */
export function wireClose(dialog: HTMLDialogElement): void {
  for (const button of dialog.querySelectorAll<HTMLButtonElement>('[data-close]')) {
    button.addEventListener('click', () => dialog.close());
  }
}

/**
 * Where focus goes back to when the screen's dialogs close: what had it when one opened, or (`target`)
 * where the action that closed it sends it; on a row redrawn meanwhile, the same button of the new row.
 */
export class ReturnFocus {
  /** Where focus goes back to when a dialog closes. */
  target: HTMLElement | null = null;
  /** What had focus when the open dialog was opened: the browser itself puts focus back there on close. */
  #openedFrom: Element | null = null;

  constructor(
    private readonly fallback: HTMLElement,
    private readonly rows: HTMLElement,
    private readonly dialogs: readonly HTMLDialogElement[],
  ) {
    for (const dialog of dialogs) dialog.addEventListener('close', () => this.restore());
  }

  /** Called as a dialog opens: remembers what had focus, as the place to go back to. */
  remember(): void {
    this.#openedFrom = document.activeElement;
    this.target = this.#openedFrom instanceof HTMLElement ? this.#openedFrom : this.fallback;
  }

  forget(): void {
    this.target = null;
    this.#openedFrom = null;
  }

  restore(): void {
    if (this.dialogs.some((dialog) => dialog.open)) return;
    // A dialog's close event comes a task after it closed, and a save's reload later still. Focus that
    // has moved on meanwhile (the user tabbed on from where the browser put it back) stays where it is;
    // only focus left where the dialog was opened, or lost with a redrawn row, is moved.
    const active = document.activeElement;
    if (active !== null && active !== document.body && active !== this.#openedFrom) return;
    let target = this.target;
    // The table was drawn again meanwhile: the same button of the same user's new row.
    if (target && !target.isConnected && target.dataset.userId !== undefined) {
      const selector = `[data-user-id="${CSS.escape(target.dataset.userId)}"][data-action="${CSS.escape(target.dataset.action ?? '')}"]`;
      target = this.rows.querySelector<HTMLElement>(selector) ?? this.fallback;
    }
    if (target?.isConnected) target.focus();
  }
}
