/** Bounded waits: every wait on an event has a deadline, so no test hangs. */

/** Rejects if `promise` has not settled within `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Asks `check` every `everyMs` until it returns a value other than undefined or false; fails (naming `what`) after `ms`. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  what: string,
  ms = 5_000,
  everyMs = 25,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() >= deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Asks `check` every `everyMs` until it holds; fails (naming `what`) after `ms`. */
export async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  ms = 30_000,
  everyMs = 200,
): Promise<void> {
  await eventually(async () => (await check()) || undefined, what, ms, everyMs);
}

/** A promise and the function that resolves it (e.g. with the next connection of a bare server). */
export function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => (resolve = settle));
  return { promise, resolve };
}
