/**
 * The `roster` command as a child process, with its output recorded and awaitable; a Roster for it to
 * talk to; a recorder for in-process streams; a bare WebSocket server that shows what a client did on
 * the wire. Every child is killed when its test ends, whatever the outcome.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';
import { startRoster, type Running } from './roster.js';
import type { Exit } from './roster-process.js';
import { within } from './wait.js';

export const ROSTER = fileURLToPath(new URL('../../src/cli/roster.js', import.meta.url));

/** Generous bounds: each one only matters when something is broken. */
export const EVENT_MS = 5_000;
const EXIT_MS = 8_000;
export const TEST_MS = 30_000;

/** A Roster for one test, for the command to talk to; stopped when the test ends (a short shutdown bound keeps teardown quick). */
export async function rosterFor(t: TestContext, env: Record<string, string> = {}): Promise<Running> {
  const running = await startRoster({ SHUTDOWN_TIMEOUT_MS: '2000', ...env });
  t.after(() => running.stop());
  return running;
}

/** Text written to a stream, with a wait for what it will contain. */
export class Transcript {
  text = '';
  #waiters = new Set<() => void>();

  constructor(stream?: NodeJS.ReadableStream) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => this.append(chunk));
  }

  append(chunk: string): void {
    this.text += chunk;
    for (const wake of this.#waiters) wake();
    this.#waiters.clear();
  }

  /** Complete lines so far. */
  get lines(): string[] {
    const lines = this.text.split('\n');
    lines.pop(); // the unfinished line, or '' after the last newline
    return lines;
  }

  /** The text with terminal escape sequences (cursor moves, line clearing) removed. */
  get plain(): string {
    // eslint-disable-next-line no-control-regex
    return this.text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
  }

  /** Resolves with the first value `find` returns other than undefined; `stop` ends the wait early. */
  async until<T>(find: () => T | undefined, what: string, stop?: () => string | undefined, ms = EVENT_MS): Promise<T> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = find();
      if (found !== undefined) return found;
      const stopped = stop?.();
      if (stopped !== undefined) throw new Error(`${stopped} before ${what}; got ${JSON.stringify(this.text)}`);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.text)}`);
      await within(new Promise<void>((resolve) => this.#waiters.add(resolve)), remaining, what).catch(() => {});
    }
  }

  /** Wakes the waiters without new text (so they look at `stop` again). */
  poke(): void {
    this.append('');
  }
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** `node dist/src/cli/roster.js …args` with exactly the given environment (plus PATH). */
export class Cli {
  readonly child: ChildProcessWithoutNullStreams;
  readonly stdout: Transcript;
  readonly stderr: Transcript;
  exit: Exit | undefined;
  readonly #closed: Promise<Exit>;

  constructor(t: TestContext, args: string[], env: Record<string, string> = {}) {
    this.child = spawn(process.execPath, [ROSTER, ...args], { env: { PATH: process.env.PATH ?? '', ...env } });
    this.stdout = new Transcript(this.child.stdout);
    this.stderr = new Transcript(this.child.stderr);
    this.child.stdin.on('error', () => {}); // writing to a process that has gone: the test sees the exit
    this.#closed = new Promise<Exit>((resolve, reject) => {
      this.child.once('error', reject);
      this.child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        this.exit = { code, signal };
        this.stdout.poke();
        this.stderr.poke();
        resolve(this.exit);
      });
    });
    this.#closed.catch(() => {});
    t.after(() => {
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    });
  }

  /** Every complete stdout line, parsed as JSON; fails the test on a line that is not. */
  get json(): Json[] {
    return this.stdout.lines.map((line) => {
      try {
        return JSON.parse(line) as Json;
      } catch {
        assert.fail(`stdout line is not JSON: ${JSON.stringify(line)}; ${this.describe()}`);
      }
    });
  }

  /** The first stdout JSON line that matches (rejects on timeout, or when the process exits first). */
  waitForJson(predicate: (message: Json) => boolean, what: string): Promise<Json> {
    return this.stdout.until(
      () => this.json.find(predicate),
      what,
      () => this.#gone(),
    );
  }

  /** The first stdout line that matches `pattern`. */
  waitForLine(pattern: RegExp, what: string): Promise<string> {
    return this.stdout.until(
      () => this.stdout.lines.find((line) => pattern.test(line)),
      what,
      () => this.#gone(),
    );
  }

  exited(ms = EXIT_MS): Promise<Exit> {
    return within(this.#closed, ms, `the process to exit; ${this.describe()}`);
  }

  describe(): string {
    return `exit: ${JSON.stringify(this.exit)}, stdout: ${JSON.stringify(this.stdout.text)}, stderr: ${JSON.stringify(this.stderr.text)}`;
  }

  #gone(): string | undefined {
    return this.exit ? `the process exited (${JSON.stringify(this.exit)})` : undefined;
  }
}

/** What a bare WebSocket server saw of its one client. */
export interface Peer {
  ws: WebSocket;
  /** Text frames received, in order. */
  received: string[];
  /** The close code and reason the client sent, once it has. */
  closed: Promise<{ code: number; reason: string }>;
}

/**
 * A bare `ws` server on an ephemeral port (no room, no protocol) that hands each connection to
 * `onConnection`: for what the Roster server cannot show, such as the client's close code.
 */
export async function bareServer(t: TestContext, onConnection: (peer: Peer) => void = () => {}): Promise<string> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await once(wss, 'listening');
  wss.on('connection', (ws) => {
    const received: string[] = [];
    ws.on('message', (data) => received.push(String(data)));
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.once('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString() })),
    );
    onConnection({ ws, received, closed });
  });
  t.after(async () => {
    for (const client of wss.clients) client.terminate();
    await new Promise<void>((resolve) => wss.close(() => resolve()));
  });
  return `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
}
