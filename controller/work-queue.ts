/**
 * Folds bursts of requests for the same set into few reconciles: a key already waiting is
 * not queued twice, and a key asked for while it runs runs once more afterwards (the run in
 * progress may have read before the change). A few keys run at once, never one key twice
 * at once. A run that answers "look again in N seconds" is asked for again then, and a run
 * that fails is retried with backoff (controller-runtime's requeue). A key whose last runs
 * failed, for good or not (a set that is gone), is not run again before its backoff ends,
 * however many events ask for it: as controller-runtime's per-item rate limiter, exponential
 * with a cap, so no event stream drives a hot loop. Only this queue is in memory; losing it
 * loses nothing the tick does not resync.
 */
import type { Logger } from "../lib/log.ts";
import { RecentMap } from "../lib/recent-map.ts";
import { realTimers, type TimerHandle, type Timers } from "../lib/timers.ts";

export interface WorkQueueOptions {
  /** Keys reconciled at the same time. */
  concurrency?: number;
  /** Wait after a key is first asked for, so a burst of events becomes one run. */
  delayMs?: number;
  /**
   * With `delayMs`: the wait ends once no ask for the key came for this long (a burst that is
   * over), and at the latest `delayMs` after the first ask (default: the whole delay).
   */
  quietMs?: number;
  /** First retry after a failed run; doubled for each failure in a row, up to `maxRetryMs`. */
  retryMs?: number;
  maxRetryMs?: number;
  /** Whether a failure may pass with time (default: every failure is retried). */
  retryable?: (err: unknown) => boolean;
  /** Keys whose failures are remembered at most; the oldest are forgotten first. */
  maxTrackedKeys?: number;
  logger: Logger;
  /** The clock and timers of delays, requeues and backoff (default: the real ones). */
  timers?: Timers;
}

/** What a run answers: seconds until the key wants another run, or nothing. */
export type RunKey<K extends string = string> = (
  key: K,
) => Promise<number | null | undefined | void>;

/** Keys are strings so that equal keys are one (`K` narrows which strings). */
export class WorkQueue<K extends string = string> {
  readonly #run: RunKey<K>;
  readonly #retryMs: number;
  readonly #maxRetryMs: number;
  readonly #retryable: (err: unknown) => boolean;
  readonly #concurrency: number;
  readonly #delayMs: number;
  readonly #quietMs: number;
  readonly #logger: Logger;
  readonly #time: Timers;
  /** Keys ready to run, in order; a Set keeps each once. */
  readonly #waiting = new Set<K>();
  /** Keys in their delay: when each was first asked for, and the timer that readies it. */
  readonly #delayed = new Map<K, { firstAt: number; timer: TimerHandle }>();
  readonly #running = new Set<K>();
  /** Asked for again while running. */
  readonly #again = new Set<K>();
  /** One pending requeue per key: the latest answer wins. */
  readonly #requeues = new Map<K, TimerHandle>();
  /** Failed runs in a row, per key, and when the key may run again. */
  readonly #failures: RecentMap<K, { count: number; notBefore: number }>;
  #idle: { promise: Promise<void>; resolve: () => void } | undefined;
  #closed = false;
  /** Keys asked for, and runs started: the difference is what coalescing saved. */
  requested = 0;
  started = 0;

  constructor(run: RunKey<K>, options: WorkQueueOptions) {
    this.#run = run;
    this.#retryMs = options.retryMs ?? 500;
    this.#maxRetryMs = options.maxRetryMs ?? 30_000;
    this.#retryable = options.retryable ?? (() => true);
    this.#concurrency = Math.max(1, options.concurrency ?? 4);
    this.#delayMs = Math.max(0, options.delayMs ?? 0);
    this.#quietMs = Math.min(this.#delayMs, Math.max(0, options.quietMs ?? this.#delayMs));
    this.#failures = new RecentMap(options.maxTrackedKeys ?? 10_000);
    this.#logger = options.logger;
    this.#time = options.timers ?? realTimers;
  }

  /** Asks for `key` to be reconciled soon. */
  add(key: K): void {
    if (this.#closed) return;
    this.requested++;
    this.#enqueue(key);
  }

  /** Queues `key` unless it waits already, runs (then once more after), or is held back. */
  #enqueue(key: K): void {
    if (this.#running.has(key)) {
      this.#again.add(key);
      return;
    }
    if (this.#waiting.has(key)) return;
    const delayed = this.#delayed.get(key);
    if (delayed) {
      // Another ask within the burst: the quiet period starts again, the delay's end stands.
      if (this.#quietMs < this.#delayMs) this.#delay(key, delayed.firstAt);
      return;
    }
    const backoff = (this.#failures.get(key)?.notBefore ?? 0) - this.#time.now();
    if (backoff > 0) {
      // After failures the key waits out its backoff; one requeue stands for every ask.
      if (!this.#requeues.has(key)) this.#requeue(key, backoff);
      return;
    }
    if (this.#delayMs === 0) {
      this.#waiting.add(key);
      this.#pump();
    } else {
      this.#delay(key, this.#time.now());
    }
  }

  /** (Re)arms `key`'s delay: it runs after `quietMs` without asks, at most `delayMs` after `firstAt`. */
  #delay(key: K, firstAt: number): void {
    this.#time.clearTimeout(this.#delayed.get(key)?.timer);
    const now = this.#time.now();
    const wait = Math.max(0, Math.min(firstAt + this.#delayMs, now + this.#quietMs) - now);
    const timer = this.#time.setTimeout(() => {
      this.#delayed.delete(key);
      this.#waiting.add(key);
      this.#pump();
    }, wait);
    this.#delayed.set(key, { firstAt, timer });
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
    for (const { timer } of this.#delayed.values()) this.#time.clearTimeout(timer);
    this.#delayed.clear();
    for (const timer of this.#requeues.values()) this.#time.clearTimeout(timer);
    this.#requeues.clear();
    this.#waiting.clear();
    this.#again.clear();
    await this.idle();
  }

  #requeue(key: K, ms: number): void {
    if (this.#closed) return;
    this.#time.clearTimeout(this.#requeues.get(key));
    this.#requeues.set(
      key,
      this.#time.setTimeout(() => {
        this.#requeues.delete(key);
        this.add(key);
      }, ms),
    );
  }

  #busy(): boolean {
    return this.#waiting.size > 0 || this.#delayed.size > 0 || this.#running.size > 0;
  }

  #pump(): void {
    for (const key of this.#waiting) {
      if (this.#running.size >= this.#concurrency) break;
      if (this.#running.has(key)) continue;
      this.#waiting.delete(key);
      this.#running.add(key);
      this.started++;
      this.#run(key)
        .then((requeueAfter) => {
          this.#failures.delete(key);
          if (typeof requeueAfter === "number" && requeueAfter > 0) {
            this.#requeue(key, requeueAfter * 1000);
          }
        }, (err) => {
          const count = (this.#failures.get(key)?.count ?? 0) + 1;
          const retryMs = Math.min(this.#maxRetryMs, this.#retryMs * 2 ** (count - 1));
          this.#failures.set(key, { count, notBefore: this.#time.now() + retryMs });
          if (!this.#retryable(err)) {
            this.#logger.info("queued reconcile failed for good", {
              key,
              error: (err as Error).message,
              heldMs: retryMs,
            });
            return;
          }
          this.#logger.warn("queued reconcile failed", {
            key,
            error: (err as Error).message,
            retryMs,
          });
          this.#requeue(key, retryMs);
        })
        .finally(() => {
          this.#running.delete(key);
          // Asked for while it ran: queued as any ask is, so a run that just failed waits out
          // its backoff (a stream of events during each run must not make a hot loop).
          if (this.#again.delete(key) && !this.#closed) this.#enqueue(key);
          this.#pump();
          if (!this.#busy() && this.#idle) {
            this.#idle.resolve();
            this.#idle = undefined;
          }
        });
    }
  }
}
