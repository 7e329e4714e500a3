/**
 * A deduplicating queue of keys, drained on a later macrotask so controllers never write from
 * inside a store notification and HTTP requests interleave with bursts of controller work.
 * A failed key is retried later through the timeline (a conflict or a vanished object is
 * ordinary: the next pass works from the fresh cache).
 */
import type { Timeline } from "./timeline.ts";

export interface WorkQueue {
  add(key: string): void;
  readonly length: number;
  stop(): void;
}

export function createWorkQueue(
  timeline: Timeline,
  process: (key: string) => void,
  onError: (key: string, error: unknown) => void,
): WorkQueue {
  let pending = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;

  function drain(): void {
    timer = undefined;
    const batch = pending;
    pending = new Set();
    for (const key of batch) {
      if (stopped) return;
      try {
        process(key);
      } catch (error) {
        onError(key, error);
        timeline.after(1, () => add(key));
      }
    }
  }

  function add(key: string): void {
    if (stopped) return;
    pending.add(key);
    timer ??= setTimeout(drain, 0);
  }

  return {
    add,
    get length() {
      return pending.size;
    },
    stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      pending.clear();
    },
  };
}
