/**
 * The container image's contract, as far as it runs without a Docker engine: the final stage of the
 * Dockerfile runs as a non-root user with a health check, and its exact CMD, run with node against the
 * built tree (the layout the image copies: dist/, node_modules/, package.json, migrations/), serves,
 * passes the image's own HEALTHCHECK command (which asks /readyz), and stops with exit 0 on SIGTERM,
 * after which the health check fails. compose.yaml and deploy/nginx.conf must name each other.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort, within } from './helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TEST_MS = 60_000;

interface Stage {
  env: Record<string, string>;
  user?: string;
  cmd?: string[];
  healthcheck?: string[];
}

/** The final stage of the Dockerfile: its ENV, USER, CMD and HEALTHCHECK CMD (exec form only). */
function finalStage(text: string): Stage {
  const instructions = text
    .replace(/\\\n/g, ' ') // continuation lines
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  let stage: Stage = { env: {} };
  for (const line of instructions) {
    const [keyword, ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    switch (keyword!.toUpperCase()) {
      case 'FROM':
        stage = { env: {} };
        break;
      case 'ENV':
        for (const [, name, value] of args.matchAll(/(\w+)=("[^"]*"|\S+)/g))
          stage.env[name!] = value!.replace(/^"|"$/g, '');
        break;
      case 'USER':
        stage.user = args;
        break;
      case 'CMD':
        stage.cmd = JSON.parse(args) as string[];
        break;
      case 'HEALTHCHECK':
        stage.healthcheck = JSON.parse(args.slice(args.indexOf('CMD ') + 4)) as string[];
        break;
    }
  }
  return stage;
}

const stage = finalStage(readFileSync(new URL('Dockerfile', `file://${ROOT}`), 'utf8'));

/** Runs an exec-form command whose program is node, with this process's node. */
function nodeArgs(command: string[]): string[] {
  assert.equal(command[0], 'node', `the command runs node: ${JSON.stringify(command)}`);
  return command.slice(1);
}

describe('container image', () => {
  test('the final stage runs as a non-root user, with a health check, CMD in exec form', () => {
    assert.ok(stage.user && !/^(root|0)(:|$)/.test(stage.user), `USER ${stage.user}`);
    assert.ok(stage.healthcheck, 'HEALTHCHECK CMD […]');
    assert.ok(stage.cmd, 'CMD […]');
  });

  test(
    'the exact CMD serves on the built tree; the HEALTHCHECK passes, then fails once it stopped',
    { timeout: TEST_MS },
    async (t) => {
      const [port, wsPort] = [await freePort(), await freePort()];
      // The image's environment, with this machine's ports and loopback only (not 0.0.0.0 on a shared host).
      const env = {
        PATH: process.env.PATH ?? '',
        ...stage.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        WS_PORT: String(wsPort),
        LOG_LEVEL: 'warn',
      };
      const server = spawn(process.execPath, nodeArgs(stage.cmd!), {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      t.after(() => {
        if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
      });
      let output = '';
      server.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      server.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
      const check = () => spawnSync(process.execPath, nodeArgs(stage.healthcheck!), { env, timeout: 10_000 }).status;

      // As Docker does during --start-period: ask until healthy (bounded).
      const deadline = Date.now() + 20_000;
      while (check() !== 0) {
        assert.equal(server.exitCode, null, `the server exited: ${output}`);
        assert.ok(Date.now() < deadline, `never healthy: ${output}`);
        await delay(200);
      }
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      assert.equal(ready.status, 200);

      server.kill('SIGTERM');
      const [code] = (await within(once(server, 'exit'), 15_000, 'the server to stop')) as [number | null];
      assert.equal(code, 0, output);
      assert.notEqual(check(), 0, 'unhealthy once stopped');
    },
  );

  test('compose.yaml runs two instances on PostgreSQL and Redis behind nginx with deploy/nginx.conf', () => {
    const compose = readFileSync(new URL('compose.yaml', `file://${ROOT}`), 'utf8');
    const nginx = readFileSync(new URL('deploy/nginx.conf', `file://${ROOT}`), 'utf8');
    for (const service of ['postgres', 'redis', 'roster-1', 'roster-2', 'nginx'])
      assert.match(compose, new RegExp(`^  ${service}:`, 'm'), service);
    assert.match(compose, /\.\/deploy\/nginx\.conf:\/etc\/nginx\/conf\.d\/default\.conf/);
    assert.match(compose, /CHAT_PUBLIC_URL: \/chat/);
    for (const upstream of ['roster-1:5000', 'roster-2:5000', 'roster-1:8765', 'roster-2:8765'])
      assert.ok(nginx.includes(`server ${upstream};`), upstream);
    assert.match(
      nginx,
      /location \/chat \{[^}]*proxy_set_header Upgrade \$http_upgrade;[^}]*proxy_set_header Connection \$connection_upgrade;/,
    );
    // Roster exempts its trusted proxy from MAX_CONNECTIONS_PER_ADDRESS: the proxy holds clients to theirs.
    assert.match(compose, /TRUST_PROXY: "1"/);
    assert.match(nginx, /^limit_conn_zone \$binary_remote_addr zone=roster_per_client:\d+m;$/m);
    assert.match(nginx, /^ {2}limit_conn roster_per_client \d+;$/m);
  });

  const nginxMissing = spawnSync('nginx', ['-v']).error
    ? 'nginx is not installed: its configuration is not checked'
    : false;
  test('deploy/nginx.conf is a configuration nginx accepts (nginx -t)', { skip: nginxMissing }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'roster-nginx-'));
    try {
      // The instances' names resolve only inside compose; here, addresses stand for them.
      const site = readFileSync(new URL('deploy/nginx.conf', `file://${ROOT}`), 'utf8')
        .replaceAll('roster-1', '127.0.0.1')
        .replaceAll('roster-2', '127.0.0.2');
      writeFileSync(join(dir, 'site.conf'), site);
      writeFileSync(
        join(dir, 'nginx.conf'),
        `pid ${dir}/nginx.pid;\nerror_log stderr;\nevents {}\nhttp {\n  access_log off;\n  include ${dir}/site.conf;\n}\n`,
      );
      const checked = spawnSync('nginx', ['-t', '-p', dir, '-c', join(dir, 'nginx.conf')], { encoding: 'utf8' });
      assert.equal(checked.status, 0, checked.stderr);
      assert.match(checked.stderr, /test is successful/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
