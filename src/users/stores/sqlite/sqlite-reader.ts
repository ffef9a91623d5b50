/**
 * One reader of the SQLite store (sqlite-readers.ts), in a worker thread: a read-only connection to the
 * database file, answering each read it is sent in turn, its statements prepared once.
 */
import Database from 'better-sqlite3';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { registerSqlFunctions } from './sql-functions.js';
import { runRead, type ReadAnswer, type ReadJob } from './sqlite-readers.js';

/** The page cache of each reader, in KiB: 64 MiB (the store's own connection keeps 128: sqlite-connection.ts). */
const READER_CACHE_KIB = 64 * 1024;

/** The reader thread's niceness: below the REST thread's, so that on a busy CPU the REST thread runs first. */
const READER_NICENESS = 10;

// Linux gives each thread a niceness of its own (setpriority on its thread id, read from
// /proc/thread-self): a long read then yields the CPU to the REST thread's requests. Elsewhere the
// reader keeps the process's priority.
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), READER_NICENESS);
} catch {
  // no /proc, or not allowed: the same priority as the REST thread
}

const db = new Database((workerData as { path: string }).path, { readonly: true, fileMustExist: true, timeout: 100 });
db.pragma(`cache_size = -${READER_CACHE_KIB}`);
registerSqlFunctions(db);
const statements = new Map<string, Database.Statement>();

parentPort!.on('message', (job: ReadJob | 'close') => {
  if (job === 'close') {
    // The store closes: the thread ends by itself once its port is closed (sqlite-readers.ts, close).
    db.close();
    parentPort!.close();
    return;
  }
  let answer: ReadAnswer;
  try {
    let statement = statements.get(job.sql);
    if (!statement) statements.set(job.sql, (statement = db.prepare(job.sql)));
    // Blobs arrive as Uint8Arrays (structured clone): the driver binds Buffers.
    const values = job.values.map((value) =>
      value instanceof Uint8Array && !Buffer.isBuffer(value)
        ? Buffer.from(value.buffer, value.byteOffset, value.byteLength)
        : value,
    );
    answer = { id: job.id, result: runRead(statement, values, job.shape) };
  } catch (error) {
    const { message, code } = error as { message?: string; code?: unknown };
    answer = {
      id: job.id,
      error: { message: String(message ?? error), code: typeof code === 'string' ? code : undefined },
    };
  }
  parentPort!.postMessage(answer);
});
// Opened: from now on the thread may be ended at any moment (sqlite-readers.ts, close).
parentPort!.postMessage('ready');
