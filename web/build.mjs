// Copies the console's static files next to the JavaScript `tsc -p web/tsconfig.json` writes to
// dist/web. Run after that tsc: `tsc -p web/tsconfig.json && node web/build.mjs`. An argument names
// another folder (scripts/build.mjs builds into dist.next/web, then swaps dist.next in).
import { copyFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

const STATIC_FILES = ['index.html', 'console.css', 'favicon.svg'];

const from = new URL('./', import.meta.url);
const to = process.argv[2]
  ? pathToFileURL(`${process.argv[2].replace(/\/$/, '')}/`)
  : new URL('../dist/web/', import.meta.url);
mkdirSync(to, { recursive: true });
for (const file of STATIC_FILES) copyFileSync(new URL(file, from), new URL(file, to));

// The ES modules the page imports by package name (its import map, CONSOLE_IMPORT_MAP of
// src/http/console.ts), copied as published: no bundler.
const VENDOR = {
  'openapi-fetch': ['index.mjs', 'index.mjs.map'],
  'eventsource-parser': ['index.js', 'parse.js', 'errors.js'],
};
for (const [name, files] of Object.entries(VENDOR)) {
  const source = new URL('./', import.meta.resolve(name));
  const target = new URL(`vendor/${name}/`, to);
  mkdirSync(target, { recursive: true });
  for (const file of files) copyFileSync(new URL(file, source), new URL(file, target));
}
console.log(
  `web: copied ${STATIC_FILES.join(', ')} and ${Object.keys(VENDOR).join(', ')} (vendor/) to ${fileURLToPath(to)}`,
);
