import { assert, assertEquals, assertMatch } from "@std/assert";
import type { KubeObject, Store } from "../store.ts";
import { withCluster } from "./testing.ts";
import { eventually } from "../../lib/eventually.ts";
import { findCondition, type Node, type Pod } from "./types.ts";

function pod(name: string, image: string, extra: Partial<Pod["spec"]> = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace: "default" },
    spec: { containers: [{ name: "app", image }], ...extra },
  };
}

function getPod(
  store: { tryGet(r: string, ns: string, n: string): KubeObject | undefined },
  name: string,
) {
  return store.tryGet("pods", "default", name) as Pod | undefined;
}

Deno.test("nodes: edge-N with labels, Ready condition, lease, kubelet version", async () => {
  await withCluster({ nodes: 4, zones: 2 }, (store, cluster) => {
    assertEquals(cluster.nodeNames(), ["edge-1", "edge-2", "edge-3", "edge-4"]);
    const node = store.get("nodes", undefined, "edge-3") as Node;
    assertEquals(node.metadata.labels?.["kubernetes.io/hostname"], "edge-3");
    assertEquals(node.metadata.labels?.["topology.kubernetes.io/zone"], "zone-1");
    assertEquals(
      (store.get("nodes", undefined, "edge-2") as Node).metadata.labels
        ?.["topology.kubernetes.io/zone"],
      "zone-2",
    );
    assertEquals(findCondition(node.status?.conditions, "Ready")?.status, "True");
    assertMatch(node.status?.nodeInfo?.kubeletVersion ?? "", /^v1\.32\./);
    const lease = store.get("leases.coordination.k8s.io", "kube-node-lease", "edge-3");
    assertEquals((lease.spec as { holderIdentity: string }).holderIdentity, "edge-3");
    return Promise.resolve();
  });
});

Deno.test("kubelet: a pod is scheduled, pulled, started and becomes Ready; the image is cached", async () => {
  await withCluster({ nodes: 1 }, async (store) => {
    store.create("pods", pod("web", "nginx:1.27", { readinessProbe: undefined }));
    const running = await eventually("web Ready", () => {
      const p = getPod(store, "web");
      return p && findCondition(p.status?.conditions, "Ready")?.status === "True" && p;
    });
    assertEquals(running.spec.nodeName, "edge-1");
    assertEquals(running.status?.phase, "Running");
    const status = running.status!.containerStatuses![0];
    assertEquals(status.image, "docker.io/library/nginx:1.27");
    assertMatch(status.imageID, /^docker\.io\/library\/nginx@sha256:[0-9a-f]{64}$/);
    assertMatch(status.containerID ?? "", /^containerd:\/\/[0-9a-f]{64}$/);
    assertEquals([status.ready, status.started, status.restartCount], [true, true, 0]);
    assert(status.state.running?.startedAt);
    assert(running.status?.podIP && running.status.hostIP && running.status.startTime);
    for (const type of ["PodScheduled", "Initialized", "ContainersReady", "Ready"]) {
      assertEquals(findCondition(running.status?.conditions, type)?.status, "True", type);
    }
    const node = await eventually("image in node status", () => {
      const n = store.get("nodes", undefined, "edge-1") as Node;
      return n.status?.images?.some((i) => i.names.includes("docker.io/library/nginx:1.27")) && n;
    });
    assert(node.status?.images?.[0].sizeBytes);
  });
});

Deno.test("kubelet: readiness waits for the probe's initial delay", async () => {
  await withCluster({ nodes: 1, speed: 50 }, async (store) => {
    const probed = pod("slow", "nginx:1.27");
    (probed.spec as Pod["spec"]).containers[0].readinessProbe = { initialDelaySeconds: 5 };
    store.create("pods", probed);
    const started = await eventually("slow running", () => {
      const p = getPod(store, "slow");
      return p?.status?.phase === "Running" && p;
    });
    assertEquals(started.status!.containerStatuses![0].ready, false);
    assertEquals(findCondition(started.status?.conditions, "Ready")?.status, "False");
    await eventually(
      "slow Ready",
      () => findCondition(getPod(store, "slow")?.status?.conditions, "Ready")?.status === "True",
    );
  });
});

Deno.test("kubelet: a failing pull shows ErrImagePull then ImagePullBackOff", async () => {
  await withCluster(
    { nodes: 1, imageFaults: { "registry.example/app:2": "ErrImagePull" } },
    async (store) => {
      // Every waiting reason each pod reports, from its first status on: polling could miss
      // the short ErrImagePull phase on a busy machine.
      const reasons = new Map<string, Set<string>>();
      const unsubscribe = store.subscribe((event) => {
        const p = event.object as Pod;
        const reason = p.status?.containerStatuses?.[0]?.state.waiting?.reason;
        if (event.resource !== "pods" || !reason) return;
        if (!reasons.has(p.metadata.name)) reasons.set(p.metadata.name, new Set());
        reasons.get(p.metadata.name)!.add(reason);
      });
      try {
        store.create("pods", pod("bad", "nginx:bad"));
        store.create("pods", pod("listed", "registry.example/app:2"));
        for (const name of ["bad", "listed"]) {
          await eventually(`${name} back-off`, () => reasons.get(name)?.has("ImagePullBackOff"));
          assert(reasons.get(name)!.has("ErrImagePull"), `${name} went through ErrImagePull`);
          assertEquals(getPod(store, name)?.status?.phase, "Pending");
        }
      } finally {
        unsubscribe();
      }
    },
  );
});

Deno.test("kubelet: a graceful delete is confirmed after termination", async () => {
  await withCluster({ nodes: 1 }, async (store) => {
    store.create("pods", pod("gone", "nginx:1.27"));
    await eventually(
      "ready",
      () => findCondition(getPod(store, "gone")?.status?.conditions, "Ready")?.status === "True",
    );
    let reportedUnready = false;
    const unsubscribe = store.subscribe((event) => {
      const p = event.object as Pod;
      if (event.type === "MODIFIED" && p.metadata.name === "gone" && p.metadata.deletionTimestamp) {
        reportedUnready ||= findCondition(p.status?.conditions, "Ready")?.status === "False";
      }
    });
    try {
      const { removed, object } = store.delete("pods", "default", "gone");
      assertEquals(removed, false);
      assert(object.metadata.deletionTimestamp);
      await eventually("deleted", () => getPod(store, "gone") === undefined);
      assert(reportedUnready, "the terminating pod was reported not ready before it went");
    } finally {
      unsubscribe();
    }
  });
});

Deno.test("kubelet: an image change restarts the container with a new restartCount", async () => {
  await withCluster({ nodes: 1 }, async (store) => {
    store.create("pods", pod("swap", "nginx:1.26"));
    const first = await eventually("running", () => {
      const p = getPod(store, "swap");
      return p?.status?.containerStatuses?.[0].ready && p;
    });
    first.spec.containers[0].image = "nginx:1.27";
    store.update("pods", first);
    const after = await eventually("restarted", () => {
      const s = getPod(store, "swap")?.status?.containerStatuses?.[0];
      return s?.ready && s.image === "docker.io/library/nginx:1.27" && s;
    });
    assertEquals(after.restartCount, 1);
    assertEquals(after.lastState.terminated?.reason, "Completed");
  });
});

/** A pod whose containers ask for cpu and memory, its second restarted to resize memory. */
function resizable(name: string, cpu: string, memory = "64Mi"): KubeObject {
  const resources = { requests: { cpu, memory }, limits: { cpu: "2", memory: "256Mi" } };
  return pod(name, "nginx:1.27", {
    containers: [
      { name: "app", image: "nginx:1.27", resources },
      {
        name: "sidecar",
        image: "nginx:1.27",
        resources,
        resizePolicy: [{ resourceName: "memory", restartPolicy: "RestartContainer" }],
      },
    ],
  });
}

function resized(
  store: Store,
  name: string,
  container: string,
  requests: object,
) {
  const current = getPod(store, name)!;
  const c = current.spec.containers.find((x) => x.name === container)!;
  c.resources = { ...c.resources as object, requests };
  store.update("pods", current as unknown as KubeObject);
}

Deno.test("kubelet: a resize is applied running, or with a restart where resizePolicy asks; InProgress until applied", async () => {
  await withCluster({ nodes: 1 }, async (store) => {
    store.create("pods", resizable("web", "100m"));
    const running = await eventually("web Ready", () => {
      const p = getPod(store, "web");
      return findCondition(p?.status?.conditions, "Ready")?.status === "True" && p;
    });
    const app = running.status!.containerStatuses!.find((s) => s.name === "app")!;
    assertEquals(app.resources, {
      requests: { cpu: "100m", memory: "64Mi" },
      limits: { cpu: "2", memory: "256Mi" },
    });
    assertEquals(app.allocatedResources, { cpu: "100m", memory: "64Mi" });
    assertEquals(running.status?.qosClass, "Burstable");

    // Every status the kubelet writes meanwhile, the one in progress among them.
    const written: Pod[] = [];
    const unsubscribe = store.subscribe((e) => {
      if (e.resource === "pods" && e.object.metadata.name === "web") written.push(e.object as Pod);
    });
    resized(store, "web", "app", { cpu: "500m", memory: "64Mi" });
    const applied = await eventually("applied", () => {
      const p = getPod(store, "web");
      const s = p?.status?.containerStatuses?.find((x) => x.name === "app");
      return s?.resources?.requests?.cpu === "500m" &&
        !findCondition(p?.status?.conditions, "PodResizeInProgress") && p;
    });
    unsubscribe();
    const inProgress = written.find((p) =>
      findCondition(p.status?.conditions, "PodResizeInProgress")?.status === "True"
    );
    const allocated = inProgress?.status?.containerStatuses?.find((s) => s.name === "app");
    assertEquals(allocated?.allocatedResources?.cpu, "500m");
    assertEquals(allocated?.resources?.requests?.cpu, "100m", "allocated, not applied yet");
    assertEquals(applied.status!.containerStatuses!.map((s) => s.restartCount), [0, 0]);
    assertEquals(findCondition(applied.status?.conditions, "Ready")?.status, "True");

    resized(store, "web", "sidecar", { cpu: "100m", memory: "128Mi" });
    const restarted = await eventually("the sidecar restarted", () => {
      const s = getPod(store, "web")?.status?.containerStatuses?.find((x) => x.name === "sidecar");
      return s?.resources?.requests?.memory === "128Mi" && s.ready && s;
    });
    assertEquals(restarted.restartCount, 1);
    assertEquals(
      getPod(store, "web")!.status!.containerStatuses!.find((s) => s.name === "app")!.restartCount,
      0,
    );
  });
});

Deno.test("kubelet: a resize beyond the node is Infeasible; beyond what other pods leave, Deferred until one goes", async () => {
  // The node allocates 4 cpu: each pod asks for 2 x 1 (its two containers).
  await withCluster({ nodes: 1 }, async (store) => {
    store.create("pods", resizable("first", "1"));
    store.create("pods", resizable("second", "500m"));
    await eventually(
      "both Ready",
      () =>
        ["first", "second"].every((n) =>
          findCondition(getPod(store, n)?.status?.conditions, "Ready")?.status === "True"
        ),
    );
    const pending = (name: string) =>
      findCondition(getPod(store, name)?.status?.conditions, "PodResizePending");

    resized(store, "second", "app", { cpu: "4", memory: "64Mi" });
    const infeasible = await eventually("Infeasible", () => pending("second"));
    assertEquals([infeasible.reason, infeasible.message], [
      "Infeasible",
      "Node didn't have enough capacity: cpu, requested: 4500, capacity: 4000",
    ]);
    assertEquals(
      getPod(store, "second")!.status!.containerStatuses![0].resources?.requests?.cpu,
      "500m",
    );

    resized(store, "second", "app", { cpu: "2", memory: "64Mi" });
    const deferred = await eventually(
      "Deferred",
      () => pending("second")?.reason === "Deferred" && pending("second"),
    );
    assertEquals(
      deferred.message,
      "Node didn't have enough resource: cpu, requested: 2500, used: 2000, capacity: 4000",
    );
    store.delete("pods", "default", "first", { gracePeriodSeconds: 0 });
    await eventually("applied once the first pod went", () => {
      const p = getPod(store, "second");
      return p?.status?.containerStatuses?.[0].resources?.requests?.cpu === "2" &&
        !pending("second") && p;
    });
  });
});

Deno.test("kubelet: a crashing image restarts with CrashLoopBackOff and a growing restartCount", async () => {
  await withCluster({ nodes: 1 }, async (store) => {
    store.create("pods", pod("crasher", "nginx:crash"));
    const seen = new Set<string>();
    const status = await eventually("second restart", () => {
      const s = getPod(store, "crasher")?.status?.containerStatuses?.[0];
      const reason = s?.state.waiting?.reason;
      if (reason) seen.add(reason);
      return s && s.restartCount >= 2 && s;
    });
    assert(seen.has("CrashLoopBackOff"));
    assertEquals(status.lastState.terminated?.reason, "Error");
    assertEquals(status.lastState.terminated?.exitCode, 1);
    const p = getPod(store, "crasher")!;
    assertEquals(p.status?.phase, "Running");
    assertEquals(findCondition(p.status?.conditions, "Ready")?.status, "False");
  });
});

Deno.test("kubelet: an image that never passes readiness runs but stays unready", async () => {
  await withCluster(
    { nodes: 1, imageFaults: { "example.org/probe-fails:1": "NeverReady" } },
    async (store) => {
      store.create("pods", pod("unready", "example.org/probe-fails:1"));
      store.create("pods", pod("fine", "nginx:1.27"));
      await eventually(
        "fine Ready",
        () => findCondition(getPod(store, "fine")?.status?.conditions, "Ready")?.status === "True",
      );
      // Both images pull from scratch; once the fine one is Ready the other has run as long.
      const p = await eventually("unready running", () => {
        const p = getPod(store, "unready");
        return p?.status?.containerStatuses?.[0].state.running && p;
      });
      assertEquals(p.status?.containerStatuses?.[0].ready, false);
      assertEquals(findCondition(p.status?.conditions, "ContainersReady")?.status, "False");
    },
  );
});

Deno.test("pod GC: pods of a deleted node are removed after the quarantine", async () => {
  await withCluster({ nodes: 2 }, async (store) => {
    store.create("pods", pod("stranded", "nginx:1.27", { nodeName: "edge-2" }));
    await eventually("running", () => getPod(store, "stranded")?.status?.phase === "Running");
    store.delete("nodes", undefined, "edge-2");
    await eventually("stranded pod collected", () => getPod(store, "stranded") === undefined);
  });
});

Deno.test("kubelet: conditions it does not own are kept; readiness gates hold Ready back", async () => {
  await withCluster({ nodes: 1 }, async (store) => {
    store.create(
      "pods",
      pod("gated", "nginx:1.27", { readinessGates: [{ conditionType: "example.com/gate" }] }),
    );
    const running = await eventually("containers ready", () => {
      const p = getPod(store, "gated");
      return findCondition(p?.status?.conditions, "ContainersReady")?.status === "True" && p;
    });
    assertEquals(findCondition(running.status?.conditions, "Ready")?.status, "False");
    running.status!.conditions!.push(
      { type: "example.com/gate", status: "True" },
      { type: "PodNeedUpgrade", status: "True", message: "controllerrevision: abc" },
    );
    store.update("pods", running);
    const ready = await eventually("Ready through the gate", () => {
      const p = getPod(store, "gated");
      return findCondition(p?.status?.conditions, "Ready")?.status === "True" && p;
    });
    assertEquals(
      findCondition(ready.status?.conditions, "PodNeedUpgrade")?.message,
      "controllerrevision: abc",
    );
  });
});

Deno.test("kubelet: Ready's reason names every closed gate as the kubelet does", async () => {
  await withCluster({ nodes: 1 }, async (store) => {
    store.create(
      "pods",
      pod("gated", "nginx:1.27", {
        readinessGates: [{ conditionType: "example.com/a" }, { conditionType: "example.com/b" }],
      }),
    );
    const ready = (p: Pod | undefined) => findCondition(p?.status?.conditions, "Ready");
    const running = await eventually("containers ready", () => {
      const p = getPod(store, "gated");
      return findCondition(p?.status?.conditions, "ContainersReady")?.status === "True" && p;
    });
    assertEquals(ready(running)?.reason, "ReadinessGatesNotReady");
    assertEquals(
      ready(running)?.message,
      'corresponding condition of pod readiness gate "example.com/a" does not exist., ' +
        'corresponding condition of pod readiness gate "example.com/b" does not exist.',
    );
    running.status!.conditions!.push(
      { type: "example.com/a", status: "True" },
      { type: "example.com/b", status: "False" },
    );
    store.update("pods", running);
    const held = await eventually("b alone holds Ready back", () => {
      const p = getPod(store, "gated");
      return !ready(p)?.message?.includes('"example.com/a"') && p;
    });
    assertEquals(ready(held)?.status, "False");
    assertEquals(
      ready(held)?.message,
      'the status of pod readiness gate "example.com/b" is not "True", but False',
    );
    // The message changed, the status did not: the transition time stays.
    assertEquals(ready(held)?.lastTransitionTime, ready(running)?.lastTransitionTime);
  });
});

Deno.test("kubelet: a pre-pulled image is listed by the node; a bad one is refused", async () => {
  await withCluster({ nodes: 1 }, async (store, cluster) => {
    await cluster.pullImage("edge-1", "registry.example/agent:2");
    await eventually("listed in node status", () => {
      const n = store.get("nodes", undefined, "edge-1") as Node;
      return n.status?.images?.some((i) => i.names.includes("registry.example/agent:2"));
    });
    let refused: unknown;
    try {
      await cluster.pullImage("edge-1", "registry.example/agent:bad");
    } catch (error) {
      refused = error;
    }
    assertMatch(String(refused), /failed to pull image "registry.example\/agent:bad"/);
  });
});
