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
 */
import { EngineFaults } from '../engine-faults.js';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { Dependency, DependencyState } from '../health.js';
import { timestamp } from '../clock.js';
import type { BusRoom, ChatBus, MemberRecord, Presence, SharedHistory, SharedMessage } from './bus.js';
import { compareIds, isMessageId, serverMessageOf } from '../protocol/chat-codec.js';
import { storedChat, type HistoryRequest, type Recovery, type StoredChat } from './history.js';

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

/**
 * The scripts. Keys are passed whole (ARGV, after the deployment's prefix), so ioredis adds no prefix
 * of its own; each script is one atomic step of Redis.
 */
const SCRIPTS = {
  /** A join (HSET) or leave (HDEL) in this instance's member hash, and its publication. */
  rosterPresence: `
    if ARGV[4] == 'j' then redis.call('HSET', ARGV[1], ARGV[5], ARGV[6]) else redis.call('HDEL', ARGV[1], ARGV[5]) end
    return redis.call('PUBLISH', ARGV[2], ARGV[3])`,
  /**
   * A chat into the history, published with its id between ARGV[5] and ARGV[6]. The stream is capped
   * at ARGV[2] entries and at ARGV[8] bytes of messages, whose running total is kept in ARGV[7]
   * (XADD's MAXLEN counts entries only): the oldest entries go until both hold, the newest always stays.
   */
  rosterChat: `
    local function size(fields)
      for i = 1, #fields, 2 do if fields[i] == 'm' then return #fields[i + 1] end end
      return 0
    end
    if redis.call('EXISTS', ARGV[7]) == 0 then
      -- No total yet (a stream from before it was kept, or the total lost): counted once from the stream.
      local total = 0
      for _, entry in ipairs(redis.call('XRANGE', ARGV[1], '-', '+')) do total = total + size(entry[2]) end
      redis.call('SET', ARGV[7], total)
    end
    local id = redis.call('XADD', ARGV[1], '*', 'm', ARGV[3])
    local length = redis.call('XLEN', ARGV[1])
    local bytes = redis.call('INCRBY', ARGV[7], #ARGV[3])
    local maxlen, maxbytes = tonumber(ARGV[2]), tonumber(ARGV[8])
    while length > 1 and (length > maxlen or bytes > maxbytes) do
      local oldest = redis.call('XRANGE', ARGV[1], '-', '+', 'COUNT', 1)[1]
      redis.call('XDEL', ARGV[1], oldest[1])
      length = length - 1
      bytes = redis.call('DECRBY', ARGV[7], size(oldest[2]))
    end
    -- The newest alone: the total is its size, whatever a lost or stale total said.
    if length == 1 then redis.call('SET', ARGV[7], #ARGV[3]) end
    redis.call('PUBLISH', ARGV[4], ARGV[5] .. id .. ARGV[6])
    return id`,
  /** The heartbeat: alive for ttl more, listed, and the count published. */
  rosterBeat: `
    redis.call('SET', ARGV[1], '1', 'PX', ARGV[2])
    redis.call('SADD', ARGV[3], ARGV[4])
    return redis.call('PUBLISH', ARGV[5], ARGV[6])`,
  /** On (re)connecting: the member hash written anew, alive, listed, the history's origin, hello. */
  rosterSync: `
    redis.call('DEL', ARGV[1])
    for i = 10, #ARGV, 2 do redis.call('HSET', ARGV[1], ARGV[i], ARGV[i + 1]) end
    redis.call('SET', ARGV[2], '1', 'PX', ARGV[3])
    redis.call('SADD', ARGV[4], ARGV[5])
    if tonumber(ARGV[9]) > 0 and redis.call('EXISTS', ARGV[8]) == 0 then redis.call('XADD', ARGV[8], '*', 'o', '1') end
    return redis.call('PUBLISH', ARGV[6], ARGV[7])`,
  /** A clean stop, after its members' leaves: nothing of this instance left, and goodbye. */
  rosterBye: `
    redis.call('DEL', ARGV[1], ARGV[2])
    redis.call('SREM', ARGV[3], ARGV[4])
    return redis.call('PUBLISH', ARGV[5], ARGV[6])`,
  /**
   * The reaper: every listed instance but the caller whose alive key is gone has each member's leave
   * published on its behalf (\`r\`), in join order, its count stepping down; then its goodbye. A record
   * cjson cannot read (it refuses lone surrogates, which JSON.stringify writes as escapes) is reaped all
   * the same, first: one bad record must not stop the script on every run.
   */
  rosterReap: `
    local reaped = 0
    for _, id in ipairs(redis.call('SMEMBERS', ARGV[1])) do
      if id ~= ARGV[2] and redis.call('EXISTS', ARGV[4] .. 'alive:' .. id) == 0 then
        local hash = ARGV[4] .. 'members:' .. id
        local all = redis.call('HGETALL', hash)
        local list = {}
        for i = 1, #all, 2 do
          local ok, record = pcall(cjson.decode, all[i + 1])
          local seq = ok and type(record) == 'table' and tonumber(record.seq) or 0
          table.insert(list, { all[i], seq })
        end
        table.sort(list, function(a, b) return a[2] < b[2] end)
        local remaining = #list
        for _ = 1, #list do
          remaining = remaining - 1
          redis.call('PUBLISH', ARGV[3], '{"i":"' .. id .. '","n":' .. remaining .. ',"r":1,"m":{"type":"user_leave","message":"A user left the chat","online_count":' .. remaining .. ',"timestamp":"' .. ARGV[5] .. '"}}')
        end
        redis.call('DEL', hash)
        redis.call('SREM', ARGV[1], id)
        redis.call('PUBLISH', ARGV[3], '{"i":"' .. id .. '","n":0,"b":1,"r":1}')
        reaped = reaped + #list
      end
    end
    return reaped`,
  /** The history a joining member asked for: the oldest and newest ids kept, and the entries. */
  rosterRead: `
    local first = redis.call('XRANGE', ARGV[1], '-', '+', 'COUNT', 1)
    local last = redis.call('XREVRANGE', ARGV[1], '+', '-', 'COUNT', 1)
    local entries
    if ARGV[2] == 's' then entries = redis.call('XRANGE', ARGV[1], '(' .. ARGV[3], '+')
    else entries = redis.call('XREVRANGE', ARGV[1], '+', '-', 'COUNT', ARGV[3]) end
    return { first, last, entries }`,
  /** Every listed instance's members: id, fields and values, id, … */
  rosterMembers: `
    local out = {}
    for _, id in ipairs(redis.call('SMEMBERS', ARGV[1])) do
      table.insert(out, id)
      table.insert(out, redis.call('HGETALL', ARGV[2] .. 'members:' .. id))
    end
    return out`,
} as const;

type ScriptName = keyof typeof SCRIPTS;
type Scripted = Redis & Record<ScriptName, (...args: (string | number)[]) => Promise<unknown>>;

/** A stream entry as XRANGE replies: its id and its fields and values. */
type StreamEntry = [string, string[]];

/** The channel's name after ioredis's `keyPrefix` (settable in REDIS_URL as `?keyPrefix=`), so deployments can share one Redis. */
const DEFAULT_PREFIX = 'roster:';
const CHANNEL = 'chat';
/** Reconnection attempts are this far apart at most, so the bus is back within about a second of Redis. */
const MAX_RETRY_DELAY_MS = 1_000;
/** How long `start` waits for Redis before Roster opens its ports without it. */
const START_WAIT_MS = 3_000;

/** One publication: the sender instance, its member count, and what happened (nothing: a heartbeat). */
export interface Envelope {
  i: string;
  n: number;
  m?: SharedMessage;
  /** hello: a (re)connected instance asks for everyone's count. */
  h?: 1;
  /** goodbye: the instance stops. */
  b?: 1;
  /** reaped: said on behalf of instance `i`, which is gone, by whichever instance reaped it. */
  r?: 1;
  /** The chat's id in the shared history. */
  s?: string;
}

interface Peer {
  count: number;
  heardAt: number;
}

export class RedisBus implements ChatBus, Dependency {
  readonly name = 'chat_bus';
  readonly critical = false;
  readonly #id = randomUUID();
  readonly #channel: string;
  /** Keys' names start with this (the deployment's prefix, then `chat:`). */
  readonly #keys: string;
  readonly #pub: Scripted;
  readonly #sub: Redis;
  readonly #log: Logger;
  readonly #options: RedisBusOptions;
  readonly #peers = new Map<string, Peer>();
  readonly history: SharedHistory | undefined;
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
  #answerScheduled = false;
  #closing = false;
  #settleStart: () => void = () => {};
  /** Replay frames of history entries read, by id (#chatsOf), and their bytes. */
  readonly #frames = new Map<string, StoredChat>();
  #frameBytes = 0;

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
    this.#pub = new Redis(url, { ...connection, connectionName: 'roster-chat-pub' }) as Scripted;
    for (const [name, lua] of Object.entries(SCRIPTS)) this.#pub.defineCommand(name, { numberOfKeys: 0, lua });
    this.#sub = new Redis(url, { ...connection, connectionName: 'roster-chat-sub' });
    this.#channel = `${this.#pub.options.keyPrefix || DEFAULT_PREFIX}${CHANNEL}`;
    this.#keys = `${this.#channel}:`;
    if (this.#options.history > 0) this.history = this.#sharedHistory(this.#options.history);

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
    if (!presence) return void this.#send(envelope);
    // Presence is never dropped for being behind: the hash must follow every join and leave. Lost while
    // Redis is away, it is rewritten whole when the bus is back (#sync).
    const text = JSON.stringify(envelope);
    const [op, id, record] =
      'join' in presence ? ['j', presence.join.id, recordText(presence.join)] : ['l', presence.leave, ''];
    this.#send(
      envelope,
      () => this.#pub.rosterPresence(this.#key('members'), this.#channel, text, op, id, record),
      true,
    );
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

  /** The members of every instance on this Redis, by when they joined. */
  async members(): Promise<MemberRecord[]> {
    if (this.#pub.status !== 'ready') throw new Error('chat bus down');
    const reply = (await this.#pub.rosterMembers(`${this.#keys}instances`, this.#keys)) as (string | string[])[];
    const members: MemberRecord[] = [];
    for (let i = 0; i < reply.length; i += 2) {
      const fields = reply[i + 1] as string[];
      for (let f = 0; f < fields.length; f += 2) {
        const record = recordOf(fields[f]!, fields[f + 1]!);
        if (record) members.push(record);
      }
    }
    return members.sort((a, b) => (a.since < b.since ? -1 : a.since > b.since ? 1 : a.id < b.id ? -1 : 1));
  }

  #key(kind: 'members' | 'alive'): string {
    return `${this.#keys}${kind}:${this.#id}`;
  }

  #sharedHistory(capacity: number): SharedHistory {
    const stream = `${this.#keys}history`;
    // One more than CHAT_HISTORY: the oldest entry kept is the floor of recovery (history.ts).
    const maxlen = capacity + 1;
    return {
      capacity,
      publishChat: (message, localCount) => {
        const envelope = JSON.stringify({ i: this.#id, n: localCount, m: message });
        const prefix = `${envelope.slice(0, -1)},"s":"`;
        return this.#send({ i: this.#id, n: localCount, m: message }, () =>
          this.#pub.rosterChat(
            stream,
            maxlen,
            JSON.stringify(message),
            this.#channel,
            prefix,
            '"}',
            `${stream}-bytes`,
            this.#options.historyBytes,
          ),
        );
      },
      read: async (request: HistoryRequest): Promise<Recovery> => {
        const since = request.since;
        if (since !== undefined && !isMessageId(since)) return { entries: [], lastId: undefined, recovered: false };
        if (this.#pub.status !== 'ready') throw new Error('chat bus down');
        const count = Math.min(request.history ?? 0, capacity);
        const [first, last, entries] = (await this.#pub.rosterRead(
          stream,
          since === undefined ? 'h' : 's',
          since ?? count + 1,
        )) as [StreamEntry[], StreamEntry[], StreamEntry[]];
        const firstId = first[0]?.[0];
        const lastId = last[0]?.[0];
        if (since === undefined)
          return { entries: count === 0 ? [] : this.#chatsOf(entries.reverse()).slice(-count), lastId };
        if (
          firstId === undefined ||
          lastId === undefined ||
          compareIds(since, firstId) < 0 ||
          compareIds(since, lastId) > 0
        ) {
          return { entries: [], lastId, recovered: false };
        }
        return { entries: this.#chatsOf(entries), lastId, recovered: true };
      },
    };
  }

  /**
   * The chat messages of stream entries (the origin marker and anything else left out), oldest first.
   * Each one's replay frame is built once and kept (up to CHAT_HISTORY_BYTES, oldest out first), so
   * replays running at once share their Buffers as in memory; the read itself is transient.
   */
  #chatsOf(entries: readonly StreamEntry[]): StoredChat[] {
    const chats: StoredChat[] = [];
    for (const [id, fields] of entries) {
      const cached = this.#frames.get(id);
      if (cached) {
        chats.push(cached);
        continue;
      }
      const at = fields.indexOf('m');
      if (at < 0 || at % 2 !== 0) continue;
      let value: unknown;
      try {
        value = JSON.parse(fields[at + 1]!);
      } catch {
        continue;
      }
      const message = serverMessageOf(value);
      if (message?.type !== 'chat') continue;
      const stored = storedChat(id, {
        type: 'chat',
        from: message.from,
        message: message.message,
        timestamp: message.timestamp,
      });
      chats.push(stored);
      this.#frames.set(id, stored);
      this.#frameBytes += stored.payload.length;
      for (const [oldest, kept] of this.#frames) {
        if (this.#frameBytes <= this.#options.historyBytes) break;
        this.#frames.delete(oldest);
        this.#frameBytes -= kept.payload.length;
      }
    }
    return chats;
  }

  state(): DependencyState {
    return this.#reported === 'up' ? { up: true } : { up: false, reason: this.#reason ?? 'connecting' };
  }

  /** Says goodbye (the others stop counting this instance at once) and closes both connections. */
  async close(): Promise<void> {
    this.#closing = true;
    clearInterval(this.#heartbeat);
    // On the publishing connection before its QUIT, so it goes out after the members' leaves.
    if (this.#pub.status === 'ready') {
      const bye = JSON.stringify({ i: this.#id, n: 0, b: 1 });
      this.#pub
        .rosterBye(this.#key('members'), this.#key('alive'), `${this.#keys}instances`, this.#id, this.#channel, bye)
        .catch(() => {});
    }
    await Promise.all([quit(this.#pub), quit(this.#sub)]);
  }

  /**
   * Sends one envelope (as a plain publication, or by `run`, a script that publishes it); false when it
   * could not go out. Past `maxPending` unanswered commands it is dropped, unless `always`.
   */
  #send(envelope: Envelope, run?: () => Promise<unknown>, always = false): boolean {
    if (this.#pub.status !== 'ready') {
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
    (run ? run() : this.#pub.publish(this.#channel, JSON.stringify(envelope))).catch(
      envelope.m ? this.#lostOne : ignore,
    );
    return true;
  }

  readonly #lostOne = (): void => {
    this.#lost++;
  };

  #beat(): void {
    const envelope: Envelope = { i: this.#id, n: this.#room?.localCount() ?? 0 };
    const text = JSON.stringify(envelope);
    const { ttlMs } = this.#options;
    this.#send(envelope, () =>
      this.#pub.rosterBeat(this.#key('alive'), ttlMs, `${this.#keys}instances`, this.#id, this.#channel, text),
    );
    // Any instance gone silent past its ttl: its members' leaves, said once by whoever comes first.
    if (this.#pub.status === 'ready')
      this.#pub.rosterReap(`${this.#keys}instances`, this.#id, this.#channel, this.#keys, timestamp()).catch(ignore);
    // A subscribed connection otherwise only listens: the ping lets socketTimeout notice a dead one.
    if (this.#subscribed) this.#sub.ping().catch(ignore);
  }

  /** This instance's member hash written anew (after an outage, or after being reaped), alive, hello. */
  #sync(): void {
    const members = this.#room?.localMembers() ?? [];
    const pairs = members.flatMap((member) => [member.id, recordText(member)]);
    const envelope: Envelope = { i: this.#id, n: members.length, h: 1 };
    const { ttlMs, history } = this.#options;
    this.#send(
      envelope,
      () =>
        this.#pub.rosterSync(
          this.#key('members'),
          this.#key('alive'),
          ttlMs,
          `${this.#keys}instances`,
          this.#id,
          this.#channel,
          JSON.stringify(envelope),
          `${this.#keys}history`,
          history,
          ...pairs,
        ),
      true,
    );
  }

  #received(text: string): void {
    const envelope = decode(text);
    if (envelope === undefined) {
      this.#log.debug({ text: text.slice(0, 200) }, 'ignoring a chat bus message that is not Roster’s');
      return;
    }
    if (envelope.i === this.#id) {
      // Own chat back with its id: for the members here that asked for ids.
      if (envelope.s !== undefined && envelope.m) this.#room?.deliver(envelope.m, envelope.s, true);
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
    if (envelope.m) this.#room?.deliver(envelope.m, envelope.s);
  }

  /** One heartbeat answers every hello of this turn (instances often start together). */
  #answerSoon(): void {
    if (this.#answerScheduled) return;
    this.#answerScheduled = true;
    setImmediate(() => {
      this.#answerScheduled = false;
      this.#beat();
    });
  }

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

const SHARED_TYPES: ReadonlySet<string> = new Set(['chat', 'user_join', 'user_leave']);

/** An envelope from another Roster instance, or undefined for anything else published on the channel. */
// Exported for its table test (test/chat/redis-codec.test.ts) only.
export function decode(text: string): Envelope | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { i, n, m, s } = value as Partial<Record<keyof Envelope, unknown>>;
  if (typeof i !== 'string' || !Number.isSafeInteger(n) || (n as number) < 0) return undefined;
  if (m !== undefined && !isShared(m)) return undefined;
  if (s !== undefined && (typeof s !== 'string' || !isMessageId(s))) return undefined;
  const envelope = value as Envelope;
  // Only the contract's fields travel on: ids are the room's to add, for the members that asked.
  if (envelope.m?.type === 'chat')
    envelope.m = { type: 'chat', from: envelope.m.from, message: envelope.m.message, timestamp: envelope.m.timestamp };
  return envelope;
}

/** A member as its instance's hash keeps it: the id is the field, the rest JSON. */
function recordText(member: MemberRecord): string {
  return JSON.stringify({
    seq: member.seq,
    since: member.since,
    ...(member.name === undefined ? {} : { name: member.name }),
  });
}

function recordOf(id: string, text: string): MemberRecord | undefined {
  try {
    const { seq, since, name } = JSON.parse(text) as { seq?: unknown; since?: unknown; name?: unknown };
    if (typeof seq !== 'number' || typeof since !== 'string') return undefined;
    return { id, since, seq, ...(typeof name === 'string' ? { name } : {}) };
  } catch {
    return undefined;
  }
}

function isShared(value: unknown): value is SharedMessage {
  const message = serverMessageOf(value);
  return message !== undefined && SHARED_TYPES.has(message.type) && message.timestamp !== '';
}
