/**
 * `roster chat`: a terminal client of the chat room. On a terminal it is a prompt; with piped input it
 * sends each line as a chat and leaves at end of input; `--json` prints what the server sends, as sent,
 * for programs. This file is the command (its usage and arguments); the session is chat-session.ts.
 */
import { parseArgs } from 'node:util';
import { clientChatUrl } from '../config/client-settings.js';
import { runChat, type ChatOptions } from './chat-session.js';
import { print, STANDARD_IO, usageError } from './io.js';

export const CHAT_USAGE = `Usage: roster chat [URL] [--json] [--no-reconnect] [--history N]

Joins the chat room at URL: by default $WS_URL, else ws://127.0.0.1:$WS_PORT, else
ws://127.0.0.1:8765 (a URL without a scheme gets ws://).

On a terminal, type a message and press Enter to send it. Commands:
  /ping    ask the server for a pong and show the round trip
  /help    show these commands
  /quit    leave (so do Ctrl-C and, on an empty line, Ctrl-D)
Other /words are not sent (start a line with // to send one beginning with /); neither are blank
or white-space-only lines.
With piped input, every line is sent as a chat (blank lines are skipped; /quit and /ping still
work); at the end of the input the client waits up to 2 s for its own messages to come back (and
its pings to be answered), then leaves. An application ping keeps the connection alive every 30 s;
one still unanswered 30 s later counts as a lost connection (1006).

Options:
  --json          print every message from the server exactly as received, one JSON object a
                  line, and nothing else on stdout (no prompt; notices go to stderr)
  --no-reconnect  end the session when the connection is lost, instead of connecting again
  --history N     show the room's last N messages on joining (marked ~), and after a reconnection
                  exactly what was missed meanwhile, in order, nothing twice
  -h, --help      show this help

When an open connection is lost (the server restarts, 1001 or 1012; drops, 1006; is overloaded,
1013), the client says why and connects again, waiting 0.5 s, then twice as long each time up to
10 s, until it is back or you leave. Each close code is explained in words.

Exit status: 0 after leaving, or (with --no-reconnect) when the server closes the connection with
1000 or 1001; 1 when the first connection cannot be made or the server closes it for a reason
reconnecting would not cure (1008, 1009, …); 2 for a usage error.`;

type ChatArgs = { kind: 'help' } | { kind: 'run'; options: ChatOptions } | { kind: 'error'; message: string };

function parseChatArgs(args: string[], env: NodeJS.ProcessEnv): ChatArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        json: { type: 'boolean' },
        'no-reconnect': { type: 'boolean' },
        history: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    });
  } catch (error) {
    return { kind: 'error', message: (error as Error).message };
  }
  if (parsed.values.help) return { kind: 'help' };
  if (parsed.positionals.length > 1)
    return { kind: 'error', message: `one URL at most (got ${parsed.positionals.join(' ')})` };
  let url;
  try {
    url = parsed.positionals[0] ?? clientChatUrl(env);
  } catch (error) {
    return { kind: 'error', message: (error as Error).message }; // a ConfigError naming WS_URL or WS_PORT
  }
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) url = `ws://${url}`;
  const history = parsed.values.history;
  if (history !== undefined && !/^\d{1,6}$/.test(history))
    return { kind: 'error', message: `--history takes a whole number (got ${history})` };
  return {
    kind: 'run',
    options: {
      url,
      json: parsed.values.json === true,
      reconnect: parsed.values['no-reconnect'] !== true,
      ...(history === undefined ? {} : { history: Number(history) }),
    },
  };
}

/** `roster chat …` as a command: parses the arguments, runs on the process's streams, gives the exit status. */
export async function chatCommand(args: string[]): Promise<number> {
  const parsed = parseChatArgs(args, process.env);
  if (parsed.kind === 'help') return print(STANDARD_IO, CHAT_USAGE);
  if (parsed.kind === 'error') return usageError(STANDARD_IO, 'chat', parsed.message);
  return runChat(parsed.options, {
    input: process.stdin,
    output: process.stdout,
    errors: process.stderr,
    // A prompt only makes sense when a person both types and reads at a terminal.
    interactive: process.stdin.isTTY === true && process.stdout.isTTY === true,
    signals: process,
  });
}
