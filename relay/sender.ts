/**
 * Posts CloudEvents to the controller, coalesced: events are kept by object (the latest wins)
 * and sent in batches at most one per `flushMs`, so a 10,000-pod rollout costs a few posts a
 * second, not thousands. The first event after a quiet spell goes out at once (a throttle,
 * not a delay): each event is one hop of a rollout's critical path, and waiting a window on
 * every hop added up to a fifth of a rollout's wall time (bench/controller.ts). A failed post keeps its events (newer ones for the same object replace
 * them) and is retried with backoff; a batch the controller calls malformed (400) is dropped.
 */
import { CloudEvent } from "cloudevents";
import type { Logger } from "../lib/log.ts";

export interface SenderOptions {
  /** The controller's `/events` URL. */
  target: string;
  /** The bearer token, or where to read it before each post (projected tokens rotate). */
  token?: BearerToken;
  /** Least time between two posts (default 100 ms). */
  flushMs?: number;
  maxBatch?: number;
  /**
   * Most objects with an event waiting (default 100,000). Past it, while the controller does
   * not answer, the oldest is dropped and counted: an event only calls a reconcile, and the
   * controller's resync finds what a dropped one would have.
   */
  maxPending?: number;
  backoffMs?: number;
  maxBackoffMs?: number;
  logger: Logger;
  /** Injected in tests; the global fetch otherwise. */
  fetch?: typeof fetch;
}

export type BearerToken = string | (() => string | undefined);

export interface PendingEvent {
  type: string;
  subject: string;
  data: unknown;
}

export class EventSender {
  readonly #options: SenderOptions;
  readonly #fetch: typeof fetch;
  /** By object key: what to send next for it. */
  readonly #pending = new Map<string, PendingEvent>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When the scheduled post goes (`performance.now()`), while one is scheduled. */
  #postAt: number | undefined;
  #flushing: Promise<void> | undefined;
  #backoff: number;
  /** When the last post started (`performance.now()`). */
  #lastPostAt = -Infinity;
  #stopped = false;
  readonly stats = { queued: 0, sent: 0, posts: 0, failedPosts: 0, dropped: 0 };

  constructor(options: SenderOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? fetch;
    this.#backoff = options.backoffMs ?? 200;
  }

  /** Queues an event for `key`, replacing one not yet sent for the same object. */
  send(key: string, event: PendingEvent): void {
    if (this.#stopped) return;
    this.stats.queued++;
    this.#pending.delete(key); // re-insert: the map's order is the send order
    this.#pending.set(key, event);
    if (this.#pending.size > (this.#options.maxPending ?? 100_000)) {
      const [oldest] = this.#pending.keys();
      this.#pending.delete(oldest);
      if (this.stats.dropped++ === 0 || this.stats.dropped % 10_000 === 0) {
        this.#options.logger.warn("events dropped: the controller has not taken them", {
          dropped: this.stats.dropped,
          oldest,
        });
      }
    }
    this.#schedule();
  }

  get pending(): number {
    return this.#pending.size;
  }

  /** Sends what is pending now (tests, shutdown). */
  async flush(): Promise<void> {
    this.#clearTimer();
    await this.#flushing;
    if (this.#pending.size > 0) await this.#flushOnce();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#clearTimer();
    await this.#flushing;
  }

  /** Posts when `flushMs` has passed since the last post; on the next turn if it has. */
  #schedule() {
    if (this.#timer !== undefined || this.#flushing || this.#stopped) return;
    const delay = Math.max(
      0,
      this.#lastPostAt + (this.#options.flushMs ?? 100) - performance.now(),
    );
    this.#postIn(delay);
  }

  /** Schedules the next post (one at a time). */
  #postIn(delay: number) {
    this.#clearTimer();
    this.#postAt = performance.now() + delay;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#postAt = undefined;
      this.#flushOnce();
    }, delay);
  }

  #clearTimer() {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#postAt = undefined;
  }

  /** Milliseconds until the next scheduled post; undefined when none is scheduled. */
  get nextPostInMs(): number | undefined {
    return this.#postAt === undefined ? undefined : this.#postAt - performance.now();
  }

  #flushOnce(): Promise<void> {
    if (this.#flushing) return this.#flushing;
    this.#flushing = this.#post().finally(() => {
      this.#flushing = undefined;
      if (this.#pending.size > 0) this.#schedule();
    });
    return this.#flushing;
  }

  async #post(): Promise<void> {
    const maxBatch = this.#options.maxBatch ?? 500;
    const batch = [...this.#pending].slice(0, maxBatch);
    if (batch.length === 0) return;
    for (const [key] of batch) this.#pending.delete(key);
    const body = JSON.stringify(
      batch.map(([, e]) =>
        new CloudEvent({ source: "edgeroll-relay", type: e.type, subject: e.subject, data: e.data })
          .toJSON()
      ),
    );
    const headers: Record<string, string> = {
      "content-type": "application/cloudevents-batch+json",
    };
    const { token } = this.#options;
    const bearer = typeof token === "function" ? token() : token;
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    this.stats.posts++;
    this.#lastPostAt = performance.now();
    let status = 0;
    let problem = "";
    try {
      const res = await this.#fetch(this.#options.target, { method: "POST", headers, body });
      status = res.status;
      problem = res.ok ? "" : (await res.text()).slice(0, 300);
      if (res.ok) await res.body?.cancel();
    } catch (err) {
      problem = (err as Error).message;
    }
    if (status >= 200 && status < 300) {
      this.stats.sent += batch.length;
      this.#backoff = this.#options.backoffMs ?? 200;
      return;
    }
    this.stats.failedPosts++;
    if (status === 400) {
      // Retrying a batch the controller cannot read would fail forever.
      this.stats.dropped += batch.length;
      this.#options.logger.error("controller rejected events, dropped", {
        status,
        problem,
        events: batch.length,
      });
      return;
    }
    // Put back what no newer event replaced, and wait before the next try.
    for (const [key, event] of batch) if (!this.#pending.has(key)) this.#pending.set(key, event);
    this.#options.logger.warn("posting events failed, will retry", {
      status,
      problem,
      events: batch.length,
      retryInMs: this.#backoff,
    });
    const wait = this.#backoff;
    this.#backoff = Math.min(this.#options.maxBackoffMs ?? 10_000, this.#backoff * 2);
    this.#postIn(wait);
  }
}
