/**
 * Benchmark child: the chat load generator. Holds N raw WebSocket clients (plain `net` sockets, see
 * ws-wire.ts) on one server. Receivers only count the frames they get; senders, connected last so that
 * a broadcast reaches them after everyone else, send chat messages carrying their index, a sequence
 * number and the send time, and time their own echo. Each sender keeps a window of messages in flight
 * and sends the next one when an echo returns, so the server is kept busy but never flooded.
 *
 * With several servers (instances sharing a room over a bus), the clients are spread evenly over them,
 * and each sender has a watcher on another instance, connected after every sender: an echo comes back
 * from the sender's own instance, the watcher times the same message after its trip across the bus.
 */
import type { Socket } from 'node:net';
import { answerParent } from '../ipc.js';
import { cpuMeter, percentile, sortedSamples } from '../stats.js';
import { connectRaw, FrameReader, maskedTextFrame, OPCODE_TEXT } from './ws-wire.js';

const HOST = '127.0.0.1';
/** Handshakes in flight at once while connecting. */
const CONNECT_CONCURRENCY = 100;
const HANDSHAKE_TIMEOUT_MS = 30_000;
/** The server is taken to be done (join notices, a run's last broadcasts) once no frame has come for this long. */
const QUIET_MS = 300;
/** How long a run waits, once sending stopped, for its outstanding echoes. */
const DRAIN_TIMEOUT_MS = 15_000;
/** Past the connect deadline, how long the clients already in may take to settle. */
const SETTLE_GRACE_MS = 30_000;

export type ChatCommand =
  /**
   * Connect `clients` over `ports` (client i to port i mod n), the last `senders` of them senders (and,
   * with several ports, as many watchers after them), for at most `maxSeconds`; then wait for the
   * server to fall quiet (allowing SETTLE_GRACE_MS more for the clients already in). `serverPid`: the
   * first server's, for CPU figures when processes are not pinned.
   */
  | {
      cmd: 'connect';
      ports: number[];
      serverPid: number;
      clients: number;
      senders: number;
      expectWelcome: boolean;
      maxSeconds: number;
    }
  | { cmd: 'run'; serverPid: number; senders: number; window: number; warmupSeconds: number; seconds: number }
  | { cmd: 'reset' };

export interface ChatConnected {
  /** Clients connected (each with its welcome, when one is expected); fewer than asked when time ran out. */
  connected: number;
  /** From the first handshake until the server fell quiet (join notices delivered). */
  seconds: number;
  /** Whether it fell quiet within the time allowed. */
  settled: boolean;
  /** Connections the server closed so far. */
  closes: number;
  /** How busy the server's CPU and the generator's CPU were meanwhile (see cpuMeter). */
  serverCpu: number | undefined;
  generatorCpu: number | undefined;
}

export interface ChatResult {
  /** Text frames received by all clients together, per second. */
  deliveriesPerSecond: number;
  /** Chat messages sent per second (all senders). */
  messagesPerSecond: number;
  /** Send-to-own-echo latency. */
  p50Ms: number;
  p99Ms: number;
  /** Messages whose echo never came back (within DRAIN_TIMEOUT_MS of the end). */
  lost: number;
  /** With several servers: send-to-watcher latency (the trip to another instance), and messages no watcher saw. */
  cross?: { p50Ms: number; p99Ms: number; lost: number };
  /** Connections the server closed during the run. */
  closes: number;
  /** How busy the server's CPU and the generator's CPU were while measuring (see cpuMeter). */
  serverCpu: number | undefined;
  generatorCpu: number | undefined;
}

/** Counters shared by every client: one increment per frame is all a receiver does. */
const counters = { text: 0, closes: 0, lastFrameAt: 0 };
const sockets: Socket[] = [];
const senders: Sender[] = [];
/** Sockets the generator closed itself: their closes are not the server's doing. */
const discarded = new WeakSet<Socket>();

interface Run {
  sending: boolean;
  measuring: boolean;
  latencies: number[];
  crossLatencies: number[];
}
let run: Run = { sending: false, measuring: false, latencies: [], crossLatencies: [] };

/** A sender's message as it arrives: its send time, or undefined when it is another's (or no chat message). */
function sentAtOf(payload: Buffer, prefix: string): number | undefined {
  const parsed = JSON.parse(payload.toString('utf8')) as { type?: unknown; message?: unknown };
  if (parsed.type !== 'chat' || typeof parsed.message !== 'string' || !parsed.message.startsWith(prefix))
    return undefined;
  return Number(parsed.message.slice(parsed.message.lastIndexOf(':') + 1));
}

class Sender {
  socket: Socket | undefined;
  outstanding = 0;
  sent = 0;
  /** Sent since the run began, warm-up included: what its watcher must see. */
  sentInRun = 0;
  #sequence = 0;
  readonly #prefix: string;
  watcher: Watcher | undefined;

  constructor(readonly index: number) {
    this.#prefix = `${index}:`;
  }

  send(): void {
    const message = `${this.#prefix}${++this.#sequence}:${performance.timeOrigin + performance.now()}`;
    this.socket!.write(maskedTextFrame(JSON.stringify({ type: 'chat', message })));
    this.outstanding++;
    this.sentInRun++;
    if (run.measuring) this.sent++;
  }

  /** A whole text frame: if it is this sender's own chat message coming back, time it and send the next. */
  receive(payload: Buffer): void {
    const sentAt = sentAtOf(payload, this.#prefix);
    if (sentAt === undefined) return;
    if (run.measuring) run.latencies.push(performance.timeOrigin + performance.now() - sentAt);
    this.outstanding--;
    if (run.sending) this.send();
  }
}

/** A client on another instance than its sender's: times the sender's messages after their trip over the bus. */
class Watcher {
  /** Seen since the run began. */
  seenInRun = 0;
  readonly #prefix: string;

  constructor(index: number) {
    this.#prefix = `${index}:`;
  }

  receive(payload: Buffer): void {
    const sentAt = sentAtOf(payload, this.#prefix);
    if (sentAt === undefined) return;
    this.seenInRun++;
    if (run.measuring) run.crossLatencies.push(performance.timeOrigin + performance.now() - sentAt);
  }
}

/**
 * Every client reads into this one buffer (net's `onread`): a read's bytes are handled before the next
 * read starts, so no socket needs a buffer of its own, and no read allocates.
 */

/**
 * Opens one client. Resolves once the handshake is answered with 101 and, with `expectWelcome`, the
 * first message (Roster's welcome) has arrived. `timing`: the sender or watcher that reads its chat frames.
 */
function open(port: number, expectWelcome: boolean, timing?: Sender | Watcher): Promise<Socket> {
  return new Promise((resolve, reject) => {
    let ready = false;
    const reader = new FrameReader(timing !== undefined, (opcode, payload) => {
      counters.lastFrameAt = performance.now();
      if (opcode !== OPCODE_TEXT) return;
      counters.text++;
      if (!ready) succeed();
      else timing?.receive(payload!);
    });
    const socket = connectRaw({
      host: HOST,
      port,
      reader,
      upgraded: () => {
        if (!expectWelcome) succeed();
      },
      refused: (error) => fail(error),
    });
    const timer = setTimeout(
      () => fail(new Error(`no ${expectWelcome ? 'welcome' : 'handshake'} within ${HANDSHAKE_TIMEOUT_MS} ms`)),
      HANDSHAKE_TIMEOUT_MS,
    );
    function succeed() {
      ready = true;
      clearTimeout(timer);
      resolve(socket);
    }
    function fail(error: Error) {
      clearTimeout(timer);
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

/** Waits until no frame has arrived for QUIET_MS; false if that takes longer than `timeoutMs`. */
async function quiet(timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() - counters.lastFrameAt < QUIET_MS) {
    if (performance.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

async function connectAll(command: Extract<ChatCommand, { cmd: 'connect' }>): Promise<ChatConnected> {
  const started = performance.now();
  const deadline = started + command.maxSeconds * 1000;
  const cpu = cpuMeter(command.serverPid);
  const { ports } = command;
  const watchers = ports.length > 1 ? command.senders : 0;
  const receivers = command.clients - command.senders - watchers;
  let next = 0;
  // The first failure stops every worker; all of them are done before this command answers.
  let failure: unknown;
  const worker = async () => {
    while (next < receivers && failure === undefined && performance.now() < deadline) {
      const port = ports[next++ % ports.length]!;
      try {
        sockets.push(await open(port, command.expectWelcome));
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONNECT_CONCURRENCY, receivers) }, worker));
  if (failure !== undefined) throw failure;
  for (let index = 0; index < command.senders && performance.now() < deadline; index++) {
    const sender = new Sender(index);
    sender.socket = await open(ports[index % ports.length]!, command.expectWelcome, sender);
    senders.push(sender);
    sockets.push(sender.socket);
  }
  for (const sender of senders.slice(0, watchers)) {
    if (performance.now() >= deadline) break;
    sender.watcher = new Watcher(sender.index);
    sockets.push(await open(ports[(sender.index + 1) % ports.length]!, command.expectWelcome, sender.watcher));
  }
  const connected = performance.now();
  const settled = await quiet(Math.max(deadline - connected, SETTLE_GRACE_MS));
  // Done when the last client was in and the last frame (a join notice, say) had arrived.
  const done = settled ? Math.max(connected, counters.lastFrameAt) : performance.now();
  const usage = cpu();
  return {
    connected: sockets.length,
    seconds: (done - started) / 1000,
    settled,
    closes: counters.closes,
    serverCpu: usage.server,
    generatorCpu: usage.generator,
  };
}

async function measure(command: Extract<ChatCommand, { cmd: 'run' }>): Promise<ChatResult> {
  if (command.senders > senders.length) throw new Error(`only ${senders.length} senders are connected`);
  // The last senders connected: their echo is the last delivery of each broadcast.
  const active = senders.slice(senders.length - command.senders);
  run = { sending: true, measuring: false, latencies: [], crossLatencies: [] };
  const closesBefore = counters.closes;
  for (const sender of active) {
    sender.sent = 0;
    sender.sentInRun = 0;
    if (sender.watcher) sender.watcher.seenInRun = 0;
    for (let i = 0; i < command.window; i++) sender.send();
  }
  await sleep(command.warmupSeconds * 1000);

  const framesBefore = counters.text;
  const cpu = cpuMeter(command.serverPid);
  const started = performance.now();
  run.measuring = true;
  await sleep(command.seconds * 1000);
  run.measuring = false;
  const seconds = (performance.now() - started) / 1000;
  const frames = counters.text - framesBefore;
  const usage = cpu();
  run.sending = false;

  const deadline = performance.now() + DRAIN_TIMEOUT_MS;
  while (active.some((sender) => sender.outstanding > 0) && performance.now() < deadline) await sleep(20);
  await quiet(DRAIN_TIMEOUT_MS);
  const lost = active.reduce((sum, sender) => sum + sender.outstanding, 0);
  for (const sender of active) sender.outstanding = 0;
  const watched = active.filter((sender) => sender.watcher !== undefined);
  const crossSorted = sortedSamples(run.crossLatencies);
  const cross =
    watched.length === 0
      ? undefined
      : {
          p50Ms: percentile(crossSorted, 50),
          p99Ms: percentile(crossSorted, 99),
          lost: watched.reduce((sum, sender) => sum + Math.max(0, sender.sentInRun - sender.watcher!.seenInRun), 0),
        };

  const sorted = sortedSamples(run.latencies);
  return {
    ...(cross && { cross }),
    deliveriesPerSecond: frames / seconds,
    messagesPerSecond: active.reduce((sum, sender) => sum + sender.sent, 0) / seconds,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    lost,
    closes: counters.closes - closesBefore,
    serverCpu: usage.server,
    generatorCpu: usage.generator,
  };
}

function reset(): void {
  for (const socket of sockets) {
    discarded.add(socket);
    socket.destroy();
  }
  sockets.length = 0;
  senders.length = 0;
  counters.closes = 0;
}

answerParent<ChatCommand>(async (command) => {
  switch (command.cmd) {
    case 'connect':
      return connectAll(command);
    case 'run':
      return measure(command);
    case 'reset':
      return reset();
  }
});
