/**
 * The real PostgreSQL and Redis of this machine, stopped and started as an operator would (the commands
 * `.ci/run` uses, as root), for the tests of what Roster does when its engines restart under it. Only
 * where that is possible: `engineRestartsSkip()` says why not elsewhere.
 */
import { execFile, execFileSync, execSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { DATABASE_URL } from './postgres.js';
import { REDIS_URL } from './redis.js';
import { until } from './wait.js';

const PG_VERSIONS = existsSync('/etc/postgresql') ? readdirSync('/etc/postgresql') : [];

/** For `describe(..., { skip })`: false when this machine lets the tests restart both engines. */
export function engineRestartsSkip(): string | false {
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

export const pgReady = (): boolean => {
  try {
    execFileSync('pg_isready', ['-q', '-h', '127.0.0.1', '-p', '5432']);
    return true;
  } catch {
    return false;
  }
};

export const redisReady = (): boolean => {
  try {
    return execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'ping']).toString().trim() === 'PONG';
  } catch {
    return false;
  }
};

const pgRestart = () => ['--skip-systemctl-redirect', PG_VERSIONS[0]!, 'main', 'restart'];

/** Restarts PostgreSQL, blocking this process meanwhile (its own requests wait, the servers' do not). */
export const restartPostgresBlocking = (): void => void execFileSync('pg_ctlcluster', pgRestart(), { stdio: 'ignore' });

/** Restarts PostgreSQL while this process goes on (its requests meet the restart too). */
export const restartPostgres = async (): Promise<void> =>
  void (await promisify(execFile)('pg_ctlcluster', pgRestart()));

/** Shuts Redis down (no save) and starts it again as `.ci/run` does; resolves once it answers. */
export async function restartRedis(): Promise<void> {
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
}
