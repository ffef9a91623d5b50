/**
 * The chat panel: connection state, the room's notices and online count, messages (the user's own
 * marked), and the form to send one.
 */
import { shortId, type ReconnectingChat } from '@roster/protocol';
import { chatConnection, type ConnectionState, type ServerMessage } from './chat-connection.js';
import { byId, formatTime, h, hiddenText, timeElement } from './dom.js';

/** Entries kept in the log; older ones are dropped so a long session does not grow without bound. */
const MAX_ENTRIES = 500;

export class ChatPanel {
  readonly #panel = byId('chat', HTMLElement);
  readonly #status = byId('chat-status', HTMLElement);
  readonly #statusText = byId('chat-status-text', HTMLElement);
  readonly #retry = byId('chat-retry', HTMLButtonElement);
  readonly #count = byId('online-count', HTMLElement);
  /** The scrolling region, and the list of entries in it. */
  readonly #log = byId('chat-log', HTMLElement);
  readonly #entries = byId('chat-entries', HTMLOListElement);
  readonly #form = byId('chat-form', HTMLFormElement);
  readonly #input = byId('chat-input', HTMLInputElement);
  readonly #send = byId('chat-send', HTMLButtonElement);
  readonly #connection: ReconnectingChat;

  /** This connection's id (`from` of its messages), learned from the echo of the first message sent. */
  #ownId: string | null = null;
  /** Texts sent on this connection whose echo has not arrived yet, oldest first. */
  #pending: string[] = [];
  /** Whether this page has been connected at all (a later failure is "lost", not "cannot reach"). */
  #everConnected = false;

  /**
   * `refused`: called when a connection attempt fails before opening. A browser is not told why a
   * handshake failed (a 401 looks like an unreachable server), so the caller can find out another way.
   */
  constructor(
    resolveUrl: () => Promise<string>,
    private readonly refused: () => void = () => undefined,
    /** Called each time a connection opens: after a drop, the server may have restarted meanwhile. */
    private readonly opened: () => void = () => undefined,
  ) {
    this.#connection = chatConnection(resolveUrl, {
      state: (state) => {
        this.#showState(state);
        if (state.kind === 'waiting' && !state.wasOpen) this.refused();
        if (state.kind === 'open') this.opened();
      },
      message: (message) => this.#receive(message),
    });
    this.#form.addEventListener('submit', (event) => {
      event.preventDefault();
      this.#sendMessage();
    });
    this.#retry.addEventListener('click', () => this.#connection.retryNow());
    window.addEventListener('online', () => this.#connection.retryNow());
  }

  start(): void {
    this.#connection.start();
  }

  /** Leaves the room and forgets the conversation (on sign-out: the next user of the tab sees none of it). */
  stop(): void {
    this.#connection.stop(1000, 'Leaving');
    this.#entries.replaceChildren();
    this.#everConnected = false;
    this.#ownId = null;
    this.#pending = [];
    this.#input.value = '';
    this.#count.textContent = '–';
    this.#send.disabled = true;
    this.#retry.hidden = true;
    this.#status.dataset.state = 'connecting';
    this.#panel.dataset.state = 'connecting';
    this.#statusText.textContent = 'Not connected';
  }

  /** A notice of the console's own in the log (e.g. that Roster restarted). */
  note(text: string): void {
    this.#notice(text, 'system');
  }

  #sendMessage(): void {
    const text = this.#input.value;
    if (text.trim() === '') {
      this.#input.focus();
      return;
    }
    if (!this.#connection.send({ type: 'chat', message: text })) return;
    this.#pending.push(text);
    this.#input.value = '';
    this.#input.focus();
  }

  #showState(state: ConnectionState): void {
    this.#status.dataset.state = state.kind;
    this.#panel.dataset.state = state.kind;
    this.#send.disabled = state.kind !== 'open';
    this.#retry.hidden = state.kind !== 'waiting';
    if (state.kind === 'open') {
      this.#everConnected = true;
      this.#statusText.textContent = 'Connected';
      return;
    }
    // A new connection has a new id: forget the old one and what was waiting for an echo on it.
    this.#ownId = null;
    this.#pending = [];
    this.#count.textContent = '–';
    if (state.kind === 'connecting') {
      this.#statusText.textContent = this.#everConnected || state.attempt > 0 ? 'Reconnecting…' : 'Connecting…';
      return;
    }
    const seconds = Math.max(1, Math.ceil(state.delayMs / 1000));
    if (state.wasOpen) this.#notice('Connection lost', 'lost');
    this.#statusText.textContent = this.#everConnected
      ? `Connection lost. Reconnecting in ${seconds} s…`
      : `Cannot reach the chat. Reconnecting in ${seconds} s…`;
  }

  #receive(message: ServerMessage): void {
    switch (message.type) {
      case 'system': {
        this.#notice(message.message, 'system', message.timestamp);
        const count = /(\d+)\s+users?\s+online/i.exec(message.message);
        if (count) this.#count.textContent = count[1] ?? '–';
        break;
      }
      case 'user_join':
      case 'user_leave':
        this.#notice(message.message, message.type === 'user_join' ? 'join' : 'leave', message.timestamp);
        this.#count.textContent = String(message.online_count);
        break;
      case 'chat':
        this.#chat(message.from, message.message, message.timestamp, message.history === true);
        break;
      case 'history':
        // The end of what the room replayed: recent messages on joining, or what was missed meanwhile.
        if (message.recovered === false)
          this.#notice(
            'Some messages were missed while disconnected: they are older than the history the room keeps',
            'lost',
          );
        else if (message.recovered === true && message.count > 0)
          this.#notice(`${message.count} missed ${message.count === 1 ? 'message' : 'messages'} recovered`, 'system');
        break;
      case 'pong':
        break;
    }
  }

  /** `earlier`: replayed from the room's history (said before this connection joined). */
  #chat(from: string, text: string, timestamp?: string, earlier = false): void {
    // The contract never tells a connection its own id. The first echo of the oldest text still
    // waiting for one reveals it; from then on, messages from that id are this user's.
    if (!earlier && this.#ownId === null && this.#pending[0] === text) this.#ownId = from;
    const own = this.#ownId !== null && from === this.#ownId;
    if (own) {
      const index = this.#pending.indexOf(text);
      if (index >= 0) this.#pending.splice(index, 1);
    }
    // The same short id as the terminal client shows (sender-id.ts); your own messages also say You.
    const who = own ? 'You' : shortId(from) || '?';
    this.#add(
      h(
        'li',
        {
          class: `${own ? 'entry message own' : 'entry message'}${earlier ? ' earlier' : ''}`,
          'data-own': String(own),
          'data-from': from,
        },
        h(
          'p',
          { class: 'meta' },
          h('span', { class: 'who' }, who),
          hiddenText(' at '),
          timestamp ? timeElement(timestamp, formatTime) : null,
        ),
        h('p', { class: 'text' }, text),
      ),
    );
  }

  #notice(text: string, kind: 'system' | 'join' | 'leave' | 'lost', timestamp?: string): void {
    this.#add(
      h(
        'li',
        { class: `entry notice ${kind}` },
        h('span', { class: 'notice-text' }, text),
        timestamp ? h('span', { class: 'notice-time' }, hiddenText(' at '), timeElement(timestamp, formatTime)) : null,
      ),
    );
  }

  #add(entry: HTMLLIElement): void {
    const log = this.#log;
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 48;
    const entries = this.#entries;
    entries.append(entry);
    while (entries.childElementCount > MAX_ENTRIES) entries.firstElementChild?.remove();
    // Follow new entries, unless the user has scrolled up to read older ones.
    if (atBottom) log.scrollTop = log.scrollHeight;
  }
}
