import { assertEquals } from "@std/assert";
import { memoryLogger } from "../lib/log.ts";
import { startWatch, type WatchFn } from "./watcher.ts";

type Query = Record<string, string | number | boolean | undefined>;

/** A scripted watch: each start runs the next script step with its callbacks. */
function scriptedWatch(
  steps:
    ((onLine: (type: string, object: unknown) => void, done: (err: unknown) => void) => void)[],
) {
  const queries: Query[] = [];
  const started = Promise.withResolvers<void>();
  const fn: WatchFn = (_path, query, onLine, done) => {
    queries.push(query);
    const step = steps.shift();
    if (step) queueMicrotask(() => step(onLine, done));
    if (steps.length === 0) started.resolve();
    return Promise.resolve(new AbortController());
  };
  return { fn, queries, allStarted: started.promise };
}

const pod = (name: string, rv: string) => ({
  metadata: { name, namespace: "edge", resourceVersion: rv },
});

Deno.test("a watch ended by the server resumes from the last resourceVersion", async () => {
  const seen: string[] = [];
  const script = scriptedWatch([
    (onLine, done) => {
      onLine("ADDED", pod("a", "10"));
      onLine("BOOKMARK", { metadata: { resourceVersion: "15" } });
      done(null);
    },
    (onLine) => onLine("MODIFIED", pod("a", "16")),
  ]);
  const watch = startWatch(script.fn, {
    path: "/api/v1/pods",
    logger: memoryLogger(),
    onEvent: (type, o) => seen.push(`${type} ${o.metadata.name}@${o.metadata.resourceVersion}`),
  });
  try {
    await script.allStarted;
    await new Promise((r) => setTimeout(r, 0));
    assertEquals(seen, ["ADDED a@10", "MODIFIED a@16"]);
    assertEquals(script.queries.map((q) => q.resourceVersion), [undefined, "15"]);
    assertEquals(script.queries[0].allowWatchBookmarks, true);
    assertEquals(typeof script.queries[0].timeoutSeconds, "number");
    assertEquals(watch.stats.relists, 1);
  } finally {
    await watch.stop();
  }
});

Deno.test("410 Gone starts over with a fresh watch (the relist)", async () => {
  const script = scriptedWatch([
    (onLine) => {
      onLine("ADDED", pod("a", "10"));
      onLine("ERROR", { kind: "Status", code: 410, reason: "Expired" });
    },
    () => {},
  ]);
  const watch = startWatch(script.fn, {
    path: "/api/v1/pods",
    logger: memoryLogger(),
    onEvent: () => {},
  });
  try {
    await script.allStarted;
    assertEquals(script.queries.map((q) => q.resourceVersion), [undefined, undefined]);
    assertEquals(watch.stats.relists, 2);
  } finally {
    await watch.stop();
  }
});

Deno.test("a watch that stalls without a word is restarted by the idle timer", async () => {
  const script = scriptedWatch([
    (onLine) => onLine("ADDED", pod("a", "7")), // then silence: no done, no bookmark
    () => {},
  ]);
  const logs = memoryLogger();
  const watch = startWatch(script.fn, {
    path: "/api/v1/nodes",
    logger: logs,
    idleMs: 20,
    onEvent: () => {},
  });
  try {
    await script.allStarted;
    assertEquals(watch.stats.idleRestarts, 1);
    assertEquals(script.queries[1].resourceVersion, "7");
    assertEquals(
      logs.lines.some((l) => l.msg === "watch idle, restarting" && l.watch === "/api/v1/nodes"),
      true,
    );
  } finally {
    await watch.stop();
  }
});

Deno.test("a failing watch is retried with backoff, keeping its resourceVersion", async () => {
  const script = scriptedWatch([
    (onLine, done) => {
      onLine("ADDED", pod("a", "3"));
      done(Object.assign(new Error("Internal Server Error"), { statusCode: 500 }));
    },
    () => {},
  ]);
  const watch = startWatch(script.fn, {
    path: "/api/v1/pods",
    logger: memoryLogger(),
    backoffMs: 1,
    onEvent: () => {},
  });
  try {
    await script.allStarted;
    assertEquals([watch.stats.errors, script.queries[1].resourceVersion], [1, "3"]);
  } finally {
    await watch.stop();
  }
});
