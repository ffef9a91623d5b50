// `npm run dev`: the compilers in watch mode and the service restarted whenever the compiled output
// changes (`node --watch`), with human-readable logs (LOG_FORMAT=pretty unless set otherwise).
//
// The service starts once the first compilation has finished; from then on tsc rewrites dist/ on every
// save and node --watch restarts the service (it watches every module the entry point imports). The
// console's TypeScript is recompiled too; its static files (HTML, CSS) are copied once at start.
// Ctrl-C stops everything. Settings are environment variables, as for `npm start`.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
const children = [];

function run(args, options = {}) {
  const child = spawn(process.execPath, args, { stdio: 'inherit', ...options });
  children.push(child);
  return child;
}

function stop(code) {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  process.exitCode = code;
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

// The console's static files, once (the build's last step).
run(['web/build.mjs']).on('exit', (code) => {
  if (code !== 0) stop(code ?? 1);
});
// -b: the console's compilation and the protocol's it references (web/tsconfig.protocol.json).
run([tsc, '-b', 'web/tsconfig.json', '--watch', '--preserveWatchOutput']);

// The server's compiler: the service starts after its first pass ("Found N errors. Watching…").
const compiler = run([tsc, '-p', 'tsconfig.json', '--watch', '--preserveWatchOutput'], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
let service;
compiler.stdout.setEncoding('utf8');
compiler.stdout.on('data', (text) => {
  process.stdout.write(text);
  if (service === undefined && /Watching for file changes/.test(text)) {
    service = run(['--watch', '--watch-preserve-output', 'dist/src/main.js'], {
      env: { ...process.env, LOG_FORMAT: process.env.LOG_FORMAT ?? 'pretty' },
    });
  }
});
compiler.on('exit', (code) => stop(code ?? 1));
