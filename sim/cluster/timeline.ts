/**
 * One timer for every delayed action of the simulated cluster (pulls, probes, heartbeats,
 * terminations), so 5,000 nodes and their pods cost one `setTimeout`, not one each.
 *
 * Durations are given in simulated seconds and divided by the speed factor: at speed 20 a
 * 10 s lease renewal happens every 500 ms of wall time. Timestamps written into objects come
 * from the timers' clock, which is wall time unless a test passes its own timers.
 */
import { realTimers, type TimerHandle, type Timers } from "../../lib/timers.ts";

export type Clock = () => number;

interface Task {
  due: number;
  seq: number;
  run: () => void;
  cancelled: boolean;
}

export interface Timeline {
  readonly now: Clock;
  readonly speed: number;
  /** Runs `run` after `seconds` of simulated time; returns a cancel function. */
  after(seconds: number, run: () => void): () => void;
  /** Real milliseconds that `seconds` of simulated time take at the current speed. */
  realMs(seconds: number): number;
  /** Changes the speed; work already scheduled keeps its remaining simulated time. */
  setSpeed(speed: number): void;
  stop(): void;
}

export function createTimeline(
  options: { timers?: Timers; speed?: number; onError?: (error: unknown) => void } = {},
): Timeline {
  const timers = options.timers ?? realTimers;
  const now = () => timers.now();
  let speed = validSpeed(options.speed ?? 1);
  let heap: Task[] = [];
  let seq = 0;
  let timer: TimerHandle | undefined;
  let timerDue = Infinity;
  let stopped = false;

  const before = (a: Task, b: Task) => a.due < b.due || (a.due === b.due && a.seq < b.seq);

  function push(task: Task): void {
    heap.push(task);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i], heap[parent])) break;
      [heap[i], heap[parent]] = [heap[parent], heap[i]];
      i = parent;
    }
  }

  function pop(): Task | undefined {
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < heap.length && before(heap[left], heap[smallest])) smallest = left;
        if (right < heap.length && before(heap[right], heap[smallest])) smallest = right;
        if (smallest === i) break;
        [heap[i], heap[smallest]] = [heap[smallest], heap[i]];
        i = smallest;
      }
    }
    return top;
  }

  function arm(): void {
    while (heap.length > 0 && heap[0].cancelled) pop();
    if (stopped || heap.length === 0) return;
    const due = heap[0].due;
    if (timer !== undefined && timerDue <= due) return;
    if (timer !== undefined) timers.clearTimeout(timer);
    timerDue = due;
    timer = timers.setTimeout(fire, Math.max(0, due - now()));
  }

  function fire(): void {
    timer = undefined;
    timerDue = Infinity;
    const limit = now();
    while (!stopped && heap.length > 0 && heap[0].due <= limit) {
      const task = pop()!;
      if (task.cancelled) continue;
      try {
        task.run();
      } catch (error) {
        options.onError?.(error);
      }
    }
    arm();
  }

  return {
    now,
    get speed() {
      return speed;
    },
    realMs: (seconds) => (seconds * 1000) / speed,
    after(seconds, run) {
      const task: Task = {
        due: now() + (seconds * 1000) / speed,
        seq: seq++,
        run,
        cancelled: false,
      };
      push(task);
      arm();
      return () => {
        task.cancelled = true;
      };
    },
    setSpeed(next) {
      const factor = speed / validSpeed(next);
      speed = validSpeed(next);
      const at = now();
      const tasks = heap.filter((task) => !task.cancelled);
      heap = [];
      for (const task of tasks) {
        task.due = at + Math.max(0, task.due - at) * factor;
        push(task);
      }
      if (timer !== undefined) timers.clearTimeout(timer);
      timer = undefined;
      timerDue = Infinity;
      arm();
    },
    stop() {
      stopped = true;
      if (timer !== undefined) timers.clearTimeout(timer);
      timer = undefined;
      heap = [];
    },
  };
}

function validSpeed(speed: number): number {
  if (!Number.isFinite(speed) || speed <= 0) {
    throw new RangeError(`speed must be a positive number, got ${speed}`);
  }
  return speed;
}
