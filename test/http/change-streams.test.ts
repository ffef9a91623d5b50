/**
 * The fan-out of change-streams.ts when the log cannot be read for a moment (the database restarting):
 * the changes it was told of still reach the streams once the log answers again, without waiting for
 * another write to tell it; and a stream that cannot catch up is ended, so that its client resumes
 * (rather than kept open on heartbeats alone, never to get a change). A log of the test's own that fails one read, and a response that records
 * what is written to it: the subject is the fan-out's retry, not the socket (changes.test.ts and
 * changes-engines-restart.test.ts cover those through real ones).
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import pino from 'pino';
import type { Change, ChangeLog, ChangeRead } from '../../src/users/changes.js';
import { ChangeStreams } from '../../src/http/change-streams.js';
import { eventually } from '../support/index.js';

class FlakyLog implements ChangeLog {
  readonly epoch = 'e1';
  changes: Change[] = [];
  failures = 0;
  readonly #listeners = new Set<() => void>();

  async head(): Promise<number> {
    return this.changes.length;
  }

  async read(since: number, limit: number): Promise<ChangeRead> {
    if (this.failures > 0) {
      this.failures--;
      throw new Error('the database is away');
    }
    const changes = this.changes.slice(since, since + limit);
    return { changes, next: since + changes.length };
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  append(): void {
    const seq = this.changes.length + 1;
    this.changes.push({
      seq,
      type: 'deleted',
      id: `u${seq}`,
      user: null,
      roleBefore: null,
      at: '2026-01-01T00:00:00.000000',
    });
    for (const listener of this.#listeners) listener();
  }
}

/** A ServerResponse as ChangeStreams uses one: it writes, and hears of its close. */
function recordingResponse(): { res: ServerResponse; text: () => string; ended: () => boolean } {
  const chunks: Buffer[] = [];
  let ended = false;
  const res = Object.assign(new EventEmitter(), {
    writableLength: 0,
    socket: null,
    write: (bytes: Buffer | string) => chunks.push(Buffer.from(bytes)) > 0,
    end: () => void (ended = true),
    destroy: () => void (ended = true),
  });
  return { res: res as unknown as ServerResponse, text: () => Buffer.concat(chunks).toString(), ended: () => ended };
}

test('a change whose fan-out failed to read the log reaches the streams once the log answers, with no later write', async (t) => {
  const log = new FlakyLog();
  const streams = new ChangeStreams(log, { maxBacklog: 1 << 20, logger: pino({ level: 'silent' }) });
  t.after(() => streams.close());
  const { res, text } = recordingResponse();
  await streams.open(res, 0, undefined);

  log.failures = 1; // the fan-out's read of change 1 fails, as during a database restart
  log.append();
  await eventually(() => text().includes('id: e1.1\n') || undefined, 'change 1 on the stream', 10_000);
  assert.equal(text().split('event: change').length - 1, 1, 'change 1 once');
});

test('a stream whose catch-up cannot read the log is ended, for its client to resume from its last id', async (t) => {
  const log = new FlakyLog();
  const streams = new ChangeStreams(log, { maxBacklog: 1 << 20, logger: pino({ level: 'silent' }) });
  t.after(() => streams.close());
  log.append();
  await streams.open(recordingResponse().res, 1, undefined); // the fan-out starts at the head, 1
  const behind = recordingResponse();
  log.failures = 1; // its catch-up's read of change 1 fails
  await streams.open(behind.res, 0, undefined);
  assert.ok(behind.ended(), 'the stream was ended');
  assert.equal(streams.size, 1, 'and forgotten');
});
