/**
 * `roster chat`: a terminal client of the chat room. On a terminal it is a prompt; with piped input it
 * sends each line as a chat and leaves at end of input; `--json` prints what the server sends, as sent,
 * for programs. The session (`runChat`) takes its streams and signal source as arguments, so tests can
 * drive it in-process as well as through a real process.
 */
import type { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { clearLine, createInterface, cursorTo, type Interface } from 'node:readline';
import { parseArgs } from 'node:util';
import { WebSocket, type RawData } from 'ws';
import { encodeClientMessage } from '../chat/codec.js';
import { formatPong, formatServerMessage, formatUnknown, OwnChats, parseServerMessage } from './chat-view.js';

export const CHAT_USAGE = `Usage: roster chat [URL] [--json]

Joins the chat room at URL: by default $WS_URL, else ws://127.0.0.1:$WS_PORT, else
ws://127.0.0.1:8765 (a URL without a scheme gets ws://).

On a terminal, type a message and press Enter to send it. Commands:
  /ping    ask the server for a pong and show the round trip
  /help    show these commands
  /quit    leave (so do Ctrl-C and, on an empty line, Ctrl-D)
With piped input, every line is sent as a chat (blank lines are skipped; /quit and /ping still
work); at the end of the input the client waits up to 2 s for its own messages to come back (and
its pings to be answered), then leaves. An application ping keeps the connection alive every 30 s.

Options:
  --json      print every message from the server exactly as received, one JSON object a line,
              and nothing else on stdout (no prompt; notices go to stderr)
  -h, --help  show this help

Exit status: 0 after leaving, or when the server closes the connection with 1000 or 1001;
1 when the connection cannot be made or the server closes it otherwise; 2 for a usage error.`;

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

/** The chat URL when none is given: a client setting, so read here and not in the server's config. */
export function defaultChatUrl(env: NodeJS.ProcessEnv): string {
  const url = env.WS_URL?.trim();
  if (url) return url;
  return `ws://127.0.0.1:${env.WS_PORT?.trim() || '8765'}`;
}

export type ChatArgs = { kind: 'help' } | { kind: 'run'; options: ChatOptions } | { kind: 'error'; message: string };

export function parseChatArgs(args: string[], env: NodeJS.ProcessEnv): ChatArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
    });
  } catch (error) {
    return { kind: 'error', message: (error as Error).message };
  }
  if (parsed.values.help) return { kind: 'help' };
  if (parsed.positionals.length > 1) return { kind: 'error', message: `one URL at most (got ${parsed.positionals.join(' ')})` };
  let url = parsed.positionals[0] ?? defaultChatUrl(env);
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) url = `ws://${url}`;
  return { kind: 'run', options: { url, json: parsed.values.json === true } };
}

/** `roster chat …` as a command: parses the arguments, runs on the process's streams, gives the exit status. */
export async function chatCommand(args: string[]): Promise<number> {
  const parsed = parseChatArgs(args, process.env);
  if (parsed.kind === 'help') {
    process.stdout.write(`${CHAT_USAGE}\n`);
    return 0;
  }
  if (parsed.kind === 'error') {
    process.stderr.write(`roster chat: ${parsed.message}\nRun 'roster chat --help' for usage.\n`);
    return 2;
  }
  return runChat(parsed.options, {
    input: process.stdin,
    output: process.stdout,
    errors: process.stderr,
    // A prompt only makes sense when a person both types and reads at a terminal.
    interactive: process.stdin.isTTY === true && process.stdout.isTTY === true,
    signals: process,
  });
}

/** One chat session, from connecting to the exit status. */
export function runChat(options: ChatOptions, io: ChatIo): Promise<number> {
  return new Promise((resolve) => new ChatSession(options, io, resolve).start());
}

const SIGNAL_NUMBERS = { SIGINT: 2, SIGTERM: 15 } as const;
type Signal = keyof typeof SIGNAL_NUMBERS;

/**
 * connecting -> open -> leaving (waiting for own echoes) -> closing (close 1000 sent) -> done.
 * The server closing, a failure or a second signal go straight to done.
 */
type State = 'connecting' | 'open' | 'leaving' | 'closing' | 'done';

class ChatSession {
  readonly #options: Required<Omit<ChatOptions, 'timeZone'>> & { timeZone?: string };
  readonly #io: ChatIo;
  readonly #resolve: (code: number) => void;
  /** Prompt and line editing: a person at a terminal, and not --json. */
  readonly #prompting: boolean;
  readonly #own = new OwnChats();
  /** Application pings awaiting their pong, oldest first (the server answers in order). */
  readonly #pings: { sentAt: number; shown: boolean }[] = [];
  #state: State = 'connecting';
  #ws: WebSocket | undefined;
  #rl: Interface | undefined;
  #outputBroken = false;
  #timers: NodeJS.Timeout[] = [];
  readonly #onSignal = (signal: Signal): void => this.#interrupt(signal);

  constructor(options: ChatOptions, io: ChatIo, resolve: (code: number) => void) {
    this.#options = { pingIntervalMs: 30_000, leaveGraceMs: 2_000, closeTimeoutMs: 2_000, ...options };
    this.#io = io;
    this.#resolve = resolve;
    this.#prompting = io.interactive && !options.json;
  }

  start(): void {
    for (const signal of Object.keys(SIGNAL_NUMBERS) as Signal[]) this.#io.signals.on(signal, this.#onSignal);
    // e.g. `roster chat --json | head -1`: once nobody reads, leave.
    this.#io.output.on('error', () => {
      this.#outputBroken = true;
      this.#leave(false);
    });

    let ws: WebSocket;
    try {
      ws = new WebSocket(this.#options.url, { handshakeTimeout: 10_000 });
    } catch (error) {
      this.#diagnose(`invalid URL ${JSON.stringify(this.#options.url)}: ${(error as Error).message}`);
      this.#finish(2);
      return;
    }
    this.#ws = ws;
    ws.on('open', () => this.#opened());
    ws.on('message', (data, isBinary) => this.#received(data, isBinary));
    ws.on('error', (error) => {
      if (this.#state === 'connecting') {
        this.#diagnose(`could not connect to ${this.#options.url}: ${error.message}`);
        this.#finish(1);
      } else if (this.#state !== 'done') {
        this.#diagnose(`connection error: ${error.message}`); // 'close' follows
      }
    });
    ws.on('close', (code, reason) => this.#closed(code, reason.toString()));
  }

  #opened(): void {
    if (this.#state !== 'connecting') return;
    this.#state = 'open';
    const keepAlive = setInterval(() => this.#ping(false), this.#options.pingIntervalMs);
    keepAlive.unref();
    this.#timers.push(keepAlive);

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
    if (this.#state !== 'open') return;
    const command = line.trim();
    if (command === '/quit') return this.#leave(true);
    if (this.#prompting) this.#rl?.prompt(); // a fresh prompt; what the line brings is drawn above it
    if (command === '/ping') this.#ping(true);
    else if (command === '/help') this.#show(COMMANDS_HELP);
    else if (line !== '') {
      this.#own.sent(line);
      this.#ws?.send(encodeClientMessage({ type: 'chat', message: line }));
    }
  }

  #ping(shown: boolean): void {
    if (this.#ws?.readyState !== WebSocket.OPEN) return;
    this.#pings.push({ sentAt: performance.now(), shown });
    this.#ws.send(encodeClientMessage({ type: 'ping' }));
  }

  #received(data: RawData, isBinary: boolean): void {
    if (this.#state === 'done') return;
    if (isBinary) {
      this.#diagnose('ignored a binary message from the server');
      return;
    }
    const text = rawText(data);
    if (this.#options.json) this.#write(`${text}\n`);

    const message = parseServerMessage(text);
    let line: string | undefined;
    if (message === undefined) line = formatUnknown(text);
    else if (message.type === 'pong') {
      const ping = this.#pings.shift();
      if (ping?.shown) line = formatPong(performance.now() - ping.sentAt);
    } else {
      const mine = message.type === 'chat' && this.#own.isMine(message.from, message.message);
      line = formatServerMessage(message, { mine, timeZone: this.#options.timeZone });
    }
    // With --json the raw line above is the output; only the answer to /ping is worth a notice.
    if (line !== undefined && (!this.#options.json || message?.type === 'pong')) this.#show(line);

    if (this.#state === 'leaving' && this.#drained()) this.#close();
  }

  /** Everything this client sent that the server answers (chats, pings) has been answered. */
  #drained(): boolean {
    return this.#own.pending === 0 && this.#pings.length === 0;
  }

  /**
   * Stops reading input and leaves: after the client's own chats have come back and its pings have
   * been answered (bounded by leaveGraceMs) when `drain`, at once otherwise.
   */
  #leave(drain: boolean): void {
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
    this.#ws?.close(1000);
    this.#timers.push(setTimeout(() => this.#finish(0), this.#options.closeTimeoutMs));
  }

  /** SIGINT/SIGTERM (or Ctrl-C at the prompt): leave at once with a close frame; a second one ends it now. */
  #interrupt(signal: Signal): void {
    if (this.#state === 'open') this.#leave(false);
    else if (this.#state === 'leaving') this.#close();
    else if (this.#state !== 'done') {
      // Still connecting (nothing to close cleanly), or already closing and asked again.
      if (this.#state === 'connecting') this.#diagnose(`interrupted before the connection to ${this.#options.url} opened`);
      this.#finish(128 + SIGNAL_NUMBERS[signal]);
    }
  }

  #closed(code: number, reason: string): void {
    if (this.#state === 'done' || this.#state === 'connecting') return; // a failed connection is reported by 'error'
    if (this.#state === 'closing') return this.#finish(0);
    this.#diagnose(`the server closed the connection: ${code}${reason ? ` ${reason}` : ''}`);
    this.#finish(code === 1000 || code === 1001 ? 0 : 1);
  }

  #finish(code: number): void {
    if (this.#state === 'done') return;
    this.#state = 'done';
    for (const timer of this.#timers) clearTimeout(timer);
    for (const signal of Object.keys(SIGNAL_NUMBERS) as Signal[]) this.#io.signals.off(signal, this.#onSignal);
    this.#rl?.close();
    if (this.#ws && this.#ws.readyState !== WebSocket.CLOSED) this.#ws.terminate();
    this.#resolve(code);
  }

  /** A line for the person (stdout; stderr with --json), drawn above the prompt when there is one. */
  #show(line: string): void {
    if (this.#options.json) {
      this.#io.errors.write(`${line}\n`);
      return;
    }
    const prompt = this.#prompting && this.#state === 'open' ? this.#rl : undefined;
    if (prompt) this.#clearPromptLine();
    this.#write(`${line}\n`);
    prompt?.prompt(true);
  }

  /** A diagnostic on stderr, prefixed with the command's name. */
  #diagnose(text: string): void {
    if (this.#prompting && this.#state === 'open') this.#clearPromptLine();
    this.#io.errors.write(`roster chat: ${text}\n`);
  }

  #clearPromptLine(): void {
    if (this.#outputBroken) return;
    clearLine(this.#io.output, 0);
    cursorTo(this.#io.output, 0);
  }

  #write(text: string): void {
    if (!this.#outputBroken) this.#io.output.write(text);
  }
}

/** A text frame's payload as a string (`ws` hands over a Buffer, or its fragments). */
function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
