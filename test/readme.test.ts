/**
 * Every `sh` block of the README, pasted as is into bash (`bash -e`, from the repository folder), must
 * work: each one runs here against a real Roster. Every `ts` block (the typed client's example) is
 * compiled with the repository's strict settings, as a module of this package (so it imports
 * `roster/client` as a reader of the README would), and its JavaScript run by Node against a real
 * Roster; it must print something and exit 0. A block that starts Roster itself (`npm start &`)
 * gets none; every other block gets `node dist/src/main.js` started for it. Blocks marked
 * `<!-- readme-test: skip (why) -->` (an outside service, the whole suite, minutes of load) are
 * skipped, saying why.
 *
 * Ports: every block runs with PORT and WS_PORT set to free ports, and its literal 127.0.0.1:5000 and
 * 127.0.0.1:8765 rewritten to them, as a reader whose ports are taken would do, so a busy machine (or
 * a Roster already running) cannot break the test. Each block is bounded in time, and everything it
 * started (its process group) is killed when it ends.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { freePort, within } from './support/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BLOCK_MS = 90_000;

interface Block {
  language: 'sh' | 'ts';
  line: number;
  heading: string;
  code: string;
  skip?: string;
}

function blocks(readme: string): Block[] {
  const found: Block[] = [];
  const pattern = /(?:<!--\s*readme-test:\s*skip\s*\(([^)]*)\)\s*-->\s*\n)?```(sh|ts)\n([\s\S]*?)```/g;
  for (const match of readme.matchAll(pattern)) {
    const before = readme.slice(0, match.index);
    const line = before.split('\n').length + (match[1] === undefined ? 0 : 1);
    const heading = [...before.matchAll(/^#{1,4} (.+)$/gm)].at(-1)?.[1] ?? '(top)';
    found.push({
      language: match[2] as Block['language'],
      line,
      heading,
      code: match[3]!,
      ...(match[1] === undefined ? {} : { skip: match[1] }),
    });
  }
  return found;
}

/** The environment of a block: this one without engines or protection settings, on free ports. */
function blockEnv(port: number, wsPort: number): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (
      value === undefined ||
      /^(DATABASE_URL|REDIS_URL|AUTH|API_KEYS|BASIC_USERS|JWT_SECRET|RATE_LIMIT|TLS_|CORS_|WS_URL|API_URL)/.test(name)
    )
      continue;
    env[name] = value;
  }
  return { ...env, PORT: String(port), WS_PORT: String(wsPort), LOG_LEVEL: 'warn' };
}

/** Kills a process group (a block, and whatever it left in the background). */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

async function ready(port: number, alive: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    assert.ok(alive(), 'Roster exited before it was ready');
    assert.ok(Date.now() < deadline, 'Roster was not ready within 20 s');
    await delay(100);
  }
}

async function run(t: TestContext, block: Block): Promise<void> {
  const [port, wsPort] = [await freePort(), await freePort()];
  const env = blockEnv(port, wsPort);
  const code = block.code
    .replaceAll('127.0.0.1:5000', `127.0.0.1:${port}`)
    .replaceAll('127.0.0.1:8765', `127.0.0.1:${wsPort}`);

  if (!/\bnpm start\b/.test(code)) {
    const server = spawn(process.execPath, ['dist/src/main.js'], { cwd: ROOT, env, stdio: 'ignore', detached: true });
    t.after(() => killGroup(server.pid));
    await ready(port, () => server.exitCode === null);
  }

  const shell =
    block.language === 'ts'
      ? spawn(process.execPath, [compiled(block, code)], {
          cwd: ROOT,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        })
      : spawn('bash', ['-e', '-c', code], {
          cwd: ROOT,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        });
  t.after(() => killGroup(shell.pid));
  let stdout = '';
  let stderr = '';
  shell.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  shell.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // 'exit', not 'close': a server the block left in the background still holds the pipes.
  const [status] = (await within(
    once(shell, 'exit'),
    BLOCK_MS,
    `the block to finish; stdout ${stdout} stderr ${stderr}`,
  )) as [number | null];
  const transcript = `exit ${status}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`;
  assert.equal(status, 0, transcript);
  assert.doesNotMatch(stderr, /not found|command not found|Cannot find module|ERR!/i, transcript);
  if (block.language === 'ts') assert.notEqual(stdout.trim(), '', `the example prints its result\n${transcript}`);
}

/**
 * A `ts` block compiled as the repository compiles its own code (tsconfig.json: strict, NodeNext), in
 * dist/readme/ of this package; fails the test with the compiler's messages if it does not type-check.
 * Gives the path of its JavaScript.
 */
function compiled(block: Block, code: string): string {
  const folder = join(ROOT, 'dist/readme');
  mkdirSync(folder, { recursive: true });
  const file = join(folder, `line-${block.line}.mts`);
  writeFileSync(file, code);
  const config = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (path) => ts.sys.readFile(path));
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  const program = ts.createProgram([file], { ...options, outDir: undefined, rootDir: undefined, sourceMap: false });
  const source = program.getSourceFile(file)!;
  const diagnostics = ts.getPreEmitDiagnostics(program);
  assert.equal(
    diagnostics.length,
    0,
    ts.formatDiagnostics(diagnostics, {
      getCanonicalFileName: (name) => name,
      getCurrentDirectory: () => ROOT,
      getNewLine: () => '\n',
    }),
  );
  const emitted = program.emit(source);
  assert.equal(emitted.emitSkipped, false);
  return file.replace(/\.mts$/, '.mjs');
}

const readme = readFileSync(new URL('README.md', `file://${ROOT}`), 'utf8');

describe('README shell and TypeScript blocks, pasted as is', () => {
  test('the README has shell blocks and a TypeScript example to run', () => {
    const run = blocks(readme).filter((block) => !block.skip);
    assert.ok(run.filter((block) => block.language === 'sh').length >= 8);
    assert.ok(run.some((block) => block.language === 'ts'));
  });

  for (const block of blocks(readme)) {
    const name = `line ${block.line} (${block.heading}): ${block.code.split('\n')[0]!.slice(0, 60)}`;
    if (block.skip) test(name, { skip: block.skip }, () => {});
    else test(name, { timeout: BLOCK_MS + 30_000 }, (t) => run(t, block));
  }
});
