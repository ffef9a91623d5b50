/**
 * The image, built and run for real where podman is installed: the Dockerfile builds (in the docker
 * format, which keeps HEALTHCHECK), the container serves as uid 1000 (`node`), its HEALTHCHECK passes,
 * a user created on SQLite at /data (a fresh named volume) outlives the container, the chat answers
 * on its published port, and SIGTERM (podman stop) ends it with exit 0 at once.
 *
 * Skips, saying why, without podman or without the base image (node:24-bookworm-slim) in podman's
 * store: nothing is pulled. Where Docker Hub cannot be reached, test/support/standin-node-image.sh
 * builds a stand-in for the base image from Debian and the npm registry (.ci/run does). In CI
 * (support/ci.ts) it never skips: what is missing fails it.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { assertNothingMissing, eventually, skipOutsideCi, within } from './support/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BASE_IMAGE = 'docker.io/library/node:24-bookworm-slim';

function run(args: string[], timeout = 30_000) {
  const result = spawnSync('podman', args, { cwd: ROOT, encoding: 'utf8', timeout });
  return { status: result.status, stdout: result.stdout ?? '', stderr: result.stderr ?? '', error: result.error };
}

/**
 * podman's own options that run a container here. Inside some sandboxes (gVisor, cgroups v1 with a
 * v2 hierarchy beside it) crun refuses the cgroup layout and the default rlimits; runc with cgroupfs
 * and rlimits no higher than the sandbox's own works there. The first set that runs `true` wins.
 */
function podmanOptions(): { global: string[]; run: string[]; build: string[] } | undefined {
  const sandboxed = {
    global: ['--runtime', 'runc', '--cgroup-manager', 'cgroupfs'],
    run: ['--ulimit', 'nofile=10000:10000', '--ulimit', 'nproc=5000:5000'],
    build: ['--isolation', 'chroot'],
  };
  for (const options of [{ global: [], run: [], build: [] }, sandboxed]) {
    if (run([...options.global, 'run', '--rm', ...options.run, BASE_IMAGE, 'true']).status === 0) return options;
  }
  return undefined;
}

function skipReason(): string | false {
  if (run(['--version']).error) return 'podman is not installed: the image is not built here';
  if (run(['image', 'exists', BASE_IMAGE]).status !== 0)
    return `${BASE_IMAGE} is not in podman's store (no pulling here): bash test/support/standin-node-image.sh makes a stand-in`;
  return false;
}
const missing = skipReason();

test(
  'the image builds, runs as node, keeps SQLite users on a volume, and stops at once',
  { skip: skipOutsideCi(missing), timeout: 600_000 },
  async (t) => {
    assertNothingMissing(missing);
    const options = podmanOptions();
    assert.ok(options, 'podman runs a container of the base image');
    const podman = (args: string[], timeout?: number) => run([...options.global, ...args], timeout);
    const id = randomUUID().slice(0, 8);
    const image = `localhost/roster-test:${id}`;
    const volume = `roster-test-${id}`;
    const containers: string[] = [];
    t.after(() => {
      for (const name of containers) podman(['rm', '-f', name]);
      podman(['volume', 'rm', '-f', volume]);
      podman(['rmi', '-f', image]);
    });

    const built = podman(['build', ...options.build, '--format', 'docker', '-t', image, '.'], 480_000);
    assert.equal(built.status, 0, built.stderr.slice(-3000));
    // podman's inspect keeps the docker format's HEALTHCHECK beside Config, not in it.
    const [{ Config: config, Healthcheck: healthcheck }] = JSON.parse(podman(['image', 'inspect', image]).stdout) as [
      { Config: { User: string; Volumes: Record<string, object> }; Healthcheck?: { Test: string[] } },
    ];
    assert.equal(config.User, 'node');
    assert.ok('/data' in config.Volumes, 'a VOLUME at /data');
    assert.ok(healthcheck?.Test.join(' ').includes('/readyz'), 'HEALTHCHECK kept (docker format)');

    /** Starts the image on SQLite in the volume, on ports podman picks; resolves with its REST and chat origins. */
    const start = async () => {
      const name = `roster-test-${id}-${containers.length}`;
      containers.push(name);
      const started = podman([
        'run',
        '-d',
        '--name',
        name,
        ...options.run,
        '-p',
        '127.0.0.1::5000',
        '-p',
        '127.0.0.1::8765',
        '-v',
        `${volume}:/data`,
        '-e',
        'DATABASE_URL=sqlite:/data/roster.db',
        image,
      ]);
      assert.equal(started.status, 0, started.stderr);
      const port = (inner: number) => /:(\d+)\s*$/.exec(podman(['port', name, `${inner}/tcp`]).stdout)?.[1];
      const rest = `http://127.0.0.1:${port(5000)}`;
      const chat = `ws://127.0.0.1:${port(8765)}`;
      await eventually(
        async () => (await fetch(`${rest}/readyz`).catch(() => undefined))?.ok,
        `${name} to be ready`,
        30_000,
        250,
      );
      return { name, rest, chat };
    };

    const first = await start();
    assert.equal(podman(['exec', first.name, 'id', '-u']).stdout.trim(), '1000', 'runs as uid 1000');
    assert.equal(podman(['healthcheck', 'run', first.name]).status, 0, 'the HEALTHCHECK passes');
    const created = await fetch(`${first.rest}/api/v1/users`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Kept', email: `kept-${id}@example.com` }),
    });
    assert.equal(created.status, 201);
    const user = ((await created.json()) as { data: { id: string } }).data;

    const ws = new WebSocket(first.chat);
    const welcome = await new Promise<{ type: string }>((resolve, reject) => {
      ws.once('message', (data) => resolve(JSON.parse(String(data)) as { type: string }));
      ws.once('error', reject);
    });
    assert.equal(welcome.type, 'system', 'the chat welcomes');
    const closed = new Promise<number>((resolve) => ws.once('close', resolve));

    const stopping = Date.now();
    // Asynchronously: this process's chat client must answer the close handshake meanwhile.
    const stopper = spawn('podman', [...options.global, 'stop', '-t', '10', first.name], { stdio: 'ignore' });
    assert.deepEqual(await once(stopper, 'exit'), [0, null]);
    const stoppedIn = Date.now() - stopping;
    assert.equal(await within(closed, 10_000, 'the chat close'), 1001, 'chat members hear "going away"');
    assert.equal(podman(['inspect', first.name, '--format', '{{.State.ExitCode}}']).stdout.trim(), '0');
    assert.ok(stoppedIn < 5_000, `SIGTERM ends it promptly (${stoppedIn} ms), not at the 10 s kill`);

    // A new container on the same volume has the user.
    const second = await start();
    const read = await fetch(`${second.rest}/api/v1/users/${user.id}`);
    assert.equal(read.status, 200);
    assert.equal(((await read.json()) as { data: { email: string } }).data.email, `kept-${id}@example.com`);
  },
);

test('the stand-in base image script fails at once, in one line, naming what is missing', (t) => {
  // A PATH with the shell and coreutils' id only: no podman, no debootstrap, no node.
  const bin = mkdtempSync(join(tmpdir(), 'roster-standin-path-'));
  t.after(() => rmSync(bin, { recursive: true, force: true }));
  for (const tool of ['bash', 'id']) {
    const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/bin'];
    const found = dirs.map((dir) => join(dir, tool)).find((path) => existsSync(path));
    assert.ok(found, `${tool} is installed`);
    symlinkSync(found, join(bin, tool));
  }
  const started = Date.now();
  const result = spawnSync(join(bin, 'bash'), ['test/support/standin-node-image.sh', '24'], {
    cwd: ROOT,
    env: { PATH: bin },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(result.status, 1, result.stderr);
  assert.match(result.stderr, /^standin-node-image: (run as root|podman is not on PATH)\b.*\n$/);
  assert.ok(Date.now() - started < 5_000, 'before any download');
});
