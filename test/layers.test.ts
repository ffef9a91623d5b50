/**
 * The layer rules of docs/architecture.md, checked over the sources: the doors never import each other,
 * edge/ and users/ import no door, config/ imports nothing of Roster outside itself, and no two folders
 * import each other.
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

/** The top folder under src/ of a path (`http` for src/http/routes/users.ts), or `.` for src/ itself. */
const layerOf = (path: string) => {
  const parts = relative(ROOT, path).split('/');
  return parts.length > 1 ? parts[0]! : '.';
};

/** Every relative import between folders of src/: [from folder, to folder, file, specifier]. */
const edges = sources(ROOT).flatMap((file) =>
  [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)]
    .map((match) => ({ file: relative(ROOT, file), specifier: match[1]!, target: resolve(dirname(file), match[1]!) }))
    .filter(({ target }) => target.startsWith(ROOT))
    .map((edge) => ({ ...edge, from: layerOf(join(ROOT, edge.file)), to: layerOf(edge.target) }))
    .filter(({ from, to }) => from !== to),
);

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

test('the check sees the imports it checks (a door does import edge/)', () => {
  assert.ok(edges.some(({ from, to }) => from === 'chat' && to === 'edge'));
  assert.ok(edges.some(({ from, to }) => from === 'http' && to === 'users'));
});
