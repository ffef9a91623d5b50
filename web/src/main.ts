/**
 * Entry point of the browser console: loads the settings, then starts the users and chat panels; with
 * authentication on, behind the sign-in form (sign-in.ts) and with the credential on every call.
 */
import { ApiError, checkCredential, failedWith, onUnauthorized, signRequests } from './api.js';
import { ChatPanel } from './chat-panel.js';
import { chatAddress, loadConfig, type AuthScheme, type ConsoleConfig } from './config.js';
import {
  chatAddressWith,
  forgetCredential,
  loadCredential,
  saveCredential,
  signingOf,
  type Credential,
  type Signing,
} from './credentials.js';
import { byId } from './dom.js';
import { RestartWatch } from './restarts.js';
import { SignIn } from './sign-in.js';
import { UsersPanel } from './users/panel.js';

let config: Promise<ConsoleConfig> | null = null;

/** The settings, fetched once; a failed fetch is tried again on the next call. */
function settings(): Promise<ConsoleConfig> {
  config ??= loadConfig().catch((error: unknown) => {
    config = null;
    throw error;
  });
  return config;
}

const pageUrl = () => new URL(window.location.href);

/**
 * Watches for a restart of Roster on every chat (re)connection: when one happened, the users are
 * loaded again and both panels say so.
 */
function watchRestarts(users: UsersPanel, chat: () => ChatPanel): RestartWatch {
  return new RestartWatch((text) => {
    users.load();
    users.notify(text);
    chat().note(text);
  });
}

async function main(): Promise<void> {
  // No roles until the service's settings arrive (its ROLES): the filter offers "All roles" alone.
  const users = new UsersPanel([]);
  let loaded: ConsoleConfig | null = null;
  try {
    loaded = await settings();
  } catch {
    // No roles offered; the chat reports the problem and retries.
  }
  if (loaded) users.setRoles(loaded.roles);
  if (loaded === null || loaded.auth === 'none') {
    const restarts = watchRestarts(users, () => chat);
    users.load();
    void restarts.check();
    const chat: ChatPanel = new ChatPanel(
      async () => chatAddress(await settings(), pageUrl()),
      undefined,
      () => void restarts.check(),
    );
    chat.start();
    return;
  }
  startSignedIn(loaded.auth, users);
}

/** Authentication on: the panels run only while a credential Roster accepts is in use. */
function startSignedIn(scheme: Exclude<AuthScheme, 'none'>, users: UsersPanel): void {
  let credential: Credential | null = null;
  let signing: Signing | null = null;

  const restarts = watchRestarts(users, () => chat);
  const chat: ChatPanel = new ChatPanel(
    async () => {
      if (!credential) throw new Error('not signed in');
      return chatAddressWith(chatAddress(await settings(), pageUrl()), credential);
    },
    () => {
      // The handshake failed and the browser does not say why: a REST call with the same credential
      // does. A 401 there signs out (through onUnauthorized); anything else, the chat keeps retrying.
      if (signing) checkCredential(signing).catch(() => undefined);
    },
    () => void restarts.check(),
  );
  // While signed out the form stands alone: the panels, and the links that lead to them, are hidden.
  const panels = [
    byId('users', HTMLElement),
    byId('chat', HTMLElement),
    ...document.querySelectorAll<HTMLElement>('.sections, .skip-link'),
  ];
  const signIn = new SignIn(scheme, panels, {
    async submit(candidate) {
      const candidateSigning = signingOf(candidate);
      try {
        await checkCredential(candidateSigning);
      } catch (error) {
        return refusal(error);
      }
      use(candidate, candidateSigning);
      return null;
    },
    signOut() {
      stop();
      signIn.showForm({ notice: 'Signed out.' });
    },
  });

  function use(accepted: Credential, acceptedSigning: Signing): void {
    credential = accepted;
    signing = acceptedSigning;
    saveCredential(accepted);
    signRequests(acceptedSigning);
    signIn.showSignedIn(accepted);
    users.load();
    void restarts.check();
    chat.start();
  }

  function stop(): void {
    credential = null;
    signing = null;
    forgetCredential();
    signRequests(null);
    chat.stop();
    users.clear();
  }

  const refused = (error: ApiError) =>
    signIn.showForm({ error: `Your credential was refused: ${error.message}. Sign in again.` });
  onUnauthorized((error) => {
    stop();
    refused(error);
  });

  const saved = loadCredential(signIn.kind);
  if (!saved) return signIn.showForm();
  // Signed in earlier in this tab: checked once before the panels start, so that a credential Roster
  // no longer accepts brings the form back rather than a refused chat handshake. If it cannot be
  // checked now (Roster unreachable), the panels start anyway and report that themselves.
  const savedSigning = signingOf(saved);
  checkCredential(savedSigning).then(
    () => use(saved, savedSigning),
    (error: unknown) => {
      if (!failedWith(error, 'UNAUTHORIZED')) return use(saved, savedSigning);
      forgetCredential();
      refused(error);
    },
  );
}

/** What the form says when a credential could not be checked or was refused. */
function refusal(error: unknown): string {
  if (!(error instanceof ApiError)) return 'Something went wrong. Try again.';
  if (error.code === 'UNAUTHORIZED') return `Not signed in: ${error.message}.`;
  if (error.code === 'NETWORK_ERROR') return error.message;
  if (error.code === 'RATE_LIMITED') return `${error.message}.`;
  return `The credential could not be checked: ${error.message} (${error.status} ${error.code}).`;
}

void main();
