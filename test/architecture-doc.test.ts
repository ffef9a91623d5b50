/**
 * docs/architecture.md shows the code as it is: its "What lives where" table names every source file
 * of src/ in the row of its folder, and names no file that is not there. A file added, moved or
 * removed without the table following fails here, as docs/configuration.md's settings table fails
 * test/settings.test.ts.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Every .ts file under `folder`, as a path relative to the repository root. */
function sources(folder: string): string[] {
  return readdirSync(join(ROOT, folder)).flatMap((name) => {
    const path = join(folder, name);
    return statSync(join(ROOT, path)).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** The table's rows whose first cell is a folder of src/: folder -> the names its second cell gives in backticks. */
function tableRows(): Map<string, Set<string>> {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## What lives where'));
  const rows = new Map<string, Set<string>>();
  for (const line of section.split('\n')) {
    const cells = /^\| `(src\/[^`]*)` \| (.*) \|$/.exec(line);
    if (!cells) continue;
    rows.set(cells[1]!, new Set([...cells[2]!.matchAll(/`([^`]+\.ts)`/g)].map((match) => match[1]!)));
  }
  return rows;
}

/** The row a file belongs to: the deepest folder row that holds it. */
function rowOf(file: string, folders: string[]): string | undefined {
  return folders.filter((folder) => file.startsWith(folder)).sort((a, b) => b.length - a.length)[0];
}

test('the table in docs/architecture.md names every file of src/, in its folder’s row', () => {
  const rows = tableRows();
  const folders = [...rows.keys()];
  assert.ok(folders.includes('src/'), 'a row for the files of src/ itself');
  const missing = sources('src').filter((file) => {
    const folder = rowOf(`${file}`, folders);
    return folder === undefined || !rows.get(folder)!.has(relative(folder, file));
  });
  assert.deepEqual(missing, [], 'files the table does not name (add them to their folder’s row)');
});

test('the table names no file that is not there', () => {
  const files = new Set(sources('src'));
  const stale = [...tableRows()].flatMap(([folder, names]) =>
    [...names].filter((name) => !files.has(join(folder, name))).map((name) => join(folder, name)),
  );
  assert.deepEqual(stale, [], 'files the table names that do not exist');
});
