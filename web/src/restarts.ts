/**
 * Notices that Roster restarted: health names the run that answers (`instance`, new at every start),
 * and a different one than before means a restart, with the users in memory back to the seed users.
 * Checked whenever the chat (re)connects, since a restart drops the chat first.
 */
import { health } from './api.js';
import { formatDateTime, parseServiceTime } from './dom.js';

/**
 * A failed ask is made again this often, this many times: Roster opens its chat port before its REST
 * port, so a chat that reconnects at once may ask before health can answer.
 */
const RETRY_MS = 1000;
const RETRIES = 30;

export class RestartWatch {
  #instance: string | null = null;
  #checking: Promise<void> | null = null;

  /** `restarted` is called with a sentence for people when the instance differs from the one seen before. */
  constructor(private readonly restarted: (text: string) => void) {}

  /** Asks health which run answers now; a failed ask changes nothing, and is made again a little later. */
  check(): Promise<void> {
    this.#checking ??= this.#check().finally(() => {
      this.#checking = null;
    });
    return this.#checking;
  }

  async #check(): Promise<void> {
    let run;
    for (let attempt = 0; ; attempt++) {
      try {
        run = await health();
        break;
      } catch {
        if (attempt === RETRIES) return;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
    if (typeof run?.instance !== 'string') return;
    const before = this.#instance;
    this.#instance = run.instance;
    if (before === null || before === run.instance) return;
    const started = run.started_at ? parseServiceTime(run.started_at) : null;
    this.restarted(`Roster restarted${started ? ` at ${formatDateTime(started)}` : ''}; the users were loaded again.`);
  }
}
