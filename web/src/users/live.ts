/**
 * The users table kept live: the change feed of the users (`/api/v1/users/changes`) followed while the
 * panel shows them. The order that misses nothing: the feed's head cursor first, then the list, then the
 * stream from that cursor; so a change written while the list loads arrives as an event after it. Each
 * change is handed to the panel (which refreshes its page, debounced) and to the edit form; a reset (the
 * feed no longer holds what came after the cursor: a restart of Roster with users in memory, a long
 * absence) reloads the list, and the watch goes on from the cursor it names.
 *
 * Read with the typed client's watch (fetch streaming), not EventSource: every AUTH credential of the
 * console is a header (X-API-Key, Authorization), which an EventSource cannot send.
 */
import { ApiError, changesHead, watchUserChanges, WatchError, type Change, type WatchState } from '../api.js';
import { byId } from '../dom.js';

export interface LiveHost {
  /** Loads the list again; resolves once it is shown (or failed). */
  reload(): Promise<void>;
  /** A change someone made: the page may show it. */
  changed(change: Change): void;
}

/** How long a watch that could not start waits before trying again. */
const RESTART_MS = 5_000;

export class LiveUsers {
  readonly #status = byId('users-live', HTMLElement);
  readonly #text = byId('users-live-text', HTMLElement);
  #running: AbortController | null = null;

  constructor(private readonly host: LiveHost) {}

  /** Whether a watch runs (or is starting). */
  get running(): boolean {
    return this.#running !== null;
  }

  /** The head cursor, then the list, then the stream from the cursor, until `stop`. */
  start(): void {
    this.stop();
    const running = new AbortController();
    this.#running = running;
    void this.#follow(running.signal);
  }

  stop(): void {
    this.#running?.abort();
    this.#running = null;
    this.#show('off', '');
  }

  async #follow(signal: AbortSignal): Promise<void> {
    this.#show('connecting', 'Connecting…');
    let since: string | undefined;
    for (let attempt = 0; since === undefined; attempt++) {
      try {
        since = await changesHead(signal);
      } catch (error) {
        if (signal.aborted) return;
        // No feed now: the list loads all the same (once), and the feed is asked again unless it was
        // refused for good (a credential, or a Roster without a feed: a 4xx other than 429).
        this.#show('waiting', 'Not live');
        if (attempt === 0) await this.host.reload();
        if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429) return;
        await new Promise<void>((resolve) => {
          const timer = window.setTimeout(resolve, RESTART_MS);
          signal.addEventListener('abort', () => (window.clearTimeout(timer), resolve()), { once: true });
        });
        if (signal.aborted) return;
      }
    }
    if (signal.aborted) return;
    await this.host.reload();
    try {
      for await (const item of watchUserChanges(since, { signal, onState: (state) => this.#state(state) })) {
        if (item.kind === 'change') this.host.changed(item.change);
        else void this.host.reload();
      }
    } catch (error) {
      if (signal.aborted) return;
      // A refusal that trying again will not cure (a credential refused, a feed this Roster lacks).
      this.#show('waiting', 'Not live');
      if (error instanceof WatchError) this.#status.title = `Live updates stopped: ${error.message}`;
    }
  }

  #state(state: WatchState): void {
    if (state.state === 'open') this.#show('live', 'Live');
    else this.#show('waiting', `Reconnecting in ${Math.max(1, Math.round(state.delayMs / 1000))} s…`);
  }

  /** The indicator: a dot and a word, its state in `data-state` (live, connecting, waiting, off). */
  #show(state: 'live' | 'connecting' | 'waiting' | 'off', text: string): void {
    this.#status.dataset.state = state;
    this.#status.hidden = state === 'off';
    this.#text.textContent = text;
    this.#status.title =
      state === 'live' ? 'Changes made elsewhere show here as they happen.' : 'Changes made elsewhere show on reload.';
  }
}
