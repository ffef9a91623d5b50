/**
 * One `roster chat` session (chat.ts is the command). It takes its streams and signal source as
 * arguments, so tests can drive it in-process as well as through a real process.
 */
import type { EventEmitter } from 'node:events';
import { clearLine, createInterface, cursorTo, type Interface } from 'node:readline';
import { WebSocket } from 'ws';
import type { ServerMessage } from '../protocol/chat-codec.js';
import { ReconnectingChat, type PongTiming, type SessionState } from '../protocol/reconnecting-chat.js';
import {
  commandOf,
  describeClose,
  formatPong,
  formatServerMessage,
  formatUnknown,
  OwnChats,
  printable,
  worthReconnecting,
} from './chat-view.js';
import { refusalOf } from './chat-refusal.js';

const COMMANDS_HELP = '* commands: /ping (round trip), /quit or Ctrl-C (leave), /help';

export interface ChatOptions {
  url: string;
  /** Print server messages raw, one a line, and nothing else on stdout. */
  json: boolean;
  /** Interval of the application keep-alive ping (the contract's 30 s). */
  pingIntervalMs?: number;
  /** How long leaving waits for the client's own chats to come back (end of input, /quit). */
  leaveGraceMs?: number;
  /** Wait for the close handshake at most this long, then drop the connection. */
  closeTimeoutMs?: number;
  /** Time zone of the clock shown for chats; the local one when absent. */
  timeZone?: string;
  /** Connect again, with backoff, when an open connection is lost (default true; `--no-reconnect`). */
  reconnect?: boolean;
  /** --history N: the last N messages on joining, and what was missed (`since`) on reconnecting; 0: neither. */
  history?: number;
}

export interface ChatIo {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  errors: NodeJS.WritableStream;
  /** A person at a terminal: prompt and line editing (ignored with --json). */
  interactive: boolean;
  /** Where SIGINT and SIGTERM come from: `process`, or a stand-in in tests. */
  signals: EventEmitter;
}

/** One chat session, from connecting to the exit status. */
export function runChat(options: ChatOptions, io: ChatIo): Promise<number> {
  return new Promise((resolve) => new ChatSession(options, io, resolve).start());
}

const SIGNAL_NUMBERS = { SIGINT: 2, SIGTERM: 15 } as const;
type Signal = keyof typeof SIGNAL_NUMBERS;
const SIGNALS = Object.keys(SIGNAL_NUMBERS) as Signal[];

/**
 * connecting -> open -> leaving (waiting for own echoes) -> closing (close 1000 sent) -> done.
 * A connection lost while open goes to reconnecting (a backoff, then connecting again) and back to
 * open; the server closing for good, a failure or a second signal go straight to done.
 */
type State = 'connecting' | 'open' | 'reconnecting' | 'leaving' | 'closing' | 'done';

class ChatSession {
  readonly #options: Required<Omit<ChatOptions, 'timeZone'>> & { timeZone?: string };
  readonly #io: ChatIo;
  readonly #resolve: (code: number) => void;
  /** ChatIo.interactive, and not --json. */
  readonly #prompting: boolean;
  readonly #own = new OwnChats();
  #state: State = 'connecting';
  /** The connection, its keep-alive, backoff and place in the history: the console's session too. */
  readonly #chat: ReconnectingChat;
  /** The current socket, to cut it off when the session ends without a close handshake. */
  #ws: WebSocket | undefined;
  #rl: Interface | undefined;
  #outputBroken = false;
  #timers: NodeJS.Timeout[] = [];
  readonly #onSignal = (signal: Signal): void => this.#interrupt(signal);

  constructor(options: ChatOptions, io: ChatIo, resolve: (code: number) => void) {
    this.#options = {
      pingIntervalMs: 30_000,
      leaveGraceMs: 2_000,
      closeTimeoutMs: 2_000,
      reconnect: true,
      history: 0,
      ...options,
    };
    this.#io = io;
    this.#resolve = resolve;
    this.#prompting = io.interactive && !options.json;
    this.#chat = new ReconnectingChat(
      {
        url: () => this.#options.url,
        connect: (url) => this.#connect(url),
        pingIntervalMs: this.#options.pingIntervalMs,
        history: this.#options.history,
        // A first connection that fails ends the session: the person learns why at once.
        retryFirst: false,
      },
      {
        state: (state) => this.#stateChanged(state),
        message: (message, text, pong) => this.#received(message, text, pong),
        unknown: (data) => this.#unknown(data),
        error: (message) => this.#diagnose(`connection error: ${message}`),
        dropped: (code, reason) => this.#dropped(code, reason),
        ended: (end) => {
          if (end.kind === 'unusable') {
            this.#diagnose(`invalid URL ${JSON.stringify(this.#options.url)}: ${end.cause}`);
            this.#finish(2);
          } else {
            this.#diagnose(`could not connect to ${this.#options.url}: ${end.cause}`);
            this.#finish(1);
          }
        },
      },
    );
  }

  start(): void {
    for (const signal of SIGNALS) this.#io.signals.on(signal, this.#onSignal);
    // e.g. `roster chat --json | head -1`: once nobody reads, leave.
    this.#io.output.on('error', () => {
      this.#outputBroken = true;
      this.#leave(false);
    });
    this.#chat.start();
  }

  /**
   * A socket of the `ws` package, which says more than a browser's: an HTTP answer instead of the
   * upgrade is read (refusalOf) to tell the person why.
   */
  #connect(url: string): WebSocket {
    const ws = new WebSocket(url, { handshakeTimeout: 10_000 });
    this.#ws = ws;
    ws.on('unexpected-response', (_request, response) => {
      void refusalOf(response, this.#options.url).then(
        (cause) => this.#ws === ws && this.#chat.abandon(cause),
        () => this.#ws === ws && this.#chat.abandon('the handshake was refused'),
      );
    });
    return ws;
  }

  #stateChanged(state: SessionState): void {
    if (state.kind === 'waiting') {
      this.#notice(
        `* reconnecting in ${(state.delayMs / 1000).toFixed(1)} s (attempt ${state.attempt + 1}; Ctrl-C to leave)`,
      );
    } else if (state.kind === 'open') this.#opened(state.reconnected);
  }

  #opened(reconnected: boolean): void {
    if (reconnected) {
      if (this.#state !== 'reconnecting') return;
      this.#state = 'open';
      // A new connection is a new member with a new id: learn it again from the next echo (the old
      // ids stay this client's, for what a replay brings back).
      this.#own.reset();
      this.#notice(`* reconnected to ${this.#options.url}`);
      return;
    }
    if (this.#state !== 'connecting') return;
    this.#state = 'open';
    const rl = createInterface({
      input: this.#io.input,
      output: this.#prompting ? this.#io.output : undefined,
      terminal: this.#prompting,
      crlfDelay: Infinity,
    });
    this.#rl = rl;
    rl.on('line', (line) => this.#line(line));
    rl.on('close', () => this.#leave(true)); // end of input (Ctrl-D on a terminal)
    if (this.#prompting) {
      rl.setPrompt('> ');
      rl.on('SIGINT', () => this.#interrupt('SIGINT')); // Ctrl-C, which the terminal's raw mode turns into a key
      this.#show(`* connected to ${this.#options.url}`);
      this.#show(COMMANDS_HELP);
    }
  }

  #line(line: string): void {
    if (this.#state !== 'open' && this.#state !== 'reconnecting') return;
    const command = commandOf(line);
    if (command === '/quit') return this.#leave(true);
    if (this.#prompting) this.#rl?.prompt(); // a fresh prompt; what the line brings is drawn above it
    if (command === '/ping') {
      if (!this.#chat.ping()) this.#notice('* not connected (reconnecting)');
    } else if (command === '/help') this.#show(COMMANDS_HELP);
    else if (command !== undefined)
      this.#notice(
        `* unknown command ${printable(command)}; ${COMMANDS_HELP.slice(2)} (start a line with // to send one beginning with /)`,
      );
    else if (line.trim() === '')
      return; // nothing to say: blank and white-space-only lines are not sent
    else if (this.#state === 'reconnecting') this.#notice('* not sent: not connected (reconnecting)');
    else {
      const text = line.trimStart().startsWith('//') ? line.replace('//', '/') : line;
      this.#own.sent(text);
      this.#chat.send({ type: 'chat', message: text });
    }
  }

  #received(message: ServerMessage, text: string, pong: PongTiming | undefined): void {
    if (this.#state === 'done') return;
    if (this.#options.json) this.#write(`${text}\n`);
    let line: string | undefined;
    if (message.type === 'pong') {
      if (pong?.asked) line = formatPong(pong.roundTripMs);
    } else {
      const mine =
        message.type === 'chat' &&
        (message.history ? this.#own.wasMine(message.from) : this.#own.isMine(message.from, message.message));
      line = formatServerMessage(message, { mine, timeZone: this.#options.timeZone });
    }
    // With --json the raw line above is the output; only the answer to /ping is worth a notice.
    if (line !== undefined && (!this.#options.json || message.type === 'pong')) this.#show(line);
    if (this.#state === 'leaving' && this.#drained()) this.#close();
  }

  /** A frame that is none of the protocol's messages: shown raw (text), or noted (binary). */
  #unknown(data: unknown): void {
    if (this.#state === 'done') return;
    if (typeof data !== 'string') return this.#diagnose('ignored a binary message from the server');
    if (this.#options.json) this.#write(`${data}\n`);
    else this.#show(formatUnknown(data));
  }

  /** Everything this client sent that the server answers (chats, pings) has been answered. */
  #drained(): boolean {
    return this.#own.pending === 0 && this.#chat.unanswered === 0;
  }

  /**
   * Stops reading input and leaves: after the client's own chats have come back and its pings have
   * been answered (bounded by leaveGraceMs) when `drain`, at once otherwise. While reconnecting there
   * is nothing to wait for: the session ends.
   */
  #leave(drain: boolean): void {
    if (this.#state === 'reconnecting') return this.#finish(0);
    if (this.#state !== 'open') return;
    this.#state = 'leaving';
    this.#rl?.close();
    if (!drain || this.#drained()) this.#close();
    else this.#timers.push(setTimeout(() => this.#close(), this.#options.leaveGraceMs));
  }

  /** Sends the close frame (1000); the session ends on the server's reply, or after closeTimeoutMs. */
  #close(): void {
    if (this.#state !== 'leaving') return;
    this.#state = 'closing';
    this.#chat.stop(1000, undefined, () => this.#finish(0));
    this.#timers.push(setTimeout(() => this.#finish(0), this.#options.closeTimeoutMs));
  }

  /** SIGINT/SIGTERM (or Ctrl-C at the prompt): leave at once with a close frame; a second one ends it now. */
  #interrupt(signal: Signal): void {
    if (this.#state === 'open') this.#leave(false);
    else if (this.#state === 'leaving') this.#close();
    else if (this.#state === 'reconnecting')
      this.#finish(0); // no connection to close
    else if (this.#state !== 'done') {
      // Still connecting (nothing to close cleanly), or already closing and asked again.
      if (this.#state === 'connecting')
        this.#diagnose(`interrupted before the connection to ${this.#options.url} opened`);
      this.#finish(128 + SIGNAL_NUMBERS[signal]);
    }
  }

  /** An open connection was lost: reconnect (the session's backoff follows), or end with its code. */
  #dropped(code: number, reason: string): void {
    this.#diagnose(
      code === 1006
        ? `the connection dropped: ${describeClose(code)}`
        : `the server closed the connection: ${describeClose(code, reason)}`,
    );
    if (this.#options.reconnect && this.#state === 'open' && worthReconnecting(code)) {
      this.#state = 'reconnecting';
      return;
    }
    this.#finish(code === 1000 || code === 1001 ? 0 : 1);
  }

  #finish(code: number): void {
    if (this.#state === 'done') return;
    this.#state = 'done';
    for (const timer of this.#timers) clearTimeout(timer);
    this.#chat.stop();
    for (const signal of SIGNALS) this.#io.signals.off(signal, this.#onSignal);
    this.#rl?.close();
    if (this.#ws && this.#ws.readyState !== WebSocket.CLOSED) this.#ws.terminate();
    this.#resolve(code);
  }

  /** A line for the person about the session itself: above the prompt on a terminal, else on stderr. */
  #notice(line: string): void {
    if (this.#prompting) this.#show(line);
    else this.#io.errors.write(`${line}\n`);
  }

  /** A line for the person (stdout; stderr with --json), drawn above the prompt when there is one. */
  #show(line: string): void {
    if (this.#options.json) {
      this.#io.errors.write(`${line}\n`);
      return;
    }
    this.#abovePrompt(() => this.#write(`${line}\n`));
  }

  /** A diagnostic on stderr, prefixed with the command's name. */
  #diagnose(text: string): void {
    this.#abovePrompt(() => this.#io.errors.write(`roster chat: ${text}\n`));
  }

  /** Writes with `write`, above the prompt when one is shown: the line is cleared, and the prompt drawn again. */
  #abovePrompt(write: () => void): void {
    const prompt = this.#prompting && (this.#state === 'open' || this.#state === 'reconnecting') ? this.#rl : undefined;
    if (prompt && !this.#outputBroken) {
      clearLine(this.#io.output, 0);
      cursorTo(this.#io.output, 0);
    }
    write();
    prompt?.prompt(true);
  }

  #write(text: string): void {
    if (!this.#outputBroken) this.#io.output.write(text);
  }
}
