/**
 * Support for the browser console's tests: a Roster serving its console, headless Chromium through playwright-core, a TCP proxy
 * that can cut the chat's connections, and small polling helpers.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { createServer as createTcpServer, connect, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import type { RosterServer } from '../../src/server.js';
import { startRoster } from '../helpers.js';

export const CHROMIUM = '/usr/bin/chromium';

/** `skip` option of the browser tests: false when Chromium is there, else the reason. */
export const noChromium: false | string = existsSync(CHROMIUM) ? false : `Chromium not installed: apt-get install -y chromium (looked for ${CHROMIUM})`;

/** The compiled console (dist/web), seen from dist/test/console. */
export const WEB_ROOT = fileURLToPath(new URL('../../web/', import.meta.url));

/** Screenshots for review: <repo>/test-artifacts/console. */
export const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/console/', import.meta.url));

export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

export interface ConsoleRoster {
  server: RosterServer;
  origin: string;
  api: string;
  wsPort: number;
  stop(): Promise<void>;
}

/** Roster on ephemeral ports, the console served as app.ts wires it (CONSOLE, CHAT_PUBLIC_URL). */
export async function startConsoleRoster(env: Record<string, string> = {}, consoleOptions: { chatUrl?: string } = {}): Promise<ConsoleRoster> {
  if (!existsSync(`${WEB_ROOT}index.html`)) {
    throw new Error(`The console is not built (${WEB_ROOT}index.html is missing): run npm run build`);
  }
  const chatUrl: Record<string, string> = consoleOptions.chatUrl === undefined ? {} : { CHAT_PUBLIC_URL: consoleOptions.chatUrl };
  const running = await startRoster({ ...env, ...chatUrl });
  return { server: running.server, origin: running.origin, api: running.api, wsPort: running.wsPort, stop: running.stop };
}

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
  });
}

export interface ConsolePage {
  page: Page;
  /** Uncaught exceptions in the page: always a bug. */
  errors: string[];
  /** Errors the browser logged (failed requests included): none expected unless a test causes them. */
  consoleErrors: string[];
}

/** A new page (own context: own cookies, own chat connection) on the console, at the given size; `path` may carry a view (`/?search=…`). */
export async function openConsole(browser: Browser, origin: string, viewport = DESKTOP, path = '/', colorScheme: 'light' | 'dark' = 'light'): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport, reducedMotion: 'reduce', colorScheme });
  const page = await context.newPage();
  const errors: string[] = [];
  const consoleErrors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.stack ?? error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  await page.goto(`${origin}${path}`);
  return { page, errors, consoleErrors };
}

/** Waits until the locator's text matches; the failure message shows the last text seen. */
export async function waitForText(locator: Locator, expected: RegExp | string, timeoutMs = 5_000): Promise<string> {
  const matches = (text: string) => (typeof expected === 'string' ? text.includes(expected) : expected.test(text));
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    last = (await locator.textContent({ timeout: Math.max(250, deadline - Date.now()) }).catch(() => null)) ?? last;
    if (matches(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${String(expected)}; text is ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Waits until `check` returns a value other than undefined/false, polling. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, what: string, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return `${ARTIFACTS}${name}`;
}

/**
 * A TCP proxy in front of the chat port, so a test can drop the page's connection the way a network
 * does (the server never closes it), and refuse new ones for a while.
 */
export class TcpProxy {
  readonly #server: TcpServer;
  readonly #sockets = new Set<Socket>();
  /** While false, new connections are accepted and immediately dropped. */
  accepting = true;
  /** Connections dropped because `accepting` was false. */
  refused = 0;

  /** `target`: the port to forward to, asked at each connection. */
  constructor(target: () => number) {
    this.#server = createTcpServer((client) => {
      if (!this.accepting) {
        this.refused += 1;
        client.destroy();
        return;
      }
      const upstream = connect(target(), '127.0.0.1');
      for (const [socket, other] of [
        [client, upstream],
        [upstream, client],
      ] as const) {
        this.#sockets.add(socket);
        socket.on('error', () => other.destroy());
        socket.on('close', () => {
          this.#sockets.delete(socket);
          other.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return (this.#server.address() as AddressInfo).port;
  }

  /** Drops every proxied connection at once. */
  cut(): void {
    for (const socket of this.#sockets) socket.destroy();
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
