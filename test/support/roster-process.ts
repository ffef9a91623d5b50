/**
 * Roster as a real process, `node dist/src/main.js`: the one child-process start of the tests. Its
 * output is recorded and awaitable (the ports come from the "Roster is listening" line), and it is
 * killed when its test ends, whatever the outcome.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { within } from './wait.js';

const MAIN = fileURLToPath(new URL('../../src/main.js', import.meta.url));

/** How long start-up may take; only matters when something is broken. */
const START_MS = 10_000;
const EXIT_MS = 5_000;

export interface LogLine {
  level?: number;
  msg?: string;
  [field: string]: unknown;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class RosterProcess {
  readonly child: ChildProcess;
  /** Every stdout line, as written. */
  readonly stdout: string[] = [];
  stderr = '';
  /** Settles when the process has exited and its output streams are closed. */
  readonly closed: Promise<Exit>;
  exit: Exit | undefined;
  #waiters = new Set<() => void>();

  /** Runs main.js with exactly `env` (plus PATH), after `nodeArgs` (e.g. `--max-old-space-size=96`). */
  constructor(t: TestContext, env: Record<string, string>, options: { nodeArgs?: readonly string[] } = {}) {
    this.child = spawn(process.execPath, [...(options.nodeArgs ?? []), MAIN], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => {
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.stdout.push(line);
      this.#wake();
    });
    this.child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.closed = new Promise<Exit>((resolve, reject) => {
      this.child.once('error', reject);
      this.child.once('close', (code: number | null, signal: NodeJS.Signals | null) => {
        this.exit = { code, signal };
        this.#wake();
        resolve(this.exit);
      });
    });
    this.closed.catch(() => {}); // a spawn failure surfaces through whichever wait comes first
  }

  /** Every stdout line parsed as JSON; fails the test on a line that is not. */
  get lines(): LogLine[] {
    return this.stdout.map((line) => {
      try {
        return JSON.parse(line) as LogLine;
      } catch {
        assert.fail(`stdout line is not JSON: ${line}`);
      }
    });
  }

  /** The first stdout JSON line that matches; rejects on timeout or when the process exits first. */
  async waitForLine(predicate: (line: LogLine) => boolean, what: string, ms = START_MS): Promise<LogLine> {
    const deadline = Date.now() + ms;
    for (;;) {
      for (const raw of this.stdout) {
        let line: LogLine;
        try {
          line = JSON.parse(raw) as LogLine;
        } catch {
          continue;
        }
        if (predicate(line)) return line;
      }
      if (this.exit) throw new Error(`Roster exited (${JSON.stringify(this.exit)}) before ${what}; ${this.describe()}`);
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`timed out waiting for ${what}; ${this.describe()}`);
      await within(new Promise<void>((resolve) => this.#waiters.add(resolve)), remaining, what).catch(() => {});
    }
  }

  /** Waits for the "Roster is listening" line and returns the ports it reports. */
  async listening(): Promise<{ port: number; wsPort: number }> {
    const line = await this.waitForLine((l) => l.msg === 'Roster is listening', '"Roster is listening"');
    assert.equal(typeof line.port, 'number');
    assert.equal(typeof line.wsPort, 'number');
    return { port: line.port as number, wsPort: line.wsPort as number };
  }

  /** Waits for the process to exit; rejects after `ms`. */
  exited(ms = EXIT_MS): Promise<Exit> {
    // The output is described only on failure: a busy process writes thousands of lines.
    return within(this.closed, ms, 'the process to exit').catch((error: Error) => {
      throw new Error(`${error.message}; ${this.describe()}`);
    });
  }

  /** Sends `signal` and waits for the exit. */
  stop(signal: NodeJS.Signals, ms = EXIT_MS): Promise<Exit> {
    this.child.kill(signal);
    return this.exited(ms);
  }

  describe(): string {
    return `stdout: ${JSON.stringify(this.stdout)}, stderr: ${JSON.stringify(this.stderr)}`;
  }

  #wake(): void {
    for (const resolve of this.#waiters) resolve();
    this.#waiters.clear();
  }
}
