import { assertEquals, assertMatch } from "@std/assert";
import type { KubeObject, Store } from "../store.ts";
import { withCluster } from "./testing.ts";
import { eventually } from "../../lib/eventually.ts";
import { findCondition, type Node, type Pod, type PodSpec } from "./types.ts";

function pod(name: string, spec: Partial<PodSpec>): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: { containers: [{ name: "a", image: "nginx:1.26" }], ...spec },
  };
}

function boundTo(store: Store, name: string): string | undefined {
  return (store.get("pods", "default", name) as Pod).spec.nodeName;
}

function editNode(store: Store, name: string, edit: (node: Node) => void): void {
  const node = store.get("nodes", undefined, name) as Node;
  edit(node);
  store.update("nodes", node);
}

Deno.test("scheduler: nodeSelector, affinity expressions and matchFields pick the node", async () => {
  await withCluster({ nodes: 4, zones: 2 }, async (store) => {
    store.create(
      "pods",
      pod("by-selector", { nodeSelector: { "kubernetes.io/hostname": "edge-3" } }),
    );
    store.create(
      "pods",
      pod("by-field", {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{
                matchFields: [{ key: "metadata.name", operator: "In", values: ["edge-4"] }],
              }],
            },
          },
        },
      }),
    );
    store.create(
      "pods",
      pod("by-zone", {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{
                matchExpressions: [
                  { key: "topology.kubernetes.io/zone", operator: "In", values: ["zone-2"] },
                  { key: "kubernetes.io/hostname", operator: "NotIn", values: ["edge-2"] },
                ],
              }],
            },
          },
        },
      }),
    );
    await eventually(
      "all bound",
      () => ["by-selector", "by-field", "by-zone"].every((n) => boundTo(store, n)),
    );
    assertEquals(boundTo(store, "by-selector"), "edge-3");
    assertEquals(boundTo(store, "by-field"), "edge-4");
    assertEquals(boundTo(store, "by-zone"), "edge-4");
  });
});

Deno.test("scheduler: taints need tolerations; cordoned nodes take nothing; waiting pods bind when nodes change", async () => {
  await withCluster({ nodes: 2 }, async (store) => {
    editNode(
      store,
      "edge-1",
      (n) =>
        n.spec = { ...n.spec, taints: [{ key: "dedicated", value: "gpu", effect: "NoSchedule" }] },
    );
    editNode(store, "edge-2", (n) => n.spec = { ...n.spec, unschedulable: true });
    store.create("pods", pod("plain", {}));
    store.create(
      "pods",
      pod("tolerant", {
        tolerations: [{ key: "dedicated", operator: "Equal", value: "gpu", effect: "NoSchedule" }],
      }),
    );
    await eventually("tolerant bound", () => boundTo(store, "tolerant"));
    assertEquals(boundTo(store, "tolerant"), "edge-1");
    const waiting = await eventually("plain unschedulable", () => {
      const c = findCondition(
        (store.get("pods", "default", "plain") as Pod).status?.conditions,
        "PodScheduled",
      );
      return c?.status === "False" && c;
    });
    assertEquals(waiting.reason, "Unschedulable");
    assertMatch(
      waiting.message ?? "",
      /^0\/2 nodes are available: 1 node\(s\) had untolerated taint \{dedicated: gpu\}, 1 node\(s\) were unschedulable\./,
    );
    assertEquals(boundTo(store, "plain"), undefined);
    editNode(store, "edge-2", (n) => n.spec = { ...n.spec, unschedulable: false });
    await eventually("plain bound after uncordon", () => boundTo(store, "plain") === "edge-2");
  });
});
