/**
 * `roster users export|import`: users out of and into a running Roster, over its REST API (so every
 * rule of the API applies: validation, email uniqueness, MAX_USERS, AUTH). Both stream: export writes
 * each page as it arrives, import posts each record as it is read, so neither holds the whole file.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  type CallOptions,
  PageWalk,
  type ErrorCode,
  type ErrorEnvelope,
  type ListUsersQuery,
  type UserFieldSpec,
  type UserInput,
  USER_FIELDS,
} from '../protocol/client/index.js';
import { API_OPTIONS, API_OPTIONS_USAGE, apiFrom, reasonOf, type Api } from './api-options.js';
import { print, STANDARD_IO, usageError } from './io.js';
import { usersWatch, WATCH_USAGE } from './users-watch.js';
import { csvCell, records, type Format, type UserRecord } from './user-records.js';

const TABLE: readonly UserFieldSpec[] = USER_FIELDS;
/** A user's fields, in the document's order (the generated field table): the columns of a CSV export. */
const FIELDS = TABLE.map((field) => field.name);

/**
 * The fields import sends, and whether the API needs them (a required one is sent even empty, for the
 * API to name; an optional one only when given), from the generated field table.
 */
const WRITTEN: Readonly<Record<string, 'required' | 'optional'>> = Object.fromEntries(
  TABLE.filter((field) => field.writable).map((field) => [field.name, field.required ? 'required' : 'optional']),
);

/** The code of an error reply's envelope (the catalog's), if it has one. */
const codeOf = (json: unknown): ErrorCode | undefined => (json as Partial<ErrorEnvelope> | undefined)?.error?.code;

/** The codes of a credential refused: missing or wrong (UNAUTHORIZED), or not allowed to write (FORBIDDEN). */
const REFUSED_CREDENTIAL: ReadonlySet<ErrorCode | undefined> = new Set(['UNAUTHORIZED', 'FORBIDDEN']);

export const USERS_USAGE = `Usage: roster users export [--format json|csv] [options] > users.json
       roster users import FILE [--format json|csv] [options]
       roster users watch [--since CURSOR] [--role ROLE] [--id ID] [--json] [options]

export  writes every user (oldest first) to stdout: a JSON array (the default) or CSV with a header
        row ${FIELDS.join(',')}. A CSV cell that begins with = + - @, a tab or
        a CR (after any apostrophes) gets an apostrophe in front, so spreadsheets do not run it as
        a formula; import takes that apostrophe off again.
import  creates a user for each record of FILE ('-' for stdin): a JSON array of objects, JSON lines,
        or CSV with a header row (the format is told from --format, else the file name, else its
        first character). ${Object.keys(WRITTEN).join(', ')} are sent; ids and timestamps are the server's own.
        Each record is sent with an idempotency key derived from its content, so a re-run (after a
        failure, or of a corrected file) creates nobody twice: a record created before, or whose
        email a user has, counts as already there. Each refused record is reported on stderr with
        the API's reason; the rest go on. 503 and 429 replies are retried as Retry-After says.
${WATCH_USAGE}

Options:
${API_OPTIONS_USAGE}
  -h, --help          show this help
Prefer the environment variables to the options for secrets: a command line is visible to others.

Exit status: 0 when everything was exported, or imported or already there, or a watch was stopped
(Ctrl-C); 1 when a record was refused or the API failed; 2 for a usage error.`;

interface Parsed {
  action: 'export' | 'import';
  file?: string;
  format?: Format;
  api: Api;
}

function parseUsersArgs(args: string[], env: NodeJS.ProcessEnv): Parsed | { help: true } | { error: string } {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        format: { type: 'string' },
        ...API_OPTIONS,
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    return { error: (error as Error).message };
  }
  const { values, positionals } = parsed;
  if (values.help) return { help: true };
  const [action, ...rest] = positionals;
  if (action !== 'export' && action !== 'import')
    return {
      error: `expected export, import or watch (got ${action === undefined ? 'nothing' : JSON.stringify(action)})`,
    };
  if (action === 'export' && rest.length > 0)
    return { error: `export takes no file (got ${rest.join(' ')}); redirect its output instead` };
  if (action === 'import' && rest.length !== 1) return { error: 'import takes one FILE (or - for stdin)' };
  if (values.format !== undefined && values.format !== 'json' && values.format !== 'csv')
    return { error: `--format must be json or csv (got ${values.format})` };

  const api = apiFrom(values, env);
  if ('error' in api) return api;
  return { action, file: rest[0], format: values.format as Format | undefined, api };
}

/** `roster users …` as a command. */
export async function usersCommand(args: string[]): Promise<number> {
  if (args[0] === 'watch') return usersWatch(args.slice(1));
  const parsed = parseUsersArgs(args, process.env);
  if ('help' in parsed) return print(STANDARD_IO, USERS_USAGE);
  if ('error' in parsed) return usageError(STANDARD_IO, 'users', parsed.error);
  const progress = new Progress(process.stderr);
  try {
    if (parsed.action === 'export')
      return await exportUsers(parsed.api, parsed.format ?? 'json', process.stdout, progress);
    const input = parsed.file === '-' ? process.stdin : createReadStream(parsed.file!);
    const format =
      parsed.format ?? (/\.csv$/i.test(parsed.file!) ? 'csv' : /\.jsonl?$/i.test(parsed.file!) ? 'json' : undefined);
    return await importUsers(parsed.api, input, format, progress);
  } catch (error) {
    progress.done();
    process.stderr.write(`roster users ${parsed.action}: ${(error as Error).message}\n`);
    return 1;
  }
}

/** A progress line on a terminal (stderr), redrawn at most ten times a second; nothing elsewhere. */
class Progress {
  #last = 0;
  #shown = false;
  constructor(private readonly stream: NodeJS.WriteStream) {}

  update(text: string): void {
    if (!this.stream.isTTY || Date.now() - this.#last < 100) return;
    this.#last = Date.now();
    this.#shown = true;
    this.stream.write(`\r\x1b[K${text}`);
  }

  /** Clears the line, before a report line or at the end. */
  done(): void {
    if (this.#shown) this.stream.write('\r\x1b[K');
    this.#shown = false;
  }
}

/** What a call of the typed client resolves to (openapi-fetch). */
interface Reply<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** How long one attempt may take before it counts as a failure to reach the API. */
const ATTEMPT_MS = 30_000;

/**
 * One operation of the typed client (which retries what Roster answers 503 or 429, when the request is
 * safe to repeat: src/protocol/client/retry.ts); a credential refused, an unreachable API and a reply
 * that is not JSON become errors that say so.
 */
async function call<T>(
  api: Api,
  send: (init: CallOptions) => Promise<Reply<T>>,
): Promise<Reply<T> & { status: number; replayed: boolean; attempts: number }> {
  let attempts = 0;
  let sent: Request | undefined;
  let answered: Response | undefined;
  let reply: Reply<T> & { replayed?: boolean };
  try {
    reply = await send({
      fetch: async (request) => {
        attempts++;
        sent = request;
        answered = undefined; // of this attempt: an earlier one may have been answered 503
        return (answered = await fetch(request, { signal: AbortSignal.timeout(ATTEMPT_MS) }));
      },
    });
  } catch (error) {
    if (answered === undefined) {
      const reason = (error as { cause?: { code?: string; message?: string; errors?: { code?: string }[] } }).cause;
      const cause = reason?.code ?? reason?.errors?.[0]?.code ?? reason?.message ?? (error as Error).message;
      throw new Error(`cannot reach the API at ${api.base}: ${cause}`);
    }
    // A success whose body openapi-fetch could not read as JSON.
    throw notJson(sent, answered);
  }
  const { status } = reply.response;
  // openapi-fetch hands an error body that is not JSON over as its text.
  if (typeof reply.error === 'string' && reply.error !== '') throw notJson(sent, reply.response);
  if (REFUSED_CREDENTIAL.has(codeOf(reply.error)))
    throw new Error(`${status} ${reasonOf(reply.error)} (see --api-key, --token, --basic)`);
  return { ...reply, status, replayed: reply.replayed === true, attempts };
}

function notJson(request: Request | undefined, response: Response): Error {
  return new Error(
    `${request?.method ?? 'GET'} ${request?.url ?? response.url} answered ${response.status} with something that is not JSON: is --url the API (…/api/v1)?`,
  );
}

async function write(out: NodeJS.WritableStream, text: string): Promise<void> {
  if (!out.write(text)) await new Promise<void>((resolve) => out.once('drain', resolve));
}

async function exportUsers(api: Api, format: Format, out: NodeJS.WritableStream, progress: Progress): Promise<number> {
  let written = 0;
  // By cursor (`after`, from each page's Link: rel="next"): each page costs the API the same however
  // deep, and users created or deleted meanwhile do not shift the pages under the walk.
  let query: ListUsersQuery | undefined = { sort: 'created_at', order: 'asc', limit: 100 };
  const walk = new PageWalk(query);
  for (let first = true; query; first = false) {
    const asked = query; // for the closure below, where `query` is not narrowed
    const { status, data, error, response } = await call(api, (init) => api.client.listUsers(asked, init));
    if (error !== undefined || !data) throw new Error(`listing users failed: ${status} ${reasonOf(error)}`);
    // Nothing is written before the API has answered once: a failure leaves stdout empty.
    if (first) await write(out, format === 'csv' ? `${FIELDS.join(',')}\r\n` : '[');
    const { users, pagination } = data.data;
    for (const user of users) {
      const line =
        format === 'csv'
          ? `${FIELDS.map((field) => csvCell((user as Record<string, unknown>)[field])).join(',')}\r\n`
          : `${written === 0 ? '\n' : ',\n'}${JSON.stringify(user)}`;
      await write(out, line);
      written++;
    }
    progress.update(`exported ${written} of ${pagination.total} users`);
    query = walk.next(response);
  }
  if (format === 'json') await write(out, written === 0 ? ']\n' : '\n]\n');
  progress.done();
  return 0;
}

/**
 * A record's idempotency key: the SHA-256 of the body sent, as JSON in WRITTEN's order. The same record
 * gets the same key in any file at any position, so a re-run (of the same file, or of a corrected one:
 * records fixed, added, removed or moved) creates nothing twice while Roster keeps its keys (24 h; after
 * that the email's uniqueness still answers 409). A key derived from the body never meets another body,
 * so Roster's "same key, different body" (422) cannot arise; a corrected record is a new create.
 */
function importKey(body: UserRecord): string {
  const canonical = JSON.stringify(
    Object.keys(WRITTEN)
      .filter((field) => field in body)
      .map((field) => [field, body[field]]),
  );
  return `roster-import-${createHash('sha256').update(canonical).digest('hex')}`;
}

async function importUsers(
  api: Api,
  input: NodeJS.ReadableStream,
  format: Format | undefined,
  progress: Progress,
): Promise<number> {
  let imported = 0;
  let present = 0;
  let refused = 0;
  let number = 0;
  for await (const record of records(input, format)) {
    number++;
    const label = `record ${number}${typeof record.email === 'string' ? ` (${record.email})` : ''}`;
    if (record instanceof Error) {
      progress.done();
      process.stderr.write(`roster users import: ${label} refused: ${record.message}\n`);
      refused++;
      continue;
    }
    const body: UserRecord = {};
    for (const [field, need] of Object.entries(WRITTEN)) {
      if (need === 'required' || (record[field] !== undefined && record[field] !== '')) body[field] = record[field];
    }
    // Sent as read: the API's validation, not this command's, says what a record may hold.
    const { status, data, error, replayed, attempts } = await call(api, (init) =>
      api.client.createUser(body as UserInput, { ...init, idempotencyKey: importKey(body) }),
    );
    // Already there: created by an earlier run (Roster replays its 201 to this run's first attempt),
    // or a user has the email. A replay to a retry is this run's create, whose first answer was lost.
    const created = data !== undefined;
    if ((created && replayed && attempts === 1) || codeOf(error) === 'EMAIL_EXISTS') present++;
    else if (created) imported++;
    else {
      refused++;
      progress.done();
      process.stderr.write(`roster users import: ${label} refused: ${status} ${reasonOf(error)}\n`);
    }
    progress.update(`imported ${imported}, already there ${present}, refused ${refused}`);
  }
  progress.done();
  process.stderr.write(
    `roster users import: ${imported} imported, ${present} already there, ${refused} refused (of ${number} records)\n`,
  );
  return refused === 0 ? 0 : 1;
}
