/**
 * Every `sh` block of the README and of the pages it links (docs/*.md, SECURITY.md, BENCHMARKS.md, ...),
 * pasted as is into bash (`bash -e`, from the repository folder), must work: each one runs here against
 * a real Roster. Every `ts` block (the typed client's example) is compiled with the repository's strict
 * settings, as a module of this package (so it imports `roster/client` as a reader would), and its
 * JavaScript run by Node against a real Roster; it must print something and exit 0. A block that starts
 * Roster itself (`npm start`) gets none; every other block gets `node dist/src/main.js` started for it.
 * A block that ends serving in the foreground (its last command `npm start`) passes once that Roster
 * answers ready, and is then stopped.
 *
 * A comment just before a block (docs/development.md lists them) says what it needs:
 * `<!-- readme-test: skip (why) -->` skips it, and the reason must begin with one of SKIP_REASONS
 * (a block that could run may not say it cannot: the backup and restore lines once did, and did not
 * paste); `<!-- readme-test: env NAME=value ... -->` starts its Roster with those settings;
 * `<!-- readme-test: continues -->` runs it after the block before on that page, in one test: what that
 * one started is stopped first (as a reader presses Ctrl-C), the files it made are kept.
 *
 * A fresh clone has no `roster.db` or `backups/`: what a block (or a chain of them) creates in the
 * repository folder and names is removed after it, so it is never there for the next run to lean on.
 *
 * Ports: every block runs with PORT and WS_PORT set to free ports, and its literal 127.0.0.1:5000 and
 * 127.0.0.1:8765 rewritten to them, as a reader whose ports are taken would do, so a busy machine (or
 * a Roster already running) cannot break the test. Each block is bounded in time, and everything it
 * started (its process group) is killed when it ends.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { freePort, within } from './support/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BLOCK_MS = 90_000;

/** What a skipped block may give as its reason: what the test cannot do, never "it was easier". */
const SKIP_REASONS = [
  'installs',
  'runs the whole suite',
  'needs a container engine',
  'needs an outside service',
  'minutes of load',
];

interface Block {
  page: string;
  language: 'sh' | 'ts';
  line: number;
  heading: string;
  code: string;
  skip?: string;
  env: Record<string, string>;
  continues: boolean;
}

const MARKER = /<!--\s*readme-test:\s*(skip\s*\(([^)]*)\)|env\s+([^>]*?)|continues)\s*-->\s*\n/y;

function blocks(page: string, text: string): Block[] {
  const found: Block[] = [];
  for (const match of text.matchAll(/```(sh|ts)\n([\s\S]*?)```/g)) {
    const before = text.slice(0, match.index);
    // The marker, if any, is the line just before the fence.
    const lineStart = before.lastIndexOf('\n', before.length - 2) + 1;
    MARKER.lastIndex = lineStart;
    const marker = MARKER.exec(text);
    const heading = [...before.replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,5} (.+)$/gm)].at(-1)?.[1] ?? '(top)';
    const env: Record<string, string> = {};
    for (const pair of (marker?.[3] ?? '').split(/\s+/).filter(Boolean)) {
      const [name, ...value] = pair.split('=');
      env[name!] = value.join('=');
    }
    found.push({
      page,
      language: match[1] as Block['language'],
      line: before.split('\n').length,
      heading,
      code: match[2]!,
      ...(marker?.[2] === undefined ? {} : { skip: marker[2] }),
      env,
      continues: marker?.[1] === 'continues',
    });
  }
  return found;
}

/** The README and every page of this repository it links (not images, not other sites). */
function pages(): { page: string; text: string }[] {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const linked = [...readme.matchAll(/\]\(((?:docs\/)?[\w-]+\.md)(?:#[^)]*)?\)/g)].map((m) => m[1]!);
  return ['README.md', ...new Set(linked)].map((page) => ({ page, text: readFileSync(join(ROOT, page), 'utf8') }));
}

/** Blocks in runs: a block and the ones that continue it. */
function chains(all: Block[]): Block[][] {
  const result: Block[][] = [];
  for (const block of all) {
    const last = result.at(-1);
    if (block.continues) {
      assert.ok(last && last[0]!.page === block.page, `${block.page}:${block.line} continues no block before it`);
      last.push(block);
    } else result.push([block]);
  }
  return result;
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

/** Kills a process group (a block, and whatever it left in the background), and waits until it is gone. */
async function killGroup(child: ChildProcess | undefined): Promise<void> {
  const pid = child?.pid;
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    return; // already gone
  }
  // A SQLite file's lock goes with its process: the next block of a chain must find it free.
  for (let i = 0; i < 50; i++) {
    try {
      process.kill(-pid, 0);
    } catch {
      return;
    }
    await delay(100);
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

/** Whether the block's last command serves in the foreground: `npm start`, not sent to the background. */
function servesInForeground(code: string): boolean {
  const last = code
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .at(-1);
  return last !== undefined && /\bnpm start$/.test(last);
}

/** Untracked paths in the repository folder (top level), or undefined outside a git checkout. */
function untracked(): Set<string> | undefined {
  try {
    const out = execFileSync('git', ['ls-files', '--others', '--directory', '--no-empty-directory'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    return new Set(out.split('\n').filter(Boolean));
  } catch {
    return undefined;
  }
}

/**
 * Runs a chain of blocks, then removes what it created in the repository folder and named (a database
 * with its -wal, -shm and lock files, a backups/ folder): only those, so that nothing another test
 * writes meanwhile is touched.
 */
async function runChain(t: TestContext, chain: Block[]): Promise<void> {
  const before = untracked();
  const running: ChildProcess[] = [];
  try {
    for (const block of chain) {
      while (running.length > 0) await killGroup(running.pop());
      await runBlock(block, running);
    }
  } finally {
    while (running.length > 0) await killGroup(running.pop());
    const after = untracked();
    if (before && after) {
      const named = chain.map((block) => block.code + JSON.stringify(block.env)).join('\n');
      for (const path of after) {
        const base = path.replace(/\/$/, '').replace(/(-wal|-shm|-journal|\.lock)+$/, '');
        if (!before.has(path) && named.includes(base)) rmSync(join(ROOT, path), { recursive: true, force: true });
      }
    }
  }
  t.diagnostic(`${chain.length} block(s) ran`);
}

async function runBlock(block: Block, running: ChildProcess[]): Promise<void> {
  const [port, wsPort] = [await freePort(), await freePort()];
  const env = blockEnv(port, wsPort);
  const code = block.code
    .replaceAll('127.0.0.1:5000', `127.0.0.1:${port}`)
    .replaceAll('127.0.0.1:8765', `127.0.0.1:${wsPort}`);

  if (!/\bnpm start\b/.test(code)) {
    const server = spawn(process.execPath, ['dist/src/main.js'], {
      cwd: ROOT,
      env: { ...env, ...block.env },
      stdio: 'ignore',
      detached: true,
    });
    running.push(server);
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
  running.push(shell);
  let stdout = '';
  let stderr = '';
  shell.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  shell.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const transcript = () => `--- stdout\n${stdout}\n--- stderr\n${stderr}`;
  if (block.language === 'sh' && servesInForeground(code)) {
    // It serves until Ctrl-C: it passed once its Roster is ready (and the shell still runs it).
    await ready(port, () => shell.exitCode === null).catch((error: Error) => {
      throw new Error(`${error.message}\n${transcript()}`);
    });
    assert.doesNotMatch(stderr, /not found|command not found|Cannot find module|ERR!/i, transcript());
    return;
  }
  // 'exit', not 'close': a server the block left in the background still holds the pipes.
  const [status] = (await within(
    once(shell, 'exit'),
    BLOCK_MS,
    `the block to finish; stdout ${stdout} stderr ${stderr}`,
  )) as [number | null];
  assert.equal(status, 0, `exit ${status}\n${transcript()}`);
  assert.doesNotMatch(stderr, /not found|command not found|Cannot find module|ERR!/i, transcript());
  if (block.language === 'ts') assert.notEqual(stdout.trim(), '', `the example prints its result\n${transcript()}`);
}

/**
 * A `ts` block compiled as the repository compiles its own code (tsconfig.json: strict, NodeNext), in
 * dist/readme/ of this package; fails the test with the compiler's messages if it does not type-check.
 * Gives the path of its JavaScript.
 */
function compiled(block: Block, code: string): string {
  const folder = join(ROOT, 'dist/readme');
  mkdirSync(folder, { recursive: true });
  const file = join(folder, `${block.page.replace(/[/.]/g, '-')}-line-${block.line}.mts`);
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

/** A heading's anchor as GitHub makes it: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replaceAll(' ', '-');

/** Prose without fenced blocks (a `#` comment in a block is no heading, a `](` in one no link). */
const prose = (text: string) => text.replace(/```[\s\S]*?```/g, '');

const ALL = pages().flatMap(({ page, text }) => blocks(page, text));

describe('shell and TypeScript blocks of the README and the pages it links, pasted as is', () => {
  test('the README links its pages, and they have shell blocks and a TypeScript example to run', () => {
    const linked = new Set(ALL.map((block) => block.page));
    for (const page of ['docs/configuration.md', 'docs/rest-api.md', 'docs/operations.md', 'docs/deployment.md'])
      assert.ok(
        pages().some((p) => p.page === page),
        `the README links ${page}`,
      );
    assert.ok(linked.has('README.md'));
    const run = ALL.filter((block) => !block.skip);
    assert.ok(run.filter((block) => block.language === 'sh').length >= 20);
    assert.ok(run.some((block) => block.language === 'ts'));
  });

  test('every skipped block gives a reason the test knows, and a marked env is NAME=value', () => {
    for (const block of ALL) {
      if (block.skip !== undefined)
        assert.ok(
          SKIP_REASONS.some((reason) => block.skip!.trim().startsWith(reason)),
          `${block.page}:${block.line}: "${block.skip}" is not a reason a block cannot run (${SKIP_REASONS.join('; ')})`,
        );
      for (const name of Object.keys(block.env)) assert.match(name, /^[A-Z][A-Z0-9_]*$/);
    }
  });

  test('every relative link of these pages reaches a file, and its #anchor a heading there', () => {
    let checked = 0;
    for (const { page, text } of pages()) {
      for (const [, link] of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(link!)) continue; // another site
        const [path, anchor] = link!.split('#') as [string, string | undefined];
        const target = path === '' ? page : join(dirname(page), path);
        assert.ok(existsSync(join(ROOT, target)), `${page}: ${link} names no file`);
        if (anchor !== undefined && target.endsWith('.md')) {
          const headings = [...prose(readFileSync(join(ROOT, target), 'utf8')).matchAll(/^#{1,6} (.+)$/gm)];
          assert.ok(
            headings.some(([, heading]) => slug(heading!) === anchor),
            `${page}: ${link}: ${target} has no heading #${anchor}`,
          );
        }
        checked += 1;
      }
    }
    assert.ok(checked >= 50, `only ${checked} links checked`);
  });

  test('a block that stops on its own serves in the foreground only at its end', () => {
    assert.equal(servesInForeground('DATABASE_URL=sqlite:./roster.db npm start'), true);
    assert.equal(servesInForeground('npm start &\ncurl -s x'), false);
    assert.equal(servesInForeground('npm start   # serves\n# a comment\n'), true);
    assert.equal(servesInForeground('AUTH=apikey npm start &      # in the background'), false);
  });

  for (const chain of chains(ALL)) {
    const first = chain[0]!;
    const name = `${first.page}:${first.line} (${first.heading})${chain.length > 1 ? ` and ${chain.length - 1} more` : ''}: ${first.code.split('\n')[0]!.slice(0, 60)}`;
    if (first.skip) test(name, { skip: first.skip }, () => {});
    else test(name, { timeout: (BLOCK_MS + 30_000) * chain.length }, (t) => runChain(t, chain));
  }
});
