/**
 * Who is in the room across instances, as Redis keeps it: each instance's member hash (written with
 * every join and leave, and anew on (re)connecting), its alive key (renewed by the heartbeat), the list
 * of instances, and the reaper, which tells the leaves of an instance gone silent on its behalf.
 */
import { encodeServerMessage, parseJson } from '../../protocol/chat-codec.js';
import { leaveNotice, type MemberRecord, type Presence } from '../bus.js';
import { oncePerTurn } from '../outbox.js';
import type { BusLink, Envelope } from './redis-channel.js';

export class RedisPresence {
  readonly #link: BusLink;
  readonly #instances: string;
  /** This turn's joins and leaves, not yet sent: their envelopes, and their op, member, record each. */
  #batch: { envelopes: Envelope[]; changes: string[] } | undefined;
  readonly #flushSoon = oncePerTurn(() => this.flush());

  constructor(link: BusLink) {
    this.#link = link;
    this.#instances = `${link.keys}instances`;
  }

  #key(kind: 'members' | 'alive'): string {
    return `${this.#link.keys}${kind}:${this.#link.id}`;
  }

  /**
   * A join or leave with its publication. Never dropped for being behind: the hash must follow every
   * join and leave. Lost while Redis is away, it is rewritten whole when the bus is back (`sync`).
   * The joins and leaves of one turn go out together after the turn's I/O
   * (a storm's joins arrive many a turn): one script call and one publication, which every instance
   * reads as one message, instead of one each; anything else the bus sends first sends them (`flush`),
   * so the channel keeps this instance's order of events.
   */
  publish(envelope: Envelope, presence: Presence): void {
    const change = 'join' in presence ? ['j', presence.join.id, recordText(presence.join)] : ['l', presence.leave, ''];
    if (this.#batch) {
      this.#batch.envelopes.push(envelope);
      this.#batch.changes.push(...change);
    } else {
      this.#batch = { envelopes: [envelope], changes: change };
      this.#flushSoon();
    }
  }

  /** Sends this turn's joins and leaves now (before anything else this instance publishes). */
  flush(): void {
    const batch = this.#batch;
    if (!batch) return;
    this.#batch = undefined;
    const { pub, channel } = this.#link;
    const { envelopes, changes } = batch;
    // One event as before; several as one JSON array (redis-channel.ts).
    const text = envelopes.length === 1 ? undefined : JSON.stringify(envelopes);
    this.#link.send(
      envelopes[0]!,
      (one) => pub.rosterPresence(this.#key('members'), channel, text ?? one, ...changes),
      true,
    );
  }

  /** The heartbeat: alive for `ttlMs` more, and this instance's count published. */
  beat(envelope: Envelope, ttlMs: number): void {
    const { pub, channel, id } = this.#link;
    this.#link.send(envelope, (text) => pub.rosterBeat(this.#key('alive'), ttlMs, this.#instances, id, channel, text));
  }

  /** Any instance gone silent past its ttl: its members' leaves, said once by whoever comes first (scripts.ts). */
  reap(at: string): Promise<unknown> {
    const { pub, channel, id, keys } = this.#link;
    const [head, tail] = countless(encodeServerMessage(leaveNotice(0, at)));
    return pub.rosterReap(this.#instances, id, channel, keys, head, tail);
  }

  /** This instance's member hash written anew (after an outage, or after being reaped), alive, hello. */
  sync(members: readonly MemberRecord[], ttlMs: number, history: number): void {
    const { pub, channel, id, keys } = this.#link;
    const pairs = members.flatMap((member) => [member.id, recordText(member)]);
    const envelope: Envelope = { i: id, n: members.length, h: 1 };
    this.#link.send(
      envelope,
      (text) =>
        pub.rosterSync(
          this.#key('members'),
          this.#key('alive'),
          ttlMs,
          this.#instances,
          id,
          channel,
          text,
          `${keys}history`,
          history,
          ...pairs,
        ),
      true,
    );
  }

  /** A clean stop, after the members' leaves: nothing of this instance left, and goodbye. */
  bye(): Promise<unknown> {
    this.flush();
    const { pub, channel, id } = this.#link;
    const text = JSON.stringify({ i: id, n: 0, b: 1 } satisfies Envelope);
    return pub.rosterBye(this.#key('members'), this.#key('alive'), this.#instances, id, channel, text);
  }

  /** The members of every instance on this Redis, by when they joined. */
  async members(): Promise<MemberRecord[]> {
    const { pub, keys } = this.#link;
    if (pub.status !== 'ready') throw new Error('chat bus down');
    const reply = (await pub.rosterMembers(this.#instances, keys)) as (string | string[])[];
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
}

const COUNT_FIELD = '"online_count":0';

/** A frame of `online_count` 0 cut around the count: what goes before it and after it. */
function countless(frame: string): [head: string, tail: string] {
  const at = frame.indexOf(COUNT_FIELD);
  if (at < 0 || frame.indexOf(COUNT_FIELD, at + 1) >= 0) throw new Error(`no single count in ${frame}`);
  const cut = at + COUNT_FIELD.length - 1;
  return [frame.slice(0, cut), frame.slice(cut + 1)];
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
  const { seq, since, name } = (parseJson(text) ?? {}) as { seq?: unknown; since?: unknown; name?: unknown };
  if (typeof seq !== 'number' || typeof since !== 'string') return undefined;
  return { id, since, seq, ...(typeof name === 'string' ? { name } : {}) };
}
