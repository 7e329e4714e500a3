import { assertEquals } from "@std/assert";
import { memoryLogger } from "../lib/log.ts";
import { Coalescer, type RunKey } from "./coalescer.ts";

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
  const c = new Coalescer(r.run, { logger: memoryLogger(), delayMs: 1 });
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

Deno.test("a run that asks to be looked at again is run again then", async () => {
  const r = recorder({ a: [0.01] });
  const c = new Coalescer(r.run, { logger: memoryLogger() });
  try {
    c.add("a");
    await r.after(2);
    assertEquals(r.runs, ["a", "a"]);
  } finally {
    await c.close();
  }
});

Deno.test("a failed run is retried with backoff until it succeeds", async () => {
  const logs = memoryLogger();
  const r = recorder({ a: [new Error("503"), new Error("503")] });
  const c = new Coalescer(r.run, { logger: logs, retryMs: 1 });
  try {
    c.add("a");
    await r.after(3);
    await c.idle();
    assertEquals(r.runs, ["a", "a", "a"]);
    assertEquals(
      logs.lines.filter((l) => l.msg === "queued reconcile failed").map((l) => l.retryMs),
      [1, 2],
    );
  } finally {
    await c.close();
  }
});

Deno.test("close drops waiting keys and pending requeues", async () => {
  const r = recorder({ a: [60] });
  const c = new Coalescer(r.run, { logger: memoryLogger(), delayMs: 50 });
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
  const c = new Coalescer(r.run, { logger: logs, retryMs: 1, retryable: () => false });
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
  const logs = memoryLogger();
  const runs: number[] = [];
  const started = Date.now();
  // A set that is gone while its pods, held by a finalizer, keep sending events (issue 12).
  const c = new Coalescer(() => {
    runs.push(Date.now() - started);
    return Promise.reject(new Error("advanceddaemonsets/edge/gone not found"));
  }, { logger: logs, retryMs: 100, maxRetryMs: 1000, retryable: () => false });
  try {
    for (let i = 0; i < 80; i++) {
      c.add("gone");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await c.idle();
    // Asked ~80 times over ~400 ms: run at 0, then no sooner than 100 ms and 200 ms after that.
    assertEquals(runs.length >= 2 && runs.length <= 3, true, JSON.stringify(runs));
    for (let i = 1; i < runs.length; i++) {
      assertEquals(runs[i] - runs[i - 1] >= 95 * 2 ** (i - 1), true, JSON.stringify(runs));
    }
  } finally {
    await c.close();
  }
});
