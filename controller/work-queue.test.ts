import { assertEquals } from "@std/assert";
import { memoryLogger } from "../lib/log.ts";
import { type RunKey, WorkQueue } from "./work-queue.ts";
import { ManualTimers } from "../tests/doubles/manual-timers.ts";

function recorder(answers: Record<string, (number | Error)[]>) {
  const runs: string[] = [];
  const next = Promise.withResolvers<void>();
  let wanted = Infinity;
  const run: RunKey = (key) => {
    runs.push(key);
    if (runs.length >= wanted) next.resolve();
    const answer = answers[key]?.shift();
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  };
  return {
    run,
    runs,
    after: (n: number) => ((wanted = n), runs.length >= n ? Promise.resolve() : next.promise),
  };
}

Deno.test("a key waiting is not queued twice; distinct keys each run", async () => {
  const r = recorder({});
  const c = new WorkQueue(r.run, { logger: memoryLogger(), delayMs: 1 });
  try {
    for (const key of ["a", "b", "a", "a", "b"]) c.add(key);
    await r.after(2);
    await c.idle();
    assertEquals(r.runs.sort(), ["a", "b"]);
    assertEquals([c.requested, c.started], [5, 2]);
  } finally {
    await c.close();
  }
});

Deno.test("a run that asks to be looked at again is run again then, not sooner", async () => {
  const timers = new ManualTimers();
  const r = recorder({ a: [2] });
  const c = new WorkQueue(r.run, { logger: memoryLogger(), timers });
  try {
    c.add("a");
    await timers.advance(1999);
    assertEquals(r.runs, ["a"]);
    await timers.advance(1);
    assertEquals(r.runs, ["a", "a"]);
  } finally {
    await c.close();
  }
});

Deno.test("a failed run is retried with doubling backoff until it succeeds", async () => {
  const timers = new ManualTimers();
  const logs = memoryLogger();
  const r = recorder({ a: [new Error("503"), new Error("503")] });
  const c = new WorkQueue(r.run, { logger: logs, retryMs: 100, timers });
  try {
    c.add("a");
    await timers.advance(99);
    assertEquals(r.runs, ["a"]);
    await timers.advance(1);
    assertEquals(r.runs, ["a", "a"]);
    await timers.advance(199);
    assertEquals(r.runs, ["a", "a"]);
    await timers.advance(1);
    await c.idle();
    assertEquals(r.runs, ["a", "a", "a"]);
    assertEquals(
      logs.lines.filter((l) => l.msg === "queued reconcile failed").map((l) => l.retryMs),
      [100, 200],
    );
    assertEquals(timers.pending, 0, "a success leaves nothing armed");
  } finally {
    await c.close();
  }
});

Deno.test("close drops waiting keys and pending requeues", async () => {
  const r = recorder({ a: [60] });
  const c = new WorkQueue(r.run, { logger: memoryLogger(), delayMs: 50 });
  c.add("a");
  c.add("b");
  await c.close();
  assertEquals(r.runs, []);
  c.add("c");
  await c.idle();
  assertEquals(r.runs, []);
});

Deno.test("a failure that will not pass with time is not retried", async () => {
  const logs = memoryLogger();
  const r = recorder({ gone: [new Error("404")] });
  const c = new WorkQueue(r.run, { logger: logs, retryMs: 1, retryable: () => false });
  try {
    c.add("gone");
    await c.idle();
    assertEquals(r.runs, ["gone"]);
    assertEquals(logs.lines.map((l) => l.msg), ["queued reconcile failed for good"]);
  } finally {
    await c.close();
  }
});

Deno.test("a key that keeps failing is not run again before its backoff, however many events ask", async () => {
  const timers = new ManualTimers();
  const logs = memoryLogger();
  const runs: number[] = [];
  const started = timers.now();
  // A set that is gone while its pods, held by a finalizer, keep sending events (issue 12).
  const c = new WorkQueue(() => {
    runs.push(timers.now() - started);
    return Promise.reject(new Error("advanceddaemonsets/edge/gone not found"));
  }, { logger: logs, retryMs: 100, maxRetryMs: 1000, retryable: () => false, timers });
  try {
    // Asked 80 times, every 5 ms: run at 0, then at the end of each backoff (100, then 200 ms).
    for (let i = 0; i < 80; i++) {
      c.add("gone");
      await timers.advance(5);
    }
    await c.idle();
    assertEquals(runs, [0, 100, 300]);
  } finally {
    await c.close();
  }
});

Deno.test("a key asked for while its failing run is in flight still waits out its backoff", async () => {
  const timers = new ManualTimers();
  const logs = memoryLogger();
  const runs: number[] = [];
  let c: WorkQueue | undefined = undefined;
  // A set that is gone while its pods' events keep coming, one during every run (issue 12).
  c = new WorkQueue(() => {
    runs.push(timers.now());
    // Bounded, so a hot loop fails the assertion below instead of running forever.
    if (runs.length < 20) c!.add("gone");
    return Promise.reject(new Error("advanceddaemonsets/edge/gone not found"));
  }, { logger: logs, retryMs: 100, maxRetryMs: 1000, retryable: () => false, timers });
  try {
    const start = timers.now();
    c.add("gone");
    await timers.advance(350);
    // Run at 0, then at the end of each backoff: 100 ms, then 200 ms after that.
    assertEquals(runs.map((t) => t - start), [0, 100, 300]);
  } finally {
    await c.close();
  }
});

Deno.test("a delayed key runs once, the whole delay after its first ask, however many asks came", async () => {
  const timers = new ManualTimers();
  const r = recorder({});
  const c = new WorkQueue(r.run, { logger: memoryLogger(), delayMs: 500, timers });
  try {
    c.add("a");
    for (let i = 0; i < 4; i++) {
      await timers.advance(100);
      c.add("a");
    }
    await timers.advance(99);
    assertEquals(r.runs, [], "499 ms after the first ask");
    await timers.advance(1);
    assertEquals(r.runs, ["a"]);
  } finally {
    await c.close();
  }
});

Deno.test("with a quiet period a burst runs once it is over, and at the latest the delay after its first ask", async () => {
  const timers = new ManualTimers();
  const r = recorder({});
  const c = new WorkQueue(r.run, { logger: memoryLogger(), delayMs: 500, quietMs: 100, timers });
  try {
    // A burst of 140 ms, then quiet: it runs 100 ms after its last ask.
    c.add("a");
    await timers.advance(50);
    c.add("a");
    await timers.advance(90);
    c.add("a");
    await timers.advance(99);
    assertEquals(r.runs, []);
    await timers.advance(1);
    assertEquals(r.runs, ["a"]);
    // Asks 60 ms apart never leave 100 ms quiet: the delay bounds the wait.
    c.add("b");
    for (let elapsed = 60; elapsed < 500; elapsed += 60) {
      await timers.advance(60);
      c.add("b");
    }
    assertEquals(r.runs, ["a"], "480 ms into b's burst");
    await timers.advance(20);
    assertEquals(r.runs, ["a", "b"]);
  } finally {
    await c.close();
  }
});

Deno.test("each key waits out its own delay", async () => {
  const timers = new ManualTimers();
  const r = recorder({});
  const c = new WorkQueue(r.run, { logger: memoryLogger(), delayMs: 500, timers });
  try {
    c.add("a");
    await timers.advance(300);
    c.add("b");
    await timers.advance(200);
    assertEquals(r.runs, ["a"], "b was asked for 200 ms ago");
    await timers.advance(300);
    assertEquals(r.runs, ["a", "b"]);
    assertEquals(timers.pending, 0);
  } finally {
    await c.close();
  }
});

Deno.test("a key asked for while it runs waits the whole delay after that run, not at once", async () => {
  const timers = new ManualTimers();
  const runs: number[] = [];
  const started = timers.now();
  // As a step whose pod writes landed asks for the next (controller/controller.ts), and as its
  // writes' events do meanwhile.
  const c: WorkQueue = new WorkQueue(() => {
    runs.push(timers.now() - started);
    if (runs.length < 3) c.add("a");
    return Promise.resolve();
  }, { logger: memoryLogger(), delayMs: 500, timers });
  try {
    c.add("a");
    await timers.advance(499);
    assertEquals(runs, []);
    await timers.advance(1);
    assertEquals(runs, [500]);
    await timers.advance(499);
    assertEquals(runs, [500], "the run after waits its own delay");
    await timers.advance(1);
    assertEquals(runs, [500, 1000]);
    await timers.advance(1000);
    assertEquals(runs, [500, 1000, 1500]);
  } finally {
    await c.close();
  }
});
