/**
 * Runs `node dist/bench/run.js` with `args` (a section at a test's size) and `env` over this process's
 * environment: the bench machinery tests (test/bench-*.test.ts) read its report from stdout.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const RUN = fileURLToPath(new URL('../../bench/run.js', import.meta.url));
/** The repository's root: its dist/ holds the build that plays an earlier one (BENCH_BEFORE, BENCH_BASELINE). */
export const REPOSITORY_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export function runBench(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [RUN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}
