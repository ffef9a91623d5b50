/**
 * Real Roster processes (roster-process.ts) for the multi-instance tests: ephemeral ports, an
 * info log, a short shutdown, and the chat clients a test opened on each, all terminated when the test
 * ends.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { ChatClient, type Message } from './chat-client.js';
import { RosterProcess, type Exit } from './roster-process.js';

/** One Roster process on ephemeral ports, and the chat clients of the test on it. */
export class Instance {
  readonly process: RosterProcess;
  readonly clients: ChatClient[] = [];
  wsUrl = '';
  api = '';

  private constructor(t: TestContext, env: Record<string, string>) {
    this.process = new RosterProcess(t, {
      PORT: '0',
      WS_PORT: '0',
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: '2000',
      ...env,
    });
    t.after(() => {
      for (const client of this.clients) client.ws.terminate();
    });
  }

  /** Starts Roster with `env` (over ephemeral ports and an info log) and waits until it listens. */
  static async start(t: TestContext, env: Record<string, string>): Promise<Instance> {
    const instance = new Instance(t, env);
    const { port, wsPort } = await instance.process.listening();
    instance.wsUrl = `ws://127.0.0.1:${wsPort}`;
    instance.api = `http://127.0.0.1:${port}/api/v1`;
    if (env.REDIS_URL)
      assert.ok(
        instance.process.lines.some((l) => l.msg === 'chat bus connected'),
        'the bus was up before the ports opened',
      );
    return instance;
  }

  get child(): RosterProcess['child'] {
    return this.process.child;
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

  /** Sends `signal` and waits for the exit. */
  exit(signal: NodeJS.Signals): Promise<Exit> {
    return this.process.stop(signal, 10_000);
  }
}
