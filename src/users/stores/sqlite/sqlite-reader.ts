/**
 * One reader of the SQLite store (sqlite-readers.ts), in a worker thread: a read-only connection to the
 * database file, answering each read it is sent in turn, its statements prepared once.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { registerSqlFunctions } from './sql-functions.js';
import { runRead, type ReadAnswer, type ReadJob } from './sqlite-readers.js';

/** The page cache of each reader, in KiB: 64 MiB (the store's own connection keeps 128: sqlite-connection.ts). */
const READER_CACHE_KIB = 64 * 1024;

const db = new Database((workerData as { path: string }).path, { readonly: true, fileMustExist: true, timeout: 100 });
db.pragma(`cache_size = -${READER_CACHE_KIB}`);
registerSqlFunctions(db);
const statements = new Map<string, Database.Statement>();

parentPort!.on('message', (job: ReadJob) => {
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
    answer = { id: job.id, error: { message: String(message ?? error), code: typeof code === 'string' ? code : undefined } };
  }
  parentPort!.postMessage(answer);
});
