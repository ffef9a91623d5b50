// `npm run build`: compiles everything into dist.next/, beside dist/, and only then swaps it in, so a
// build that fails or is interrupted (Ctrl-C, a timeout) leaves the previous dist/ whole, and a running
// Roster keeps its console and modules meanwhile. The swap is two renames on one file system: dist/ is
// absent for no longer than between them. A dist.next/ left by an interrupted build is removed first.
//
// The compilers write where their tsconfig files say (dist/...); the root compilation takes --outDir,
// and the console's two (tsc -b with a reference) get small configs here that extend theirs with the
// output paths moved to dist.next/.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const NEXT = 'dist.next';
const OLD = 'dist.old';
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

function step(args) {
  const result = spawnSync(process.execPath, args, { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) {
    process.stderr.write(`build: ${args.join(' ')} failed; dist/ is left as it was\n`);
    process.exit(result.status ?? 1);
  }
}

const at = (path) => `${ROOT}${path}`;
rmSync(at(NEXT), { recursive: true, force: true });
rmSync(at(OLD), { recursive: true, force: true });

step([tsc, '-p', 'tsconfig.json', '--outDir', NEXT]);

// The console's compilations, redirected (paths in `extends` resolve from the config that has them).
const configs = at(`${NEXT}/.tsconfig`);
mkdirSync(configs, { recursive: true });
const config = (name, body) => writeFileSync(`${configs}/${name}`, JSON.stringify(body, null, 2));
config('protocol.json', {
  extends: '../../web/tsconfig.protocol.json',
  compilerOptions: {
    declarationDir: '../types/protocol',
    tsBuildInfoFile: '../types/protocol.tsbuildinfo',
    outDir: '../web/protocol',
  },
});
config('web.json', {
  extends: '../../web/tsconfig.json',
  compilerOptions: { tsBuildInfoFile: '../types/web.tsbuildinfo', outDir: '../web' },
  references: [{ path: './protocol.json' }],
});
step([tsc, '-b', `${NEXT}/.tsconfig/web.json`]);
rmSync(configs, { recursive: true });
step(['web/build.mjs', `${NEXT}/web`]);
chmodSync(at(`${NEXT}/src/cli/roster.js`), 0o755);

if (existsSync(at('dist'))) renameSync(at('dist'), at(OLD));
renameSync(at(NEXT), at('dist'));
rmSync(at(OLD), { recursive: true, force: true });
