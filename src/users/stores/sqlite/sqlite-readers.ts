/**
 * The SQLite store's reads that may take longer than a millisecond (a search's count, a walk of the
 * list's order, a deep page), run off the REST thread: each reader is a worker thread with a read-only
 * connection of its own to the same file (sqlite-reader.ts). WAL mode lets readers run beside the one
 * writer, the store's own connection, and a read sees every transaction committed before it starts,
 * so a client's read after its own acknowledged write finds it (docs/decisions.md, "Search on SQLite").
 *
 * A database in memory (`:memory:`) has no file another connection could open: its reads run here, on
 * the store's connection, as before.
 */
import type Database from 'better-sqlite3';
import { Worker } from 'node:worker_threads';

/** What a read returns: the first column of its first row (`value`), of every row (`column`), or every row as an array (`rows`). */
export type Shape = 'value' | 'column' | 'rows';

/** A read, run wherever the store's readers run it. */
export type Read = <T>(sql: string, values: readonly unknown[], shape: Shape) => Promise<T>;

/**
 * How long a closing store waits for a reader to finish opening, then to end by itself, before it
 * ends the thread: ending a thread while it loads better-sqlite3's native module aborts the whole
 * process (Node's N-API reports a fatal error), so a reader is only ever ended once it said it is ready.
 */
const READER_CLOSE_MS = 5_000;

/** Readers (worker threads) per store: two, so that one long walk does not hold every other read behind it. */
const SQLITE_READERS = 2;

/** Runs a prepared read as `shape` asks: here for `:memory:`, and in each reader. */
export function runRead(statement: Database.Statement, values: readonly unknown[], shape: Shape): unknown {
  if (shape === 'value') return statement.pluck().get(...values);
  if (shape === 'column') return statement.pluck().all(...values);
  return statement.raw().all(...values);
}

/** A read sent to a reader, and its answer. */
export interface ReadJob {
  id: number;
  sql: string;
  values: readonly unknown[];
  shape: Shape;
}
export type ReadAnswer = { id: number; result: unknown } | { id: number; error: { message: string; code?: string } };

interface Pending {
  resolve(result: unknown): void;
  reject(error: Error): void;
}

class Reader {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #failed: Error | undefined;
  /** Settles when the thread has opened its connection, or has ended. */
  readonly #ready: Promise<void>;
  readonly #exited: Promise<void>;

  constructor(path: string) {
    this.#worker = new Worker(new URL('./sqlite-reader.js', import.meta.url), { workerData: { path } });
    this.#worker.unref();
    this.#exited = new Promise((resolve) => this.#worker.once('exit', () => resolve()));
    this.#ready = Promise.race([
      new Promise<void>((resolve) => this.#worker.once('message', () => resolve())),
      this.#exited,
    ]);
    this.#worker.on('message', (answer: ReadAnswer | 'ready') => {
      if (answer === 'ready') return;
      const pending = this.#pending.get(answer.id);
      if (pending === undefined) return;
      this.#pending.delete(answer.id);
      if (this.#pending.size === 0) this.#worker.unref();
      if ('result' in answer) pending.resolve(answer.result);
      else pending.reject(Object.assign(new Error(answer.error.message), { code: answer.error.code }));
    });
    this.#worker.on('error', (error) => this.#fail(error));
    this.#worker.on('exit', (code) => this.#fail(new Error(`a SQLite reader thread exited (code ${code})`)));
  }

  /** Whether the thread failed or ended: it answers no more reads. */
  get failed(): boolean {
    return this.#failed !== undefined;
  }

  /** Reads waiting for this reader. */
  get load(): number {
    return this.#pending.size;
  }

  read(job: ReadJob): Promise<unknown> {
    if (this.#failed) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => {
      // Kept alive while it has reads to answer: an idle reader must not hold the process open.
      if (this.#pending.size === 0) this.#worker.ref();
      this.#pending.set(job.id, { resolve, reject });
      this.#worker.postMessage(job);
    });
  }

  async close(): Promise<void> {
    this.#fail(new Error('the SQLite store is closed'));
    // Asked to end rather than ended (READER_CLOSE_MS): first opened, then its connection closed there.
    await within(this.#ready, READER_CLOSE_MS);
    this.#worker.postMessage('close');
    if (!(await within(this.#exited, READER_CLOSE_MS))) await this.#worker.terminate();
  }

  #fail(error: Error): void {
    this.#failed ??= error;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}

export class SqliteReaders {
  readonly #readers: Reader[] = [];
  #next = 0;
  #closed = false;

  /** `path`: the database file, or `:memory:` (then `statement` runs every read here). */
  constructor(
    private readonly path: string,
    private readonly statement: (sql: string) => Database.Statement,
  ) {}

  /** A read off the REST thread, by the reader with the fewest reads waiting (started at the first read). */
  readonly read: Read = async <T>(sql: string, values: readonly unknown[], shape: Shape): Promise<T> => {
    if (this.path === ':memory:') return runRead(this.statement(sql), values, shape) as T;
    if (this.#closed) throw new Error('the SQLite store is closed');
    // Started at the first read; a reader whose thread failed (its reads were refused) is replaced.
    for (let at = 0; at < SQLITE_READERS; at++)
      if (this.#readers[at] === undefined || this.#readers[at]!.failed) {
        void this.#readers[at]?.close();
        this.#readers[at] = new Reader(this.path);
      }
    const reader = this.#readers.reduce((least, one) => (one.load < least.load ? one : least));
    return (await reader.read({ id: this.#next++, sql, values, shape })) as T;
  };

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#readers.splice(0).map((reader) => reader.close()));
  }
}

/** Whether `promise` settled within `ms`. */
async function within(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}
