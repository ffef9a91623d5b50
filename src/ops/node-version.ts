/**
 * Refuses a Node.js older than package.json's `engines` before anything else loads: imported first by
 * both entry points (main.ts, cli/roster.ts), so it runs before better-sqlite3's native module, which
 * ends an old Node with a bare "Segmentation fault" instead of a word. One line on stderr, exit 1.
 *
 * Written for old Nodes: no syntax or API newer than Node 18 here, and nothing imported but node:fs.
 */
import { readFileSync } from 'node:fs';

type Version = [major: number, minor: number, patch: number];

function parse(text: string): Version | undefined {
  const match = /^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(text.trim());
  return match ? [Number(match[1]), Number(match[2] ?? 0), Number(match[3] ?? 0)] : undefined;
}

/** The lowest version that `engines.node` (">=22.13", say) allows; undefined when it says something else. */
export function minimumVersion(engines: string | undefined): Version | undefined {
  const match = /^\s*>=\s*(\d+(?:\.\d+){0,2})\s*$/.exec(engines ?? '');
  return match ? parse(match[1]!) : undefined;
}

function older(a: Version, b: Version): boolean {
  return (a[0] - b[0] || a[1] - b[1] || a[2] - b[2]) < 0;
}

/** The line that refuses `found` (process.version), or undefined when it is new enough. */
export function refusal(found: string, engines: string | undefined): string | undefined {
  const needed = minimumVersion(engines);
  const version = parse(found);
  if (needed === undefined || version === undefined || !older(version, needed)) return undefined;
  const name = needed[2] !== 0 ? needed.join('.') : needed[1] !== 0 ? `${needed[0]}.${needed[1]}` : `${needed[0]}`;
  return (
    `roster: Node.js ${found} is too old; Roster needs Node.js ${name} or later (package.json engines: "${engines}"). ` +
    `Install a current LTS from https://nodejs.org/en/download (or: nvm install --lts), then npm ci again.`
  );
}

function engines(): string | undefined {
  try {
    // dist/src/ops/ → the package root, three folders up.
    const text = readFileSync(new URL('../../../package.json', import.meta.url), 'utf8');
    return (JSON.parse(text) as { engines?: { node?: string } }).engines?.node;
  } catch {
    return undefined; // no package.json beside dist: nothing to compare with, so no refusal
  }
}

const line = refusal(process.version, engines());
if (line !== undefined) {
  process.stderr.write(`${line}\n`);
  process.exit(1);
}
