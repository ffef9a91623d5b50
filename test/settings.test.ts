/**
 * Settings are declared once (src/config/settings.ts): the README's settings table is that list, row
 * for row, and every declared default is what loadConfig gives for an empty environment.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { SETTINGS } from '../src/config/index.js';

test('the README settings table is the declared settings, row for row (name, default, meaning)', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const table = readme.slice(readme.indexOf('| Variable | Default | Meaning |'));
  const rows = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2);
  const expected = SETTINGS.map((setting) => `| \`${setting.name}\` | ${setting.shown} | ${setting.help} |`);
  assert.deepEqual(rows, expected, `the README's table should read:\n${expected.join('\n')}`);
});

test('every setting is declared once, and its reader accepts the default it shows when that is a plain value', () => {
  const names = SETTINGS.map((setting) => setting.name);
  assert.equal(new Set(names).size, names.length, 'a setting declared twice');
  for (const setting of SETTINGS) {
    const plain = /^`([^`]+)`$/.exec(setting.shown);
    if (!plain || setting.fallback === undefined) continue;
    assert.deepEqual(setting.parse(plain[1]!, setting.name), setting.fallback, `${setting.name}: ${setting.shown}`);
  }
});
