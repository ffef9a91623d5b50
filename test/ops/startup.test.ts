/**
 * Start-up failures of the real entry point (`node dist/src/main.js`, a child process): a REST port in
 * use, a chat port in use, an unreachable database, a bad setting. Each gives exactly one plain line on
 * stderr naming the setting and the cause, its own exit status, and nothing announced as listening;
 * the same with LOG_LEVEL=silent.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { RosterProcess } from '../support/index.js';

const EXIT_MS = 15_000;
const TEST_MS = 30_000;

/** A TCP port held open by this test, so Roster finds it in use. */
async function occupiedPort(t: TestContext): Promise<number> {
  const server: Server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

/** A port nothing listens on (bound and released at once). */
async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

async function start(t: TestContext, env: Record<string, string>): Promise<Outcome> {
  const roster = new RosterProcess(t, env);
  const { code } = await roster.exited(EXIT_MS);
  // Each recorded line ended with a newline (or the output did): an empty record is an empty stdout.
  return { code, stdout: roster.stdout.map((line) => `${line}\n`).join(''), stderr: roster.stderr };
}

interface Case {
  name: string;
  env: (t: TestContext) => Promise<Record<string, string>>;
  status: number;
  line: (env: Record<string, string>) => RegExp;
}

const cases: Case[] = [
  {
    name: 'the REST port in use',
    env: async (t) => ({ PORT: String(await occupiedPort(t)), WS_PORT: '0' }),
    status: 3,
    line: (env) => new RegExp(`^roster: PORT ${env.PORT} is already in use on 127\\.0\\.0\\.1$`),
  },
  {
    // The chat port opens first; had the REST port opened and announced itself, stdout would say so.
    name: 'the chat port in use',
    env: async (t) => ({ PORT: '0', WS_PORT: String(await occupiedPort(t)) }),
    status: 3,
    line: (env) => new RegExp(`^roster: WS_PORT ${env.WS_PORT} is already in use on 127\\.0\\.0\\.1$`),
  },
  {
    name: 'an unreachable database',
    env: async () => ({
      PORT: '0',
      WS_PORT: '0',
      DATABASE_URL: `postgres://roster@127.0.0.1:${await closedPort()}/roster`,
    }),
    status: 4,
    line: (env) =>
      new RegExp(`^roster: DATABASE_URL: connection refused at 127\\.0\\.0\\.1:${new URL(env.DATABASE_URL!).port}$`),
  },
  {
    name: 'a bad setting',
    env: async () => ({ PORT: '0', WS_PORT: '0', MAX_PAGE_SIZE: 'many' }),
    status: 2,
    line: () => /^roster: invalid configuration: MAX_PAGE_SIZE must be a whole number .*\(got "many"\)$/,
  },
];

describe('start-up failures: one stderr line, an exit status per kind', () => {
  for (const { name, env, status, line } of cases) {
    for (const level of ['info', 'silent']) {
      test(`${name}, LOG_LEVEL=${level}: exit ${status}, one line`, { timeout: TEST_MS }, async (t) => {
        const settings = { ...(await env(t)), LOG_LEVEL: level };
        const outcome = await start(t, settings);
        assert.equal(outcome.code, status, JSON.stringify(outcome));
        const lines = outcome.stderr.split('\n');
        assert.equal(lines.pop(), '', 'the line ends with a newline');
        assert.equal(lines.length, 1, `exactly one stderr line: ${JSON.stringify(outcome.stderr)}`);
        assert.match(lines[0]!, line(settings));
        assert.doesNotMatch(outcome.stdout, /listening/i, 'nothing announced as listening');
        assert.doesNotMatch(outcome.stdout, /"level":(50|60)/, 'no error log lines (the stderr line says it)');
        if (level === 'silent') assert.equal(outcome.stdout, '');
      });
    }
  }
});
