/**
 * Settings are declared once (src/config/settings.ts for the server, src/config/client-settings.ts for
 * the `roster` command as a client), and everything else that states them is held to the declarations
 * here: docs/configuration.md's two settings tables row for row, the Limits table of docs/operations.md,
 * every default the README and its docs/ pages state beside a variable's name, the local addresses
 * their examples use, the CLI's help texts; and Config's comments name their variables without
 * restating a default.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  API_URL,
  CLIENT_SETTINGS,
  clientApiUrl,
  clientChatUrl,
  ROSTER_API_KEY,
  WS_URL,
} from '../src/config/client-settings.js';
import { ConfigError, SETTINGS, type Setting } from '../src/config/index.js';
import {
  automaticMaxUsers,
  DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
  DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
  USERS_HEAP_SHARE,
  WORST_CASE_BYTES_PER_USER,
  YOUNG_GENERATION_ALLOWANCE,
} from '../src/config/policy.js';
import {
  MAX_CONNECTIONS_PER_ADDRESS,
  MAX_USERS,
  PORT,
  WS_MAX_CONNECTIONS_PER_CLIENT,
  WS_PORT,
} from '../src/config/settings.js';
import { CHAT_USAGE } from '../src/cli/chat-command.js';
import { USERS_USAGE } from '../src/cli/users-command.js';

const ROOT = new URL('../../', import.meta.url);
const source = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');
const README = source('README.md');
const CONFIGURATION = source('docs/configuration.md');
const OPERATIONS = source('docs/operations.md');
/** The README and every docs/ page it links: where people read settings and addresses. */
const PAGES = [
  { where: 'README.md', text: README },
  ...[...new Set([...README.matchAll(/\]\((docs\/[\w-]+\.md)/g)].map((m) => m[1]!))].map((page) => ({
    where: page,
    text: source(page),
  })),
];
const CLI_SOURCES = readdirSync(new URL('src/cli/', ROOT))
  .filter((file) => file.endsWith('.ts'))
  .map((file) => ({ file: `src/cli/${file}`, text: source(`src/cli/${file}`) }));
const MIB = 1024 * 1024;

/** The rows of the table whose header is `header` on a page. */
function tableRows(page: string, header: string): string[] {
  const at = page.indexOf(header);
  assert.notEqual(at, -1, `a table headed ${header}`);
  const table = page.slice(at);
  return table.slice(0, table.indexOf('\n\n')).split('\n').slice(2);
}

/** Defaults decided by policy.ts rather than declared (the declaration's fallback is undefined). */
const DERIVED: Record<string, unknown> = {
  [WS_MAX_CONNECTIONS_PER_CLIENT.name]: DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
  [MAX_CONNECTIONS_PER_ADDRESS.name]: DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
};
const declared = (setting: Setting<unknown>): unknown => setting.fallback ?? DERIVED[setting.name];

/** 10000 as people write it: `10 000`. */
const grouped = (value: number) => String(value).replace(/\B(?=(\d{3})+$)/g, ' ');

/** The ways the docs may write a setting's default: as declared, grouped, in seconds, with its byte unit. */
function renderings(setting: Setting<unknown>): string[] {
  const value = declared(setting);
  if (Array.isArray(value)) return [value.join(',')];
  if (typeof value !== 'number') return [String(value)];
  const forms = [String(value), grouped(value)];
  if (setting.name.endsWith('_MS') && value % 1000 === 0) forms.push(`${value / 1000} s`);
  if (setting.name.endsWith('_SECONDS') && value % 3600 === 0) forms.push(`${value / 3600} h`);
  const unit = /^`(\d+)(KiB|MiB)`$/.exec(setting.shown);
  if (unit) forms.push(`${unit[1]} ${unit[2]}`, `${unit[1]}${unit[2]}`);
  return forms;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** Whether `text` states one of the setting's renderings as a whole value (not `16 MiB` for `6 MiB`). */
const states = (text: string, setting: Setting<unknown>) =>
  renderings(setting).some((form) => new RegExp(`(?<![\\w.])${escape(form)}(?![\\w])`).test(text));

const BY_NAME = new Map<string, Setting<unknown>>([...SETTINGS, ...CLIENT_SETTINGS].map((s) => [s.name, s]));

test('the settings table of docs/configuration.md is the declared settings, row for row (name, default, meaning)', () => {
  const expected = SETTINGS.map((setting) => `| \`${setting.name}\` | ${setting.shown} | ${setting.help} |`);
  assert.deepEqual(
    tableRows(CONFIGURATION, '| Variable | Default | Meaning |'),
    expected,
    `docs/configuration.md's table should read:\n${expected.join('\n')}`,
  );
});

test("docs/configuration.md's client settings table is the declared client settings, row for row", () => {
  const expected = CLIENT_SETTINGS.map(
    (setting) =>
      `| \`${setting.name}\` | ${setting.shown} | ${setting.commands.map((c) => `\`roster ${c}\``).join(', ')} | ${setting.help} |`,
  );
  assert.deepEqual(
    tableRows(CONFIGURATION, '| Variable | Default | Read by | Meaning |'),
    expected,
    `docs/configuration.md's client table should read:\n${expected.join('\n')}`,
  );
});

test('every setting is declared once, and its reader accepts the default it shows when that is a plain value', () => {
  const names = [...SETTINGS, ...CLIENT_SETTINGS].map((setting) => setting.name);
  assert.equal(new Set(names).size, names.length, 'a setting declared twice');
  for (const setting of SETTINGS) {
    const plain = /^`([^`]+)`$/.exec(setting.shown);
    if (!plain || setting.fallback === undefined) continue;
    assert.deepEqual(setting.parse(plain[1]!, setting.name), setting.fallback, `${setting.name}: ${setting.shown}`);
  }
});

test('the defaults policy.ts derives are the ones the settings table shows', () => {
  assert.match(WS_MAX_CONNECTIONS_PER_CLIENT.shown, new RegExp(`^\`${DEFAULT_MAX_CONNECTIONS_PER_CLIENT}\` `));
  assert.match(
    MAX_CONNECTIONS_PER_ADDRESS.shown,
    new RegExp(`^\`${DEFAULT_MAX_CONNECTIONS_PER_ADDRESS}\` \\(at most a quarter`),
  );
  const derivation = [
    `${USERS_HEAP_SHARE * 100} % of the heap limit`,
    `less ${YOUNG_GENERATION_ALLOWANCE / MIB} MiB`,
    `÷ ${WORST_CASE_BYTES_PER_USER / 1024} KiB`,
    `(${grouped(automaticMaxUsers(4144 * MIB))} on a 4 GiB heap)`,
  ];
  for (const part of derivation) assert.ok(MAX_USERS.shown.includes(part), `MAX_USERS shows ${part}`);
  // The worked example under Limits (docs/operations.md), line by line.
  const example = OPERATIONS.slice(OPERATIONS.indexOf('heap limit (node -p'), OPERATIONS.indexOf(' users\n```') + 6);
  assert.match(example, new RegExp(`- ${YOUNG_GENERATION_ALLOWANCE / MIB} MiB of young generation`));
  assert.match(example, new RegExp(`x ${USERS_HEAP_SHARE} for users`));
  assert.match(example, new RegExp(`/ ${grouped(WORST_CASE_BYTES_PER_USER)} bytes per user`));
  assert.match(example, new RegExp(`${grouped(automaticMaxUsers(4144 * MIB))} users$`));
});

test("every row of the Limits table (docs/operations.md) that names a setting states that setting's default", () => {
  let checked = 0;
  for (const row of tableRows(OPERATIONS, '| Limit | Default | Setting | Past it |')) {
    const [limit, stated, settingCell] = row.split(' | ').map((cell) => cell.replace(/^\| /, ''));
    for (const [, name] of settingCell!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)) {
      const setting = BY_NAME.get(name!);
      assert.ok(setting, `Limits, ${limit}: ${name} is not a declared setting`);
      if (declared(setting) === undefined) continue; // MAX_USERS: "see below", held by the test above
      if (stated!.includes(`\`${name}\``)) continue; // stated by reference: `WS_MAX_PAYLOAD` + 1 KiB
      assert.ok(
        states(stated!, setting),
        `Limits, ${limit}: "${stated}" should state ${name}'s default, ${renderings(setting)[0]}`,
      );
      checked += 1;
    }
  }
  assert.ok(checked >= 15, `only ${checked} Limits rows checked`);
});

/** Prose, without tables (held above) or fenced blocks (examples, not statements), in paragraphs. */
function paragraphs(text: string): string[] {
  return text
    .replace(/```[\s\S]*?```/g, '')
    .split(/\n\s*\n/)
    .map((paragraph) =>
      paragraph
        .split('\n')
        .filter((line) => !line.startsWith('|'))
        .join(' '),
    );
}

/** How prose states a default; the value is group `value`. */
const DEFAULT_STATEMENTS = [
  /(?<!-|by )\bdefault(?:s to)?:? (?=`|\d)`?(?<value>(?:\d{1,3}(?: \d{3})+(?!\d)|[^\s`;,)]+)(?: (?:KiB|MiB|s|h)\b)?)/g, // default 5000, defaults to 8765, default 1 MiB, default 10 000
  /`?(?<value>[^\s`(]+)`? \((?:the|by) default\)/g, // `NORMAL` (the default)
  /\((?<value>[^\s()]+) by default\)/g, // WS_PORT (8765 by default)
  /\((?:PORT|WS_PORT) (?<value>\d+)\)/g, // (PORT 5000)
  /=(?<value>\d+)`? \([^)]*`[A-Z][A-Z0-9_]+`\)/g, // `max-age=31536000` (one year, `HSTS_MAX_AGE`)
];

/** Every default stated in `text` beside a declared variable's name, with that variable (the nearest before it, in its paragraph). */
function statedDefaults(text: string): { setting: Setting<unknown>; value: string; context: string }[] {
  const found = [];
  for (const paragraph of paragraphs(text)) {
    for (const pattern of DEFAULT_STATEMENTS) {
      for (const match of paragraph.matchAll(pattern)) {
        const value = match.groups!.value!;
        if (value.startsWith('$') || BY_NAME.has(value)) continue; // a default that is another variable
        const before = paragraph.slice(Math.max(0, match.index - 200), match.index + match[0].length);
        const names = [...before.matchAll(/\b[A-Z][A-Z0-9_]{2,}\b/g)].map((m) => m[0]).filter((n) => BY_NAME.has(n));
        const setting = BY_NAME.get(names.at(-1) ?? '');
        if (setting && declared(setting) !== undefined) found.push({ setting, value, context: before.slice(-120) });
      }
    }
  }
  return found;
}

test('every default the README, its docs/ pages and the CLI help state beside a variable is the declared one', () => {
  const statements = [
    ...PAGES.flatMap(({ where, text }) => statedDefaults(text).map((s) => ({ ...s, where }))),
    ...CLI_SOURCES.flatMap(({ file, text }) => statedDefaults(text).map((s) => ({ ...s, where: file }))),
  ];
  for (const { setting, value, context, where } of statements) {
    assert.ok(
      states(value, setting),
      `${where}: "${context}" states ${value} as ${setting.name}'s default; it is ${renderings(setting)[0]}`,
    );
  }
  const names = new Set(statements.map((s) => `${s.where} ${s.setting.name}`));
  // The statements known to be there, so a pattern that stops matching cannot pass unseen.
  for (const expected of [
    'docs/clients.md WS_PORT',
    'docs/chat-protocol.md CHAT_HISTORY',
    'docs/storage.md SQLITE_SYNCHRONOUS',
    'docs/deployment.md HSTS_MAX_AGE',
    'docs/operations.md LOG_LEVEL',
    'src/cli/chat-refusal.ts WS_PORT',
    'src/cli/roster.ts PORT',
    'src/cli/api-options.ts PORT',
  ])
    assert.ok(names.has(expected), `found no statement of ${expected}'s default: ${[...names].join(', ')}`);
});

test("every local address in the README, its docs/ pages and the CLI's help is on the declared default port", () => {
  const rest = String(PORT.fallback);
  const chat = String(WS_PORT.fallback);
  for (const { where, text } of [...PAGES, ...CLI_SOURCES.map(({ file, text }) => ({ where: file, text }))]) {
    for (const [address, scheme, port] of text.matchAll(/\b(https?|wss?):\/\/(?:127\.0\.0\.1|<page host>):(\d+)/g))
      assert.equal(port, scheme!.startsWith('http') ? rest : chat, `${where}: ${address}`);
  }
  assert.match(README, new RegExp(`on port \\*\\*${rest}\\*\\*`));
  assert.match(README, new RegExp(`its own port, \\*\\*${chat}\\*\\*`));
});

test("the client's addresses default to a Roster on this machine with the server's own PORT and WS_PORT", () => {
  assert.equal(clientApiUrl({}), `http://127.0.0.1:${PORT.fallback}/api/v1`);
  assert.equal(clientChatUrl({}), `ws://127.0.0.1:${WS_PORT.fallback}`);
  assert.equal(API_URL.shown.replaceAll('`', '').replace('$PORT', String(PORT.fallback)), clientApiUrl({}));
  assert.equal(WS_URL.shown.replaceAll('`', '').replace('$WS_PORT', String(WS_PORT.fallback)), clientChatUrl({}));
  assert.equal(clientApiUrl({ PORT: ' 5050 ' }), 'http://127.0.0.1:5050/api/v1');
  assert.equal(clientChatUrl({ WS_PORT: '9000', WS_URL: ' ' }), 'ws://127.0.0.1:9000');
  assert.equal(
    clientApiUrl({ API_URL: 'https://roster.example/api/v1', PORT: 'not read' }),
    'https://roster.example/api/v1',
  );
  assert.equal(clientChatUrl({ WS_URL: 'chat.example:443' }), 'chat.example:443');
  assert.throws(
    () => clientApiUrl({ PORT: 'abc' }),
    (e) => e instanceof ConfigError && e.variable === 'PORT',
  );
  assert.throws(
    () => clientChatUrl({ WS_PORT: '70000' }),
    (e) => e instanceof ConfigError && e.variable === 'WS_PORT',
  );
  assert.throws(
    () => clientApiUrl({ API_URL: 'ftp://x' }),
    (e) => e instanceof ConfigError && e.variable === 'API_URL',
  );
  assert.equal(ROSTER_API_KEY.parse(' k ', ROSTER_API_KEY.name), ' k ');
});

test('roster chat and roster users read them through the table: a bad one is a usage error naming it', () => {
  const roster = new URL('dist/src/cli/roster.js', ROOT).pathname;
  for (const [args, env, variable] of [
    [['users', 'export'], { PORT: 'abc' }, 'PORT'],
    [['users', 'export'], { API_URL: 'ftp://roster.example' }, 'API_URL'],
    [['chat'], { WS_PORT: '70000' }, 'WS_PORT'],
  ] as const) {
    const run = spawnSync(process.execPath, [roster, ...args], { env: { ...env }, encoding: 'utf8', timeout: 20_000 });
    assert.equal(run.status, 2, `${args.join(' ')} with ${JSON.stringify(env)}: ${run.stderr}`);
    assert.match(run.stderr, new RegExp(`^roster ${args[0]}: ${variable} must `), run.stderr);
  }
});

test('the help of every command that reads a client setting names it', () => {
  const usage: Record<string, string> = { chat: CHAT_USAGE, users: USERS_USAGE };
  for (const setting of CLIENT_SETTINGS)
    for (const command of setting.commands)
      assert.ok(usage[command]!.includes(`$${setting.name}`), `roster ${command} --help names $${setting.name}`);
});

test("Config's comments name the variables index.ts reads, and restate no default", () => {
  const index = source('src/config/index.ts');
  const fields = [...index.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*(\w+)\??:/g)];
  assert.ok(fields.length > 30);
  for (const [, comment, field] of fields) {
    assert.doesNotMatch(comment!, /\bdefault\b/i, `Config.${field}: the default belongs to settings.ts`);
  }
  // AuthConfig, which Config holds, lives beside its builder in policy.ts.
  const comments = [...fields, ...source('src/config/policy.ts').matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\//g)]
    .map(([, comment]) => comment)
    .join('\n');
  for (const [, name] of index.matchAll(/\bS\.([A-Z][A-Z0-9_]+)\b/g))
    assert.ok(comments.includes(`\`${name}\``), `no comment of Config names \`${name}\``);
});

test('src/config/ has no import cycle, type-only imports included', () => {
  const folder = new URL('src/config/', ROOT);
  const graph = new Map<string, string[]>();
  for (const file of readdirSync(folder).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(new URL(file, folder), 'utf8');
    graph.set(
      file,
      [...text.matchAll(/from '\.\/([\w-]+)\.js'/g)].map(([, name]) => `${name}.ts`),
    );
  }
  const cycles: string[] = [];
  const visit = (file: string, path: string[]): void => {
    if (path.includes(file)) {
      cycles.push([...path.slice(path.indexOf(file)), file].join(' -> '));
      return;
    }
    for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
  };
  for (const file of graph.keys()) visit(file, []);
  assert.deepEqual(cycles, []);
});
