/**
 * Real Roster processes (`node dist/src/main.js`) on ephemeral ports, for the multi-instance tests:
 * each instance's log lines are kept (its ports come from the "Roster is listening" line), its chat
 * clients are tracked, and everything is killed when the test ends, whatever the outcome.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ChatClient, within } from './helpers.js';

const MAIN = fileURLToPath(new URL('../src/main.js', import.meta.url));
const START_MS = 10_000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Message = any;

/** One Roster process on ephemeral ports, its log lines kept. */
export class Instance {
  readonly child: ChildProcess;
  readonly lines: Record<string, unknown>[] = [];
  readonly clients: ChatClient[] = [];
  #wake = new Set<() => void>();
  wsUrl = '';
  api = '';

  constructor(t: TestContext, env: Record<string, string>) {
    this.child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', PORT: '0', WS_PORT: '0', LOG_LEVEL: 'info', SHUTDOWN_TIMEOUT_MS: '2000', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    t.after(() => {
      for (const client of this.clients) client.ws.terminate();
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      try {
        this.lines.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        this.lines.push({ msg: line });
      }
      for (const wake of this.#wake) wake();
    });
  }

  /** Starts Roster with `env` (over ephemeral ports and an info log) and waits until it listens. */
  static async start(t: TestContext, env: Record<string, string>): Promise<Instance> {
    const instance = new Instance(t, env);
    const listening = await instance.line((l) => l.msg === 'Roster is listening', START_MS);
    instance.wsUrl = `ws://127.0.0.1:${listening.wsPort as number}`;
    instance.api = `http://127.0.0.1:${listening.port as number}/api/v1`;
    if (env.REDIS_URL) assert.ok(instance.lines.some((l) => l.msg === 'chat bus connected'), 'the bus was up before the ports opened');
    return instance;
  }

  /** The first log line that matches, waiting for it up to `ms`. */
  async line(predicate: (line: Record<string, unknown>) => boolean, ms: number): Promise<Record<string, unknown>> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.lines.find(predicate);
      if (found) return found;
      if (this.child.exitCode !== null || this.child.signalCode !== null) throw new Error(`Roster exited; log: ${JSON.stringify(this.lines)}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for a log line; log: ${JSON.stringify(this.lines)}`);
      await within(new Promise<void>((resolve) => this.#wake.add(resolve)), Math.max(1, deadline - Date.now()), 'a log line').catch(() => {});
      this.#wake.clear();
    }
  }

  async join(): Promise<{ client: ChatClient; welcome: Message }> {
    const client = new ChatClient(this.wsUrl);
    client.ws.on('error', () => {});
    this.clients.push(client);
    return { client, welcome: await client.next((m) => m.type === 'system') };
  }

  /** The count a newcomer here is welcomed with; the newcomer leaves again at once. */
  async welcomeCount(): Promise<number> {
    const { client, welcome } = await this.join();
    await client.close();
    const match = /(\d+) users? online/.exec(welcome.message as string);
    assert.ok(match, `no count in ${JSON.stringify(welcome)}`);
    return Number(match[1]);
  }

  async exit(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const exited = once(this.child, 'exit');
    this.child.kill(signal);
    const [code, by] = (await within(exited, 10_000, `exit after ${signal}`)) as [number | null, NodeJS.Signals | null];
    return { code, signal: by };
  }
}
