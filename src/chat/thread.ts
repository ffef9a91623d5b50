/**
 * The chat door as the REST thread sees it: a worker thread (worker.ts) that owns everything of the
 * chat, started, asked and stopped by message (thread-protocol.ts). Who owns what, and what happens
 * when the thread dies, is docs/architecture.md's "Two threads, one owner per state" (with Redis, the
 * other instances reap a dead thread's members and tell their leaves).
 */
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from '../config/index.js';
import { RosterError } from '../errors.js';
import { RETRY_AFTER } from '../protocol/http-headers.js';
import type { EngineFaults } from '../ops/engine-faults.js';
import type { RateLimiter } from '../edge/rate-limiter.js';
import type { Dependency, DependencyState } from '../ops/health.js';
import type { MemberRecord } from './bus.js';
import type { RedisBusOptions } from './redis/redis-bus.js';
import type { ChatThreadData, FromChat, Questions, ToChat } from './thread-protocol.js';

const WORKER = new URL('./worker.js', import.meta.url);
/** The longest wait before starting a chat thread again, and how long one must live to be trusted again. */
const MAX_RESTART_DELAY_MS = 30_000;
const HEALTHY_AFTER_MS = 60_000;
/** How long past the shutdown deadline the thread may take to report closed before it is terminated. */
const CLOSE_GRACE_MS = 2_000;
/**
 * How long a question to the chat thread (its metrics, its members) waits for the answer before it is
 * given its fallback: a live thread answers in milliseconds, so only one stuck in a loop, or dying,
 * takes this long, and the request that asked (a scrape, a member list) must not wait on it.
 */
export const ANSWER_TIMEOUT_MS = 2_000;

export interface ChatThreadOptions {
  config: Config;
  logger: Logger;
  faults: EngineFaults;
  /** RATE_LIMIT's one limiter (ChatProtection.limiter). */
  limiter?: RateLimiter | undefined;
  /** ChatThreadData.chatBus. */
  chatBus?: Partial<RedisBusOptions> | undefined;
}

export class ChatThread {
  readonly #options: ChatThreadOptions;
  readonly #log: Logger;
  readonly #destination: DestinationStream;
  #worker!: Worker;
  #startedAt = 0;
  #closing = false;
  #restarts = 0;
  #failuresInARow = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  /** When the next thread starts, while none is alive (its back-off after a death). */
  #restartAt = 0;
  /** Whether a thread is running (between its spawn and its exit): questions wait only on one that is. */
  #alive = false;
  /** Where it listens, once it does: a restart listens there again. */
  #bound: { port: number; host: string } | undefined;
  #restPort: number | undefined;
  #busState: DependencyState = { up: false, reason: 'connecting' };
  #nextQuestion = 0;
  /** Questions asked and not yet answered: each is answered `undefined` at its deadline or the thread's exit. */
  readonly #questions = new Map<number, { resolve: (value: never) => void; timer: NodeJS.Timeout }>();
  /** Waiters of the thread's next `listening`/`listenFailed`, `closed`, or its exit. */
  #onMessage = new Set<(message: FromChat | { type: 'exit'; code: number }) => void>();
  /** The chat bus in the health check (REDIS_URL): its state as the chat thread last told it. */
  readonly health: Dependency | undefined;
  /** Whether the chat thread serves its port: `chat` in the health check, shown only while it does not. */
  #doorState: DependencyState = { up: false, reason: 'chat thread starting' };
  readonly door: Dependency = { name: 'chat', critical: false, quietWhileUp: true, state: () => this.#doorState };

  constructor(options: ChatThreadOptions) {
    this.#options = options;
    this.#log = options.logger.child({ component: 'chat' });
    // The chat thread's lines join the process's one log stream, as they are.
    this.#destination = (options.logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym]!;
    this.health = options.config.redis ? { name: 'chat_bus', critical: false, state: () => this.#busState } : undefined;
    this.#spawn();
  }

  /** The thread now serving the chat (a test may end it, to see it come back). */
  get worker(): Worker {
    return this.#worker;
  }

  /** Times the thread died and was started again. */
  get restarts(): number {
    return this.#restarts;
  }

  #spawn(): void {
    const data: ChatThreadData = { config: this.#options.config, chatBus: this.#options.chatBus };
    const worker = new Worker(WORKER, { workerData: data });
    this.#worker = worker;
    this.#alive = true;
    this.#startedAt = Date.now();
    worker.on('message', (message: FromChat) => {
      try {
        this.#received(message);
      } catch (error) {
        // Whatever the chat thread says, the REST thread (and the users it holds) carries on.
        this.#log.error({ err: error, type: message.type }, 'a message of the chat thread could not be handled');
      }
    });
    worker.on('error', (error) => this.#log.error({ err: error }, 'the chat thread failed'));
    worker.on('exit', (code) => {
      if (worker !== this.#worker) return;
      this.#alive = false;
      for (const wake of this.#onMessage) wake({ type: 'exit', code });
      // A thread that is gone answers nothing more: what it was asked gets its fallback now.
      for (const id of [...this.#questions.keys()]) this.#answered(id, undefined);
      if (!this.#closing) this.#died(code);
    });
    if (this.#restPort !== undefined) this.#send({ type: 'restPort', port: this.#restPort });
  }

  #died(code: number): void {
    this.#restarts++;
    this.#busState = { up: false, reason: 'chat thread restarting' };
    this.#doorState = { up: false, reason: 'chat thread restarting' };
    this.#failuresInARow = Date.now() - this.#startedAt > HEALTHY_AFTER_MS ? 1 : this.#failuresInARow + 1;
    const delay = Math.min(MAX_RESTART_DELAY_MS, this.#failuresInARow === 1 ? 0 : 250 * 2 ** this.#failuresInARow);
    this.#log.error(
      { exitCode: code, restartInMs: delay },
      'the chat thread died; its connections are lost, starting it again',
    );
    this.#restartAt = Date.now() + delay;
    this.#restartTimer = setTimeout(() => {
      if (this.#closing) return;
      this.#spawn();
      const bound = this.#bound;
      if (bound)
        this.listen(bound.port, bound.host).catch((error: unknown) => {
          this.#doorState = { up: false, reason: `chat port not listening (${errorCode(error)})` };
          this.#log.error({ err: error }, 'the restarted chat thread could not listen');
        });
    }, delay);
    this.#restartTimer.unref();
  }

  #send(message: ToChat): void {
    this.#worker.postMessage(message);
  }

  #received(message: FromChat): void {
    switch (message.type) {
      case 'log':
        this.#destination.write(message.line);
        return;
      case 'fault':
        // Logged by the chat thread; counted here, where the metric is.
        this.#options.faults.report(message.engine, undefined, { log: false });
        return;
      case 'bus':
        this.#busState = message.state;
        return;
      case 'answer':
        return this.#answered(message.id, message.value);
      case 'limit':
        return void this.#limit(message.id, message.check, message.key);
      default:
        for (const wake of this.#onMessage) wake(message);
    }
  }

  async #limit(id: number, check: 'spent' | 'refusal', key: string): Promise<void> {
    const worker = this.#worker;
    let refusal;
    try {
      refusal = await this.#options.limiter?.[check](key);
    } catch (error) {
      this.#log.error({ err: error }, 'a chat rate-limit check failed');
    }
    if (worker !== this.#worker) return;
    const shape = refusal && { code: refusal.code, message: refusal.message, headers: refusal.headers };
    this.#send({ type: 'limited', id, refusal: shape });
  }

  /** The next of the thread's messages that `pick` returns a value for (its exit counts as one). */
  #next<T>(pick: (message: FromChat | { type: 'exit'; code: number }) => T | undefined): Promise<T> {
    return new Promise((resolve) => {
      const wake = (message: FromChat | { type: 'exit'; code: number }) => {
        const value = pick(message);
        if (value === undefined) return;
        this.#onMessage.delete(wake);
        resolve(value);
      };
      this.#onMessage.add(wake);
    });
  }

  /** Opens the chat port; rejects as `server.listen` would (an error with its `code`). */
  async listen(port: number, host: string): Promise<AddressInfo> {
    const outcome = this.#next((message) =>
      message.type === 'listening' || message.type === 'listenFailed' || message.type === 'exit' ? message : undefined,
    );
    this.#send({ type: 'listen', port, host });
    const result = await outcome;
    if (result.type === 'listening') {
      this.#bound = { port: result.port, host };
      this.#doorState = { up: true };
      return { port: result.port, address: host, family: host.includes(':') ? 'IPv6' : 'IPv4' };
    }
    if (result.type === 'exit') throw new Error(`the chat thread exited (${result.code}) before listening`);
    throw Object.assign(new Error(result.message), { code: result.code });
  }

  /** The REST port once bound: the chat's origin check with AUTH on compares against it. */
  setRestPort(port: number): void {
    this.#restPort = port;
    this.#send({ type: 'restPort', port });
  }

  /** Every connection gets 1001, the bus says goodbye, the thread ends; terminated if it takes too long. */
  async close(timeoutMs: number): Promise<void> {
    this.#closing = true;
    clearTimeout(this.#restartTimer);
    const worker = this.#worker;
    const done = this.#next((message) => (message.type === 'closed' || message.type === 'exit' ? true : undefined));
    this.#send({ type: 'close', timeoutMs });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs + CLOSE_GRACE_MS)));
    await Promise.race([done, late]);
    clearTimeout(timer);
    await worker.terminate();
  }

  /**
   * The chat thread's answer to `question`, or undefined when it gives none: at once while no thread
   * is alive (a message to a thread that has exited is dropped, and its successor never hears it),
   * else at ANSWER_TIMEOUT_MS or when the thread exits first.
   */
  #ask<Q extends keyof Questions>(question: Q): Promise<Questions[Q] | undefined> {
    if (!this.#alive || this.#closing) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const id = ++this.#nextQuestion;
      const timer = setTimeout(() => this.#answered(id, undefined), ANSWER_TIMEOUT_MS);
      timer.unref();
      this.#questions.set(id, { resolve: resolve as (value: never) => void, timer });
      this.#send({ type: 'ask', id, question });
    });
  }

  #answered(id: number, value: Questions[keyof Questions] | undefined): void {
    const question = this.#questions.get(id);
    if (!question) return; // answered already: a late answer after its deadline
    this.#questions.delete(id);
    clearTimeout(question.timer);
    question.resolve(value as never);
  }

  /**
   * ChatRoom.members, asked of the chat thread; 503 with Retry-After when it cannot tell them (it is
   * being started again, did not answer in time, or its bus cannot read the shared list).
   */
  async members(): Promise<MemberRecord[]> {
    const members = await this.#ask('members');
    if (members !== undefined) return members;
    const wait = this.#alive ? 1 : Math.max(1, Math.ceil((this.#restartAt - Date.now()) / 1000));
    throw new RosterError(
      'SERVICE_UNAVAILABLE',
      this.#alive
        ? 'The chat’s member list cannot be read now; try again shortly'
        : 'The chat is being started again; try again shortly',
      { headers: { [RETRY_AFTER]: String(wait) } },
    );
  }

  /** ChatRoom.localMembers, asked of the chat thread: none while it cannot answer. */
  async localMembers(): Promise<MemberRecord[]> {
    return (await this.#ask('localMembers')) ?? [];
  }

  /** How many members this instance holds. */
  async size(): Promise<number> {
    return (await this.localMembers()).length;
  }

  /** The chat thread's metrics, in the exposition format; none (empty) while it cannot answer. */
  async metrics(): Promise<string> {
    return (await this.#ask('metrics')) ?? '';
  }
}

/** An error's code (EADDRINUSE, say) for the health reply, which names no hosts. */
function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' ? code : 'error';
}
