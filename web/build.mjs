// Copies the console's static files next to the JavaScript `tsc -p web/tsconfig.json` writes to
// dist/web. Run after that tsc: `tsc -p web/tsconfig.json && node web/build.mjs`.
import { copyFileSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const STATIC_FILES = ['index.html', 'console.css', 'favicon.svg'];

const from = new URL('./', import.meta.url);
const to = new URL('../dist/web/', import.meta.url);
mkdirSync(to, { recursive: true });
for (const file of STATIC_FILES) copyFileSync(new URL(file, from), new URL(file, to));
console.log(`web: copied ${STATIC_FILES.join(', ')} to ${fileURLToPath(to)}`);
