/**
 * The `roster` command itself, as a real process: the help, the dispatch of subcommands, and `serve`
 * (also what a bare `roster` does) running the service as `node dist/src/main.js` does, here with a
 * `roster chat` talking to it, and stopping with exit 0 on SIGTERM.
 */
import assert from 'node:assert/strict';
import { accessSync, constants, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Cli, ROSTER, TEST_MS, type Json } from '../support/index.js';

describe('roster: help and dispatch', () => {
  for (const flag of ['--help', '-h', 'help']) {
    test(`${flag} lists every subcommand with its usage`, { timeout: TEST_MS }, async (t) => {
      const cli = new Cli(t, [flag]);
      assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
      const help = cli.stdout.text;
      assert.match(help, /^Usage: roster \[command\]/);
      assert.match(help, /^ {2}serve +\S/m);
      assert.match(help, /^ {2}chat +\S/m);
      assert.match(help, /^Usage: roster serve$/m);
      assert.match(help, /^Usage: roster chat \[URL\] \[--json\] \[--no-reconnect\] \[--history N\]$/m);
      assert.equal(cli.stderr.text, '');
    });
  }

  test('an unknown command: exit 2 and a pointer to --help on stderr', { timeout: TEST_MS }, async (t) => {
    const cli = new Cli(t, ['frobnicate']);
    assert.deepEqual(await cli.exited(), { code: 2, signal: null }, cli.describe());
    assert.equal(cli.stderr.text, `roster: unknown command "frobnicate"\nRun 'roster --help' for usage.\n`);
    assert.equal(cli.stdout.text, '');
  });

  test('serve --help; serve takes no arguments', { timeout: TEST_MS }, async (t) => {
    const help = new Cli(t, ['serve', '--help']);
    assert.deepEqual(await help.exited(), { code: 0, signal: null }, help.describe());
    assert.match(help.stdout.text, /^Usage: roster serve\n/);

    const extra = new Cli(t, ['serve', '--port', '5000']);
    assert.deepEqual(await extra.exited(), { code: 2, signal: null }, extra.describe());
    assert.match(extra.stderr.text, /^roster serve: takes no arguments/);
  });

  test('the built file is a script: shebang, and executable where the build ran', () => {
    assert.ok(readFileSync(ROSTER, 'utf8').startsWith('#!/usr/bin/env node\n'));
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as Json;
    assert.equal(pkg.bin.roster, 'dist/src/cli/roster.js');
    if (process.platform !== 'win32') accessSync(ROSTER, constants.X_OK);
  });
});

describe('roster serve', () => {
  for (const args of [['serve'], []]) {
    const name = ['roster', ...args].join(' ');
    test(
      `${name}: starts the service (logs where it listens), serves chat, SIGTERM -> exit 0`,
      { timeout: TEST_MS },
      async (t) => {
        const server = new Cli(t, args, { PORT: '0', WS_PORT: '0', LOG_LEVEL: 'info' });
        const listening = await server.waitForJson(
          (line) => line.msg === 'Roster is listening',
          '"Roster is listening"',
        );
        assert.equal(typeof listening.port, 'number');
        assert.equal(typeof listening.wsPort, 'number');

        const health = await fetch(`http://127.0.0.1:${listening.port}/api/v1/health`);
        assert.equal(health.status, 200);

        const chat = new Cli(t, ['chat', `ws://127.0.0.1:${listening.wsPort}`, '--json']);
        chat.child.stdin.end('hello from roster chat\n');
        assert.deepEqual(await chat.exited(), { code: 0, signal: null }, chat.describe());
        assert.deepEqual(
          chat.json.map((m) => [m.type, m.message]),
          [
            ['system', 'Welcome to the chat! 1 user online.'],
            ['chat', 'hello from roster chat'],
          ],
        );

        server.child.kill('SIGTERM');
        assert.deepEqual(await server.exited(), { code: 0, signal: null }, server.describe());
        assert.equal(server.stderr.text, '');
      },
    );
  }

  test(
    'a bad setting stops it as it stops main.js: exit 2, one line naming the variable',
    { timeout: TEST_MS },
    async (t) => {
      const cli = new Cli(t, ['serve'], { PORT: 'abc' });
      assert.deepEqual(await cli.exited(), { code: 2, signal: null }, cli.describe());
      assert.match(cli.stderr.text, /^roster: invalid configuration: PORT\b.*\n$/);
    },
  );
});
