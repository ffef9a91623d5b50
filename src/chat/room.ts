/**
 * The one chat room. It knows members by id and what to tell whom; it knows nothing of sockets. Each
 * broadcast is serialised once and the same bytes handed to every member.
 *
 * Join and leave notices are coalesced. The contract tells every member of every join, so C clients
 * connecting at once cost C²/2 notices; written one by one, that is one system call per notice per
 * member (5 000 clients: 12.5 million writes, most of a minute on one core). Instead the notices of a
 * short window are handed to each member together, as one write. The window grows with the room
 * (NOTICE_WINDOW_MS_PER_MEMBER), so a small room hears of a join at once and a crowd's notices cost a
 * bounded share of the time. Anything else the room sends first flushes the pending notices, so every
 * member still sees every message in the order the room produced them.
 */
import { timestamp } from '../clock.js';
import { localBus, type ChatBus, type SharedMessage } from './bus.js';
import { encodeServerMessage, parseClientText, type ServerMessage } from './codec.js';

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
   * from it once can be shared. Same rules as `deliver`.
   */
  deliverMany(payloads: readonly Buffer[], from: number): void;
}

/** How long join and leave notices wait to be coalesced, per member in the room: 5 000 members, 100 ms. */
const NOTICE_WINDOW_MS_PER_MEMBER = 0.02;
const MAX_NOTICE_WINDOW_MS = 100;

export interface RoomEvents {
  /** A delivery to one member failed; the room has moved on to the others. */
  deliveryFailed?(member: Member, error: unknown): void;
}

export class ChatRoom {
  readonly #members = new Map<string, Member>();
  /** Join and leave notices not yet handed to the members, oldest first. */
  #notices: Buffer[] = [];
  /** Members who joined while notices were pending: the index of their own join notice. */
  readonly #joinedAt = new Map<Member, number>();
  /** Cancels the scheduled flush of the pending notices. */
  #cancelFlush: (() => void) | undefined;

  /** `bus`: the other instances of a deployment (bus.ts); none by default. */
  constructor(
    private readonly events: RoomEvents = {},
    private readonly bus: ChatBus = localBus,
  ) {
    bus.attach({ localCount: () => this.size, deliver: (message) => this.#fromElsewhere(message) });
  }

  /** Members connected to this instance. */
  get size(): number {
    return this.#members.size;
  }

  /** Members of the whole room: this instance's and, with a bus, the other instances'. */
  #online(): number {
    return this.size + this.bus.remoteCount();
  }

  join(member: Member): void {
    this.#members.set(member.id, member);
    const count = this.#online();
    // `name` only for an authenticated member: without authentication the messages are as before.
    const name = member.name === undefined ? {} : { name: member.name };
    // The welcome needs no flush first: none of the pending notices is for the new member.
    this.#deliver(member, serialise({
      type: 'system',
      message: `Welcome to the chat! ${count} ${count === 1 ? 'user' : 'users'} online.`,
      ...name,
      timestamp: timestamp(),
    }));
    this.#joinedAt.set(member, this.#notices.length);
    const notice: SharedMessage = { type: 'user_join', message: 'A user joined the chat', ...name, online_count: count, timestamp: timestamp() };
    this.#notice(notice);
    this.bus.publish(notice, this.size);
  }

  /** A `system` message to one member only (a rate-limit notice, say). */
  notify(member: Member, message: string): void {
    this.#send(member, { type: 'system', message, timestamp: timestamp() });
  }

  /** Removes the member and tells the rest; false (and nothing done) when it was not a member. */
  leave(member: Member): boolean {
    if (this.#members.get(member.id) !== member) return false;
    this.#members.delete(member.id);
    this.#joinedAt.delete(member);
    const notice: SharedMessage = { type: 'user_leave', message: 'A user left the chat', online_count: this.#online(), timestamp: timestamp() };
    this.#notice(notice);
    this.bus.publish(notice, this.size);
    return true;
  }

  /** Hands every member the notices it has not had yet. */
  #flushNotices(): void {
    this.#cancelFlush?.();
    this.#cancelFlush = undefined;
    const notices = this.#notices;
    if (notices.length === 0) return;
    this.#notices = [];
    const joinedAt = this.#joinedAt;
    for (const member of this.#members.values()) {
      // A member that joined in the window hears only of what came after its own join.
      const from = (joinedAt.get(member) ?? -1) + 1;
      if (from >= notices.length) continue;
      this.#deliver(member, from === notices.length - 1 ? notices[from]! : notices, from);
    }
    joinedAt.clear();
  }

  /** A text message from a member, handled as the contract's chat behaviour says. */
  receive(member: Member, text: string): void {
    const intent = parseClientText(text);
    if (intent.kind === 'ping') this.#send(member, { type: 'pong', timestamp: timestamp() });
    else if (intent.kind === 'chat') {
      const chat: SharedMessage = { type: 'chat', from: member.id, message: intent.message, timestamp: timestamp() };
      this.#broadcast(chat);
      this.bus.publish(chat, this.size);
    }
  }

  /**
   * What a member of another instance did, told to every member here as if it were local. A notice's
   * count is this instance's view of the room (the bus has already taken in the sender's new count).
   */
  #fromElsewhere(message: SharedMessage): void {
    if (message.type === 'chat') this.#broadcast(message);
    else this.#notice({ ...message, online_count: this.#online() });
  }

  #notice(message: ServerMessage): void {
    this.#notices.push(serialise(message));
    if (this.#cancelFlush) return;
    const window = Math.min(MAX_NOTICE_WINDOW_MS, this.size * NOTICE_WINDOW_MS_PER_MEMBER);
    if (window < 1) {
      // Fewer than 50 members: after this turn's I/O, when a broadcast would go out too.
      const immediate = setImmediate(() => this.#flushNotices());
      this.#cancelFlush = () => clearImmediate(immediate);
    } else {
      const timer = setTimeout(() => this.#flushNotices(), window);
      this.#cancelFlush = () => clearTimeout(timer);
    }
  }

  #send(member: Member, message: ServerMessage): void {
    this.#flushNotices();
    this.#deliver(member, serialise(message));
  }

  #broadcast(message: ServerMessage): void {
    this.#flushNotices();
    const frame = serialise(message);
    for (const member of this.#members.values()) {
      this.#deliver(member, frame);
    }
  }

  /** One message, or `payloads[from]` onwards as one write (coalesced notices). */
  #deliver(member: Member, payload: Buffer | readonly Buffer[], from = 0): void {
    try {
      if (Buffer.isBuffer(payload)) member.deliver(payload);
      else member.deliverMany(payload as readonly Buffer[], from);
    } catch (error) {
      // Contract rule 5: a failure to deliver to one connection does not stop delivery to the others.
      this.events.deliveryFailed?.(member, error);
    }
  }
}

function serialise(message: ServerMessage): Buffer {
  return Buffer.from(encodeServerMessage(message));
}
