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
import { parse } from 'yaml';
import { assertNothingMissing, freePort, skipOutsideCi, within } from './support/index.js';

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

/** V8's heap limit of a node started with `args` and `env`: it counts the young generation's reservation. */
function heapLimit(args: string[], env: Record<string, string> = {}): number {
  const run = spawnSync(process.execPath, [...args, '-p', 'v8.getHeapStatistics().heap_size_limit'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
  });
  assert.equal(run.status, 0, run.stderr);
  return Number(run.stdout);
}

describe("V8's young generation", () => {
  // Node 24's V8 grows each of the two semi-spaces to 64 MiB where Node 22's stops at 16: about 75 MiB
  // more RSS in the 30-minute soak (BENCHMARKS.md). npm start and the image keep Node 22's size.
  const SEMI_SPACE = '--max-semi-space-size=16';

  test('npm start runs node with two semi-spaces of 16 MiB', () => {
    const start = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
      .scripts.start;
    const [program, ...args] = start.split(/\s+/);
    assert.equal(program, 'node', start);
    const flags = args.filter((arg) => arg.startsWith('--'));
    assert.ok(flags.includes(SEMI_SPACE), start);
    assert.equal(heapLimit(flags), heapLimit([SEMI_SPACE]));
  });

  test('the image sets them through NODE_OPTIONS, which docker run -e can replace', () => {
    assert.ok(stage.env.NODE_OPTIONS?.split(/\s+/).includes(SEMI_SPACE), `NODE_OPTIONS=${stage.env.NODE_OPTIONS}`);
    assert.equal(heapLimit([], { NODE_OPTIONS: stage.env.NODE_OPTIONS! }), heapLimit([SEMI_SPACE]));
    // Never larger than this Node's default: on Node 22 the same; on Node 24, 144 MiB less (3 × 16 MiB, not 3 × 64).
    assert.ok(heapLimit([SEMI_SPACE]) <= heapLimit([]));
  });
});

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
    const compose = parse(readFileSync(new URL('compose.yaml', `file://${ROOT}`), 'utf8'), { merge: true }) as {
      services: Record<string, Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
    };
    const nginx = readFileSync(new URL('deploy/nginx.conf', `file://${ROOT}`), 'utf8');
    const { postgres, redis, nginx: proxy, ...rest } = compose.services;
    assert.ok(postgres && redis && proxy);
    assert.deepEqual(Object.keys(rest), ['roster-1', 'roster-2']);
    const [one, two] = [rest['roster-1']!, rest['roster-2']!];

    // One image for both instances, built once: roster-1 builds it, roster-2 runs it and never pulls it.
    assert.equal(one.build, '.');
    assert.equal(two.build, undefined);
    assert.equal(one.image, two.image);
    assert.equal(two.pull_policy, 'never');
    for (const instance of [one, two]) {
      assert.equal(instance.environment.CHAT_PUBLIC_URL, '/chat');
      // One trusted hop; a hop count exempts no peer from MAX_CONNECTIONS_PER_ADDRESS, so the cap is
      // off here, where nginx is the only peer and holds clients to theirs (limit_conn).
      assert.equal(instance.environment.TRUST_PROXY, '1');
      assert.equal(instance.environment.MAX_CONNECTIONS_PER_ADDRESS, '0');
      assert.equal(instance.depends_on.postgres.condition, 'service_healthy');
      assert.equal(instance.ports, undefined, 'only nginx publishes a port');
    }
    // PostgreSQL is healthy when it answers over TCP, as the instances reach it.
    assert.match(postgres.healthcheck.test.join(' '), /pg_isready -h 127\.0\.0\.1 -p 5432/);

    // nginx: published on loopback unless asked otherwise; the config mounted as a template, with the
    // container's resolvers filled in; restarted with the instances.
    assert.deepEqual(proxy.ports, ['${ROSTER_PUBLISH:-127.0.0.1:8080}:80']);
    assert.deepEqual(proxy.volumes, ['./deploy/nginx.conf:/etc/nginx/templates/default.conf.template:ro']);
    assert.equal(proxy.environment.NGINX_ENTRYPOINT_LOCAL_RESOLVERS, '1');
    const [major, minor] = (/^nginx:(\d+)\.(\d+)/.exec(proxy.image) ?? []).slice(1).map(Number);
    assert.ok(major! > 1 || minor! >= 28, `${proxy.image}: 1.27.3 or later, for resolve`);
    for (const instance of ['roster-1', 'roster-2'])
      assert.deepEqual(proxy.depends_on[instance], { condition: 'service_healthy', restart: true }, instance);

    // The upstreams name both instances, looked up again while nginx runs, and give up on a connect soon.
    assert.match(nginx, /^resolver \$\{NGINX_LOCAL_RESOLVERS\} valid=10s ipv6=off;$/m);
    for (const [name, port] of [
      ['roster_rest', 5000],
      ['roster_chat', 8765],
    ] as const) {
      const block = new RegExp(`upstream ${name} \\{([^}]*)\\}`).exec(nginx)?.[1] ?? '';
      assert.match(block, new RegExp(`zone ${name} \\d+k;`), name);
      for (const instance of ['roster-1', 'roster-2'])
        assert.ok(block.includes(`server ${instance}:${port} resolve;`), `${name}: ${instance}`);
    }
    assert.match(nginx, /^ {2}proxy_connect_timeout 2s;$/m);
    assert.match(
      nginx,
      /location \/chat \{[^}]*proxy_set_header Upgrade \$http_upgrade;[^}]*proxy_set_header Connection \$connection_upgrade;/,
    );
    assert.match(nginx, /^limit_conn_zone \$binary_remote_addr zone=roster_per_client:\d+m;$/m);
    assert.match(nginx, /^ {2}limit_conn roster_per_client \d+;$/m);
  });

  const nginxVersion = /nginx\/(\d+)\.(\d+)\.(\d+)/
    .exec(spawnSync('nginx', ['-v'], { encoding: 'utf8' }).stderr ?? '')
    ?.slice(1)
    .map(Number);
  const nginxMissing = nginxVersion ? false : 'nginx is not installed: its configuration is not checked';
  test('deploy/nginx.conf is a configuration nginx accepts (nginx -t)', { skip: skipOutsideCi(nginxMissing) }, () => {
    assertNothingMissing(nginxMissing);
    const dir = mkdtempSync(join(tmpdir(), 'roster-nginx-'));
    try {
      // What the image's entrypoint does: the template's resolvers filled in. The instances' names
      // resolve only inside compose; here, addresses stand for them. An nginx older than 1.27.3 (Debian
      // 12 has 1.22) has no `resolve` on upstream servers: the rest is checked without it.
      const [major, minor, patch] = nginxVersion!;
      const resolves = major! > 1 || minor! > 27 || (minor === 27 && patch! >= 3);
      let site = readFileSync(new URL('deploy/nginx.conf', `file://${ROOT}`), 'utf8')
        .replaceAll('${NGINX_LOCAL_RESOLVERS}', '127.0.0.1')
        .replaceAll('roster-1', '127.0.0.1')
        .replaceAll('roster-2', '127.0.0.2');
      if (!resolves) site = site.replaceAll(' resolve;', ';');
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
