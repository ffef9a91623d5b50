/**
 * `roster hash-password` and `roster token` as real processes, and what they print used against a
 * real server: the hash as a BASIC_USERS entry, the token as a bearer credential under AUTH=jwt.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Cli, request, startRoster, TEST_MS } from '../support/index.js';

const SECRET = 'a-test-secret-that-is-at-least-32-bytes-long';

describe('roster hash-password', () => {
  test(
    'reads the password from a pipe and prints a scrypt hash that AUTH=basic accepts',
    { timeout: TEST_MS },
    async (t) => {
      const cli = new Cli(t, ['hash-password']);
      cli.child.stdin.end('correct horse battery staple\n');
      assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
      const hash = cli.stdout.text.trim();
      assert.match(hash, /^scrypt\$/);
      assert.doesNotMatch(cli.stdout.text + cli.stderr.text, /correct horse/, 'the password is never printed');

      const roster = await startRoster({ AUTH: 'basic', BASIC_USERS: `ada:${hash}` });
      try {
        const basic = (password: string) => ({
          Authorization: `Basic ${Buffer.from(`ada:${password}`).toString('base64')}`,
        });
        assert.equal(
          (await request(`${roster.api}/users`, { headers: basic('correct horse battery staple') })).status,
          200,
        );
        assert.equal((await request(`${roster.api}/users`, { headers: basic('wrong') })).status, 401);
      } finally {
        await roster.stop();
      }
    },
  );

  test('two hashes of one password differ (a fresh salt each time)', { timeout: TEST_MS }, async (t) => {
    const hashes: string[] = [];
    for (let i = 0; i < 2; i++) {
      const cli = new Cli(t, ['hash-password']);
      cli.child.stdin.end('same password\n');
      assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
      hashes.push(cli.stdout.text.trim());
    }
    assert.notEqual(hashes[0], hashes[1]);
  });
});

describe('roster token', () => {
  test(
    'mints an HS256 token with the given claims that AUTH=jwt accepts, as admin or reader',
    { timeout: TEST_MS },
    async (t) => {
      const mint = async (role: string) => {
        const cli = new Cli(t, ['token', '--sub', 'u-1', '--name', 'Ada', '--role', role, '--expires-in', '5m'], {
          JWT_SECRET: SECRET,
        });
        assert.deepEqual(await cli.exited(), { code: 0, signal: null }, cli.describe());
        return cli.stdout.text.trim();
      };
      const admin = await mint('admin');
      const reader = await mint('user');
      const [header, payload] = admin
        .split('.')
        .slice(0, 2)
        .map((part) => JSON.parse(Buffer.from(part, 'base64url').toString()));
      assert.equal(header.alg, 'HS256');
      assert.equal(payload.sub, 'u-1');
      assert.equal(payload.name, 'Ada');
      assert.equal(payload.role, 'admin');
      assert.ok(payload.exp - payload.iat === 300, 'expires in 5 minutes');

      const roster = await startRoster({ AUTH: 'jwt', JWT_SECRET: SECRET });
      try {
        const create = (token: string) =>
          request(`${roster.api}/users`, {
            method: 'POST',
            headers: { Authorization: `Bearer ${token}` },
            body: { name: 'Minted', email: `minted.${token.length}.${Math.random()}@example.com` },
          });
        assert.equal((await create(admin)).status, 201);
        assert.equal((await create(reader)).status, 403);
        assert.equal(
          (await request(`${roster.api}/users`, { headers: { Authorization: `Bearer ${reader}` } })).status,
          200,
        );
      } finally {
        await roster.stop();
      }
    },
  );

  test(
    'refuses to mint without --sub or with a short secret (exit 2, nothing on stdout)',
    { timeout: TEST_MS },
    async (t) => {
      for (const [args, env] of [
        [['token', '--role', 'admin'], { JWT_SECRET: SECRET }],
        [['token', '--sub', 'x'], { JWT_SECRET: 'short' }],
      ] as const) {
        const cli = new Cli(t, [...args], env);
        assert.deepEqual(await cli.exited(), { code: 2, signal: null }, cli.describe());
        assert.equal(cli.stdout.text, '');
        assert.match(cli.stderr.text, /^roster token: /);
      }
    },
  );
});
