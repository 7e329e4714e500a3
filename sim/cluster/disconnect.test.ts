import { assert, assertEquals } from "@std/assert";
import type { KubeObject, Store } from "../store.ts";
import { withCluster } from "./testing.ts";
import { eventually } from "../../lib/eventually.ts";
import { type DaemonSet, findCondition, isPodReady, type Node, type Pod } from "./types.ts";

function node(store: Store, name: string): Node {
  return store.get("nodes", undefined, name) as Node;
}

function readyOf(n: Node): string | undefined {
  return findCondition(n.status?.conditions, "Ready")?.status;
}

function agentPods(store: Store): Pod[] {
  return store.list("pods").items.filter((p) => p.metadata.labels?.app === "agent") as Pod[];
}

const agentSet: KubeObject = {
  apiVersion: "apps/v1",
  kind: "DaemonSet",
  metadata: { name: "agent", namespace: "default" },
  spec: {
    selector: { matchLabels: { app: "agent" } },
    template: {
      metadata: { labels: { app: "agent" } },
      spec: { containers: [{ name: "a", image: "nginx:1.26" }] },
    },
    updateStrategy: { type: "OnDelete" },
  },
};

Deno.test("disconnect: NotReady after the grace period, pods stay, deletes wait for reconnect", async () => {
  await withCluster({ nodes: 3 }, async (store, cluster) => {
    store.create("daemonsets.apps", agentSet);
    await eventually(
      "set available",
      () =>
        (store.get("daemonsets.apps", "default", "agent") as DaemonSet).status?.numberAvailable ===
          3,
    );
    const onEdge2 = agentPods(store).find((p) => p.spec.nodeName === "edge-2")!;

    cluster.disconnect("edge-2");
    const unknown = await eventually("edge-2 Unknown", () => {
      const n = node(store, "edge-2");
      return readyOf(n) === "Unknown" && n.spec?.taints?.length === 2 && n;
    });
    assertEquals(
      unknown.spec?.taints?.map((t) => `${t.key}:${t.effect}`),
      ["node.kubernetes.io/unreachable:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"],
    );
    assertEquals(findCondition(unknown.status?.conditions, "Ready")?.reason, "NodeStatusUnknown");
    const stale = await eventually("pod marked not ready", () => {
      const p = store.tryGet("pods", "default", onEdge2.metadata.name) as Pod | undefined;
      return p && !isPodReady(p) && p;
    });
    assertEquals(stale.status?.phase, "Running"); // still running on the node, as far as anyone knows
    assertEquals(readyOf(node(store, "edge-1")), "True");
    // Upstream counts a node tainted unreachable:NoSchedule out of the desired set.
    await eventually("desired drops", () => {
      const s = (store.get("daemonsets.apps", "default", "agent") as DaemonSet).status;
      return s?.desiredNumberScheduled === 2 && s.numberMisscheduled === 1;
    });

    // A pod bound to the cut-off node meanwhile is not started.
    store.create("pods", {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "late", namespace: "default" },
      spec: { nodeName: "edge-2", containers: [{ name: "a", image: "nginx:1.26" }] },
    });
    // Deletes: the one on a connected node completes; the one on edge-2 stays Terminating.
    const onEdge1 = agentPods(store).find((p) => p.spec.nodeName === "edge-1")!;
    store.delete("pods", "default", onEdge2.metadata.name);
    store.delete("pods", "default", onEdge1.metadata.name);
    await eventually(
      "edge-1 pod gone",
      () => !store.tryGet("pods", "default", onEdge1.metadata.name),
    );
    await eventually(
      "edge-1 replaced",
      () => agentPods(store).some((p) => p.spec.nodeName === "edge-1" && isPodReady(p)),
    );
    const terminating = store.get("pods", "default", onEdge2.metadata.name) as Pod;
    assert(terminating.metadata.deletionTimestamp, "edge-2 pod is Terminating");
    assertEquals((store.get("pods", "default", "late") as Pod).status, undefined);
    assertEquals(agentPods(store).filter((p) => p.spec.nodeName === "edge-2").length, 1);

    cluster.reconnect("edge-2");
    await eventually("edge-2 Ready, untainted", () => {
      const n = node(store, "edge-2");
      return readyOf(n) === "True" && !n.spec?.taints?.length;
    });
    await eventually(
      "delete confirmed",
      () => !store.tryGet("pods", "default", onEdge2.metadata.name),
    );
    await eventually(
      "late pod runs",
      () => isPodReady(store.get("pods", "default", "late") as Pod),
    );
    await eventually(
      "edge-2 has a new daemon pod",
      () => agentPods(store).some((p) => p.spec.nodeName === "edge-2" && isPodReady(p)),
    );
    await eventually("set whole again", () => {
      const s = (store.get("daemonsets.apps", "default", "agent") as DaemonSet).status;
      return s?.desiredNumberScheduled === 3 && s.numberAvailable === 3 &&
        s.numberMisscheduled === 0;
    });
  });
});

Deno.test("notready: the kubelet reports NotReady while connected; ready restores it", async () => {
  await withCluster({ nodes: 2 }, async (store, cluster) => {
    store.create("pods", {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name: "p", namespace: "default" },
      spec: { nodeName: "edge-1", containers: [{ name: "a", image: "nginx:1.26" }] },
    });
    await eventually("ready", () => isPodReady(store.get("pods", "default", "p") as Pod));
    cluster.setNotReady("edge-1");
    const n = await eventually("NotReady + taint", () => {
      const n = node(store, "edge-1");
      return readyOf(n) === "False" && n.spec?.taints?.some((t) =>
        t.key === "node.kubernetes.io/not-ready"
      ) && n;
    });
    assertEquals(findCondition(n.status?.conditions, "Ready")?.reason, "KubeletNotReady");
    await eventually("pod not ready", () => !isPodReady(store.get("pods", "default", "p") as Pod));
    assertEquals(cluster.stats().notReady, 1);
    cluster.setReady("edge-1");
    await eventually("ready again", () => {
      const n = node(store, "edge-1");
      return readyOf(n) === "True" && !n.spec?.taints?.length &&
        isPodReady(store.get("pods", "default", "p") as Pod);
    });
  });
});

Deno.test("admin: unknown nodes are a NotFound error; speed is validated", async () => {
  await withCluster({ nodes: 1 }, (_store, cluster) => {
    let caught: unknown;
    try {
      cluster.disconnect("edge-9");
    } catch (error) {
      caught = error;
    }
    assertEquals((caught as { code?: number }).code, 404);
    let invalid: unknown;
    try {
      cluster.setSpeed(0);
    } catch (error) {
      invalid = error;
    }
    assert(invalid instanceof RangeError);
    cluster.setSpeed(200);
    assertEquals(cluster.speed, 200);
    return Promise.resolve();
  });
});

Deno.test("disconnect: a native RollingUpdate stalls on a cut-off node until it returns (upstream behaviour)", async () => {
  await withCluster({ nodes: 3 }, async (store, cluster) => {
    const set = structuredClone(agentSet);
    (set.spec as DaemonSet["spec"]).updateStrategy = {
      type: "RollingUpdate",
      rollingUpdate: { maxUnavailable: 1 },
    };
    store.create("daemonsets.apps", set);
    const status = () => (store.get("daemonsets.apps", "default", "agent") as DaemonSet).status;
    await eventually("set available", () => status()?.numberAvailable === 3);
    cluster.disconnect("edge-3");
    await eventually("edge-3 out of the desired set", () => status()?.desiredNumberScheduled === 2);

    const ds = store.get("daemonsets.apps", "default", "agent") as DaemonSet;
    ds.spec.template.spec.containers[0].image = "nginx:1.27";
    store.update("daemonsets.apps", ds);
    // The unavailable old pod on edge-3 is deleted outside the budget and stays Terminating;
    // one connected node is updated, and then the terminating pod holds the whole budget.
    await eventually(
      "one connected node updated",
      () => status()?.updatedNumberScheduled === 1 && status()?.numberAvailable === 2,
    );
    const onNode = (node: string) => agentPods(store).filter((p) => p.spec.nodeName === node);
    assert(onNode("edge-3")[0]?.metadata.deletionTimestamp, "edge-3's pod is Terminating");
    const stillOld = ["edge-1", "edge-2"].filter((n) =>
      onNode(n).every((p) =>
        p.spec.containers[0].image === "nginx:1.26" && !p.metadata.deletionTimestamp
      )
    );
    assertEquals(stillOld.length, 1, "the other connected node waits");

    cluster.reconnect("edge-3");
    await eventually("rollout completes", () => {
      const s = status();
      return s?.desiredNumberScheduled === 3 && s.updatedNumberScheduled === 3 &&
        s.numberAvailable === 3;
    });
  });
});
