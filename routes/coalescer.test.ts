import { assertEquals } from "@std/assert";
import { memoryLogger } from "../cli/log.ts";
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
