/**
 * The one chat room. It knows members by id and what to tell whom; it knows nothing of sockets. Each
 * broadcast is serialised once and the same bytes handed to every member.
 */
import { timestamp } from '../clock.js';
import { parseClientText, type ServerMessage } from './protocol.js';

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
}

export interface RoomEvents {
  /** A delivery to one member failed; the room has moved on to the others. */
  deliveryFailed?(member: Member, error: unknown): void;
}

export class ChatRoom {
  readonly #members = new Map<string, Member>();

  constructor(private readonly events: RoomEvents = {}) {}

  get size(): number {
    return this.#members.size;
  }

  join(member: Member): void {
    this.#members.set(member.id, member);
    const count = this.size;
    // `name` only for an authenticated member: without authentication the messages are as before.
    const name = member.name === undefined ? {} : { name: member.name };
    this.#send(member, {
      type: 'system',
      message: `Welcome to the chat! ${count} ${count === 1 ? 'user' : 'users'} online.`,
      ...name,
      timestamp: timestamp(),
    });
    this.#broadcast({ type: 'user_join', message: 'A user joined the chat', ...name, online_count: count, timestamp: timestamp() }, member);
  }

  /** A `system` message to one member only (a rate-limit notice, say). */
  notify(member: Member, message: string): void {
    this.#send(member, { type: 'system', message, timestamp: timestamp() });
  }

  /** Removes the member and tells the rest; false (and nothing done) when it was not a member. */
  leave(member: Member): boolean {
    if (this.#members.get(member.id) !== member) return false;
    this.#members.delete(member.id);
    this.#broadcast({ type: 'user_leave', message: 'A user left the chat', online_count: this.size, timestamp: timestamp() });
    return true;
  }

  /** A text message from a member, handled as the contract's chat behaviour says. */
  receive(member: Member, text: string): void {
    const intent = parseClientText(text);
    if (intent.kind === 'ping') this.#send(member, { type: 'pong', timestamp: timestamp() });
    else if (intent.kind === 'chat') {
      this.#broadcast({ type: 'chat', from: member.id, message: intent.message, timestamp: timestamp() });
    }
  }

  #send(member: Member, message: ServerMessage): void {
    this.#deliver(member, Buffer.from(JSON.stringify(message)));
  }

  #broadcast(message: ServerMessage, except?: Member): void {
    const frame = Buffer.from(JSON.stringify(message));
    for (const member of this.#members.values()) {
      if (member !== except) this.#deliver(member, frame);
    }
  }

  #deliver(member: Member, frame: Buffer): void {
    try {
      member.deliver(frame);
    } catch (error) {
      // Contract rule 5: a failure to deliver to one connection does not stop delivery to the others.
      this.events.deliveryFailed?.(member, error);
    }
  }
}
