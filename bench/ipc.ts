/**
 * The benchmark's processes: the parent starts every server and load generator as a child pinned to
 * one CPU (taskset, when present) and talks to it over Node's IPC channel, one request and one reply at
 * a time. Children die with the parent: they exit when the channel closes, and the parent kills every
 * child it started on exit, on error and on SIGINT.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const TASKSET = '/usr/bin/taskset';

/** Whether processes are pinned to CPUs (taskset is installed). */
export const pinned = existsSync(TASKSET);

/** The CPU of the servers under test, and the CPU of the load generators. */
export const SERVER_CPU = 0;
export const LOAD_CPU = 1;

interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  error?: string;
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
}

const running = new Set<BenchChild>();

/** A child process of the benchmark, seen from the parent. */
export class BenchChild {
  readonly #process: ChildProcess;
  readonly #pending = new Map<number, Pending>();
  readonly #exited: Promise<void>;
  #nextId = 1;
  #gone: string | undefined;

  /**
   * Starts `script` (a compiled bench module, by URL) with node on `cpu`, under `wrapper` when given (a
   * command and its arguments that run node, as valgrind does: bench/instructions.ts). Its stdout and
   * stderr go to the parent's stderr, so that stdout carries only the report.
   */
  constructor(
    readonly name: string,
    script: URL,
    cpu: number | string,
    nodeArgs: readonly string[] = [],
    wrapper: readonly string[] = [],
  ) {
    const command = [...wrapper, process.execPath, ...nodeArgs, fileURLToPath(script)];
    const [file, ...args] = pinned ? [TASKSET, '-c', String(cpu), ...command] : command;
    this.#process = spawn(file!, args, { stdio: ['ignore', 2, 2, 'ipc'] });
    running.add(this);
    this.#process.on('message', (reply: Reply) => this.#settle(reply));
    this.#exited = new Promise((resolve) => {
      const done = (why: string) => {
        running.delete(this);
        this.#gone ??= why;
        for (const pending of this.#pending.values()) {
          clearTimeout(pending.timer);
          pending.reject(new Error(`${this.name} ${why}`));
        }
        this.#pending.clear();
        resolve();
      };
      this.#process.on('exit', (code, signal) =>
        done(signal ? `was killed (${signal})` : `exited with status ${code}`),
      );
      this.#process.on('error', (error) => done(`could not run: ${error.message}`));
    });
  }

  get pid(): number {
    return this.#process.pid ?? -1;
  }

  /** Sends a command and waits for its reply; rejects when the child fails, exits, or takes longer than `timeoutMs`. */
  request<T>(command: object, timeoutMs: number): Promise<T> {
    if (this.#gone) return Promise.reject(new Error(`${this.name} ${this.#gone}`));
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(
          new Error(`${this.name} did not answer ${JSON.stringify(command).slice(0, 80)} within ${timeoutMs / 1000} s`),
        );
      }, timeoutMs);
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer });
      this.#process.send({ ...command, id });
    });
  }

  /** Kills the child at once (SIGKILL: no graceful shutdown to wait for) and waits until it is gone. */
  async kill(): Promise<void> {
    this.killNow();
    await this.#exited;
  }

  /** Synchronous kill, for exit handlers. */
  killNow(): void {
    if (this.#process.exitCode === null && this.#process.signalCode === null) this.#process.kill('SIGKILL');
  }

  #settle(reply: Reply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return; // timed out already
    this.#pending.delete(reply.id);
    clearTimeout(pending.timer);
    if (reply.ok) pending.resolve(reply.value);
    else pending.reject(new Error(`${this.name}: ${reply.error ?? 'failed'}`));
  }
}

/** The benchmark's own processes: this one and its children. */
export function benchPids(): Set<number> {
  return new Set([process.pid, ...[...running].map((child) => child.pid)]);
}

/** Kills every child still running (synchronously, so it also works in an exit handler). */
export function killAllChildren(): void {
  for (const child of running) child.killNow();
}

/**
 * The child's half: answers each command from the parent with `handle`'s result (or its error), and
 * exits when the parent goes away, so no child outlives the benchmark.
 */
export function answerParent<C extends { cmd: string }>(handle: (command: C) => unknown): void {
  const send = (reply: Reply) => process.send?.(reply);
  process.on('message', (message: C & { id: number }) => {
    Promise.resolve()
      .then(() => handle(message))
      .then(
        (value) => send({ id: message.id, ok: true, value }),
        (error: unknown) =>
          send({ id: message.id, ok: false, error: error instanceof Error ? error.message : String(error) }),
      );
  });
  process.on('disconnect', () => process.exit(0));
}

/** A server's memory, in bytes. */
export interface Memory {
  /** Resident set size: what the process holds, heap capacity and off-heap buffers included. */
  rss: number;
  /** JavaScript heap in use: the live objects alone. */
  heap: number;
  /**
   * How long a forced full collection of the live heap took (ms): the second of two in a row, so it
   * is the marking of what is live rather than the sweeping of the load's garbage. NaN without --expose-gc.
   */
  fullGcMs?: number;
}

/** The process's memory, after a full garbage collection when node runs with --expose-gc. */
export function memoryNow(): Memory {
  const gc = (globalThis as { gc?: () => void }).gc;
  let fullGcMs = NaN;
  if (gc) {
    gc();
    const started = performance.now();
    gc();
    fullGcMs = performance.now() - started;
  }
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heap: heapUsed, fullGcMs };
}

/** A server child's memory before and after it stores the bench's users, and how long storing took. */
export interface Fill {
  /** With the modules loaded and nothing stored. */
  empty: Memory;
  /** Once every user is stored (before the server is built). */
  filled: Memory;
  fillSeconds: number;
}

/** Runs `store` (which stores the users), measuring memory around it and the time it takes. */
export async function measureFill(store: () => void | Promise<void>): Promise<Fill> {
  const empty = memoryNow();
  const started = performance.now();
  await store();
  const fillSeconds = (performance.now() - started) / 1000;
  return { empty, filled: memoryNow(), fillSeconds };
}

/**
 * Node flags of server children: `memoryNow` may collect garbage first. BENCH_SERVER_FLAGS adds more
 * (space-separated), e.g. `--max-semi-space-size=16`, to measure a V8 setting on the servers alone.
 */
export const SERVER_NODE_ARGS = ['--expose-gc', ...(process.env.BENCH_SERVER_FLAGS ?? '').split(/\s+/).filter(Boolean)];
