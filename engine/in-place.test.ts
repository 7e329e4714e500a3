import { assert, assertEquals } from "@std/assert";
import { inPlaceUpdate } from "./in-place.ts";
import { plan } from "./plan.ts";
import * as f from "./testdata/fleet.ts";
import { Keys, type Pod, type PodTemplateSpec } from "../api/kube-objects.ts";
import type { Plan, Snapshot } from "../api/plan.ts";
import type { ResourceRequirements } from "../api/kube-objects.ts";
import { deferredResizeDeadlineMs } from "./resize-fallback.ts";
import { formatTime } from "./pod-node-state.ts";

type Policy = { resourceName: string; restartPolicy: string }[];

const res = (cpu: string, memory: string, limits = { cpu, memory }): ResourceRequirements => ({
  requests: { cpu, memory },
  limits,
});

function template(image: string, resources?: ResourceRequirements, resizePolicy?: Policy) {
  return {
    metadata: { labels: { app: "agent" } },
    spec: {
      containers: [{
        name: "agent",
        image,
        ...(resources ? { resources } : {}),
        ...(resizePolicy ? { resizePolicy } : {}),
      }],
    },
  } as PodTemplateSpec;
}

/** A running pod made from `from`, its kubelet reporting what it runs (resources too). */
function podOf(from: PodTemplateSpec, reportsResources = true): Pod {
  const pod = f.pod("agent-a", "node-0", "old");
  pod.spec.containers = structuredClone(from.spec.containers);
  pod.status!.containerStatuses = from.spec.containers.map((c) => ({
    name: c.name,
    image: c.image,
    ready: true,
    ...(reportsResources ? { resources: structuredClone(c.resources ?? {}) } : {}),
  }));
  return pod;
}

const v1 = template("agent:v1", res("100m", "64Mi", { cpu: "200m", memory: "128Mi" }));
/** v1 whose memory is resized with a restart of its container. */
const restartOnMemory = [{ resourceName: "memory", restartPolicy: "RestartContainer" }];
const v1RestartingOnMemory = template("agent:v1", v1.spec.containers[0].resources, restartOnMemory);

Deno.test("in place: cpu alone is resized without restart, the pod left Ready and its images alone", () => {
  const v2 = template("agent:v1", res("150m", "64Mi", { cpu: "300m", memory: "128Mi" }));
  const update = inPlaceUpdate(podOf(v1), v1, v2, "new", 2)!;
  assertEquals(update.resize, [{
    name: "agent",
    resources: {
      requests: { cpu: "150m", memory: "64Mi" },
      limits: { cpu: "300m", memory: "128Mi" },
    },
  }]);
  assertEquals(update.restarts, false);
  assertEquals(update.patch.spec, undefined, "no image to change: the pod's list is not sent");
  assertEquals(update.patch.metadata.labels?.[Keys.revisionHash], "new");
  assertEquals(update.what, "cpu of agent");
});

Deno.test("in place: a resource whose resizePolicy is RestartContainer restarts; one that is not does not", () => {
  const policy = restartOnMemory;
  const from = v1RestartingOnMemory;
  const memory = template(
    "agent:v1",
    res("100m", "96Mi", { cpu: "200m", memory: "192Mi" }),
    policy,
  );
  assertEquals(inPlaceUpdate(podOf(from), from, memory, "new", 2)?.restarts, true);
  const cpu = template("agent:v1", res("150m", "64Mi", { cpu: "200m", memory: "128Mi" }), policy);
  assertEquals(inPlaceUpdate(podOf(from), from, cpu, "new", 2)?.restarts, false);
});

Deno.test("in place: image and cpu together: resized first, then the image patched with the resized resources", () => {
  const v2 = template("agent:v2", res("150m", "64Mi", { cpu: "300m", memory: "128Mi" }));
  const update = inPlaceUpdate(podOf(v1), v1, v2, "new", 2)!;
  assertEquals(update.restarts, true);
  assertEquals(update.resize?.length, 1);
  // A merge patch replaces the list: it must not undo the resize (the API server refuses that).
  assertEquals(update.patch.spec?.containers, [{
    name: "agent",
    image: "agent:v2",
    resources: {
      requests: { cpu: "150m", memory: "64Mi" },
      limits: { cpu: "300m", memory: "128Mi" },
    },
  }]);
  assertEquals(update.what, "image of agent; cpu of agent");
});

Deno.test("in place: limits alone are requests too, as the API server stores them", () => {
  const from = template("agent:v1", { limits: { cpu: "200m", memory: "128Mi" } });
  const pod = podOf(from);
  pod.spec.containers[0].resources = res("200m", "128Mi"); // defaulted on create
  const to = template("agent:v1", { limits: { cpu: "300m", memory: "128Mi" } });
  const update = inPlaceUpdate(pod, from, to, "new", 2)!;
  assertEquals(update.resize?.[0].resources, res("300m", "128Mi"), "Guaranteed stays Guaranteed");
});

Deno.test("in place: two spellings of one quantity are no change", () => {
  const from = template("agent:v1", res("0.1", "1Gi"));
  const to = template("agent:v1", res("100m", "1024Mi"));
  const update = inPlaceUpdate(podOf(from), from, to, "new", 2)!;
  assertEquals([update.resize, update.restarts], [undefined, false]);
});

Deno.test("in place: recreated instead where a resize cannot do it", () => {
  const cases: [string, PodTemplateSpec, Pod?][] = [
    ["a QoS class that changes", template("agent:v1", res("200m", "128Mi"))],
    [
      "a resource named that was not",
      template("agent:v1", { requests: { cpu: "100m", memory: "64Mi" } }),
    ],
    [
      "another resource than cpu and memory",
      template("agent:v1", {
        requests: { cpu: "100m", memory: "64Mi", "ephemeral-storage": "2Gi" },
        limits: { cpu: "200m", memory: "128Mi" },
      }),
    ],
    [
      "a memory limit lowered without RestartContainer",
      template("agent:v1", res("100m", "64Mi", { cpu: "200m", memory: "96Mi" })),
    ],
    [
      "a pod whose kubelet reports no resources (it cannot resize)",
      template("agent:v1", res("150m", "64Mi", { cpu: "300m", memory: "128Mi" })),
      podOf(v1, false),
    ],
    [
      "anything else",
      {
        ...template("agent:v1", v1.spec.containers[0].resources),
        spec: { ...v1.spec, hostNetwork: true },
      },
    ],
  ];
  for (const [what, to, pod] of cases) {
    assertEquals(inPlaceUpdate(pod ?? podOf(v1), v1, to, "new", 2), undefined, what);
  }
  const cpu = template("agent:v1", res("150m", "64Mi", { cpu: "300m", memory: "128Mi" }));
  assertEquals(
    inPlaceUpdate(podOf(v1), v1, cpu, "new", 2, false),
    undefined,
    "an API server without pods/resize",
  );
  const image = template("agent:v2", v1.spec.containers[0].resources);
  assert(inPlaceUpdate(podOf(v1), v1, image, "new", 2, false), "images need no resize");
  const lowered = template(
    "agent:v1",
    res("100m", "64Mi", { cpu: "200m", memory: "96Mi" }),
    restartOnMemory,
  );
  assert(
    inPlaceUpdate(podOf(v1RestartingOnMemory), v1RestartingOnMemory, lowered, "new", 2),
    "lowered with RestartContainer",
  );
});

function readySince(pod: Pod): string | undefined {
  return pod.status?.conditions?.find((k) => k.type === "Ready")?.lastTransitionTime;
}

function podActions(p: Plan): string[] {
  return p.actions.flatMap((a) => {
    if (a.type === "patchPod") return [`${a.resize ? "resize+" : ""}patch ${a.name}`];
    if (a.type === "deletePod") return [`delete ${a.node}`];
    if (a.type === "createPod") return [`create ${a.node}`];
    if (a.type === "setPodCondition") {
      return [`condition ${a.name} ${a.condition.type}=${a.condition.status}`];
    }
    return [];
  });
}

/** A fleet on `v1`, settled, then its template moved to `v2`. */
function rolled(nodes: number, to: PodTemplateSpec): f.Cluster {
  let c = f.cluster({
    kind: "AdvancedDaemonSet",
    set: f.advancedDaemonSet({
      template: v1,
      updateStrategy: {
        type: "RollingUpdate",
        rollingUpdate: { rollingUpdateType: "InPlaceIfPossible" },
      },
    }) as Snapshot["set"],
    pods: [],
    nodes: f.nodes(nodes),
    revisions: [],
  });
  for (let i = 0; i < 4; i++) c = f.reconciled(c, f.t0 - 3600_000 + i * 1000);
  const s = structuredClone(c.snapshot);
  (s.set.spec as { template: unknown }).template = to;
  s.set.metadata.generation = 2;
  return { snapshot: s, serial: c.serial };
}

Deno.test("InPlaceIfPossible: a resources-only change resizes pods in place, Ready throughout, one within the budget at a time", () => {
  const v2 = template("agent:v1", res("150m", "64Mi", { cpu: "300m", memory: "128Mi" }));
  let c = rolled(2, v2);
  const uids = c.snapshot.pods.map((p) => p.metadata.uid);
  const readyBefore = c.snapshot.pods.map(readySince);
  const first = c.snapshot.pods.find((p) => p.spec.nodeName === "node-1")!.metadata.name;
  let p = plan(c.snapshot, f.t0);
  // No gate closes: the pod stays Ready while its kubelet resizes it.
  assertEquals(podActions(p), [`resize+patch ${first}`]);
  const event = p.events.find((e) => e.reason === "SuccessfulUpdatePodInPlace");
  assertEquals(event?.message.endsWith(": cpu of agent"), true);
  // Resized, not yet applied by its kubelet: it holds the budget (maxUnavailable 1).
  c = f.apply(c, p, f.t0);
  p = plan(c.snapshot, f.t0 + 1000);
  assertEquals(podActions(p), []);
  assertEquals(p.status.numberAvailable, 1, "counted unavailable until it runs its resources");
  c = f.kubelet(c, f.t0 + 1000);
  p = plan(c.snapshot, f.t0 + 2000);
  const next = c.snapshot.pods.find((x) => x.spec.nodeName === "node-0")!.metadata.name;
  assertEquals(podActions(p), [`resize+patch ${next}`]);
  c = f.kubelet(f.apply(c, p, f.t0 + 2000), f.t0 + 2000);
  p = plan(c.snapshot, f.t0 + 3000);
  assertEquals(p.status.updatedNumberScheduled, 2);
  assertEquals(p.status.numberAvailable, 2);
  assertEquals(c.snapshot.pods.map((x) => x.metadata.uid), uids, "the same pods");
  assertEquals(c.snapshot.pods.map(readySince), readyBefore, "Ready all along");
});

/** The fleet once node-1's pod was resized and its kubelet holds the resize back. */
function heldBack(
  reason: "Infeasible" | "Deferred",
  since: number,
): { c: f.Cluster; name: string } {
  const v2 = template("agent:v1", res("64", "64Mi", { cpu: "64", memory: "128Mi" }));
  let c = rolled(2, v2);
  c = f.apply(c, plan(c.snapshot, f.t0), f.t0);
  const pod = c.snapshot.pods.find((p) => p.spec.nodeName === "node-1")!;
  pod.status!.conditions!.push({
    type: Keys.podResizePending,
    status: "True",
    reason,
    message: "Node didn't have enough capacity: cpu, requested: 64000, capacity: 4000",
    lastTransitionTime: formatTime(since),
  });
  return { c, name: pod.metadata.name ?? "" };
}

Deno.test("InPlaceIfPossible: a resize its node finds Infeasible recreates that pod, with a Warning", () => {
  const { c, name } = heldBack("Infeasible", f.t0);
  const p = plan(c.snapshot, f.t0 + 1000);
  assertEquals(podActions(p), ["delete node-1"], "that pod only: node-0 waits for the budget");
  const warning = p.events.find((e) => e.reason === "ResizeRefused");
  assertEquals(warning?.type, "Warning");
  assertEquals(
    warning?.message,
    `Pod ${name} on node-1: its node finds the resize Infeasible (Node didn't have enough capacity: cpu, requested: 64000, capacity: 4000); recreating it`,
  );
});

Deno.test("InPlaceIfPossible: a resize Deferred waits, and is recreated once deferred past its deadline", () => {
  const { c, name } = heldBack("Deferred", f.t0);
  const waiting = plan(c.snapshot, f.t0 + 1000);
  assertEquals(podActions(waiting), []);
  const until = f.t0 + deferredResizeDeadlineMs;
  assertEquals(
    waiting.awaited.find((a) => a.what === `pod/${name} resized`)?.until,
    formatTime(until),
  );
  assert(
    waiting.status.nextCheckAt !== undefined && Date.parse(waiting.status.nextCheckAt) <= until,
  );
  assertEquals(podActions(plan(c.snapshot, until)), ["delete node-1"]);
});

Deno.test("InPlaceIfPossible: a held resize on a node cut off waits for it, as any update", () => {
  const { c } = heldBack("Infeasible", f.t0);
  c.snapshot.nodes.find((n) => n.metadata.name === "node-1")!.status = {
    conditions: [{ type: "Ready", status: "Unknown" }],
  };
  assertEquals(podActions(plan(c.snapshot, f.t0 + 1000)).includes("delete node-1"), false);
});
