/**
 * What connects one instance's chat room to the rooms of the other instances of a deployment. The room
 * delivers to its own members first and then publishes, so local chat never waits on the bus; the bus
 * hands in what the other instances' members did, and knows how many members they have, and who.
 */
import type { ServerMessage } from '../protocol/chat-codec.js';
import type { RoomMessageType } from '../protocol/chat-messages.js';
import type { ChatHistory } from './history.js';

/**
 * The messages the instances of one room tell each other: what every member everywhere receives, the
 * messages whose audience is the room (src/protocol/chat-messages.ts).
 */
export type SharedMessage = Extract<ServerMessage, { type: RoomMessageType }>;

/** The notice of a leave, by the room or by the Redis reaper on behalf of an instance that is gone. */
export function leaveNotice(onlineCount: number, at: string): SharedMessage {
  return { type: 'user_leave', message: 'A user left the chat', online_count: onlineCount, timestamp: at };
}

/** One member of the room as the member list shows it (GET /api/v1/chat/members). */
export interface MemberRecord {
  /** The connection's id: the `from` of its chat messages. */
  readonly id: string;
  /** The authenticated principal's name, when authentication is on. */
  readonly name?: string;
  /** When it joined: the server's timestamp format. */
  readonly since: string;
  /** The order of joins on its instance. */
  readonly seq: number;
}

/** What a join or a leave changes in the room's shared member list. */
export type Presence = { join: MemberRecord } | { leave: string };

/** The side of a room the bus sees. */
export interface BusRoom {
  /** Members connected to this instance (the count the bus tells the others). */
  localCount(): number;
  /** This instance's members, in the order they joined (the bus shares them). */
  localMembers(): MemberRecord[];
  /**
   * A message from another instance's member, for every member here. `id`: its place in the shared
   * history, for the members that asked for ids; `own`: a chat of this instance's members coming back
   * with its id (only the members that asked for ids still need it). `joining`, with a join: the ids of
   * members here who joined after it in the room's order (the bus's), who are not told of it (the
   * joiner is told of theirs instead).
   */
  deliver(message: SharedMessage, id?: string, own?: boolean, joining?: Iterable<string>): void;
}

/** A history the instances share (Redis): the bus numbers each chat as it publishes it. */
export interface SharedHistory extends ChatHistory {
  /**
   * Publishes a chat into the history; the members of every instance, this one's included, get it back
   * through `deliver` with its id. False when it could not be sent (the bus is down or behind): it then
   * reaches this instance's members only, without an id.
   */
  publishChat(message: SharedMessage, localCount: number): boolean;
}

export interface ChatBus {
  /** Connects the bus to its room; called once, by the room's constructor. */
  attach(room: BusRoom): void;
  /**
   * Tells the other instances; `localCount` is this instance's member count once the event is done;
   * `presence`, with a join or a leave, what it changes in the shared member list.
   */
  publish(message: SharedMessage, localCount: number, presence?: Presence): void;
  /** Members of the other instances, as last heard from each of them. */
  remoteCount(): number;
  /** The members of every instance (undefined: only this instance's, which the room knows). */
  members?(): Promise<MemberRecord[]>;
  /** The history every instance shares, when the bus keeps one. */
  readonly history?: SharedHistory | undefined;
}

/** One process, one room: nobody elsewhere to tell or to count. */
export const localBus: ChatBus = {
  attach() {},
  publish() {},
  remoteCount: () => 0,
};
