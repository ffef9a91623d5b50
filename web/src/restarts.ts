/**
 * Notices that Roster restarted: health names the run that answers (`instance`, new at every start),
 * and a different one than before means a restart, with the users in memory back to the seed users.
 * Checked whenever the chat (re)connects, since a restart drops the chat first.
 */
import { health } from './api.js';
import { formatDateTime, parseServiceTime } from './dom.js';

export class RestartWatch {
  #instance: string | null = null;
  #checking: Promise<void> | null = null;

  /** `restarted` is called with a sentence for people when the instance differs from the one seen before. */
  constructor(private readonly restarted: (text: string) => void) {}

  /** Asks health which run answers now; a failed ask changes nothing (the next one tries again). */
  check(): Promise<void> {
    this.#checking ??= this.#check().finally(() => {
      this.#checking = null;
    });
    return this.#checking;
  }

  async #check(): Promise<void> {
    let run;
    try {
      run = await health();
    } catch {
      return;
    }
    if (typeof run?.instance !== 'string') return;
    const before = this.#instance;
    this.#instance = run.instance;
    if (before === null || before === run.instance) return;
    const started = run.started_at ? parseServiceTime(run.started_at) : null;
    this.restarted(`Roster restarted${started ? ` at ${formatDateTime(started)}` : ''}; the users were loaded again.`);
  }
}
