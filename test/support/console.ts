/**
 * The browser console's tests: a Roster serving its console, headless Chromium through playwright-core
 * (loaded only when a browser is launched, so that the other suites do not carry it), and a wait on a
 * locator's text. (A proxy that cuts the chat's connections is tcp-proxy.ts.)
 */
import { existsSync, mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Locator, Page } from 'playwright-core';
import { startRoster, type Running } from './roster.js';

export const CHROMIUM = '/usr/bin/chromium';

/** `skip` option of the browser tests: false when Chromium is there, else the reason. */
export const noChromium: false | string = existsSync(CHROMIUM)
  ? false
  : `Chromium not installed: apt-get install -y chromium (looked for ${CHROMIUM})`;

/** The compiled console (dist/web), seen from dist/test/console. */
export const WEB_ROOT = fileURLToPath(new URL('../../web/', import.meta.url));

/** Screenshots for review: <repo>/test-artifacts/console. */
export const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/console/', import.meta.url));

export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

export type ConsoleRoster = Running;

/** Roster on ephemeral ports, the console served as app.ts wires it (CONSOLE, CHAT_PUBLIC_URL). */
export async function startConsoleRoster(
  env: Record<string, string> = {},
  consoleOptions: { chatUrl?: string } = {},
): Promise<ConsoleRoster> {
  if (!existsSync(`${WEB_ROOT}index.html`)) {
    throw new Error(`The console is not built (${WEB_ROOT}index.html is missing): run npm run build`);
  }
  const chatUrl: Record<string, string> =
    consoleOptions.chatUrl === undefined ? {} : { CHAT_PUBLIC_URL: consoleOptions.chatUrl };
  return startRoster({ ...env, ...chatUrl });
}

/**
 * Runs `body` with a console Roster (started with `env`) and a headless browser, and closes both
 * however the body ends: the scaffold of most browser tests.
 */
export async function withConsole(body: (roster: ConsoleRoster, browser: Browser) => Promise<void>): Promise<void>;
export async function withConsole(
  env: Record<string, string>,
  body: (roster: ConsoleRoster, browser: Browser) => Promise<void>,
): Promise<void>;
export async function withConsole(
  ...args:
    | [body: (roster: ConsoleRoster, browser: Browser) => Promise<void>]
    | [env: Record<string, string>, body: (roster: ConsoleRoster, browser: Browser) => Promise<void>]
): Promise<void> {
  const [env, body] = args.length === 1 ? [{}, args[0]] : args;
  const roster = await startConsoleRoster(env);
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    await body(roster, browser);
  } finally {
    await browser?.close();
    await roster.stop();
  }
}

export async function launchBrowser(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-quic',
      '--no-first-run',
      '--disable-component-update',
      '--disable-sync',
    ],
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
export async function openConsole(
  browser: Browser,
  origin: string,
  viewport = DESKTOP,
  path = '/',
  colorScheme: 'light' | 'dark' = 'light',
  /** Run on the page before it loads the console: a route or a listener that must see its first requests. */
  before?: (page: Page) => Promise<void>,
): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport, reducedMotion: 'reduce', colorScheme });
  const page = await context.newPage();
  await before?.(page);
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
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${String(expected)}; text is ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Types `text` into the chat panel's message field and sends it (Enter). */
export async function sayInChat(page: Page, text: string): Promise<void> {
  const field = page.getByLabel('Message', { exact: true });
  await field.fill(text);
  await field.press('Enter');
}

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return `${ARTIFACTS}${name}`;
}
