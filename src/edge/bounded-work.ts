/**
 * A bound on costly work in flight (password hashing): at most `concurrency` tasks run at once and at
 * most `queue` wait for a slot; past that, `run` refuses at once instead of queueing, so a flood of
 * credentials to check cannot pile up CPU work (and latency) without end.
 *
 * Written by hand, a dozen lines: the maintained limiters (p-limit and the like) queue without bound,
 * and the refusal when the queue is full is the whole point here.
 */
export class BoundedWork {
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(
    readonly concurrency: number,
    readonly queue: number,
  ) {}

  /** Runs `task` when a slot is free; throws `refusal()` at once when `queue` tasks are already waiting. */
  async run<T>(task: () => Promise<T>, refusal: () => Error): Promise<T> {
    if (this.#running < this.concurrency) this.#running += 1;
    else if (this.#waiting.length < this.queue) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else throw refusal();
    try {
      return await task();
    } finally {
      // The slot passes straight to the oldest waiter, or is given back.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running -= 1;
    }
  }
}
