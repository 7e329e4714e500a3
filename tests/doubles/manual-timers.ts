/**
 * `Timers` whose time moves only when a test says so: `advance(ms)` runs every timer that
 * falls due on the way, in due order, then lets their promise callbacks settle.
 */
import type { TimerHandle, Timers } from "../../lib/timers.ts";

interface Pending {
  due: number;
  seq: number;
  run: () => void;
}

export class ManualTimers implements Timers {
  #now: number;
  #seq = 0;
  readonly #pending = new Map<TimerHandle, Pending>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(run: () => void, ms: number): TimerHandle {
    const seq = this.#seq++;
    // A handle of the runtime's type, never armed: only its identity is used.
    const handle = seq as unknown as TimerHandle;
    this.#pending.set(handle, { due: this.#now + Math.max(0, ms), seq, run });
    return handle;
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle !== undefined) this.#pending.delete(handle);
  }

  /** Timers not yet run. */
  get pending(): number {
    return this.#pending.size;
  }

  /** Moves time by `ms`, running what falls due (and what those schedule within the span). */
  async advance(ms: number): Promise<void> {
    const until = this.#now + ms;
    for (;;) {
      await settle();
      const next = [...this.#pending.entries()]
        .filter(([, p]) => p.due <= until)
        .sort(([, a], [, b]) => a.due - b.due || a.seq - b.seq)[0];
      if (!next) break;
      this.#pending.delete(next[0]);
      this.#now = Math.max(this.#now, next[1].due);
      next[1].run();
    }
    this.#now = until;
    await settle();
  }
}

/** Lets the promise callbacks queued so far, and those they queue, run (one macrotask turn). */
async function settle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 0));
}
