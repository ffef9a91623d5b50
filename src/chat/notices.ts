/**
 * The room's join and leave notices, coalesced. The contract tells every member of every join, so C
 * clients connecting at once cost C²/2 notices; written one by one, that is one system call per notice
 * per member (5 000 clients: 12.5 million writes, most of a minute on one core). Instead the notices of
 * a short window are handed to each member together, as one write. The window grows with the room
 * (NOTICE_WINDOW_MS_PER_MEMBER), so a small room hears of a join at once and a crowd's notices cost a
 * bounded share of the time. Anything else the room sends first flushes the pending notices, so every
 * member still sees every message in the order the room produced them.
 */
import { timestamp } from '../clock.js';
import { encodeServerMessage } from '../protocol/chat-codec.js';
import type { Member } from './room.js';

/** How long join and leave notices wait to be coalesced, per member in the room: 5 000 members, 100 ms. */
const NOTICE_WINDOW_MS_PER_MEMBER = 0.02;
const MAX_NOTICE_WINDOW_MS = 100;

/** What the notices need of the room: its members here, and its one way to deliver to one of them. */
export interface NoticeRoom {
  size(): number;
  members(): Iterable<Member>;
  deliver(member: Member, payload: Buffer | readonly Buffer[], from: number): void;
}

export class Notices {
  /** Not yet handed to the members, oldest first. */
  #pending: Buffer[] = [];
  /** Members who joined while notices were pending: the index of their own join notice. */
  readonly #joinedAt = new Map<Member, number>();
  /** Members not to be handed some of the pending notices (joins before theirs, bus.ts): their indexes. */
  readonly #skips = new Map<Member, number[]>();
  #cancelFlush: (() => void) | undefined;

  constructor(private readonly room: NoticeRoom) {}

  /** `member` joined: of what is pending, it hears only what comes after its own join notice (the next one). */
  joined(member: Member): void {
    this.#joinedAt.set(member, this.#pending.length);
  }

  /** `members` are not to hear of the next notice (a join relayed before theirs). */
  skipNext(members: Iterable<Member>): void {
    for (const member of members) {
      const skipped = this.#skips.get(member);
      if (skipped) skipped.push(this.#pending.length);
      else this.#skips.set(member, [this.#pending.length]);
    }
  }

  left(member: Member): void {
    this.#joinedAt.delete(member);
    this.#skips.delete(member);
  }

  add(notice: Buffer): void {
    this.#pending.push(notice);
    if (this.#cancelFlush) return;
    const window = Math.min(MAX_NOTICE_WINDOW_MS, this.room.size() * NOTICE_WINDOW_MS_PER_MEMBER);
    if (window < 1) {
      // Fewer than 50 members: after this turn's I/O, when a broadcast would go out too.
      const immediate = setImmediate(() => this.flush());
      this.#cancelFlush = () => clearImmediate(immediate);
    } else {
      const timer = setTimeout(() => this.flush(), window);
      this.#cancelFlush = () => clearTimeout(timer);
    }
  }

  /** Hands every member the notices it has not had yet. */
  flush(): void {
    this.#cancelFlush?.();
    this.#cancelFlush = undefined;
    const notices = this.#pending;
    if (notices.length === 0) return;
    this.#pending = [];
    const joinedAt = this.#joinedAt;
    const skips = this.#skips;
    for (const member of this.room.members()) {
      if (skips.has(member)) continue; // below, each with a list of its own, after the shared one
      // A member that joined in the window hears only of what came after its own join.
      const from = (joinedAt.get(member) ?? -1) + 1;
      if (from >= notices.length) continue;
      this.room.deliver(member, from === notices.length - 1 ? notices[from]! : notices, from);
    }
    for (const [member, skipped] of skips) {
      const from = (joinedAt.get(member) ?? -1) + 1;
      const own = notices.filter((_, index) => index >= from && !skipped.includes(index));
      if (own.length > 0) this.room.deliver(member, own.length === 1 ? own[0]! : own, 0);
    }
    joinedAt.clear();
    skips.clear();
  }
}

/** A crowd's notices: at most one `user_join` and one `user_leave` this often (CHAT_NOTICES_MAX_MEMBERS). */
export const CROWD_NOTICE_MS = 1_000;

/**
 * The notice policy of a large room (docs/decisions.md, "Join and leave notices in a large room"): a
 * join or leave after which the room has more than `max` members is counted, not told; each instance
 * tells its members of what it counted at most once per CROWD_NOTICE_MS per kind, with the count then.
 * Otherwise (no `max`, or the room at or below it) the room tells of each event as the contract says.
 * Chat never waits for a crowd notice: it says what happened in the last second, whatever came between.
 */
export class Crowd {
  #joins = 0;
  #leaves = 0;
  /** When the last crowd notice went out (performance.now()); its timer while one is due. */
  #sentAt = -Infinity;
  #timer: NodeJS.Timeout | undefined;

  /** `online`: the room's count; `notices`: where its notices go, in order with the others. */
  constructor(
    private readonly online: () => number,
    private readonly notices: Notices,
    private readonly max: number | undefined,
  ) {}

  /**
   * Whether the event (`count`: the room's members after it) is counted here instead of told on its own.
   * When it is not, what was counted goes out first, so that the notices keep the order of the events.
   */
  counts(kind: 'join' | 'leave', count: number): boolean {
    if (this.max === undefined || count <= this.max) {
      if (this.#timer) this.#send();
      return false;
    }
    // A joiner hears of nothing before its own join: what is pending for the others goes out now.
    this.notices.flush();
    if (kind === 'join') this.#joins++;
    else this.#leaves++;
    this.#timer ??= setTimeout(() => this.#send(), Math.max(0, this.#sentAt + CROWD_NOTICE_MS - performance.now()));
    this.#timer.unref();
    return true;
  }

  #send(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#sentAt = performance.now();
    const online_count = this.online();
    const at = timestamp();
    const notice = (type: 'user_join' | 'user_leave', message: string) =>
      Buffer.from(encodeServerMessage({ type, message, online_count, timestamp: at }));
    if (this.#joins > 0) this.notices.add(notice('user_join', told(this.#joins, 'joined')));
    if (this.#leaves > 0) this.notices.add(notice('user_leave', told(this.#leaves, 'left')));
    this.#joins = 0;
    this.#leaves = 0;
    this.notices.flush();
  }
}

/** A crowd notice's message: "1 user joined the chat", "37 users left the chat". */
export function told(events: number, what: 'joined' | 'left'): string {
  return `${events} ${events === 1 ? 'user' : 'users'} ${what} the chat`;
}
