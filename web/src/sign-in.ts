/**
 * The sign-in form, shown in place of the panels while authentication is on and no credential is in
 * use, and the top bar's "Signed in as … / Sign out". It collects the credential the scheme needs and
 * hands it to `submit`, which checks it with Roster and says what went wrong, if anything.
 */
import type { AuthScheme } from './config.js';
import { describeCredential, kindOf, type Credential, type CredentialKind } from './credentials.js';
import { byId } from './dom.js';

const HINTS: Record<CredentialKind, string> = {
  apikey: 'This Roster requires an API key (AUTH=apikey).',
  basic: 'This Roster requires a user name and password (AUTH=basic).',
  bearer: 'This Roster requires a bearer token (a JWT).',
};
const KEPT = ' It is kept in this browser tab only, until you sign out or close the tab.';

export interface SignInEvents {
  /** Checks the credential; resolves to null once signed in, else to the message to show at the form. */
  submit(credential: Credential): Promise<string | null>;
  signOut(): void;
}

export class SignIn {
  readonly #section = byId('sign-in', HTMLElement);
  readonly #form = byId('sign-in-form', HTMLFormElement);
  readonly #hint = byId('sign-in-hint', HTMLElement);
  readonly #notice = byId('sign-in-notice', HTMLElement);
  readonly #error = byId('sign-in-error', HTMLElement);
  readonly #submit = byId('sign-in-submit', HTMLButtonElement);
  readonly #key = byId('sign-in-key', HTMLInputElement);
  readonly #user = byId('sign-in-user', HTMLInputElement);
  readonly #password = byId('sign-in-password', HTMLInputElement);
  readonly #token = byId('sign-in-token', HTMLInputElement);
  readonly #session = byId('session', HTMLElement);
  readonly #sessionText = byId('session-text', HTMLElement);
  readonly #signOut = byId('sign-out', HTMLButtonElement);
  readonly #kind: CredentialKind;

  /** `panels`: what the form stands in for while signed out (hidden then, shown once signed in). */
  constructor(
    scheme: Exclude<AuthScheme, 'none'>,
    private readonly panels: readonly HTMLElement[],
    private readonly events: SignInEvents,
  ) {
    this.#kind = kindOf(scheme) ?? 'apikey';
    this.#hint.textContent = HINTS[this.#kind] + KEPT;
    for (const field of this.#form.querySelectorAll<HTMLElement>('[data-kind]'))
      field.hidden = field.dataset.kind !== this.#kind;
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#send();
    });
    for (const input of this.#inputs()) input.addEventListener('input', () => this.#markValid(input));
    this.#signOut.addEventListener('click', () => this.events.signOut());
  }

  get kind(): CredentialKind {
    return this.#kind;
  }

  /**
   * The form in place of the panels, with why the user is asked (again): an error (a credential
   * refused) or a notice (signed out), or nothing at the start.
   */
  showForm(message: { error: string } | { notice: string } | null = null): void {
    for (const panel of this.panels) panel.hidden = true;
    this.#session.hidden = true;
    this.#sessionText.textContent = '';
    // Secrets are not left in the form; the user name may stay, as a convenience.
    this.#key.value = '';
    this.#password.value = '';
    this.#token.value = '';
    this.#setBusy(false);
    this.#showError(message && 'error' in message ? message.error : null);
    this.#notice.textContent = message && 'notice' in message ? message.notice : '';
    this.#section.hidden = false;
    const first = this.#kind === 'basic' && this.#user.value !== '' ? this.#password : this.#inputs()[0];
    first?.focus();
  }

  /** The panels, and the top bar's session, in place of the form. */
  showSignedIn(credential: Credential): void {
    this.#section.hidden = true;
    this.#showError(null);
    this.#notice.textContent = '';
    this.#key.value = '';
    this.#password.value = '';
    this.#token.value = '';
    for (const panel of this.panels) panel.hidden = false;
    this.#sessionText.textContent = describeCredential(credential);
    this.#session.hidden = false;
  }

  async #send(): Promise<void> {
    if (this.#form.getAttribute('aria-busy') === 'true') return;
    const credential = this.#read();
    if (!credential) return;
    this.#showError(null);
    this.#setBusy(true);
    let problem: string | null;
    try {
      problem = await this.events.submit(credential);
    } catch {
      problem = 'Something went wrong. Try again.';
    }
    this.#setBusy(false);
    if (problem === null) {
      // The form is gone: keyboard and screen reader users go on from the first panel.
      this.panels[0]?.focus();
      return;
    }
    this.#notice.textContent = '';
    this.#showError(problem);
    const retry = this.#kind === 'basic' ? this.#password : this.#inputs()[0];
    if (!retry) return;
    this.#markInvalid(retry);
    retry.select();
    retry.focus();
  }

  /** The credential typed in, or null (with the reason shown) when a field is empty or unusable. */
  #read(): Credential | null {
    const missing = (input: HTMLInputElement, message: string) => {
      this.#showError(message);
      this.#markInvalid(input);
      input.focus();
      return null;
    };
    switch (this.#kind) {
      case 'apikey': {
        const key = this.#key.value.trim();
        return key === '' ? missing(this.#key, 'Enter the API key.') : { kind: 'apikey', key };
      }
      case 'basic': {
        const user = this.#user.value.trim();
        if (user === '') return missing(this.#user, 'Enter the user name.');
        // Basic credentials are "user:password": a colon would end the user name early.
        if (user.includes(':')) return missing(this.#user, 'A user name cannot contain ":".');
        if (this.#password.value === '') return missing(this.#password, 'Enter the password.');
        return { kind: 'basic', user, password: this.#password.value };
      }
      case 'bearer': {
        const token = this.#token.value.trim().replace(/^Bearer\s+/i, '');
        return token === '' ? missing(this.#token, 'Enter the bearer token.') : { kind: 'bearer', token };
      }
    }
  }

  #inputs(): HTMLInputElement[] {
    switch (this.#kind) {
      case 'apikey':
        return [this.#key];
      case 'basic':
        return [this.#user, this.#password];
      case 'bearer':
        return [this.#token];
    }
  }

  #showError(message: string | null): void {
    this.#error.textContent = message ?? '';
    this.#error.hidden = message === null;
    if (message === null) for (const input of this.#inputs()) this.#markValid(input);
  }

  /** The field the error is about: screen readers read the error with it. */
  #markInvalid(input: HTMLInputElement): void {
    input.setAttribute('aria-invalid', 'true');
    input.setAttribute('aria-describedby', this.#error.id);
  }

  #markValid(input: HTMLInputElement): void {
    input.removeAttribute('aria-invalid');
    input.removeAttribute('aria-describedby');
  }

  #setBusy(busy: boolean): void {
    this.#form.setAttribute('aria-busy', String(busy));
    this.#submit.disabled = busy;
    this.#submit.textContent = busy ? 'Signing in…' : 'Sign in';
  }
}
