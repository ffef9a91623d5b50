/**
 * What connects one instance's chat room to the rooms of the other instances of a deployment. The room
 * delivers to its own members first and then publishes, so local chat never waits on the bus; the bus
 * hands in what the other instances' members did, and knows how many members they have.
 */
import type { ServerMessage } from './codec.js';

/** The messages the instances of one room tell each other: what every member everywhere receives. */
export type SharedMessage = Extract<ServerMessage, { type: 'chat' | 'user_join' | 'user_leave' }>;

/** The side of a room the bus sees. */
export interface BusRoom {
  /** Members connected to this instance (the count the bus tells the others). */
  localCount(): number;
  /** A message from another instance's member, for every member here. */
  deliver(message: SharedMessage): void;
}

export interface ChatBus {
  /** Connects the bus to its room; called once, by the room's constructor. */
  attach(room: BusRoom): void;
  /** Tells the other instances; `localCount` is this instance's member count once the event is done. */
  publish(message: SharedMessage, localCount: number): void;
  /** Members of the other instances, as last heard from each of them. */
  remoteCount(): number;
}

/** One process, one room: nobody elsewhere to tell or to count. */
export const localBus: ChatBus = {
  attach() {},
  publish() {},
  remoteCount: () => 0,
};
