/**
 * The layer rules of docs/architecture.md, checked over the sources: the doors never import each other,
 * edge/ and users/ import no door, config/ imports nothing of Roster outside itself, no two folders
 * import each other, nothing of src/ reaches outside it (the browser console's web/ included), and
 * protocol/, which the page loads too, imports only itself and libraries that run in a browser.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function sources(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const path = join(folder, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** The top folder under src/ of a path (`http` for src/http/routes/user-routes.ts), or `.` for src/ itself. */
const layerOf = (path: string) => {
  const parts = relative(ROOT, path).split('/');
  return parts.length > 1 ? parts[0]! : '.';
};

/**
 * A statement (`import … from '…'`, `export … from '…'`, `import '…'`) starts a line; `import('…')`
 * is dynamic. Comments and strings that merely say `from '…'` do not start a line with a keyword.
 */
const IMPORT = /^(?:import|export)\b[^'";]*?\bfrom\s*'([^']+)'|^import\s*'([^']+)'|\bimport\(\s*'([^']+)'\s*\)/gm;

/** Every import of src/: the file, what it names, and for a relative one the path it resolves to. */
const imports = sources(ROOT).flatMap((file) =>
  [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((match) => {
    const specifier = (match[1] ?? match[2] ?? match[3])!;
    const target = specifier.startsWith('.') ? resolve(dirname(file), specifier) : undefined;
    return { file: relative(ROOT, file), specifier, target };
  }),
);

/** Every relative import between folders of src/: [from folder, to folder, file, specifier]. */
const edges = imports
  .filter((edge): edge is typeof edge & { target: string } => edge.target?.startsWith(`${ROOT}/`) === true)
  .map((edge) => ({ ...edge, from: layerOf(join(ROOT, edge.file)), to: layerOf(edge.target) }))
  .filter(({ from, to }) => from !== to);

const FORBIDDEN: [from: string, to: string][] = [
  ['http', 'chat'],
  ['chat', 'http'],
  ['edge', 'http'],
  ['edge', 'chat'],
  ['users', 'http'],
  ['users', 'chat'],
  ['users', 'edge'],
  ['config', 'http'],
  ['config', 'chat'],
  ['config', 'edge'],
  ['config', 'users'],
];

test('no import crosses a forbidden layer line', () => {
  const crossing = edges.filter(({ from, to }) => FORBIDDEN.some(([f, t]) => f === from && t === to));
  assert.deepEqual(
    crossing.map(({ file, specifier }) => `${file} imports ${specifier}`),
    [],
  );
});

test('no two folders of src/ import each other', () => {
  const pairs = new Set(edges.map(({ from, to }) => `${from}>${to}`));
  const cycles = [...pairs].filter((pair) => {
    const [from, to] = pair.split('>');
    return from !== '.' && to !== '.' && pairs.has(`${to}>${from}`);
  });
  assert.deepEqual(cycles, []);
});

test('nothing of src/ imports a file outside it (web/, the browser console, included)', () => {
  const outside = imports.filter(({ target }) => target !== undefined && !target.startsWith(`${ROOT}/`));
  assert.deepEqual(
    outside.map(({ file, specifier }) => `${file} imports ${specifier}`),
    [],
  );
});

/**
 * The packages protocol/ may import: each runs in a browser as published (web/build.mjs copies it for
 * the page's import map). Node's built-ins and server-side packages would break the console.
 */
const BROWSER_LIBRARIES: ReadonlySet<string> = new Set(['openapi-fetch', 'eventsource-parser']);

test('protocol/ imports only itself and libraries that run in a browser', () => {
  const stray = imports.filter(
    ({ file, specifier, target }) =>
      layerOf(join(ROOT, file)) === 'protocol' &&
      (target === undefined ? !BROWSER_LIBRARIES.has(specifier) : layerOf(target) !== 'protocol'),
  );
  assert.deepEqual(
    stray.map(({ file, specifier }) => `${file} imports ${specifier}`),
    [],
  );
});

test('the check sees the imports it checks (a door does import edge/, protocol/ a library)', () => {
  assert.ok(edges.some(({ from, to }) => from === 'chat' && to === 'edge'));
  assert.ok(edges.some(({ from, to }) => from === 'http' && to === 'users'));
  assert.ok(edges.some(({ from, to }) => from === 'cli' && to === 'protocol'));
  assert.ok(imports.some(({ file, specifier }) => file.startsWith('protocol/') && specifier === 'openapi-fetch'));
});
