/** Roster's JSON log lines, kept by the test: a pino destination that records each line and can be waited on. */
import { Writable } from 'node:stream';

type Line = Record<string, unknown>;

/** A pino destination that keeps every line and lets a test wait for one. */
export class LogWatch {
  readonly lines: Line[] = [];
  #waiters: { predicate: (line: Line) => boolean; resolve: (line: Line) => void }[] = [];
  readonly stream = new Writable({
    write: (chunk, _encoding, done) => {
      const line = JSON.parse(String(chunk)) as Line;
      this.lines.push(line);
      this.#waiters = this.#waiters.filter((waiter) => !(waiter.predicate(line) && (waiter.resolve(line), true)));
      done();
    },
  });

  /** The first line from index `from` on (default: lines not yet seen) whose `msg` matches. */
  until(msg: RegExp, timeoutMs = 5000, from = this.lines.length): Promise<Line> {
    const predicate = (line: Line) => typeof line.msg === 'string' && msg.test(line.msg);
    const seen = this.lines.slice(from).find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no log line matching ${msg} within ${timeoutMs} ms`)),
        timeoutMs,
      );
      this.#waiters.push({
        predicate,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
    });
  }
}

/** A log destination for startRoster's `logTo` that keeps every JSON line it receives. */
export function captureLog(): { lines: Line[]; logTo: Writable } {
  const watch = new LogWatch();
  return { lines: watch.lines, logTo: watch.stream };
}
