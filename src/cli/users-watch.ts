/**
 * `roster users watch`: the changes to users as they happen, one line each (or one JSON object per line
 * with --json), from the feed of a running Roster through the typed client's `watchUsers` (which
 * resumes a dropped connection from its last cursor). Runs until Ctrl-C or SIGTERM, then exits 0.
 */
import { parseArgs } from 'node:util';
import { WatchError, type Change, type WatchItem, type WatchState } from '../protocol/client/index.js';
import { API_OPTIONS, API_OPTIONS_USAGE, apiFrom, reasonOf, type Api } from './api-options.js';
import { printable } from './chat-view.js';
import { print, STANDARD_IO, usageError, type Io } from './io.js';

/** The paragraph of `roster users --help` about watch. */
export const WATCH_USAGE = `watch   prints each change to users as it happens: its time, created, updated or deleted, the
        user's id, email and name, one line each; with --json each change as one JSON object per
        line (the feed's: seq, cursor, type, id, user, etag, at). It starts from now, or after
        --since CURSOR (a change's cursor). --role ROLE keeps the changes of users whose role was or
        became ROLE, --id ID those of one user. A dropped connection is resumed where it stopped
        (nothing missed, nothing twice); should the service no longer hold the changes since the
        cursor, a reset line says so ({"type":"reset","next":CURSOR} with --json) and the watch goes
        on from the newest. Ctrl-C stops it (exit status 0) and names the cursor to resume from.`;

const USAGE = `Usage: roster users watch [--since CURSOR] [--role ROLE] [--id ID] [--json] [options]

${WATCH_USAGE.replace(/^watch {3}p/, 'P').replace(/^ {8}/gm, '')}

Options:
  --since CURSOR      start after this change (default: from now)
  --role ROLE         only the changes of users whose role, before or after, is ROLE
  --id ID             only the changes of this user
  --json              one JSON object per line
${API_OPTIONS_USAGE}
  -h, --help          show this help`;

interface Parsed {
  since?: string;
  role?: string;
  id?: string;
  json: boolean;
  api: Api;
}

function parseWatchArgs(args: string[], env: NodeJS.ProcessEnv): Parsed | { help: true } | { error: string } {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        since: { type: 'string' },
        role: { type: 'string' },
        id: { type: 'string' },
        json: { type: 'boolean' },
        ...API_OPTIONS,
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    return { error: (error as Error).message };
  }
  const { values } = parsed;
  if (values.help) return { help: true };
  for (const name of ['since', 'role', 'id'] as const)
    if (values[name] === '') return { error: `--${name} needs a value` };
  const api = apiFrom(values, env);
  if ('error' in api) return api;
  return { since: values.since, role: values.role, id: values.id, json: values.json === true, api };
}

/** A change as a line for people: time, type, id, then email and name when the user is there. */
export function changeLine(change: Change): string {
  const user = change.user as { email?: unknown; name?: unknown } | null;
  const who = user ? ` ${printable(String(user.email ?? ''))} ${printable(String(user.name ?? ''))}` : '';
  return `${change.at} ${change.type.padEnd(7)} ${change.id}${who}`;
}

function lineOf(item: WatchItem, json: boolean): string {
  if (item.kind === 'change') return json ? JSON.stringify(item.change) : changeLine(item.change);
  return json
    ? JSON.stringify({ type: 'reset', next: item.cursor })
    : `reset: the service no longer holds the changes since the last cursor; some may have been missed. Following from ${item.cursor}`;
}

async function write(out: NodeJS.WritableStream, text: string): Promise<void> {
  if (!out.write(text)) await new Promise<void>((resolve) => out.once('drain', resolve));
}

/** `roster users watch …` as a command. */
export async function usersWatch(args: string[], io: Io = STANDARD_IO): Promise<number> {
  const parsed = parseWatchArgs(args, process.env);
  if ('help' in parsed) return print(io, USAGE);
  if ('error' in parsed) return usageError(io, 'users watch', parsed.error);
  const stop = new AbortController();
  const interrupted = () => stop.abort();
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  let cursor = parsed.since;
  let dropped = false;
  const onState = (state: WatchState) => {
    if (state.state === 'open') {
      if (dropped) io.errors.write('roster users watch: reconnected\n');
      dropped = false;
      return;
    }
    dropped = true;
    io.errors.write(`roster users watch: ${state.reason}; reconnecting in ${(state.delayMs / 1000).toFixed(1)} s\n`);
  };
  try {
    const { since, role, id } = parsed;
    for await (const item of parsed.api.client.watchUsers({ since, role, id, signal: stop.signal, onState })) {
      cursor = item.kind === 'change' ? item.change.cursor : item.cursor;
      await write(io.output, `${lineOf(item, parsed.json)}\n`);
    }
    if (cursor !== undefined) io.errors.write(`roster users watch: stopped; resume with --since ${cursor}\n`);
    return 0;
  } catch (error) {
    if (error instanceof WatchError) {
      const credential = error.status === 401 || error.status === 403 ? ' (see --api-key, --token, --basic)' : '';
      io.errors.write(`roster users watch: ${error.status} ${reasonOf(error.envelope)}${credential}\n`);
    } else io.errors.write(`roster users watch: ${(error as Error).message}\n`);
    return 1;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
}
