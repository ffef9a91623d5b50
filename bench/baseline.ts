/**
 * The fixed older build `npm run bench` compares with (the drift section, bench/sections/drift.ts):
 * commit 41a4c31, the last before the chat thread, so that slow drift across many issues shows, not
 * only the change against the build before (BENCH_BEFORE). Built once into a cache folder and reused:
 *
 *   npm run build && node dist/bench/baseline.js     builds it (git archive, npm ci, which builds)
 *   BENCH_BASELINE=<folder>                           another folder holding a build (of any commit)
 *
 * The folder is `$XDG_CACHE_HOME/roster-bench/41a4c31` (default `~/.cache/roster-bench/41a4c31`).
 * Its `dist/bench/servers/roster.js` speaks the same commands as this build's (bench/servers/roster.ts
 * was already there at 41a4c31), so the sections run it as they run a BENCH_BEFORE build.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BASELINE_COMMIT = '41a4c31';
/** Written last, once the build is complete: a folder without it is rebuilt. */
const MARK = '.roster-bench-built';

export function baselineFolder(): string {
  if (process.env.BENCH_BASELINE) return resolve(process.env.BENCH_BASELINE);
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(cache, 'roster-bench', BASELINE_COMMIT);
}

/** Whether the folder holds a finished build (a BENCH_BASELINE folder needs only the bench server). */
export function baselineReady(folder = baselineFolder()): boolean {
  const server = existsSync(join(folder, 'dist/bench/servers/roster.js'));
  return process.env.BENCH_BASELINE ? server : server && existsSync(join(folder, MARK));
}

/**
 * Builds BASELINE_COMMIT into the cache folder unless it is there: the commit's files from this
 * repository (`git archive`, no worktree to register), its own locked dependencies (`npm ci`, whose
 * `prepare` runs its own `npm run build`). Needs the npm registry once; minutes, then cached.
 */
export function buildBaseline(log: (line: string) => void = console.error): string {
  const folder = baselineFolder();
  if (baselineReady(folder)) return folder;
  if (process.env.BENCH_BASELINE) throw new Error(`BENCH_BASELINE=${folder} holds no dist/bench/servers/roster.js`);
  const root = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  log(`baseline: ${BASELINE_COMMIT} into ${folder}`);
  const archive = execFileSync('git', ['-C', root, 'archive', '--format=tar', BASELINE_COMMIT], {
    maxBuffer: 1 << 30,
  });
  execFileSync('tar', ['-x', '-C', folder], { input: archive });
  // The same Node as this process, first on PATH, so the native modules match the bench's Node.
  const path = `${join(process.execPath, '..')}:${process.env.PATH ?? ''}`;
  const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], {
    cwd: folder,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, PATH: path },
  });
  if (npm.status !== 0) throw new Error(`npm ci in ${folder} failed (status ${npm.status})`);
  if (!existsSync(join(folder, 'dist/bench/servers/roster.js')))
    throw new Error(`${folder}: the build made no bench server`);
  writeFileSync(join(folder, MARK), `${BASELINE_COMMIT}\n`);
  log(`baseline: built ${BASELINE_COMMIT} in ${folder}`);
  return folder;
}

/** The commit a folder was built from, for the report. */
export function baselineLabel(folder = baselineFolder()): string {
  const mark = join(folder, MARK);
  return existsSync(mark) ? readFileSync(mark, 'utf8').trim() : folder;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(buildBaseline());
}
