/**
 * The bus's channel: the envelope every instance publishes on it, and reads back from the others.
 * `m`, the message the envelope carries, is one of the room's messages (src/protocol/chat-messages.ts,
 * audience `room`) exactly as the codec writes and reads it.
 */
import { contractChat, isMessageId, parseJson, serverMessageOf } from '../../protocol/chat-codec.js';
import { ROOM_MESSAGE_TYPES } from '../../protocol/chat-messages.js';
import type { SharedMessage } from '../bus.js';
import type { Scripted } from './redis-scripts.js';

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
  /** A join's member (its connection id): the sender knows its own join when Redis relays it back (bus.ts). */
  j?: string;
}

/** What the parts of the bus (presence, history) need of it to publish. */
export interface BusLink {
  /** This instance's id on the channel. */
  readonly id: string;
  /** The publishing connection, with the scripts. */
  readonly pub: Scripted;
  readonly channel: string;
  /** Keys' names start with this (the deployment's prefix, then `chat:`). */
  readonly keys: string;
  /**
   * Sends one envelope (as a plain publication, or by `run`, a script that publishes `text`, its JSON);
   * false when it could not go out. Past the bus's bound on unanswered commands it is dropped, unless
   * `always`. `echoed`: this instance needs it back from the channel, so it goes out only while
   * subscribed too.
   */
  send(envelope: Envelope, run?: (text: string) => Promise<unknown>, always?: boolean, echoed?: boolean): boolean;
}

/**
 * The envelopes of one publication from another Roster instance (one, or several of one turn as a JSON
 * array, in order), or undefined for anything else published on the channel.
 */
export function decodeAll(text: string): Envelope[] | undefined {
  const value = parseJson(text);
  if (!Array.isArray(value)) return ((one) => one && [one])(envelopeOf(value));
  const envelopes = value.map(envelopeOf);
  return envelopes.length > 0 && envelopes.every((one) => one !== undefined) ? (envelopes as Envelope[]) : undefined;
}

/** An envelope from another Roster instance, or undefined for anything else published on the channel. */
export function decode(text: string): Envelope | undefined {
  return envelopeOf(parseJson(text));
}

function envelopeOf(value: unknown): Envelope | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { i, n, m, s, j } = value as Partial<Record<keyof Envelope, unknown>>;
  if (typeof i !== 'string' || !Number.isSafeInteger(n) || (n as number) < 0) return undefined;
  if (m !== undefined && !isShared(m)) return undefined;
  if (s !== undefined && (typeof s !== 'string' || !isMessageId(s))) return undefined;
  if (j !== undefined && typeof j !== 'string') return undefined;
  const envelope = value as Envelope;
  // Only the contract's fields travel on: ids are the room's to add, for the members that asked.
  if (envelope.m?.type === 'chat') envelope.m = contractChat(envelope.m);
  return envelope;
}

function isShared(value: unknown): value is SharedMessage {
  const message = serverMessageOf(value);
  return message !== undefined && ROOM_MESSAGE_TYPES.has(message.type) && message.timestamp !== '';
}
