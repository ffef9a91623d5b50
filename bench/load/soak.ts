/**
 * Benchmark child: the soak load on one Roster, for as long as the parent lets it run. Mixed REST at a
 * fixed, modest rate (a soak measures memory, not speed): lists with filters, search, sort and pages,
 * reads, creates, PATCH, PUT and deletes, with the user count held near a target (filled to it first,
 * then a create whenever it is below and a delete otherwise, so the two balance). A share of the
 * requests is hostile (malformed JSON, a wrong content type, unknown ids and routes, bad query values,
 * wrong methods, now and then a body over the limit): each must get a 4xx, never a 5xx. Beside it, a
 * chat room of `ws` clients (real ones: they answer the server's heartbeat pings) that send messages
 * at a modest rate, with churn: every second a few leave and as many new ones join.
 *
 * The parent asks for the counters at any time ('counts'), while the load runs.
 */
import { randomUUID } from 'node:crypto';
import WebSocket from 'ws';
import { answerParent } from '../ipc.js';

export interface SoakLoad {
  /** The server's name in the report (its variant). */
  label: string;
  /** Roster's REST origin, e.g. http://127.0.0.1:41234 */
  origin: string;
  wsPort: number;
  /** Users held in the store. */
  users: number;
  requestsPerSecond: number;
  /** Share of the requests that are hostile (0.05: 5 %). */
  hostileShare: number;
  chatClients: number;
  /** Chat clients that leave, and as many that join, every second. */
  churnPerSecond: number;
  /** Chat messages sent per second, all clients together. */
  messagesPerSecond: number;
}

export type SoakCommand = ({ cmd: 'start' } & SoakLoad) | { cmd: 'counts' } | { cmd: 'stop' };

export interface SoakCounts {
  /** REST requests answered (any status), fill included. */
  requests: number;
  /** Of which hostile. */
  hostile: number;
  /** Replies with a 5xx status: each one breaks an invariant. */
  serverErrors: number;
  /** Hostile requests answered with anything but a 4xx (a 5xx is counted here and above). */
  hostileNot4xx: number;
  /** Ordinary requests answered with a status they should not get (no race can cause one: see `busy`). */
  unexpected: number;
  /** REST requests that got no reply: connection errors and timeouts. */
  failed: number;
  /** Users the generator holds ids of (what the store should hold). */
  users: number;
  chatOpen: number;
  chatJoined: number;
  /** Clients the generator closed itself (churn). */
  chatLeft: number;
  /** Handshakes that failed. */
  chatRefused: number;
  /** Connections the server closed, or that dropped, while the generator wanted them open. */
  chatUnexpectedCloses: number;
  /** Close codes of those, e.g. { "1006": 2 }. */
  chatCloseCodes: Record<string, number>;
  chatMessagesSent: number;
  chatFramesReceived: number;
}

const API = '/api/v1';
const JSON_TYPE = 'application/json';
/** Requests of the generator in flight at once: enough for the rate, few enough never to queue up. */
const IN_FLIGHT = 16;
/** The REST loop's tick: each one sends the requests the rate allows since the last. */
const TICK_MS = 50;
/** A request unanswered this long counts as failed. */
const TIMEOUT_MS = 30_000;
/** Hostile requests with a body over BODY_LIMIT (1 MiB by default): one in this many. */
const OVERSIZE_EVERY = 25;
const OVERSIZE_BYTES = 1.1 * 1024 * 1024;
const CHAT_TICK_MS = 100;
const JOIN_TIMEOUT_MS = 60_000;

const counts: SoakCounts = {
  requests: 0,
  hostile: 0,
  serverErrors: 0,
  hostileNot4xx: 0,
  unexpected: 0,
  failed: 0,
  users: 0,
  chatOpen: 0,
  chatJoined: 0,
  chatLeft: 0,
  chatRefused: 0,
  chatUnexpectedCloses: 0,
  chatCloseCodes: {},
  chatMessagesSent: 0,
  chatFramesReceived: 0,
};

const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;
const chance = (share: number) => Math.random() < share;
const between = (low: number, high: number) => low + Math.floor(Math.random() * (high - low + 1));

/**
 * The ids of the users stored, with O(1) random pick and removal. `busy` counts requests in flight per
 * id: a delete takes only an id no request is using, so no read or update can meet a user deleted under
 * it, and every 404 on an ordinary request is a real fault.
 */
class IdPool {
  readonly #ids: string[] = [];
  readonly #at = new Map<string, number>();
  readonly #busy = new Map<string, number>();

  get size(): number {
    return this.#ids.length;
  }

  add(id: string): void {
    if (this.#at.has(id)) return;
    this.#at.set(id, this.#ids.length);
    this.#ids.push(id);
  }

  /** A random id, marked busy until `release`; undefined when there is none (or, `idle`, none unused). */
  take(idle = false): string | undefined {
    for (let tries = 0; tries < 8 && this.#ids.length > 0; tries++) {
      const id = pick(this.#ids);
      if (idle && this.#busy.has(id)) continue;
      this.#busy.set(id, (this.#busy.get(id) ?? 0) + 1);
      return id;
    }
    return undefined;
  }

  release(id: string): void {
    const left = (this.#busy.get(id) ?? 1) - 1;
    if (left > 0) this.#busy.set(id, left);
    else this.#busy.delete(id);
  }

  remove(id: string): void {
    const at = this.#at.get(id);
    if (at === undefined) return;
    const last = this.#ids.pop()!;
    if (last !== id) {
      this.#ids[at] = last;
      this.#at.set(last, at);
    }
    this.#at.delete(id);
  }
}

const pool = new IdPool();
let sequence = 0;

const FIRST_NAMES = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken', 'Frances', 'Dennis'];
const SURNAMES = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Hamilton', 'Thompson', 'Allen'];
const SEARCHES = ['an', 'ace', 'soak', 'example', 'hop', 'ur', 'li', 'zz-none', 'GRACE', 'é'];
const SORTS = ['created_at', 'updated_at', 'name', 'email', 'role'];

function userBody(): string {
  const name = `${pick(FIRST_NAMES)} ${pick(SURNAMES)} ${++sequence}`;
  const email = `soak.${process.pid}.${sequence}@example.com`;
  return JSON.stringify(chance(0.2) ? { name, email, role: 'admin' } : { name, email });
}

interface Call {
  method: string;
  path: string;
  body?: string;
  /** The content-type header; JSON when there is a body and none is named. */
  type?: string;
  /** A pool id the request holds busy (IdPool.take), released once it is answered. */
  busyId?: string;
}

/** Requests that broke a rule are named on stderr, the first few of them, to tell what went wrong. */
let reported = 0;
function report(call: Call, what: string): void {
  const size = call.body === undefined ? '' : ` (${call.body.length} bytes)`;
  if (++reported <= 10)
    console.error(`[soak ${load!.label}] ${call.method} ${call.path.slice(0, 100)}${size}: ${what}`);
}

/** fetch's "fetch failed" says nothing: the cause (a socket error, a timeout) does. */
function causeOf(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const text = error instanceof Error ? error.message : String(error);
  return cause ? `${text}: ${cause.code ?? ''} ${cause.message ?? ''}`.trim() : text;
}

/** Sends one request; answers its status and body, or undefined when no reply came (counted as failed). */
async function send(call: Call, hostile: boolean): Promise<{ status: number; text: string } | undefined> {
  const headers: Record<string, string> = {};
  if (call.body !== undefined) headers['content-type'] = call.type ?? JSON_TYPE;
  try {
    const response = await fetch(`${load!.origin}${call.path}`, {
      method: call.method,
      headers,
      ...(call.body !== undefined && { body: call.body }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    // Read to the end, whatever the status: the connection goes back to the pool only then.
    const text = await response.text();
    counts.requests++;
    if (hostile) counts.hostile++;
    if (response.status >= 500) counts.serverErrors++;
    if (hostile && (response.status < 400 || response.status > 499)) {
      counts.hostileNot4xx++;
      report(call, `${response.status} to a hostile request`);
    }
    return { status: response.status, text };
  } catch (error) {
    counts.failed++;
    report(call, `no reply (${causeOf(error)})`);
    return undefined;
  } finally {
    if (call.busyId !== undefined) pool.release(call.busyId);
  }
}

/** An ordinary request, which must get `expected`: its body when it does. */
async function ordinary(call: Call, expected: number): Promise<string | undefined> {
  const reply = await send(call, false);
  if (reply && reply.status !== expected) {
    counts.unexpected++;
    report(call, `${reply.status}, not ${expected}`);
  }
  return reply?.status === expected ? reply.text : undefined;
}

async function create(): Promise<void> {
  const text = await ordinary({ method: 'POST', path: `${API}/users`, body: userBody() }, 201);
  if (text !== undefined) pool.add((JSON.parse(text) as { data: { id: string } }).data.id);
}

async function remove(): Promise<void> {
  const id = pool.take(true);
  if (id === undefined) return;
  // Out of the pool before it is sent: nothing else picks it meanwhile.
  pool.remove(id);
  await ordinary({ method: 'DELETE', path: `${API}/users/${id}`, busyId: id }, 204);
}

function listPath(): string {
  const limit = pick([10, 20, 50, 100]);
  const query = new URLSearchParams({ limit: String(limit) });
  // Mostly a page that exists, now and then one past the end (an empty page).
  query.set('page', String(between(1, Math.max(1, Math.ceil(pool.size / limit)) + (chance(0.1) ? 3 : 0))));
  if (chance(0.3)) query.set('role', pick(['admin', 'user']));
  if (chance(0.3)) query.set('search', pick(SEARCHES));
  if (chance(0.6)) query.set('sort', pick(SORTS));
  if (chance(0.5)) query.set('order', pick(['asc', 'desc']));
  return `${API}/users?${query}`;
}

/** On a user in the pool: marked busy while the request is in flight. */
async function onUser(call: (id: string) => Call): Promise<void> {
  const id = pool.take();
  if (id !== undefined) await ordinary({ ...call(id), busyId: id }, 200);
}

/** One ordinary request of the mix: lists 30 %, reads 30 %, creates and deletes 16 %, PATCH 14 %, PUT 10 %. */
function ordinaryRequest(): Promise<unknown> {
  const roll = Math.random();
  if (roll < 0.3) return ordinary({ method: 'GET', path: listPath() }, 200);
  if (roll < 0.6) return onUser((id) => ({ method: 'GET', path: `${API}/users/${id}` }));
  // Creates when below the target, deletes otherwise: they alternate around it.
  if (roll < 0.76) return pool.size < load!.users ? create() : remove();
  if (roll < 0.9)
    return onUser((id) => ({
      method: 'PATCH',
      path: `${API}/users/${id}`,
      body: JSON.stringify(chance(0.5) ? { name: `Patched ${++sequence}` } : { role: pick(['admin', 'user']) }),
    }));
  return onUser((id) => ({ method: 'PUT', path: `${API}/users/${id}`, body: userBody() }));
}

let hostileCount = 0;

/** Requests a client gets wrong or an attacker tries: each one's answer must be a 4xx. */
const HOSTILE: readonly (() => Call)[] = [
  () => ({ method: 'POST', path: `${API}/users`, body: '{"name": "Broken", "email": ' }),
  () => {
    // Malformed JSON on a user that exists: the body is refused before the user is looked at.
    const id = pool.take();
    return { method: 'PATCH', path: `${API}/users/${id ?? randomUUID()}`, body: '{"name": ]', busyId: id };
  },
  () => ({ method: 'POST', path: `${API}/users`, body: 'name=Form&email=form@example.com', type: 'text/plain' }),
  () => ({ method: 'PUT', path: `${API}/users/${randomUUID()}`, body: '<user/>', type: 'application/xml' }),
  () => ({ method: 'GET', path: `${API}/users/${randomUUID()}` }),
  () => ({ method: 'DELETE', path: `${API}/users/${randomUUID()}` }),
  () => ({ method: 'GET', path: `${API}/users/not-an-id-${sequence}` }),
  () => ({ method: 'GET', path: `${API}/users?limit=${pick(['0', '-1', '1.5', 'abc', '1e309'])}` }),
  () => ({ method: 'GET', path: `${API}/users?page=${pick(['0', 'x', '9999999999999999', '2&page=3'])}` }),
  () => ({ method: 'GET', path: `${API}/users?search=${'s'.repeat(300)}` }),
  () => ({ method: 'GET', path: `${API}/${pick(['usr', 'users/1/2', 'admin', '../etc/passwd'])}` }),
  () => ({ method: 'GET', path: `/${pick(['wp-login.php', '.env', 'api/v2/users', 'api/v1'])}` }),
  () => ({ method: pick(['DELETE', 'PATCH', 'PUT']), path: `${API}/users` }),
  () => ({ method: 'POST', path: `${API}/users/${randomUUID()}`, body: userBody() }),
  () => ({ method: 'POST', path: `${API}/users`, body: JSON.stringify({ name: '', email: 'not-an-email' }) }),
  () => ({
    method: 'POST',
    path: `${API}/users`,
    body: JSON.stringify({ name: 'X', email: 'x@example.com', role: 'root' }),
  }),
];

/** A body over BODY_LIMIT, built once. */
const OVERSIZE_BODY = JSON.stringify({ name: 'x'.repeat(OVERSIZE_BYTES), email: 'big@example.com' });

function hostileRequest(): Promise<unknown> {
  const call =
    ++hostileCount % OVERSIZE_EVERY === 0
      ? { method: 'POST', path: `${API}/users`, body: OVERSIZE_BODY }
      : pick(HOSTILE)();
  return send(call, true);
}

let load: SoakLoad | undefined;
let running = false;
let inFlight = 0;
const timers: NodeJS.Timeout[] = [];

/** Sends `next()` when fewer than IN_FLIGHT requests are out; false when that many are. */
function launch(next: () => Promise<unknown>): boolean {
  if (inFlight >= IN_FLIGHT) return false;
  inFlight++;
  void next().finally(() => inFlight--);
  return true;
}

/** Paced sending: each tick sends what the rate allows; a backlog is dropped, not caught up in a burst. */
function startRest(): void {
  let budget = 0;
  let last = performance.now();
  timers.push(
    setInterval(() => {
      const now = performance.now();
      budget = Math.min(budget + ((now - last) / 1000) * load!.requestsPerSecond, load!.requestsPerSecond / 10);
      last = now;
      while (budget >= 1 && launch(() => (chance(load!.hostileShare) ? hostileRequest() : ordinaryRequest()))) budget--;
    }, TICK_MS),
  );
}

/** The users already stored (Roster's seed users), then creates up to the target, IN_FLIGHT at a time. */
async function fill(): Promise<void> {
  for (let page = 1; ; page++) {
    const text = await ordinary({ method: 'GET', path: `${API}/users?limit=100&page=${page}` }, 200);
    if (text === undefined) throw new Error('could not list the users stored');
    const { users, pagination } = (
      JSON.parse(text) as { data: { users: { id: string }[]; pagination: { pages: number } } }
    ).data;
    for (const user of users) pool.add(user.id);
    if (page >= pagination.pages) break;
  }
  const worker = async () => {
    while (pool.size < load!.users) {
      const before = counts.unexpected + counts.failed;
      await create();
      if (counts.unexpected + counts.failed > before) throw new Error('a create failed while filling');
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

interface ChatClient {
  socket: WebSocket;
  open: boolean;
  /** The generator closes it: its close is not a failure. */
  leaving: boolean;
}

const clients = new Set<ChatClient>();

function join(): void {
  const socket = new WebSocket(`ws://127.0.0.1:${load!.wsPort}/`);
  const client: ChatClient = { socket, open: false, leaving: false };
  clients.add(client);
  socket.on('open', () => {
    client.open = true;
    counts.chatJoined++;
  });
  socket.on('message', () => counts.chatFramesReceived++);
  // An error before the handshake is a refusal; after it, 'close' follows and tells.
  socket.on('error', () => {
    if (!client.open) counts.chatRefused++;
  });
  socket.on('close', (code) => {
    clients.delete(client);
    if (!client.open || client.leaving) return;
    counts.chatUnexpectedCloses++;
    counts.chatCloseCodes[code] = (counts.chatCloseCodes[code] ?? 0) + 1;
  });
}

function leave(client: ChatClient): void {
  client.leaving = true;
  counts.chatLeft++;
  client.socket.close(1000, 'bye');
}

const openClients = () => [...clients].filter((client) => client.open && !client.leaving);

/** Messages of varied length (so varied garbage), `type: chat` as the protocol has them. */
function chatMessage(): string {
  const text = `soak ${++sequence} ${'lorem ipsum '.repeat(between(0, 30))}`;
  return JSON.stringify({ type: 'chat', message: text });
}

function startChat(): void {
  for (let i = 0; i < load!.chatClients; i++) join();
  // Churn: a few leave, and as many join (more, if some dropped, to get back to the number).
  timers.push(
    setInterval(() => {
      const open = openClients();
      for (let i = 0; i < load!.churnPerSecond && open.length > 0; i++)
        leave(open.splice(Math.floor(Math.random() * open.length), 1)[0]!);
      const present = [...clients].filter((client) => !client.leaving).length;
      for (let i = present; i < load!.chatClients; i++) join();
    }, 1000),
  );
  let budget = 0;
  timers.push(
    setInterval(() => {
      budget = Math.min(budget + (load!.messagesPerSecond * CHAT_TICK_MS) / 1000, load!.messagesPerSecond);
      const open = openClients();
      for (; budget >= 1 && open.length > 0; budget--) {
        pick(open).socket.send(chatMessage());
        counts.chatMessagesSent++;
      }
    }, CHAT_TICK_MS),
  );
}

/** Waits until every first client is in; fails past JOIN_TIMEOUT_MS. */
async function allJoined(): Promise<void> {
  const deadline = performance.now() + JOIN_TIMEOUT_MS;
  while (openClients().length < load!.chatClients) {
    if (performance.now() > deadline)
      throw new Error(
        `${openClients().length} of ${load!.chatClients} chat clients joined within ${JOIN_TIMEOUT_MS / 1000} s`,
      );
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function snapshot(): SoakCounts {
  return { ...counts, users: pool.size, chatOpen: openClients().length, chatCloseCodes: { ...counts.chatCloseCodes } };
}

async function stop(): Promise<SoakCounts> {
  running = false;
  for (const timer of timers) clearInterval(timer);
  while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 20));
  const last = snapshot();
  for (const client of clients) {
    client.leaving = true;
    client.socket.terminate();
  }
  return last;
}

answerParent<SoakCommand>(async (command) => {
  switch (command.cmd) {
    case 'start': {
      if (running) throw new Error('the soak load is running already');
      running = true;
      const { cmd: _cmd, ...settings } = command;
      load = settings;
      await fill();
      startChat();
      await allJoined();
      startRest();
      return snapshot();
    }
    case 'counts':
      return snapshot();
    case 'stop':
      return stop();
  }
});
