import { assert, assertEquals } from "@std/assert";
import { auditedRequests, NodeReadyWatch, RolloutWatch } from "./peers-measure.ts";
import { startSim } from "../sim/start.ts";
import { stillCluster } from "../tests/sim/helpers.ts";
import { loadKubeConfig } from "../kube/config.ts";
import { eventually } from "../lib/eventually.ts";
import type { KubeObject } from "../kube/wire-objects.ts";

const event = (
  user: string,
  verb: string,
  stage: string,
  at: string,
  object: { resource?: string; subresource?: string; code?: number } = {},
) =>
  JSON.stringify({
    stage,
    verb,
    user: { username: user },
    objectRef: {
      resource: object.resource ?? "pods",
      ...(object.subresource ? { subresource: object.subresource } : {}),
    },
    responseStatus: { code: object.code ?? 200 },
    requestReceivedTimestamp: at,
  });

Deno.test("the audit log counts a user's requests in the window: a watch when it starts", async () => {
  const path = await Deno.makeTempFile();
  try {
    const before = event("edgeroll", "create", "ResponseComplete", "2026-01-01T00:00:00.000Z");
    await Deno.writeTextFile(path, before + "\n");
    const offset = (await Deno.stat(path)).size;
    await Deno.writeTextFile(
      path,
      [
        // received before the window opened, written after the offset: not counted
        event("edgeroll", "delete", "ResponseComplete", "2026-01-01T00:00:09.000Z"),
        event("edgeroll", "create", "ResponseComplete", "2026-01-01T00:00:10.500Z"),
        event("edgeroll", "update", "ResponseComplete", "2026-01-01T00:00:11.000Z", {
          resource: "sets",
          subresource: "status",
        }),
        event("edgeroll", "update", "ResponseComplete", "2026-01-01T00:00:11.500Z", {
          resource: "sets",
          code: 409,
        }),
        event("edgeroll", "get", "ResponseComplete", "2026-01-01T00:00:12.000Z"),
        event("edgeroll", "watch", "ResponseStarted", "2026-01-01T00:00:12.000Z"),
        event("edgeroll", "watch", "ResponseComplete", "2026-01-01T00:00:12.000Z"),
        event("kwok", "patch", "ResponseComplete", "2026-01-01T00:00:12.000Z"),
        // after the window closed
        event("edgeroll", "create", "ResponseComplete", "2026-01-01T00:00:30.000Z"),
        "",
      ].join("\n"),
      { append: true },
    );
    const counts = await auditedRequests(
      path,
      offset,
      ["edgeroll"],
      Date.parse("2026-01-01T00:00:10.000Z"),
      Date.parse("2026-01-01T00:00:20.000Z"),
    );
    assertEquals(counts, {
      requests: 5,
      writes: 3,
      conflicts: 1,
      byKind: {
        "create pods": 1,
        "update sets/status": 1,
        "update sets": 1,
        "get pods": 1,
        "watch pods": 1,
      },
    });
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("the bench's pod watch times each node's turn: old pod deleted, new pod, available", async () => {
  const sim = await startSim({ behaviour: stillCluster });
  const pod = (name: string, node: string, image: string, ready: boolean): KubeObject => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: { nodeName: node, containers: [{ name: "agent", image }] },
    status: {
      conditions: [{
        type: "Ready",
        status: ready ? "True" : "False",
        lastTransitionTime: new Date().toISOString(),
      }],
    },
  });
  const nodes = ["edge-1", "edge-2"];
  nodes.forEach((n) => sim.store.create("pods", pod(`old-${n}`, n, "agent:v1", true) as never));
  const watch = new RolloutWatch(loadKubeConfig(sim.kubeconfigPath), "default", nodes);
  try {
    await watch.start();
    watch.expect("agent:v2");
    for (const n of nodes) {
      sim.store.delete("pods", "default", `old-${n}`);
      sim.store.create("pods", pod(`new-${n}`, n, "agent:v2", false) as never);
    }
    // edge-1 comes up; edge-2's new pod stays unready: it has no second span.
    const started = sim.store.get("pods", "default", "new-edge-1") as unknown as KubeObject;
    sim.store.update(
      "pods",
      { ...started, ...pod("new-edge-1", "edge-1", "agent:v2", true) } as never,
    );
    await eventually("edge-1 updated", () => watch.updated === 1 || undefined);
    const phases = watch.podPhases();
    assertEquals(phases.oldDeletedToNew.nodes, 2);
    assertEquals(phases.newToAvailable.nodes, 1);
    assertEquals(phases.createdToReady.nodes, 1);
    // Whole seconds on the API server's clock: the pod became Ready within a second or two.
    assert(phases.createdToReady.p50 > -1 && phases.createdToReady.p50 < 2, JSON.stringify(phases));
    assert(
      phases.oldDeletedToNew.p50 >= 0 && phases.newToAvailable.p90 >= 0,
      JSON.stringify(phases),
    );
    assertEquals(watch.doneAt, undefined);
  } finally {
    await watch.stop();
    await sim.stop();
  }
});

Deno.test("the bench's node watch counts the expected nodes that turn NotReady, and the most at once", async () => {
  const sim = await startSim({ behaviour: stillCluster });
  const node = (name: string, ready: boolean): KubeObject => ({
    apiVersion: "v1",
    kind: "Node",
    metadata: { name },
    status: { conditions: [{ type: "Ready", status: ready ? "True" : "Unknown" }] },
  });
  const setReady = (name: string, ready: boolean) => {
    const stored = sim.store.get("nodes", undefined, name) as unknown as KubeObject;
    sim.store.update("nodes", { ...stored, status: node(name, ready).status } as never);
  };
  ["edge-1", "edge-2", "edge-3"].forEach((n) =>
    sim.store.create("nodes", node(n, n !== "edge-3") as never)
  );
  const watch = new NodeReadyWatch(loadKubeConfig(sim.kubeconfigPath));
  try {
    await watch.start();
    // edge-3 is cut: not expected, not counted.
    watch.expect(["edge-1", "edge-2"]);
    assertEquals(watch.maxNotReady, 0);
    setReady("edge-1", false);
    setReady("edge-1", true);
    setReady("edge-3", true);
    setReady("edge-2", false);
    await eventually("edge-2 seen NotReady", () => watch.turnedNotReady.has("edge-2") || undefined);
    assertEquals([...watch.turnedNotReady].sort(), ["edge-1", "edge-2"]);
    assertEquals(watch.maxNotReady, 1);
    setReady("edge-1", false);
    await eventually("both NotReady at once", () => watch.maxNotReady === 2 || undefined);
    watch.expect(["edge-1", "edge-2"]);
    assertEquals([watch.turnedNotReady.size, watch.maxNotReady], [0, 2]);
  } finally {
    await watch.stop();
    await sim.stop();
  }
});
