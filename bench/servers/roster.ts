/**
 * Benchmark child: Roster itself, in-process as `main.ts` would run it, with its memory store filled
 * with the benchmark's users before it starts; or, when `env` has DATABASE_URL, on PostgreSQL, the
 * users stored there first (bench/postgres.ts); or on SQLite (DATABASE_URL=sqlite:…, bench/sqlite.ts).
 * Reports its ports and its memory to the parent.
 */
import { MemoryUserStore } from '../../src/users/stores/memory/memory-store.js';
import { answerParent, measureFill, memoryNow, type Fill } from '../ipc.js';
import { fillUsers } from '../postgres.js';
import { fillSqlite } from '../sqlite.js';
import { startRoster } from '../../test/support/roster.js';
import { benchUser } from '../users.js';

export type RosterCommand = { cmd: 'start'; users: number; env: Record<string, string> } | { cmd: 'memory' };

export interface RosterStarted extends Fill {
  port: number;
  wsPort: number;
}

answerParent<RosterCommand>(async (command) => {
  if (command.cmd === 'memory') return memoryNow();
  const database = command.env.DATABASE_URL;
  const store = database ? undefined : new MemoryUserStore();
  const fill = await measureFill(async () => {
    if (database?.startsWith('sqlite:')) await fillSqlite(database.slice('sqlite:'.length), command.users);
    else if (database) await fillUsers(database, command.users);
    for (let index = 0; store && index < command.users; index++) {
      if ((await store.insert(benchUser(index))) === 'email_taken')
        throw new Error(`the store refused bench user ${index}`);
    }
  });
  // With users already stored, createServer adds no seed users. The tests' in-process start, at warn;
  // MAX_USERS=0: the bench fills a million users of modest size, past the worst-case default cap.
  // MAX_CONNECTIONS_PER_ADDRESS=0: every bench client comes from 127.0.0.1, standing in for many.
  const { port, wsPort } = await startRoster(
    { LOG_LEVEL: 'warn', MAX_USERS: '0', MAX_CONNECTIONS_PER_ADDRESS: '0', ...command.env },
    store ? { store } : {},
  );
  const result: RosterStarted = { port, wsPort, ...fill };
  return result;
});
