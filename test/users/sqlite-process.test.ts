/**
 * The SQLite store as real processes (`node dist/src/main.js`, DATABASE_URL=sqlite:<file>): no
 * acknowledged write is lost by kill -9 in the middle of a write load (SQLITE_KILL_ROUNDS rounds, 3 by
 * default), `roster backup` while the service serves, a second process on the same file, a disk that
 * refuses writes (a file size limit of 0 set with prlimit on the running process), and the restart
 * that docs/storage.md promises.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test, type TestContext } from 'node:test';
import { pino } from 'pino';
import { SqliteUserStore } from '../../src/users/stores/sqlite/sqlite-store.js';
import { freePort, request, ROSTER, RosterProcess, startRoster, within, type UserRecord } from '../support/index.js';

const ROUNDS = Number(process.env.SQLITE_KILL_ROUNDS ?? 3);

const folder = mkdtempSync(join(tmpdir(), 'roster-sqlite-process-'));
after(() => rmSync(folder, { recursive: true, force: true }));

interface Instance {
  process: RosterProcess;
  api: string;
}

/** The settings of Roster on `file`: one process, one file, not the chat bus the test run may name. */
function settingsFor(file: string, port: number, wsPort: number, env: Record<string, string> = {}) {
  const { REDIS_URL: _redis, ...inherited } = process.env as Record<string, string>;
  return {
    ...inherited,
    DATABASE_URL: `sqlite:${file}`,
    PORT: String(port),
    WS_PORT: String(wsPort),
    LOG_LEVEL: 'warn',
    ...env,
  };
}

/** Roster on `file` as a child process; resolves once health answers. */
async function startInstance(t: TestContext, file: string, env: Record<string, string> = {}): Promise<Instance> {
  const [port, wsPort] = [await freePort(), await freePort()];
  const roster = new RosterProcess(t, settingsFor(file, port, wsPort, env));
  const api = `http://127.0.0.1:${port}/api/v1`;
  // A warn-level log has no "Roster is listening" line: health answering says it instead.
  await within(
    (async () => {
      for (;;) {
        if (roster.exit) throw new Error(`Roster exited with ${roster.exit.code}: ${roster.describe()}`);
        try {
          if ((await fetch(`${api}/health`)).ok) return;
        } catch {
          // not listening yet
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })(),
    15_000,
    'Roster to start',
  );
  return { process: roster, api };
}

async function stopInstance(instance: Instance, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (instance.process.exit) return;
  await instance.process.stop(signal, 15_000);
}

/** Every user, read page by page in creation order. */
async function allUsers(api: string): Promise<Map<string, UserRecord>> {
  const users = new Map<string, UserRecord>();
  for (let page = 1; ; page++) {
    const { body } = await request(`${api}/users?order=asc&limit=100&page=${page}`);
    for (const user of body.data.users as UserRecord[]) users.set(user.id, user);
    if (page >= body.data.pagination.pages) return users;
  }
}

const json = (body: unknown) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** What the load saw of each of its writes. */
interface Ledger {
  /** Users whose create was acknowledged (201), with the name of their last acknowledged patch. */
  created: Map<string, { email: string; name: string; pendingNames: Set<string> }>;
  /** Ids whose delete was acknowledged (204). */
  deleted: Set<string>;
  /** Ids whose delete was sent but not answered (the process died meanwhile). */
  deletePending: Set<string>;
  /** Names of creates refused with 409 (a duplicate email): no user may ever carry them. */
  refusedNames: Set<string>;
  /** Names of creates sent but not answered: they may or may not be there. */
  unknownNames: Set<string>;
  acknowledged: number;
}

function emptyLedger(): Ledger {
  return {
    created: new Map(),
    deleted: new Set(),
    deletePending: new Set(),
    refusedNames: new Set(),
    unknownNames: new Set(),
    acknowledged: 0,
  };
}

/**
 * `workers` clients writing as fast as they are answered, until `stop()`: creates (every fifth with the
 * email of a user created before, which must be refused), patches of their own users, deletes.
 */
function writeLoad(api: string, ledger: Ledger, workers: number): { halt: () => void; stop: () => Promise<void> } {
  let running = true;
  const worker = async (w: number) => {
    const mine: string[] = [];
    for (let step = 0; running; step++) {
      const kind = mine.length < 3 || step % 3 === 0 ? 'create' : step % 7 === 0 ? 'delete' : 'patch';
      try {
        if (kind === 'create') {
          const taken =
            step % 5 === 4
              ? [...ledger.created].find(([id]) => !ledger.deleted.has(id) && !ledger.deletePending.has(id))?.[1]
              : undefined;
          const name = `w${w}-${randomUUID()}`;
          const email = taken?.email.toUpperCase() ?? `${name}@load.example`;
          ledger.unknownNames.add(name);
          const response = await fetch(`${api}/users`, json({ name, email }));
          const body = (await response.json()) as { data: UserRecord };
          ledger.unknownNames.delete(name);
          if (response.status === 201) {
            ledger.created.set(body.data.id, { email, name, pendingNames: new Set() });
            mine.push(body.data.id);
            ledger.acknowledged++;
          } else if (response.status === 409) {
            ledger.refusedNames.add(name);
          } else {
            throw new Error(`create answered ${response.status}`);
          }
        } else if (kind === 'patch') {
          const id = mine[step % mine.length]!;
          const user = ledger.created.get(id)!;
          const name = `w${w}-patched-${step}`;
          user.pendingNames.add(name);
          const response = await fetch(`${api}/users/${id}`, { ...json({ name }), method: 'PATCH' });
          await response.arrayBuffer();
          if (response.status !== 200) throw new Error(`patch answered ${response.status}`);
          user.pendingNames.delete(name);
          user.name = name;
          ledger.acknowledged++;
        } else {
          const id = mine.shift()!;
          ledger.deletePending.add(id);
          const response = await fetch(`${api}/users/${id}`, { method: 'DELETE' });
          await response.arrayBuffer();
          if (response.status !== 204) throw new Error(`delete answered ${response.status}`);
          ledger.deletePending.delete(id);
          ledger.deleted.add(id);
          ledger.acknowledged++;
        }
      } catch (error) {
        // The process was killed: whatever was in flight has no answer. Anything else is a failure.
        if (running) throw error;
        return;
      }
    }
  };
  const done = Promise.allSettled(Array.from({ length: workers }, (_, w) => worker(w)));
  return {
    /** No further writes; those in flight may fail (the process is about to be killed). */
    halt() {
      running = false;
    },
    async stop() {
      running = false;
      const outcomes = await done;
      for (const outcome of outcomes) if (outcome.status === 'rejected') throw outcome.reason;
    },
  };
}

/** Every acknowledged write is in `users`, and nothing refused is. */
function checkLedger(ledger: Ledger, users: Map<string, UserRecord>): void {
  const names = new Set([...users.values()].map((user) => user.name));
  for (const [id, user] of ledger.created) {
    const stored = users.get(id);
    if (ledger.deleted.has(id)) {
      assert.equal(stored, undefined, `deleted user ${id} (204) is back`);
      continue;
    }
    if (ledger.deletePending.has(id) && stored === undefined) continue;
    assert.ok(stored, `acknowledged create of ${id} (${user.name}) is lost`);
    // The last acknowledged patch, or one sent after it that the killed process may have committed.
    assert.ok(
      stored.name === user.name || user.pendingNames.has(stored.name),
      `user ${id}: name ${stored.name}, acknowledged ${user.name}`,
    );
    assert.equal(stored.email, user.email);
  }
  for (const name of ledger.refusedNames) assert.ok(!names.has(name), `refused create ${name} is stored`);
  // Nothing else: each user was created by the load (or is a seed user).
  const known = (user: UserRecord) =>
    ledger.created.has(user.id) || ledger.unknownNames.has(user.name) || !user.name.startsWith('w');
  for (const user of users.values()) assert.ok(known(user), `user ${user.id} (${user.name}) came from nowhere`);
}

describe('SQLite store, as real processes', () => {
  test(
    `no acknowledged write is lost by kill -9 in the middle of a write load (${ROUNDS} rounds)`,
    { timeout: 60_000 + ROUNDS * 30_000 },
    async (t) => {
      const file = join(folder, `kill-${randomUUID()}.db`);
      const ledger = emptyLedger();
      let instance = await startInstance(t, file);
      for (let round = 1; round <= ROUNDS; round++) {
        const load = writeLoad(instance.api, ledger, 8);
        // Killed after a varying number of acknowledged writes, with every worker's next write in flight.
        const target = ledger.acknowledged + 150 + Math.floor(Math.random() * 250);
        await within(
          (async () => {
            while (ledger.acknowledged < target) await new Promise((resolve) => setTimeout(resolve, 1));
          })(),
          30_000,
          `${target} acknowledged writes`,
        );
        load.halt();
        const { signal } = await instance.process.stop('SIGKILL', 10_000);
        assert.equal(signal, 'SIGKILL');
        await load.stop();
        instance = await startInstance(t, file);
        checkLedger(ledger, await allUsers(instance.api));
      }
      assert.ok(ledger.refusedNames.size > 0, 'some creates were refused');
      await stopInstance(instance);
    },
  );

  test('a stopped and started service serves the users it had (the quick start)', { timeout: 30_000 }, async (t) => {
    const file = join(folder, `restart-${randomUUID()}.db`);
    const first = await startInstance(t, file);
    const created = await request(`${first.api}/users`, {
      method: 'POST',
      body: { name: 'Grace Hopper', email: 'grace@example.com' },
    });
    assert.equal(created.status, 201);
    const before = await allUsers(first.api);
    assert.equal(before.size, 4, 'three seed users and the new one');
    await stopInstance(first, 'SIGINT');
    const second = await startInstance(t, file);
    try {
      assert.deepEqual(await allUsers(second.api), before, 'the same users, no second seed');
      assert.deepEqual((await request(`${second.api}/users/${created.body.data.id}`)).body.data, created.body.data);
    } finally {
      await stopInstance(second);
    }
  });

  test(
    'roster backup while the service writes: a fresh instance on the backup serves the same users',
    { timeout: 60_000 },
    async (t) => {
      const file = join(folder, `live-${randomUUID()}.db`);
      const backup = join(folder, `backup-${randomUUID()}.db`);
      const live = await startInstance(t, file);
      const ledger = emptyLedger();
      let fresh: Instance | undefined;
      try {
        for (let i = 0; i < 300; i++) {
          assert.equal(
            (
              await request(`${live.api}/users`, {
                method: 'POST',
                body: { name: `before ${i}`, email: `before${i}@example.com` },
              })
            ).status,
            201,
          );
        }
        const before = await allUsers(live.api);
        const load = writeLoad(live.api, ledger, 4);
        const cli = spawnSync(process.execPath, [ROSTER, 'backup', backup], {
          env: { ...process.env, DATABASE_URL: `sqlite:${file}` },
          encoding: 'utf8',
          timeout: 30_000,
        });
        await load.stop();
        assert.equal(cli.status, 0, `${cli.stdout}${cli.stderr}`);
        assert.match(cli.stdout, /^backed up \d+ users/);
        assert.ok(ledger.acknowledged > 0, 'the service wrote meanwhile');
        const after = await allUsers(live.api);
        fresh = await startInstance(t, backup);
        const copied = await allUsers(fresh.api);
        // Everything stored before the backup began, as it was; anything else as the live service has it
        // now, or as it was before a later patch or delete.
        for (const [id, user] of before) assert.deepEqual(copied.get(id), user);
        for (const [id, user] of copied) {
          const now = after.get(id);
          if (now) assert.deepEqual({ ...user, name: '', updated_at: '' }, { ...now, name: '', updated_at: '' }, id);
          else assert.ok(ledger.deleted.has(id), `user ${id} in the backup was never stored`);
        }
        // And the backup of a quiet service is exactly what it serves.
        const quiet = join(folder, `quiet-${randomUUID()}.db`);
        const second = spawnSync(process.execPath, [ROSTER, 'backup', quiet], {
          env: { ...process.env, DATABASE_URL: `sqlite:${file}` },
          encoding: 'utf8',
          timeout: 30_000,
        });
        assert.equal(second.status, 0, `${second.stdout}${second.stderr}`);
        await stopInstance(fresh);
        fresh = await startInstance(t, quiet);
        assert.deepEqual(await allUsers(fresh.api), after);
        // An existing file is never overwritten.
        const again = spawnSync(process.execPath, [ROSTER, 'backup', quiet], {
          env: { ...process.env, DATABASE_URL: `sqlite:${file}` },
          encoding: 'utf8',
          timeout: 30_000,
        });
        assert.equal(again.status, 1);
        assert.match(again.stderr, /exists already/);
      } finally {
        if (fresh) await stopInstance(fresh);
        await stopInstance(live);
      }
    },
  );

  test(
    'a second process on the same file is refused with a clear message, and the first serves on',
    { timeout: 30_000 },
    async (t) => {
      const file = join(folder, `shared-${randomUUID()}.db`);
      const first = await startInstance(t, file);
      try {
        const created = await request(`${first.api}/users`, {
          method: 'POST',
          body: { name: 'Only One', email: 'one@example.com' },
        });
        assert.equal(created.status, 201);
        const [port, wsPort] = [await freePort(), await freePort()];
        const second = new RosterProcess(t, settingsFor(file, port, wsPort, { LOG_LEVEL: 'silent' }));
        const { code } = await second.exited(15_000);
        // Exit status 4: DATABASE_URL cannot be used (startup.ts).
        assert.equal(code, 4, second.stderr);
        assert.match(second.stderr, /^roster: DATABASE_URL: the database .* is in use by another Roster process/);
        const migrate = spawnSync(process.execPath, [ROSTER, 'migrate'], {
          env: { ...process.env, DATABASE_URL: `sqlite:${file}` },
          encoding: 'utf8',
          timeout: 15_000,
        });
        assert.equal(migrate.status, 1);
        assert.match(migrate.stderr, /in use by another Roster process/);
        assert.deepEqual((await request(`${first.api}/users/${created.body.data.id}`)).body.data, created.body.data);
        assert.equal(
          (await request(`${first.api}/users`, { method: 'POST', body: { name: 'Still', email: 'still@example.com' } }))
            .status,
          201,
        );
      } finally {
        await stopInstance(first);
      }
    },
  );

  const prlimit = spawnSync('prlimit', ['--version']).status === 0;
  test(
    'a disk that refuses writes (file size limit 0): writes 503, reads go on, health degraded; back when lifted',
    { timeout: 30_000, skip: prlimit ? false : 'prlimit (util-linux) not found' },
    async (t) => {
      const file = join(folder, `full-${randomUUID()}.db`);
      const instance = await startInstance(t, file);
      const pid = String(instance.process.child.pid);
      try {
        const created = await request(`${instance.api}/users`, {
          method: 'POST',
          body: { name: 'Before', email: 'before@example.com' },
        });
        assert.equal(created.status, 201);
        // Every write to a regular file past 0 bytes now fails (EFBIG), as on a full or failing disk.
        assert.equal(spawnSync('prlimit', ['--pid', pid, '--fsize=0:unlimited']).status, 0);
        const refused = await request(`${instance.api}/users`, {
          method: 'POST',
          body: { name: 'During', email: 'during@example.com' },
        });
        assert.equal(refused.status, 503, refused.text);
        assert.equal(refused.body.error.code, 'SERVICE_UNAVAILABLE');
        const patched = await request(`${instance.api}/users/${created.body.data.id}`, {
          method: 'PATCH',
          body: { name: 'Changed' },
        });
        assert.equal(patched.status, 503);
        assert.deepEqual((await request(`${instance.api}/users/${created.body.data.id}`)).body.data, created.body.data);
        assert.equal((await request(`${instance.api}/users?search=before`)).body.data.pagination.total, 1);
        const health = await request(`${instance.api}/health`);
        assert.equal(health.status, 200);
        assert.equal(health.body.data.status, 'degraded');
        assert.equal(health.body.data.checks.database, 'down');

        assert.equal(spawnSync('prlimit', ['--pid', pid, '--fsize=unlimited:unlimited']).status, 0);
        await within(
          (async () => {
            while ((await request(`${instance.api}/health`)).body.data.status !== 'healthy')
              await new Promise((resolve) => setTimeout(resolve, 100));
          })(),
          10_000,
          'health to recover',
        );
        assert.equal(
          (
            await request(`${instance.api}/users`, {
              method: 'POST',
              body: { name: 'After', email: 'after@example.com' },
            })
          ).status,
          201,
        );
        const names = [...(await allUsers(instance.api)).values()].map((user) => user.name);
        assert.ok(
          names.includes('Before') &&
            names.includes('After') &&
            !names.includes('During') &&
            !names.includes('Changed'),
          names.join(),
        );
      } finally {
        await stopInstance(instance);
      }
    },
  );

  test(
    'a read-only database (SQLITE_READONLY, here through query_only): writes 503, reads go on',
    { timeout: 30_000 },
    async () => {
      const store = await SqliteUserStore.open(
        { path: join(folder, `ro-${randomUUID()}.db`), synchronous: 'NORMAL' },
        pino({ level: 'silent' }),
      );
      const roster = await startRoster({}, { store, dependencies: [store.health] });
      try {
        const created = await request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: 'Kept', email: 'kept@example.com' },
        });
        store.database.pragma('query_only = ON');
        const refused = await request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: 'No', email: 'no@example.com' },
        });
        assert.equal(refused.status, 503);
        assert.equal((await request(`${roster.api}/users/${created.body.data.id}`, { method: 'DELETE' })).status, 503);
        assert.equal((await request(`${roster.api}/users/${created.body.data.id}`)).status, 200);
        assert.equal((await request(`${roster.api}/health`)).body.data.checks.database, 'down');
      } finally {
        await roster.stop();
      }
    },
  );
});
