/**
 * Folds bursts of requests for the same set into few reconciles: a key already waiting is
 * not queued twice, and a key asked for while it runs runs once more afterwards (the run in
 * progress may have read before the change). A few keys run at once, never one key twice
 * at once. Only this queue is in memory; losing it loses nothing the tick does not resync.
 */
import type { Logger } from "../cli/log.ts";

export interface CoalescerOptions {
  /** Keys reconciled at the same time. */
  concurrency?: number;
  /** Wait after a key is first asked for, so a burst of events becomes one run. */
  delayMs?: number;
  logger: Logger;
}

export class Coalescer {
  readonly #run: (key: string) => Promise<unknown>;
  readonly #concurrency: number;
  readonly #delayMs: number;
  readonly #logger: Logger;
  /** Waiting keys, in order; a Set keeps each once. */
  readonly #waiting = new Set<string>();
  readonly #running = new Set<string>();
  /** Asked for again while running. */
  readonly #again = new Set<string>();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #idle: { promise: Promise<void>; resolve: () => void } | undefined;
  #closed = false;
  /** Keys asked for, and runs started: the difference is what coalescing saved. */
  requested = 0;
  started = 0;

  constructor(run: (key: string) => Promise<unknown>, options: CoalescerOptions) {
    this.#run = run;
    this.#concurrency = Math.max(1, options.concurrency ?? 4);
    this.#delayMs = Math.max(0, options.delayMs ?? 0);
    this.#logger = options.logger;
  }

  /** Asks for `key` to be reconciled soon. */
  add(key: string): void {
    if (this.#closed) return;
    this.requested++;
    if (this.#running.has(key)) {
      this.#again.add(key);
      return;
    }
    if (this.#waiting.has(key)) return;
    this.#waiting.add(key);
    if (this.#delayMs === 0) {
      this.#pump();
    } else {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        this.#pump();
      }, this.#delayMs);
      this.#timers.add(timer);
    }
  }

  /** Resolves when nothing waits or runs. */
  idle(): Promise<void> {
    if (this.#busy()) {
      this.#idle ??= Promise.withResolvers<void>();
      return this.#idle.promise;
    }
    return Promise.resolve();
  }

  /** Drops what waits, lets what runs finish. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#waiting.clear();
    this.#again.clear();
    await this.idle();
  }

  #busy(): boolean {
    return this.#waiting.size > 0 || this.#running.size > 0;
  }

  #pump(): void {
    for (const key of this.#waiting) {
      if (this.#running.size >= this.#concurrency) break;
      if (this.#running.has(key)) continue;
      this.#waiting.delete(key);
      this.#running.add(key);
      this.started++;
      this.#run(key)
        .catch((err) =>
          this.#logger.warn("queued reconcile failed", { key, error: (err as Error).message })
        )
        .finally(() => {
          this.#running.delete(key);
          if (this.#again.delete(key) && !this.#closed) this.#waiting.add(key);
          this.#pump();
          if (!this.#busy() && this.#idle) {
            this.#idle.resolve();
            this.#idle = undefined;
          }
        });
    }
  }
}
