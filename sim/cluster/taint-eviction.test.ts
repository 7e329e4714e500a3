import { assert, assertEquals } from "@std/assert";
import type { KubeObject } from "../store.ts";
import { withCluster } from "./testing.ts";
import { eventually } from "../../lib/eventually.ts";
import { effectiveTolerations, secondsUntilEviction } from "./taint-eviction.ts";
import { findCondition, type Pod, type Taint, type Toleration } from "./types.ts";

const unreachable: Taint = { key: "node.kubernetes.io/unreachable", effect: "NoExecute" };

Deno.test("taint eviction: tolerationSeconds, untolerated taints and default tolerations", () => {
  assertEquals(secondsUntilEviction([unreachable], []), 0);
  assertEquals(
    secondsUntilEviction([unreachable], [{
      key: unreachable.key,
      operator: "Exists",
      effect: "NoExecute",
    }]),
    undefined,
  );
  const tolerations: Toleration[] = [
    { key: unreachable.key, operator: "Exists", effect: "NoExecute", tolerationSeconds: 60 },
    { operator: "Exists", tolerationSeconds: 30 },
  ];
  assertEquals(secondsUntilEviction([unreachable], tolerations), 30);
  const bare = { metadata: { name: "p" }, spec: { containers: [] } } as unknown as Pod;
  assertEquals(secondsUntilEviction([unreachable], effectiveTolerations(bare)), 300);
});

function pod(name: string, tolerations?: Toleration[]): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: { nodeName: "edge-1", tolerations, containers: [{ name: "a", image: "nginx:1.27" }] },
  };
}

Deno.test("taint eviction: pods on an unreachable node go after their toleration, DaemonSet-style ones stay", async () => {
  await withCluster({ nodes: 2, speed: 400 }, async (store, cluster) => {
    store.create(
      "pods",
      pod("short", [{
        key: unreachable.key,
        operator: "Exists",
        effect: "NoExecute",
        tolerationSeconds: 5,
      }]),
    );
    store.create("pods", pod("defaulted"));
    store.create(
      "pods",
      pod("forever", [{ key: unreachable.key, operator: "Exists", effect: "NoExecute" }]),
    );
    const get = (name: string) => store.tryGet("pods", "default", name) as Pod | undefined;
    await eventually(
      "all running",
      () => ["short", "defaulted", "forever"].every((n) => get(n)?.status?.phase === "Running"),
    );
    cluster.disconnect("edge-1");
    for (const name of ["short", "defaulted"]) {
      const evicted = await eventually(
        `${name} evicted`,
        () => {
          const p = get(name);
          return p?.metadata.deletionTimestamp ? p : undefined;
        },
      );
      assertEquals(
        findCondition(evicted.status?.conditions, "DisruptionTarget")?.reason,
        "DeletionByTaintManager",
      );
    }
    // The node is cut off: the evicted pods stay Terminating, the tolerating one untouched.
    assert(get("short") && get("defaulted"));
    assertEquals(get("forever")?.metadata.deletionTimestamp, undefined);
    cluster.reconnect("edge-1");
    await eventually("evictions confirmed", () => !get("short") && !get("defaulted"));
    assert(get("forever"));
  });
});
