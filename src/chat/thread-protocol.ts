/**
 * What crosses between the REST thread (server.ts, thread.ts) and the chat thread (worker.ts): plain
 * structured-clone values only, each message tagged by `type`. Each state has one owner, and the other
 * thread asks (docs/architecture.md, "Two threads, one owner per state").
 */
import type { Config } from '../config/index.js';
import type { ErrorCode } from '../errors.js';
import type { MemberRecord } from './bus.js';
import type { RedisBusOptions } from './redis/redis-bus.js';
import type { DependencyState } from '../ops/health.js';

/** What the chat thread is started with (its workerData). */
export interface ChatThreadData {
  config: Config;
  /** Tuning of the Redis bus, for tests (server.ts ServerParts). */
  chatBus?: Partial<RedisBusOptions> | undefined;
}

/** A RosterError as it crosses: rebuilt on the other side. */
export interface ErrorShape {
  code: ErrorCode;
  message: string;
  headers?: Readonly<Record<string, string>> | undefined;
}

/** What the chat thread can be asked, and what it answers. */
export interface Questions {
  members: MemberRecord[];
  localMembers: MemberRecord[];
  metrics: string;
}

/** REST thread to chat thread. */
export type ToChat =
  | { type: 'listen'; port: number; host: string }
  | { type: 'close'; timeoutMs: number }
  | { type: 'ask'; id: number; question: keyof Questions }
  | { type: 'restPort'; port: number }
  | { type: 'limited'; id: number; refusal: ErrorShape | undefined };

/** Chat thread to REST thread. */
export type FromChat =
  | { type: 'listening'; port: number }
  | { type: 'listenFailed'; code: string | undefined; message: string }
  | { type: 'closed' }
  | { type: 'answer'; id: number; value: Questions[keyof Questions] }
  | { type: 'log'; line: string }
  | { type: 'fault'; engine: 'chat_bus' }
  | { type: 'bus'; state: DependencyState }
  /** A handshake's rate-limit check, asked of the one limiter (RateLimiter.spent or .refusal). */
  | { type: 'limit'; id: number; check: 'spent' | 'refusal'; key: string };
