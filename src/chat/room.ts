/**
 * The one chat room. It knows members by id and what to tell whom; it knows nothing of sockets. Each
 * broadcast is serialised once and the same bytes handed to every member. Join and leave notices are
 * coalesced, and past CHAT_NOTICES_MAX_MEMBERS told as a crowd's (notices.ts).
 * History (history.ts) is opt-in per member: a member that asked (`?history=`, `?since=`) is a listener.
 * It gets its replay after its welcome, then chat messages carrying their ids, each id once and in
 * increasing order; everyone else gets exactly the contract's frames (the broadcast loop runs over them
 * alone). A replay, the bulk of what a room ever sends one member (CHAT_HISTORY_BYTES), is written under
 * back-pressure (`Member.replay`), from the history's own frames; MAX_REPLAYS histories are read at once;
 * what a member is sent meanwhile waits, up to `maxBacklog` bytes, past which it is dropped as slow.
 */
import { timestamp } from '../clock.js';
import { leaveNotice, localBus, type ChatBus, type MemberRecord, type SharedMessage } from './bus.js';
import {
  compareIds,
  encodeServerMessage,
  parseClientText,
  type ChatMessage,
  type ServerMessage,
} from '../protocol/chat-codec.js';
import { MemoryHistory, readHistory, type ChatHistory, type HistoryRequest, type Recovery } from './history.js';
import { Crowd, Notices } from './notices.js';

/** Close codes (RFC 6455) the room asks for when it refuses a client's message. */
const RefusalCode = { policyViolation: 1008, messageTooBig: 1009 } as const;

/** Why the room will not take a client's message: the connection is to be closed with `code`. */
export interface Refusal {
  readonly code: (typeof RefusalCode)[keyof typeof RefusalCode];
  readonly reason: string;
}

export interface Member {
  /** The connection's random, unguessable identifier: the `from` of its chat messages. */
  readonly id: string;
  /** The authenticated principal's name, when authentication is on: told to the others on join, and in the welcome. */
  readonly name?: string;
  /**
   * Queues one serialised message for this member. A broadcast hands every member the same Buffer,
   * which they must not modify. May throw; the room carries on with the others.
   */
  deliver(payload: Buffer): void;
  /**
   * Queues `payloads[from]`, `payloads[from + 1]`, … in order, as one write. Every member is handed the
   * same array (members who joined during the window start past their own join), so whatever is built
   * from it once can be shared; only the few not told of some of them (a join of another instance
   * before theirs) get a list of their own, after the others. Same rules as `deliver`.
   */
  deliverMany(payloads: readonly Buffer[], from: number): void;
  /**
   * Writes `payloads` (a replay: the history's shared Buffers, never modified) in order, no faster than
   * the peer reads them, and calls `done` once all are written. Never called if the member is gone first.
   */
  replay(payloads: readonly Buffer[], done: () => void): void;
  /** The room gives up on this member (too much waiting for it): it is to be closed as a slow consumer. */
  drop(): void;
}

/**
 * Histories read at once for replays. A replay being written holds only its socket's buffer (its
 * frames are shared), but a Redis history is read afresh for each: this bounds those reads.
 */
export const MAX_REPLAYS = 4;

/**
 * What a chat frame may add to the client's message beyond WS_MAX_PAYLOAD (type, from, timestamp, id,
 * history): a larger frame (control characters JSON escapes six times over) is refused with 1009.
 */
const FRAME_ALLOWANCE = 1024;

export interface RoomEvents {
  /** A delivery to one member failed; the room has moved on to the others. */
  deliveryFailed?(member: Member, error: unknown): void;
}

export interface RoomOptions {
  /** CHAT_HISTORY: messages kept for members that ask; 0 (the default here): no history, nobody asks. */
  history?: number;
  /** CHAT_HISTORY_BYTES: at most this many bytes of them (default: no bound but the count). */
  historyBytes?: number;
  /** WS_MAX_PAYLOAD: a chat whose frame would exceed it by more than FRAME_ALLOWANCE is refused (default: none). */
  maxPayload?: number;
  /** WS_MAX_BACKLOG: bytes that may wait for a member behind its replay (default: no bound). */
  maxBacklog?: number;
  /** CHAT_NOTICES_MAX_MEMBERS: past it, joins and leaves are told as a crowd's (notices.ts); default: never. */
  noticesMaxMembers?: number;
}

/** A member that asked for history: the last id it was given, and what waits behind its replay. */
interface Listener {
  lastId: string | undefined;
  /** Until its replay is out: what the room sent it meanwhile (an id for chat messages that carry one), and its bytes. */
  pending: { payload: Buffer | readonly Buffer[]; from: number; id?: string }[] | undefined;
  pendingBytes: number;
  /** Whether its history is being read, in one of the MAX_REPLAYS places. */
  replaying: boolean;
}

export class ChatRoom {
  readonly #members = new Map<string, Member>();
  /** The members that did not ask for history: the contract's frames only. */
  readonly #plain = new Map<string, Member>();
  readonly #listeners = new Map<Member, Listener>();
  /** Every member here as the member list shows it, in the order they joined. */
  readonly #records = new Map<string, MemberRecord>();
  #seq = 0;
  readonly #history: ChatHistory | undefined;
  /** The history when this process keeps it itself (no shared history on the bus). */
  readonly #memory: MemoryHistory | undefined;
  readonly #notices = new Notices({
    size: () => this.size,
    members: () => this.#members.values(),
    deliver: (member, payload, from) => this.#deliver(member, payload, from),
  });
  readonly #crowd: Crowd;
  /** Replays under way, and the ones waiting for a place (started in order). */
  #replays = 0;
  readonly #waitingReplays: (() => void)[] = [];
  readonly #maxFrame: number;
  readonly #maxBacklog: number;

  /** `bus`: the other instances of a deployment (bus.ts); none by default. */
  constructor(
    private readonly events: RoomEvents = {},
    private readonly bus: ChatBus = localBus,
    options: RoomOptions = {},
  ) {
    bus.attach({
      localCount: () => this.size,
      localMembers: () => this.localMembers(),
      deliver: (message, id, own, joining) => this.#fromElsewhere(message, id, own, joining),
    });
    this.#maxFrame = (options.maxPayload ?? Infinity) + FRAME_ALLOWANCE;
    this.#maxBacklog = options.maxBacklog ?? Infinity;
    this.#crowd = new Crowd(() => this.#online(), this.#notices, options.noticesMaxMembers);
    const capacity = options.history ?? 0;
    if (capacity > 0) {
      this.#memory = bus.history ? undefined : new MemoryHistory(capacity, options.historyBytes);
      this.#history = bus.history ?? this.#memory;
    }
  }

  /** This instance's members, in the order they joined. */
  localMembers(): MemberRecord[] {
    return [...this.#records.values()];
  }

  /** The members of the whole room: every instance's when the bus shares them, else this one's. */
  async members(): Promise<MemberRecord[]> {
    return this.bus.members ? this.bus.members() : this.localMembers();
  }

  /** Members connected to this instance. */
  get size(): number {
    return this.#members.size;
  }

  /** Members of the whole room: this instance's and, with a bus, the other instances'. */
  #online(): number {
    return this.size + this.bus.remoteCount();
  }

  /** `request`: what the member asked for on its handshake URL; history only if the room keeps one. */
  join(member: Member, request?: HistoryRequest): void {
    // `name` only for an authenticated member: without authentication the messages are as before.
    const name = member.name === undefined ? {} : { name: member.name };
    const record: MemberRecord = { id: member.id, ...name, since: timestamp(), seq: ++this.#seq };
    this.#records.set(member.id, record);
    this.#members.set(member.id, member);
    const asks =
      this.#history !== undefined &&
      request !== undefined &&
      (request.history !== undefined || request.since !== undefined);
    if (!asks) this.#plain.set(member.id, member);
    const count = this.#online();
    // The welcome needs no flush first: none of the pending notices is for the new member.
    this.#deliver(
      member,
      serialise({
        type: 'system',
        message: `Welcome to the chat! ${count} ${count === 1 ? 'user' : 'users'} online.`,
        ...name,
        timestamp: timestamp(),
      }),
    );
    if (asks) this.#replay(member, request);
    const notice: SharedMessage = {
      type: 'user_join',
      message: 'A user joined the chat',
      ...name,
      online_count: count,
      timestamp: timestamp(),
    };
    if (!this.#crowd.counts('join', count)) {
      this.#notices.joined(member);
      this.#notices.add(serialise(notice));
    }
    this.bus.publish(notice, this.size, { join: record });
  }

  /** Reads what the member asked for once one of the MAX_REPLAYS places is free (held while reading). */
  #replay(member: Member, request: HistoryRequest): void {
    const listener: Listener = { lastId: undefined, pending: [], pendingBytes: 0, replaying: false };
    this.#listeners.set(member, listener);
    const start = () => {
      if (this.#listeners.get(member) !== listener) return this.#nextReplay(); // left while waiting
      this.#replays++;
      listener.replaying = true;
      readHistory(this.#history!, request, (recovery) => this.#replayed(member, listener, recovery));
    };
    if (this.#replays < MAX_REPLAYS) start();
    else this.#waitingReplays.push(start);
  }

  /** A read is done: its place goes to the next waiting one. */
  #endReplay(listener: Listener): void {
    if (!listener.replaying) return;
    listener.replaying = false;
    this.#replays--;
    this.#nextReplay();
  }

  #nextReplay(): void {
    if (this.#replays < MAX_REPLAYS) this.#waitingReplays.shift()?.();
  }

  #replayed(member: Member, listener: Listener, recovery: Recovery): void {
    if (this.#listeners.get(member) !== listener) return this.#endReplay(listener); // left meanwhile
    const frames = recovery.entries.map((entry) => entry.payload);
    frames.push(
      serialise({
        type: 'history',
        count: recovery.entries.length,
        ...(recovery.lastId === undefined ? {} : { last_id: recovery.lastId }),
        ...(recovery.recovered === undefined ? {} : { recovered: recovery.recovered }),
        timestamp: timestamp(),
      }),
    );
    listener.lastId = recovery.lastId;
    this.#endReplay(listener);
    try {
      member.replay(frames, () => this.#replayWritten(member, listener));
    } catch (error) {
      this.events.deliveryFailed?.(member, error);
    }
  }

  /** The replay is out: what waited behind it follows. */
  #replayWritten(member: Member, listener: Listener): void {
    if (this.#listeners.get(member) !== listener) return;
    const pending = listener.pending!;
    listener.pending = undefined;
    listener.pendingBytes = 0;
    for (const item of pending) {
      if (item.id === undefined) this.#deliver(member, item.payload, item.from);
      else this.#deliverStored(member, listener, item.id, item.payload as Buffer);
    }
  }

  /** A chat with its id, to a member that asked for ids: each id once, in increasing order. */
  #deliverStored(member: Member, listener: Listener, id: string, payload: Buffer): void {
    if (listener.pending) return this.#wait(member, listener, { payload, from: 0, id });
    if (listener.lastId !== undefined && !(compareIds(id, listener.lastId) > 0)) return; // replayed already
    listener.lastId = id;
    this.#deliver(member, payload);
  }

  /** A `system` message to one member only (a rate-limit notice, say). */
  notify(member: Member, message: string): void {
    this.#send(member, { type: 'system', message, timestamp: timestamp() });
  }

  /** Removes the member and tells the rest; false (and nothing done) when it was not a member. */
  leave(member: Member): boolean {
    if (this.#members.get(member.id) !== member) return false;
    this.#members.delete(member.id);
    this.#plain.delete(member.id);
    const listener = this.#listeners.get(member);
    if (listener) this.#endReplay(listener);
    this.#listeners.delete(member);
    this.#records.delete(member.id);
    this.#notices.left(member);
    const count = this.#online();
    const notice = leaveNotice(count, timestamp());
    if (!this.#crowd.counts('leave', count)) this.#notices.add(serialise(notice));
    this.bus.publish(notice, this.size, { leave: member.id });
    return true;
  }

  /**
   * A text message from a member, handled as the contract's chat behaviour says; a Refusal when the
   * room will not take it (nesting too deep, a frame too large), and nothing is sent.
   */
  receive(member: Member, text: string): Refusal | undefined {
    const intent = parseClientText(text);
    if (intent.kind === 'refuse') return { code: RefusalCode.policyViolation, reason: intent.reason };
    if (intent.kind === 'ping') this.#send(member, { type: 'pong', timestamp: timestamp() });
    else if (intent.kind === 'chat') {
      const chat: ChatMessage = { type: 'chat', from: member.id, message: intent.message, timestamp: timestamp() };
      const encoded = serialise(chat);
      if (encoded.length > this.#maxFrame)
        return { code: RefusalCode.messageTooBig, reason: 'Message too big once encoded for the others' };
      const frame = this.#broadcast(chat, encoded);
      const shared = this.bus.history;
      if (this.#history === undefined) {
        this.bus.publish(chat, this.size);
      } else if (shared) {
        // The listeners here get it back from the bus with its id, in the order of the shared history.
        if (!shared.publishChat(chat, this.size)) this.#toListeners(frame);
      } else {
        const id = this.#memory!.append(chat);
        this.#toListeners(frame, id, chat);
        this.bus.publish(chat, this.size);
      }
    }
    return undefined;
  }

  /**
   * BusRoom.deliver (bus.ts): told to every member here as if it were local. A notice's count is this
   * instance's view of the room (the bus has already taken in the sender's new count).
   */
  #fromElsewhere(message: SharedMessage, id?: string, own?: boolean, joining?: Iterable<string>): void {
    if (message.type !== 'chat') {
      if (this.#crowd.counts(message.type === 'user_join' ? 'join' : 'leave', this.#online())) return;
      if (joining) this.#notices.skipNext([...joining].flatMap((id) => this.#members.get(id) ?? []));
      return this.#notices.add(serialise({ ...message, online_count: this.#online() }));
    }
    if (own) {
      if (id === undefined || this.#listeners.size === 0) return;
      this.#notices.flush();
      return this.#toListeners(undefined, id, message);
    }
    const frame = this.#broadcast(message);
    this.#toListeners(frame, id, message);
  }

  /** A chat to the listeners: with its id when it has one, else the plain frame. */
  #toListeners(frame: Buffer | undefined, id?: string, chat?: ChatMessage): void {
    if (this.#listeners.size === 0) return;
    if (id === undefined) {
      const plain = frame ?? serialise(chat!);
      for (const member of this.#listeners.keys()) this.#deliver(member, plain);
      return;
    }
    const stored = serialise({ ...chat!, id });
    for (const [member, listener] of this.#listeners) this.#deliverStored(member, listener, id, stored);
  }

  #send(member: Member, message: ServerMessage): void {
    this.#notices.flush();
    this.#deliver(member, serialise(message));
  }

  /** To every member that did not ask for history; returns the frame (`frame`, when already serialised). */
  #broadcast(message: ServerMessage, frame = serialise(message)): Buffer {
    this.#notices.flush();
    for (const member of this.#plain.values()) this.#deliver(member, frame);
    return frame;
  }

  /** One message, or `payloads[from]` onwards as one write (coalesced notices). */
  #deliver(member: Member, payload: Buffer | readonly Buffer[], from = 0): void {
    if (this.#listeners.size !== 0) {
      const listener = this.#listeners.get(member);
      if (listener?.pending) return this.#wait(member, listener, { payload, from });
    }
    try {
      if (Buffer.isBuffer(payload)) member.deliver(payload);
      else member.deliverMany(payload as readonly Buffer[], from);
    } catch (error) {
      // Contract rule 5: a failure to deliver to one connection does not stop delivery to the others.
      this.events.deliveryFailed?.(member, error);
    }
  }

  /** Keeps `item` until the member's replay is out; past `maxBacklog` bytes, the member is dropped. */
  #wait(member: Member, listener: Listener, item: NonNullable<Listener['pending']>[number]): void {
    if (listener.pendingBytes > this.#maxBacklog) return; // dropped already: nothing more is kept
    const pending = listener.pending!;
    const { payload, from } = item;
    if (Buffer.isBuffer(payload)) listener.pendingBytes += payload.length;
    else for (let i = from; i < payload.length; i++) listener.pendingBytes += payload[i]!.length;
    if (listener.pendingBytes <= this.#maxBacklog) {
      pending.push(item);
      return;
    }
    // Nothing more is kept for it; leave() (when the connection closes) frees its replay's place.
    pending.length = 0;
    try {
      member.drop();
    } catch (error) {
      this.events.deliveryFailed?.(member, error);
    }
  }
}

function serialise(message: ServerMessage): Buffer {
  return Buffer.from(encodeServerMessage(message));
}
