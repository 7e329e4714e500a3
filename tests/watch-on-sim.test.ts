/**
 * `clientNodeWatch` under `startWatch`, against the simulator with its bookmarks off, so a
 * watch is as quiet as kube-apiserver leaves one between its bookmarks (about a minute): the
 * next change must still arrive. client-node aborts a watch that read nothing for 30 s, and
 * under Deno that abort never reached `done`: the watch was dead while counted open, and the
 * change waited for the idle restart (the Kruise spec "should run and stop complex daemon"
 * failed on cluster/ by it).
 */
import { assertEquals } from "@std/assert";
import { eventually } from "../lib/eventually.ts";
import { memoryLogger } from "../lib/log.ts";
import { clientNodeWatch, type RunningWatch, startWatch, type WatchFn } from "../kube/watcher.ts";
import { kubeWatch } from "../kube/api.ts";
import { loadKubeConfig } from "../kube/config.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import { startSim } from "../sim/start.ts";
import { stillCluster } from "./sim/helpers.ts";

/** A node whose labels the test changes; nothing else in a still cluster writes it. */
const node = (color: string): KubeObject => ({
  apiVersion: "v1",
  kind: "Node",
  metadata: { name: "edge-1", labels: { color } },
});

async function withQuietWatch(
  watchFn: (kubeconfigPath: string) => WatchFn,
  body: (
    relabel: (color: string) => void,
    colors: string[],
    watch: RunningWatch,
  ) => Promise<void>,
) {
  // No bookmarks within the test: the watch hears only the changes the test makes.
  const sim = await startSim({ behaviour: stillCluster, bookmarkIntervalMs: 3_600_000 });
  const colors: string[] = [];
  const logger = memoryLogger();
  const watch = startWatch(watchFn(sim.kubeconfigPath), {
    path: "/api/v1/nodes",
    logger,
    // Longer than the test: only client-node's silence limit may end the watch.
    idleMs: 600_000,
    backoffMs: 50,
    onEvent: (_type, object) => colors.push(object.metadata.labels?.color ?? ""),
  });
  try {
    sim.store.create("nodes", node("red") as never);
    await eventually("the first node seen", () => colors.length === 1 || undefined);
    const relabel = (color: string) => {
      const current = sim.store.get("nodes", undefined, "edge-1") as unknown as KubeObject;
      sim.store.update(
        "nodes",
        { ...current, metadata: { ...current.metadata, labels: { color } } } as never,
      );
    };
    await body(relabel, colors, watch);
  } finally {
    await watch.stop();
    await sim.stop();
  }
}

Deno.test("a watch quiet for longer than client-node's 30 s still delivers the next change", async () => {
  const watchFn = (path: string) => clientNodeWatch(loadKubeConfig(path));
  await withQuietWatch(watchFn, async (relabel, colors, watch) => {
    await new Promise((resolve) => setTimeout(resolve, 32_000));
    relabel("blue");
    await eventually(
      "the change after 32 s of silence",
      () => colors.includes("blue") || undefined,
      {
        timeoutMs: 5_000,
      },
    );
    assertEquals(colors, ["red", "blue"]);
    assertEquals(watch.stats.idleRestarts, 0);
  });
});

Deno.test("client-node's own abort of a silent watch ends it loudly: it resumes and misses nothing", async () => {
  const watchFn = (path: string) => clientNodeWatch(loadKubeConfig(path), { silenceMs: 500 });
  await withQuietWatch(watchFn, async (relabel, colors, watch) => {
    // Past client-node's limit: its abort must come to `done`, and the watch resume.
    await eventually("the abort reported", () => watch.stats.errors > 0 || undefined, {
      timeoutMs: 5_000,
    });
    relabel("blue");
    await eventually("the change after the abort", () => colors.includes("blue") || undefined, {
      timeoutMs: 5_000,
    });
    assertEquals(colors, ["red", "blue"]);
    assertEquals(watch.stats.starts > 1, true, "resumed");
  });
});

Deno.test("kubeWatch, the controller's, reads sim's JSON watch: every change once, no error", async () => {
  const watchFn = (path: string) => kubeWatch(loadKubeConfig(path));
  await withQuietWatch(watchFn, async (relabel, colors, watch) => {
    relabel("blue");
    relabel("green");
    await eventually("both changes", () => colors.includes("green") || undefined, {
      timeoutMs: 5_000,
    });
    assertEquals(colors, ["red", "blue", "green"]);
    assertEquals([watch.stats.starts, watch.stats.errors], [1, 0]);
  });
});
