/**
 * The test kit's one door: every test imports what it needs from here.
 *
 * Roster is started three ways, each closed when its test ends or by its `stop`:
 * - in this process, on ephemeral ports, as `main.ts` builds it (roster.ts: `startRoster`; on each
 *   store backend of the registry in turn, stores.ts: `TEST_STORES`, `startOn`), or
 *   wrapped for a theme (chat.ts `Scope`, hardened.ts `startHardened`, console.ts
 *   `startConsoleRoster`);
 * - as a child process, `node dist/src/main.js` (roster-process.ts: `RosterProcess`; instances.ts:
 *   `Instance`, one of several processes of a deployment);
 * - the REST door alone, for route rules through `inject` (app.ts: `restApp`), or the chat door alone
 *   on the test's thread (chat.ts: `chatInThread`).
 *
 * The rest are tools, one concern a module: bounded waits (wait.ts), HTTP requests (http.ts), checks of
 * error replies (replies.ts), chat clients (chat-client.ts, chat-history.ts) and the frame schemas they
 * check against (schemas.ts), raw WebSocket frames and a client that speaks them (frames.ts,
 * raw-client.ts), a raw HTTP exchange (raw-http.ts), log lines (log.ts), formats (formats.ts), a TCP
 * proxy that plays network failures (tcp-proxy.ts), credentials (credentials.ts), the engines
 * (postgres.ts, redis.ts) and their restarts (engines.ts), the `roster` command (cli.ts), headless Chromium (console.ts), a
 * redirecting API (redirect.ts), an HTTP front that plays 503 and 429 outages (flaky-http.ts), and
 * the rule that CI runs what a developer's machine may skip (ci.ts).
 *
 * The benchmark imports roster.ts and postgres.ts by name instead: its Roster server is a process whose
 * memory it measures, which must not carry the rest of the kit's libraries.
 */
export * from './app.js';
export * from './chat.js';
export * from './chat-client.js';
export * from './chat-history.js';
export * from './ci.js';
export * from './cli.js';
export * from './console.js';
export * from './credentials.js';
export * from './flaky-http.js';
export * from './formats.js';
export * from './frames.js';
export * from './hardened.js';
export * from './http.js';
export * from './instances.js';
export * from './log.js';
export * from './postgres.js';
export * from './raw-client.js';
export * from './raw-http.js';
export * from './redirect.js';
export * from './redis.js';
export * from './replies.js';
export * from './roster.js';
export * from './roster-process.js';
export * from './schemas.js';
export * from './stores.js';
export * from './tcp-proxy.js';
export * from './wait.js';
export * from './sse.js';
export * from './changes-feed.js';
export * from './engines.js';
export * from './latency.js';
export * from './bench-run.js';
