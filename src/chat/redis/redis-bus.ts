/**
 * The chat bus of several instances: Redis pub/sub on one channel, with two ioredis connections (a
 * subscribing connection can do nothing else).
 *
 * - Delivery: each instance publishes its members' events on its one publishing connection, in order;
 *   Redis hands every subscriber each publication once and keeps one publisher's order, so a sender's
 *   messages reach every member in the order sent. An instance skips its own publications (its members
 *   already have them).
 * - Counts: every publication carries the sender's member count after the event, and each instance
 *   repeats its count every `heartbeatMs`. An instance not heard from for `ttlMs` (killed, cut off) no
 *   longer counts; one that stops cleanly says goodbye and is dropped at once. A (re)connected instance
 *   says hello, and the others answer with their counts at once instead of at their next heartbeat.
 * - Outages: nothing is queued (no offline queue, no resending): what happens while Redis is away reaches
 *   this instance's members only, is counted, and is reported once when the bus is back. ioredis
 *   reconnects by itself; the health check says `chat_bus: down` meanwhile, and the counts of the other
 *   instances expire, so the room's count falls back to this instance's.
 * - Order of joins: the order Redis relays them in (docs/decisions.md, "Across instances, the order of
 *   joins"); a member here is *joining* until its own join comes back (joins here keep their publication
 *   order). The bus keeps this state, not the room: it alone sees the relay and whether there is one.
 *
 * This file holds the connections, their state and the fan-out; the rest is one concern a file
 * (channel.ts, presence.ts, history.ts, scripts.ts: docs/architecture.md).
 */
import { EngineFaults } from '../../ops/engine-faults.js';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { Dependency, DependencyState } from '../../ops/health.js';
import { timestamp } from '../../clock.js';
import type { BusRoom, ChatBus, MemberRecord, Presence, SharedMessage } from '../bus.js';
import { oncePerTurn } from '../outbox.js';
import { decodeAll, type BusLink, type Envelope } from './redis-channel.js';
import { RedisHistory } from './redis-history.js';
import { RedisPresence } from './redis-presence.js';
import { withScripts, type Scripted } from './redis-scripts.js';

export interface RedisBusOptions {
  /** How often an instance repeats its member count. */
  heartbeatMs: number;
  /** An instance not heard from for this long no longer counts; also how long a Redis reply may take. */
  ttlMs: number;
  /**
   * Publications sent but not yet acknowledged, at most; past it Redis is not keeping up, and further
   * events are dropped (and counted) rather than held in memory until `ttlMs` gives up on Redis.
   */
  maxPending: number;
  /** CHAT_HISTORY: chat messages kept in the shared stream; 0: none (chat is published only). */
  history: number;
  /** CHAT_HISTORY_BYTES: at most this many bytes of messages in the stream. */
  historyBytes: number;
  /** Hears each change of `state()`, before it is logged (the chat thread tells the health check). */
  onState?: (() => void) | undefined;
}

const BUS_DEFAULTS: RedisBusOptions = {
  heartbeatMs: 1_000,
  ttlMs: 4_000,
  maxPending: 10_000,
  history: 0,
  historyBytes: 16 * 1024 * 1024,
};

/** While the bus is up, a silent instance is counted until the reaper has told its leaves, or this many ttlMs. */
const GRACE = 3;

/** The channel's name after ioredis's `keyPrefix` (settable in REDIS_URL as `?keyPrefix=`), so deployments can share one Redis. */
const DEFAULT_PREFIX = 'roster:';
const CHANNEL = 'chat';
/** Reconnection attempts are this far apart at most, so the bus is back within about a second of Redis. */
const MAX_RETRY_DELAY_MS = 1_000;
/** How long `start` waits for Redis before Roster opens its ports without it. */
const START_WAIT_MS = 3_000;

interface Peer {
  count: number;
  heardAt: number;
}

export class RedisBus implements ChatBus, Dependency {
  readonly name = 'chat_bus';
  readonly critical = false;
  readonly #id = randomUUID();
  readonly #channel: string;
  readonly #pub: Scripted;
  readonly #sub: Redis;
  readonly #log: Logger;
  readonly #options: RedisBusOptions;
  readonly #peers = new Map<string, Peer>();
  readonly history: RedisHistory | undefined;
  readonly #presence: RedisPresence;
  #room: BusRoom | undefined;
  #pubReady = false;
  #subscribed = false;
  /** What the log and health last said; `starting` until the first connection succeeds or fails. */
  #reported: 'starting' | 'up' | 'down' = 'starting';
  /** Why the bus is down, from the last connection error; undefined while up. */
  #reason: string | undefined;
  /** Events of this instance's members that did not reach the other instances during the current outage. */
  #lost = 0;
  #heartbeat: NodeJS.Timeout | undefined;
  /** Events dropped since Redis fell behind (logged once when it starts, once when it ends). */
  #behind: number | undefined;
  #closing = false;
  #settleStart: () => void = () => {};
  /** Members here whose join is out but not yet back from Redis, and when it went out (oldest first). */
  readonly #joining = new Map<string, number>();

  constructor(url: string, logger: Logger, options: Partial<RedisBusOptions> = {}, faults = new EngineFaults()) {
    this.#log = logger.child({ component: 'chat_bus' });
    this.#options = { ...BUS_DEFAULTS, ...options };
    const connection: RedisOptions = {
      lazyConnect: true,
      // An outage must not pile up messages in memory, nor deliver old ones late (or twice) afterwards.
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      autoResubscribe: false, // subscribed anew on every 'ready' (below), so the state follows the reply
      retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RETRY_DELAY_MS),
      connectTimeout: START_WAIT_MS,
      // A connection whose replies stop (Redis hung, network gone without a reset) is dropped and redialled.
      socketTimeout: this.#options.ttlMs,
    };
    this.#pub = withScripts(new Redis(url, { ...connection, connectionName: 'roster-chat-pub' }));
    this.#sub = new Redis(url, { ...connection, connectionName: 'roster-chat-sub' });
    this.#channel = `${this.#pub.options.keyPrefix || DEFAULT_PREFIX}${CHANNEL}`;
    const link: BusLink = {
      id: this.#id,
      pub: this.#pub,
      channel: this.#channel,
      keys: `${this.#channel}:`,
      send: (envelope, run, always, echoed) => this.#send(envelope, run, always, echoed),
    };
    this.#presence = new RedisPresence(link);
    const { history, historyBytes } = this.#options;
    if (history > 0) this.history = new RedisHistory(link, history, historyBytes);

    this.#pub.on('ready', () => {
      this.#pubReady = true;
      this.#maybeUp();
    });
    this.#sub.on('ready', () => {
      this.#sub.subscribe(this.#channel).then(
        () => {
          this.#subscribed = true;
          this.#maybeUp();
        },
        ignore, // the connection went away meanwhile ('close'), and 'ready' comes again
      );
    });
    this.#sub.on('message', (channel: string, text: string) => {
      if (channel === this.#channel) this.#received(text);
    });
    for (const redis of [this.#pub, this.#sub]) {
      // The reason, and a count: a connection that fails is also closed, and 'close' is what says it is
      // down (and logs it once per outage). Without this listener ioredis' 'error' would end the process.
      redis.on('error', (error: unknown) => {
        this.#reason = error instanceof Error ? error.message : String(error);
        faults.report('chat_bus', error, { log: false });
      });
      redis.on('close', () => {
        if (redis === this.#pub) this.#pubReady = false;
        else this.#subscribed = false;
        this.#down();
      });
    }
  }

  attach(room: BusRoom): void {
    this.#room = room;
  }

  /**
   * Connects; resolves once subscribed, or once the first attempt has failed (Roster then runs on its
   * own until Redis is reachable), within a few seconds either way.
   */
  async start(): Promise<void> {
    const settled = new Promise<void>((resolve) => {
      this.#settleStart = resolve;
    });
    // Failures are reported through the events above; ioredis keeps retrying.
    this.#pub.connect().catch(() => {});
    this.#sub.connect().catch(() => {});
    this.#heartbeat = setInterval(() => this.#beat(), this.#options.heartbeatMs);
    this.#heartbeat.unref();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise<void>((resolve) => (timer = setTimeout(resolve, START_WAIT_MS)))]);
    clearTimeout(timer);
  }

  publish(message: SharedMessage, localCount: number, presence?: Presence): void {
    const envelope: Envelope = { i: this.#id, n: localCount, m: message };
    if (!presence) {
      this.#send(envelope);
    } else if ('leave' in presence) {
      this.#joining.delete(presence.leave);
      this.#presence.publish(envelope, presence);
    } else {
      envelope.j = presence.join.id;
      // Joining only if its join comes back to this instance: sent (at the end of this turn), and while subscribed.
      this.#presence.publish(envelope, presence);
      if (this.#pub.status === 'ready' && this.#subscribed) this.#joining.set(presence.join.id, performance.now());
    }
  }

  remoteCount(): number {
    const now = performance.now();
    // While the bus is up, a silent instance is the reaper's to count out, leave by leave.
    const ttl = this.#reported === 'up' ? GRACE * this.#options.ttlMs : this.#options.ttlMs;
    let total = 0;
    for (const [id, peer] of this.#peers) {
      if (now - peer.heardAt > ttl) this.#peers.delete(id);
      else total += peer.count;
    }
    return total;
  }

  members(): Promise<MemberRecord[]> {
    return this.#presence.members();
  }

  state(): DependencyState {
    return this.#reported === 'up' ? { up: true } : { up: false, reason: this.#reason ?? 'connecting' };
  }

  /** Says goodbye (the others stop counting this instance at once) and closes both connections. */
  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#heartbeat);
    // On the publishing connection before its QUIT, so it goes out after the members' leaves.
    if (this.#pub.status === 'ready') this.#presence.bye().catch(ignore);
    await Promise.all([quit(this.#pub), quit(this.#sub)]);
  }

  /** BusLink.send (channel.ts); its bound on unanswered commands is `maxPending`. */
  #send(envelope: Envelope, run?: (text: string) => Promise<unknown>, always = false, echoed = false): boolean {
    this.#presence.flush(); // this turn's joins and leaves go first (a no-op when this is them)
    // `echoed` waits for both connections: published while unsubscribed, it would reach every instance but this one.
    if (this.#pub.status !== 'ready' || (echoed && !this.#subscribed)) {
      if (envelope.m) this.#lost++;
      return false;
    }
    if (!always && this.#pub.commandQueue.length >= this.#options.maxPending) {
      if (this.#behind === undefined) {
        this.#log.warn(
          { pending: this.#options.maxPending },
          'chat bus falling behind: events reach this instance’s members only until Redis catches up',
        );
        this.#behind = 0;
      }
      if (envelope.m) this.#behind++;
      return false;
    }
    if (this.#behind !== undefined) {
      this.#log.info({ lost: this.#behind }, 'chat bus caught up');
      this.#behind = undefined;
    }
    const text = JSON.stringify(envelope);
    (run ? run(text) : this.#pub.publish(this.#channel, text)).catch(envelope.m ? this.#lostOne : ignore);
    return true;
  }

  readonly #lostOne = (): void => {
    this.#lost++;
  };

  #beat(): void {
    this.#stillJoining();
    this.#presence.beat({ i: this.#id, n: this.#room?.localCount() ?? 0 }, this.#options.ttlMs);
    if (this.#pub.status === 'ready') this.#presence.reap(timestamp()).catch(ignore);
    // A subscribed connection otherwise only listens: the ping lets socketTimeout notice a dead one.
    if (this.#subscribed) this.#sub.ping().catch(ignore);
  }

  #sync(): void {
    this.#joining.clear(); // no order to wait for across a gap: everyone here has joined
    this.#presence.sync(this.#room?.localMembers() ?? [], this.#options.ttlMs, this.#options.history);
  }

  #received(text: string): void {
    const envelopes = decodeAll(text);
    if (envelopes === undefined) {
      this.#log.debug({ text: text.slice(0, 200) }, 'ignoring a chat bus message that is not Roster’s');
      return;
    }
    for (const envelope of envelopes) this.#receivedOne(envelope);
  }

  #receivedOne(envelope: Envelope): void {
    if (envelope.i === this.#id) {
      // Own join back: from now on its member comes after every join Redis relays.
      if (envelope.j !== undefined) this.#joining.delete(envelope.j);
      // Own chat back with its id: for the members here that asked for ids.
      else if (envelope.s !== undefined && envelope.m) this.#room?.deliver(envelope.m, envelope.s, true);
      // Reaped while alive (Redis did not hear this instance for ttlMs): its members are written anew.
      else if (envelope.r && envelope.b && !this.#closing) this.#sync();
      return;
    }
    if (envelope.r) {
      // On behalf of a gone instance: only where it was counted, its count stepping down with each leave.
      const peer = this.#peers.get(envelope.i);
      if (!peer) return;
      if (envelope.b) this.#peers.delete(envelope.i);
      else peer.count = envelope.n;
      if (envelope.m) this.#room?.deliver(envelope.m);
      return;
    }
    if (envelope.b) {
      this.#peers.delete(envelope.i);
      return;
    }
    this.#peers.set(envelope.i, { count: envelope.n, heardAt: performance.now() });
    if (envelope.h) this.#answerSoon();
    if (envelope.m?.type === 'user_join' && this.#stillJoining())
      this.#room?.deliver(envelope.m, undefined, false, this.#joining.keys());
    else if (envelope.m) this.#room?.deliver(envelope.m, envelope.s);
  }

  /** Whether any member here is joining; a join out for longer than `ttlMs` no longer is (lost). */
  #stillJoining(): boolean {
    const since = performance.now() - this.#options.ttlMs;
    for (const [id, at] of this.#joining) {
      if (at >= since) break; // oldest first: the rest are newer
      this.#joining.delete(id);
    }
    return this.#joining.size > 0;
  }

  /** One heartbeat answers every hello of this turn (instances often start together). */
  readonly #answerSoon = oncePerTurn(() => this.#beat());

  #maybeUp(): void {
    if (!this.#pubReady || !this.#subscribed || this.#closing) return;
    const was = this.#reported;
    this.#reported = 'up';
    this.#reason = undefined;
    this.#options.onState?.();
    if (was === 'down')
      this.#log.info({ lost: this.#lost }, 'chat bus is back: chat reaches the other instances again');
    else this.#log.info({ channel: this.#channel }, 'chat bus connected');
    this.#lost = 0;
    this.#sync();
    this.#settleStart();
  }

  #down(): void {
    this.#joining.clear(); // no relay, no order: what arrives later is after everyone here
    this.#reason ??= 'connection to Redis closed';
    if (this.#closing || this.#reported === 'down') return;
    this.#reported = 'down';
    this.#options.onState?.();
    this.#log.warn(
      { reason: this.#reason },
      'chat bus down: chat reaches this instance’s members only until Redis is back',
    );
    this.#settleStart();
  }
}

function ignore(): void {}

async function quit(redis: Redis): Promise<void> {
  if (redis.status !== 'ready') return redis.disconnect();
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
