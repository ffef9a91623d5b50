/**
 * The real PostgreSQL and the real Redis restarted under load, as an operator would restart them: the
 * Roster process survives both, every reply meanwhile is a 2xx, a 4xx or a 503 envelope, and health
 * comes back up with both engines. Runs only where this machine can restart them (the commands `.ci/run`
 * uses, as root); elsewhere it skips saying why.
 */
import assert from 'node:assert/strict';
import { execFileSync, execSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { DATABASE_URL, freshSchema, Instance, request, roomUrl, until, type JsonResponse } from './support/index.js';

const REDIS_URL = process.env.REDIS_URL;
const PG_VERSIONS = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql') : [];

function whyNot(): string | false {
  if (!DATABASE_URL || !REDIS_URL) return 'DATABASE_URL and REDIS_URL must both be set';
  if (process.env.ENGINE_RESTART_TESTS === 'off') return 'ENGINE_RESTART_TESTS=off';
  if (process.getuid?.() !== 0) return 'restarting the engines needs root';
  if (PG_VERSIONS.length === 0) return 'no local PostgreSQL cluster (pg_ctlcluster) to restart';
  try {
    execSync('command -v pg_ctlcluster && command -v redis-server && command -v redis-cli', { stdio: 'ignore' });
  } catch {
    return 'pg_ctlcluster, redis-server or redis-cli missing';
  }
  const url = new URL(REDIS_URL);
  if (!['127.0.0.1', 'localhost'].includes(url.hostname) || (url.port || '6379') !== '6379')
    return 'REDIS_URL is not the local Redis on 6379';
  return false;
}

function assertAcceptable(response: JsonResponse, what: string): void {
  if (response.status < 300) return;
  assert.ok(
    response.status === 503 || (response.status >= 400 && response.status < 500),
    `${what}: ${response.status} ${response.text}`,
  );
  assert.equal(response.body?.status, 'error', `${what}: ${response.text}`);
}

const pgReady = () => {
  try {
    execFileSync('pg_isready', ['-q', '-h', '127.0.0.1', '-p', '5432']);
    return true;
  } catch {
    return false;
  }
};
const redisReady = () => {
  try {
    return execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'ping']).toString().trim() === 'PONG';
  } catch {
    return false;
  }
};

describe('PostgreSQL and Redis restarted under load', { skip: whyNot() }, () => {
  test('the process survives both restarts and recovers', { timeout: 120_000 }, async (t) => {
    // A schema of this test's own, made and dropped on short-lived connections (the restart ends any
    // connection this test would hold).
    const schema = await freshSchema();
    t.after(async () => {
      await until('PostgreSQL back for the clean-up', pgReady);
      await schema.drop();
    });
    const roster = await Instance.start(t, { DATABASE_URL: schema.url, REDIS_URL: roomUrl() });
    const { client: talker } = await roster.join();
    const { client: listener } = await roster.join();

    let stop = false;
    let replies = 0;
    const load = async (n: number) => {
      for (let i = 0; !stop; i++) {
        const created = await request(`${roster.api}/users`, {
          method: 'POST',
          body: { name: `Load ${n} ${i}`, email: `load${n}.${randomUUID()}@example.com` },
        });
        assertAcceptable(created, 'create');
        if (created.status === 201) {
          assertAcceptable(
            await request(`${roster.api}/users/${created.body.data.id}`, {
              method: 'PATCH',
              body: { email: `p.${randomUUID()}@example.com` },
            }),
            'patch',
          );
        }
        assertAcceptable(await request(`${roster.api}/users?limit=5`), 'list');
        talker.send({ type: 'chat', message: `tick ${n} ${i}` });
        replies += 3;
        await delay(5);
      }
    };
    const running = Promise.all([load(0), load(1)]);
    try {
      await until('load under way before the restarts', () => replies >= 30);
      execFileSync('pg_ctlcluster', ['--skip-systemctl-redirect', PG_VERSIONS[0]!, 'main', 'restart'], {
        stdio: 'ignore',
      });
      await until('PostgreSQL accepting connections again', pgReady);
      await until(
        'health up again after the PostgreSQL restart',
        async () => (await request(`${roster.api}/health`)).status === 200,
      );

      const probe = new Redis(REDIS_URL!, { lazyConnect: true, maxRetriesPerRequest: 0 });
      probe.on('error', () => {});
      await probe.connect();
      await probe.call('SHUTDOWN', 'NOSAVE').catch(() => {}); // the connection ends with the server
      probe.disconnect();
      await until('Redis down', () => !redisReady(), 10_000);
      execSync(
        'mkdir -p /var/lib/redis /var/log/redis && redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log',
        { stdio: 'ignore' },
      );
      await until('Redis answering again', redisReady);
      await until(
        'the chat bus up again',
        async () => (await request(`${roster.api}/health`)).body?.data?.checks?.chat_bus === 'up',
      );
    } finally {
      stop = true;
      await running;
    }

    assert.equal(roster.child.exitCode, null, 'the Roster process exited');
    assert.equal(roster.child.signalCode, null, 'the Roster process was killed');
    const health = await request(`${roster.api}/health`);
    assert.equal(health.status, 200, health.text);
    assert.deepEqual(health.body.data.checks, { database: 'up', chat_bus: 'up' });
    // Local chat went on throughout.
    talker.send({ type: 'chat', message: 'after both restarts' });
    await listener.next((m) => m.type === 'chat' && m.message === 'after both restarts');
    assert.ok(replies >= 30, `only ${replies} replies under load`);
  });
});
