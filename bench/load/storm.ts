/**
 * Benchmark child: the connection storm. Opens N raw WebSocket clients (ws-wire.ts) as fast as it can,
 * a bounded number of handshakes in flight, and times until every client is in and has every join
 * notice it must get. The contract sends `user_join` to every other connection, so the k-th client in
 * (from 0) gets one for each of the N − 1 − k clients after it: N(N − 1)/2 notices in all, on top of
 * the N welcomes. Clients count frames from their headers alone; every SAMPLE_EVERY-th client reads
 * its frames whole and checks each one. The clients stay connected, still reading, until `reset`, so
 * that the parent can read what they cost the server.
 */
import type { Socket } from 'node:net';
import { answerParent } from '../ipc.js';
import { cpuMeter } from '../stats.js';
import { connectRaw, FrameReader, maskedTextFrame, OPCODE_TEXT } from './ws-wire.js';

const HOST = '127.0.0.1';
/** Every this many clients, one checks the messages it gets (parses them), not just counts them. */
const SAMPLE_EVERY = 100;
/** Once every notice is in, frames arriving within this long are extra ones (none may come). */
const QUIET_MS = 300;
/**
 * How long past the deadline a handshake already under way may take. No new one starts after the
 * deadline, but one under way is not cut off: the server may have let it join already, and a client
 * dropped then would bring leave notices that are not part of the storm.
 */
export const HANDSHAKE_GRACE_MS = 30_000;

export type StormCommand =
  /**
   * Connect `clients` at once over `ports` (client i to port i mod n: several instances sharing a room),
   * at most `concurrency` handshakes in flight, for at most `maxSeconds`;
   * then, if they are not all in with every notice, give those that are in `graceSeconds` more to get
   * their notices (so that what they hold is settled), without counting it in the storm's time.
   */
  | {
      cmd: 'storm';
      ports: number[];
      serverPid: number;
      clients: number;
      concurrency: number;
      maxSeconds: number;
      graceSeconds: number;
      /**
       * The instances run the notice policy (CHAT_NOTICES_MAX_MEMBERS): join notices are coalesced, so
       * the storm is done at the last welcome, and notices are not counted against N(N − 1)/2.
       */
      crowd?: boolean;
    }
  | { cmd: 'reset' };

export interface StormResult {
  /** Clients in (handshake answered, welcome received). */
  connected: number;
  /** From the first handshake until the last client was in (or, when not all got in, until the handshakes under way were over). */
  connectSeconds: number;
  /** From the first handshake until every client had every notice; NaN when that did not happen within maxSeconds. */
  seconds: number;
  /** Join notices received, and how many the clients that got in must receive. */
  notices: number;
  expectedNotices: number;
  /** Whether the clients that got in have all their notices (within maxSeconds plus the grace). */
  settled: boolean;
  /** What is wrong with what the clients received: the counts per client, the sampled messages. */
  problems: string[];
  /** Connections the server closed. */
  closes: number;
  /** Once every client is in and the notices are over: how long one chat message took to reach every client. */
  chatSeconds?: number;
  /** How busy the server's CPU and the generator's CPU were until the storm was over (see cpuMeter). */
  serverCpu: number | undefined;
  generatorCpu: number | undefined;
}

interface Client {
  socket: Socket;
  /** Text frames received, the welcome included. */
  frames: number;
  /** For sampled clients: the first wrong message seen, and the last join notice's online_count. */
  problem?: string;
  lastOnline?: number;
}

const clients: Client[] = [];
/** The chat message sent once the storm is over, to time its way to every client. */
const PROBE = 'storm probe';
const counters = { text: 0, closes: 0, lastFrameAt: 0 };
/** Sockets the generator closed itself: their closes are not the server's doing. */
const discarded = new WeakSet<Socket>();

/** Whether the instances coalesce notices (StormCommand `crowd`): the sampled clients check less. */
let crowd = false;

/** For a sampled client: checks one whole message, in the order received. */
function check(client: Client, payload: Buffer): void {
  if (client.problem !== undefined) return;
  let message: { type?: unknown; online_count?: unknown; message?: unknown };
  try {
    message = JSON.parse(payload.toString('utf8')) as typeof message;
  } catch {
    client.problem = `a frame that is not JSON: ${payload.toString('utf8').slice(0, 60)}`;
    return;
  }
  if (client.frames === 1) {
    if (message.type !== 'system')
      client.problem = `first message of type ${String(message.type)}, not the system welcome`;
    return;
  }
  // Coalesced notices carry the count when sent, which another instance's joins may not have reached yet.
  if (crowd && ['user_join', 'user_leave', 'chat'].includes(String(message.type))) return;
  if (message.type === 'chat' && message.message === PROBE) return;
  if (message.type !== 'user_join') {
    client.problem = `a message of type ${String(message.type)} where only user_join may come`;
    return;
  }
  const online = message.online_count;
  // Each later client adds one: the counts a client sees go up by one, with no gap and no repeat.
  if (typeof online !== 'number' || (client.lastOnline !== undefined && online !== client.lastOnline + 1)) {
    client.problem = `online_count ${String(online)} after ${client.lastOnline ?? 'none'}`;
    return;
  }
  client.lastOnline = online;
}

/** Opens one client; resolves once the handshake is answered with 101 and the welcome has arrived. */
function open(port: number, sampled: boolean, timeoutMs: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    let ready = false;
    const client: Client = { socket: undefined as unknown as Socket, frames: 0 };
    const reader = new FrameReader(sampled, (opcode, payload) => {
      counters.lastFrameAt = performance.now();
      if (opcode !== OPCODE_TEXT) return;
      counters.text++;
      client.frames++;
      if (sampled) check(client, payload!);
      if (!ready) succeed();
    });
    const socket = connectRaw({ host: HOST, port, reader, refused: (error) => fail(error) });
    client.socket = socket;
    const timer = setTimeout(() => fail(new Error(`no welcome within ${(timeoutMs / 1000).toFixed(0)} s`)), timeoutMs);
    function succeed() {
      ready = true;
      clearTimeout(timer);
      resolve(client);
    }
    function fail(error: Error) {
      clearTimeout(timer);
      discarded.add(socket);
      socket.destroy();
      reject(error);
    }
    socket.on('error', (error) => {
      if (!ready) fail(error);
    });
    socket.on('close', () => {
      if (ready && !discarded.has(socket)) counters.closes++;
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `done()` or `deadline` (a performance.now() instant); whether it is done. */
async function until(done: () => boolean, deadline: number): Promise<boolean> {
  while (!done()) {
    if (performance.now() >= deadline) return false;
    await sleep(10);
  }
  return true;
}

/** The problems with the notice counts: sorted, the k-th client in must have N − 1 − k, i.e. 0 … N − 1 once each. */
function countProblems(): string[] {
  const joins = clients.map((client) => client.frames - 1).sort((a, b) => a - b);
  const wrong = joins.findIndex((count, index) => count !== index);
  if (wrong === -1) return [];
  const extra = joins.reduce((sum, count) => sum + count, 0) - (clients.length * (clients.length - 1)) / 2;
  return [
    `join notices per client are not 0 … ${clients.length - 1} once each (first wrong: ${joins[wrong]} where ${wrong} belongs; ${extra} more than due in all)`,
  ];
}

/** Sends one chat message from the first client; the seconds until every client had one more frame. */
async function probe(deadline: number): Promise<number> {
  const before = clients.map((client) => client.frames);
  const sent = performance.now();
  clients[0]!.socket.write(maskedTextFrame(JSON.stringify({ type: 'chat', message: PROBE })));
  const all = await until(() => clients.every((client, i) => client.frames > before[i]!), deadline);
  return all ? (counters.lastFrameAt - sent) / 1000 : NaN;
}

/** Waits until no frame has arrived for `quietMs` (a crowd's notices are over), or `deadline`. */
async function quiet(quietMs: number, deadline: number): Promise<void> {
  await until(() => performance.now() - counters.lastFrameAt >= quietMs, deadline);
}

async function storm(command: Extract<StormCommand, { cmd: 'storm' }>): Promise<StormResult> {
  crowd = command.crowd === true;
  const cpu = cpuMeter(command.serverPid);
  const started = performance.now();
  const deadline = started + command.maxSeconds * 1000;
  let next = 0;
  // The first failure stops every worker; all of them are done before this command answers.
  let failure: unknown;
  const worker = async () => {
    while (next < command.clients && failure === undefined && performance.now() < deadline) {
      const port = command.ports[next % command.ports.length]!;
      const sampled = next++ % SAMPLE_EVERY === 0;
      try {
        clients.push(await open(port, sampled, Math.max(0, deadline - performance.now()) + HANDSHAKE_GRACE_MS));
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(command.concurrency, command.clients) }, worker));
  const connectedAt = performance.now();
  const dueFrames = () => clients.length + (clients.length * (clients.length - 1)) / 2;
  const complete =
    clients.length === command.clients && (crowd || (await until(() => counters.text >= dueFrames(), deadline)));
  // Done when the last client was in and the last notice had arrived.
  // With the policy: when the last client was in (its welcome); its notices come within a second.
  const seconds = !complete
    ? NaN
    : crowd
      ? (connectedAt - started) / 1000
      : (Math.max(connectedAt, counters.lastFrameAt) - started) / 1000;
  const usage = cpu();
  const settled =
    complete || (await until(() => counters.text >= dueFrames(), performance.now() + command.graceSeconds * 1000));
  // Anything more than is due must show: wait a little for it.
  if (settled) await sleep(QUIET_MS);

  const problems: string[] = [];
  if (failure !== undefined)
    problems.push(`a client could not connect: ${failure instanceof Error ? failure.message : String(failure)}`);
  if (settled && !crowd) problems.push(...countProblems());
  const sampledProblems = clients.filter((client) => client.problem !== undefined);
  if (sampledProblems.length > 0)
    problems.push(
      `${sampledProblems.length} sampled clients got a wrong message, e.g. ${sampledProblems[0]!.problem!}`,
    );
  if (settled && !crowd && clients.length > 1) {
    // The last notice anyone gets is the last client's: online_count is everyone.
    const short = clients.filter(
      (client) => client.lastOnline !== undefined && client.lastOnline !== clients.length,
    ).length;
    if (short > 0)
      problems.push(`${short} sampled clients' last join notice does not count all ${clients.length} clients`);
  }
  const notices = counters.text - clients.length;
  let chatSeconds: number | undefined;
  if (settled && clients.length > 0) {
    await quiet(1_500, performance.now() + 30_000);
    chatSeconds = await probe(performance.now() + 30_000);
  }
  return {
    chatSeconds,
    connected: clients.length,
    connectSeconds: (connectedAt - started) / 1000,
    seconds,
    notices,
    expectedNotices: (clients.length * (clients.length - 1)) / 2,
    settled,
    problems,
    closes: counters.closes,
    serverCpu: usage.server,
    generatorCpu: usage.generator,
  };
}

function reset(): void {
  for (const client of clients) {
    discarded.add(client.socket);
    client.socket.destroy();
  }
  clients.length = 0;
  counters.text = 0;
  counters.closes = 0;
}

answerParent<StormCommand>(async (command) => {
  switch (command.cmd) {
    case 'storm':
      return storm(command);
    case 'reset':
      return reset();
  }
});
