/**
 * The command the README gives for the CLI, `./roster …` from the checkout, starts at once and never
 * builds: `npx roster` installed the folder as a package and ran its `prepare` (a full build that
 * replaced dist/) on a first call, 30-45 s during which a running Roster lost its console. `npm start`
 * goes through the same launcher, so a checkout without dist/ (npm ci not run, or failed) gets one
 * line saying to run `npm ci`, not a stack trace. And `npm run build` builds beside dist/ and swaps:
 * a build killed half-way leaves dist/ as it was.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** What identifies dist/ and the CLI in it: a rebuild (rm and recompile, or a swap) changes these. */
function distIdentity() {
  const dist = statSync(join(ROOT, 'dist'));
  const cli = statSync(join(ROOT, 'dist/src/cli/roster.js'));
  return { dist: [dist.ino, dist.mtimeMs], cli: [cli.ino, cli.mtimeMs] };
}

test('./roster --version answers in under 2 s and leaves dist/ untouched', () => {
  const before = distIdentity();
  const started = performance.now();
  const result = spawnSync(join(ROOT, 'roster'), ['--version'], { cwd: ROOT, encoding: 'utf8', timeout: 10_000 });
  const took = performance.now() - started;
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.stdout.trim(), `roster ${VERSION}`);
  assert.ok(took < 2_000, `answered in ${Math.round(took)} ms`);
  assert.deepEqual(distIdentity(), before, 'dist/ is the same folder, unchanged');
  assert.ok(!existsSync(join(ROOT, 'dist.next')), 'no build started');
});

/** A checkout without dist/: the launcher and package.json, nothing built. */
function unbuilt(t: { after(fn: () => void): void }): string {
  const folder = mkdtempSync(join(tmpdir(), 'roster-unbuilt-'));
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  for (const file of ['roster', 'package.json']) copyFileSync(join(ROOT, file), join(folder, file));
  return folder;
}

const NOT_BUILT = /^roster: Roster is not built here \(no dist\/\): run `npm ci` first, which builds it\.\n$/;

test('without dist/, ./roster says in one line to run npm ci', (t) => {
  const folder = unbuilt(t);
  const result = spawnSync(process.execPath, ['roster', 'chat'], { cwd: folder, encoding: 'utf8', timeout: 10_000 });
  assert.equal(result.status, 1);
  assert.match(result.stderr, NOT_BUILT);
  assert.equal(result.stdout, '');
});

test('without dist/, npm start says in one line to run npm ci', (t) => {
  const folder = unbuilt(t);
  const result = spawnSync('npm', ['start'], { cwd: folder, encoding: 'utf8', timeout: 30_000 });
  assert.equal(result.status, 1);
  assert.match(result.stderr, NOT_BUILT, 'nothing but the one line on stderr: no stack');
});

test('a build killed half-way leaves dist/ as it was', { timeout: 300_000 }, async (t) => {
  const next = join(ROOT, 'dist.next');
  t.after(() => rmSync(next, { recursive: true, force: true }));
  const before = distIdentity();
  const build = spawn(process.execPath, ['scripts/build.mjs'], { cwd: ROOT, stdio: 'ignore', detached: true });
  // Killed as soon as the first compiler has written something: well before the swap.
  const deadline = Date.now() + 240_000;
  while (!existsSync(join(next, 'src')) && build.exitCode === null && Date.now() < deadline) await delay(20);
  try {
    process.kill(-build.pid!, 'SIGKILL');
  } catch {
    // already ended: the assertions below say how
  }
  assert.ok(existsSync(next), 'the build writes beside dist/, into dist.next/');
  assert.deepEqual(distIdentity(), before, 'dist/ untouched by the build so far');
  assert.ok(existsSync(join(ROOT, 'dist/src/main.js')));
});
