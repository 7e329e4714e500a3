/**
 * Step scenarios in the style of upstream `update_test.go`: a fake cluster, an injected clock,
 * and after each `plan` the expected actions. The fake API server (`testdata/fleet.ts`) applies
 * them and the fake kubelets start pods.
 */
import { assertEquals } from "@std/assert";
import { Keys, type Node, type Pod } from "../api/kube-objects.ts";
import { plan } from "./plan.ts";
import { startingPodPollSeconds } from "./plan-report.ts";
import * as f from "./testdata/fleet.ts";
import { rolloutStatusObject } from "../api/rollout-status.ts";
import type { Action, Plan, Snapshot } from "../api/plan.ts";

function adsSnapshot(
  spec: Parameters<typeof f.advancedDaemonSet>[0],
  nodes: Node[],
  pods: Pod[] = [],
  metadata: Record<string, unknown> = {},
): Snapshot {
  return {
    kind: "AdvancedDaemonSet",
    set: f.advancedDaemonSet(spec, metadata) as Snapshot["set"],
    pods,
    nodes,
    revisions: [],
  };
}

/** `createPod node-1`, `deletePod <pod>`…: a short, readable form of the pod actions. */
function podActions(p: Plan): string[] {
  return p.actions.flatMap((a: Action) => {
    switch (a.type) {
      case "createPod":
        return [`create ${a.node}`];
      case "deletePod":
        return [`delete ${a.node}`];
      case "patchPod":
        return [`patch ${a.name}`];
      case "setPodCondition":
        return [`condition ${a.name} ${a.condition.type}=${a.condition.status}`];
      default:
        return [];
    }
  });
}

function condition(p: Plan, type: string) {
  const c = p.conditions.find((c) => c.type === type);
  return `${c?.status} ${c?.reason}`;
}

/** Runs plan → apply → kubelet at `now`; returns the plan and the next cluster. */
function step(c: f.Cluster, now: number, failing?: Set<string>): [Plan, f.Cluster] {
  const p = plan(c.snapshot, now);
  return [p, f.kubelet(f.apply(c, p, now), now, failing)];
}

/** The current revision hash: the one the plan records. */
function hashOf(c: f.Cluster, now: number): string {
  return plan(c.snapshot, now).status.daemonSetHash ?? "";
}

/** A converged fleet on agent:v1 (every pod ready for an hour), switched to agent:v2. */
function rolledTo(v2: f.Cluster | Snapshot, now = f.t0): f.Cluster {
  let c = "snapshot" in v2 ? v2 : f.cluster(v2);
  for (let i = 0; i < 3; i++) [, c] = step(c, now - 3600_000);
  return f.withTemplate(c, "agent:v2", 2);
}

Deno.test("placement: a pod on every matching node, at most burstReplicas per call", () => {
  const nodes = f.nodes(5);
  let c = f.cluster(adsSnapshot({ burstReplicas: 2 }, nodes));
  let p: Plan;
  [p, c] = step(c, f.t0);
  assertEquals(podActions(p), ["create node-0", "create node-1"]);
  assertEquals(p.actions[0].type, "createRevision");
  [p, c] = step(c, f.t0 + 1000);
  assertEquals(podActions(p), ["create node-2", "create node-3"]);
  [p, c] = step(c, f.t0 + 2000);
  assertEquals(podActions(p), ["create node-4"]);
  [p, c] = step(c, f.t0 + 3000);
  assertEquals(podActions(p), []);
  assertEquals(condition(p, "Complete"), "True Complete");
});

Deno.test("update: deletions keep within burstReplicas too, past it the rest waits for the next call", () => {
  // maxUnavailable 5 allows five at once; burstReplicas 2 lets a call delete two, as upstream's
  // syncNodes caps rolling-update deletions. The plan says so: the executor cuts nothing.
  let c = f.cluster(adsSnapshot({
    burstReplicas: 2,
    updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 5 } },
  }, f.nodes(10)));
  let p: Plan;
  for (let i = 0; i < 10; i++) [, c] = step(c, f.t0 - 3600_000 + i * 1000);
  c = f.withTemplate(c, "agent:v2", 2);
  [p, c] = step(c, f.t0);
  assertEquals(podActions(p), ["delete node-9", "delete node-8"]);
  assertEquals([p.burst, p.requeueAfterSeconds], [2, 1]);
  [p] = step(c, f.t0 + 1000);
  assertEquals(podActions(p).filter((a) => a.startsWith("delete")).length, 2);
});

Deno.test("placement: the created pod is pinned to its node, owned, labelled, deterministic", () => {
  const snapshot = adsSnapshot({}, [f.node("edge-1")]);
  const p = plan(snapshot, f.t0);
  const create = p.actions.find((a) => a.type === "createPod");
  if (create?.type !== "createPod") throw new Error("no createPod");
  const pod = create.pod;
  assertEquals(pod.spec.nodeName, "edge-1");
  assertEquals(
    pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
    {
      nodeSelectorTerms: [{
        matchFields: [{ key: "metadata.name", operator: "In", values: ["edge-1"] }],
      }],
    },
  );
  assertEquals(pod.metadata.ownerReferences?.[0].uid, f.setUid);
  assertEquals(pod.metadata.labels?.[Keys.revisionHash], p.status.daemonSetHash);
  assertEquals(pod.metadata.labels?.[Keys.templateGeneration], "1");
  // The set's name and an opaque suffix, as a generated name: no revision in it.
  assertEquals(/^agent-[bcdfghjklmnpqrstvwxz2456789]{14}$/.test(pod.metadata.name ?? ""), true);
  assertEquals(pod.metadata.name?.includes(p.status.daemonSetHash ?? "-"), false);
  assertEquals(
    pod.spec.tolerations?.some((t) => t.key === "node.kubernetes.io/unreachable"),
    true,
  );
  assertEquals(plan(structuredClone(snapshot), f.t0), p);
  assertEquals(pod.metadata.finalizers, undefined);
});

Deno.test("placement: the template's finalizers are the pod's, as upstream copies them", () => {
  const snapshot = adsSnapshot({}, [f.node("edge-1")]);
  const template = (snapshot.set.spec as { template: { metadata: Record<string, unknown> } })
    .template;
  template.metadata.finalizers = ["example.io/drain-agent"];
  const create = plan(snapshot, f.t0).actions.find((a) => a.type === "createPod");
  if (create?.type !== "createPod") throw new Error("no createPod");
  assertEquals(create.pod.metadata.finalizers, ["example.io/drain-agent"]);
});

Deno.test("placement: nodeSelector, affinity, taints and tolerations as upstream", async (t) => {
  const cases: [string, Node, Partial<Parameters<typeof f.advancedDaemonSet>[0]>, boolean][] = [
    ["nodeSelector matches", f.node("a", { labels: { zone: "edge" } }), {
      template: {
        ...f.template("v1"),
        spec: { containers: [{ name: "c" }], nodeSelector: { zone: "edge" } },
      },
    }, true],
    ["nodeSelector does not match", f.node("a"), {
      template: {
        ...f.template("v1"),
        spec: { containers: [{ name: "c" }], nodeSelector: { zone: "edge" } },
      },
    }, false],
    ["required affinity Gt", f.node("a", { labels: { cores: "8" } }), {
      template: {
        ...f.template("v1"),
        spec: {
          containers: [{ name: "c" }],
          affinity: {
            nodeAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: {
                nodeSelectorTerms: [{
                  matchExpressions: [{ key: "cores", operator: "Gt", values: ["4"] }],
                }],
              },
            },
          },
        },
      },
    }, true],
    [
      "untolerated NoSchedule taint",
      f.node("a", { taints: [{ key: "gpu", effect: "NoSchedule" }] }),
      {},
      false,
    ],
    ["tolerated taint", f.node("a", { taints: [{ key: "gpu", effect: "NoSchedule" }] }), {
      template: {
        ...f.template("v1"),
        spec: { containers: [{ name: "c" }], tolerations: [{ key: "gpu", operator: "Exists" }] },
      },
    }, true],
    [
      "unschedulable node (tolerated by every daemon pod)",
      f.node("a", {
        taints: [{ key: "node.kubernetes.io/unschedulable", effect: "NoSchedule" }],
      }),
      {},
      true,
    ],
    ["NotReady node (daemon pods tolerate it)", f.node("a", { ready: false }), {}, true],
  ];
  for (const [name, node, spec, creates] of cases) {
    await t.step(name, () => {
      assertEquals(podActions(plan(adsSnapshot(spec, [node]), f.t0)), creates ? ["create a"] : []);
    });
  }
});

Deno.test("placement: NoSchedule keeps a running pod, NoExecute and a lost label remove it", () => {
  const hash = hashOf(f.cluster(adsSnapshot({}, [f.node("a")])), f.t0);
  const running = (n: string) => f.pod(`p-${n}`, n, hash);
  const nodes = [
    f.node("keeps", { taints: [{ key: "maint", effect: "NoSchedule" }] }),
    f.node("evicts", { taints: [{ key: "maint", effect: "NoExecute" }] }),
    f.node("unlabelled", { labels: {} }),
  ];
  const spec = {
    template: {
      ...f.template("agent:v1"),
      spec: {
        containers: [{ name: "agent", image: "agent:v1" }],
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [{
                matchExpressions: [{
                  key: "kubernetes.io/hostname",
                  operator: "In" as const,
                  values: ["keeps", "evicts"],
                }],
              }],
            },
          },
        },
      },
    },
  };
  const snapshot = adsSnapshot(spec, nodes, nodes.map((n) => running(n.metadata.name!)));
  const p = plan(snapshot, f.t0);
  assertEquals(podActions(p), ["delete evicts", "delete unlabelled"]);
  assertEquals(p.status.numberMisscheduled, 3);
  assertEquals(p.status.desiredNumberScheduled, 0);
});

Deno.test("duplicates: the oldest available pod stays, the others go", () => {
  const c = f.cluster(adsSnapshot({}, [f.node("a")]));
  const hash = hashOf(c, f.t0);
  const pods = [
    f.pod("oldest-unready", "a", hash, { created: f.t0 - 9000_000, readySince: null }),
    f.pod("older-ready", "a", hash, { created: f.t0 - 8000_000 }),
    f.pod("young-ready", "a", hash, { created: f.t0 - 1000_000 }),
  ];
  const p = plan(adsSnapshot({}, [f.node("a")], pods), f.t0);
  assertEquals(
    p.actions.filter((a) => a.type === "deletePod").map((a) => a.type === "deletePod" && a.name),
    ["oldest-unready", "young-ready"],
  );
});

Deno.test("a failed pod is deleted after a backoff, then recreated", () => {
  const hash = hashOf(f.cluster(adsSnapshot({}, [f.node("a")])), f.t0);
  const failed = f.pod("failed", "a", hash, {
    created: f.t0 - 2000,
    phase: "Failed",
    readySince: null,
  });
  const early = plan(adsSnapshot({}, [f.node("a")], [failed]), f.t0);
  assertEquals(podActions(early), []);
  assertEquals(early.requeueAfterSeconds, 8);
  let c = f.cluster(adsSnapshot({}, [f.node("a")], [failed]));
  let p: Plan;
  [p, c] = step(c, f.t0 + 8000);
  assertEquals(podActions(p), ["delete a"]);
  [p, c] = step(c, f.t0 + 9000);
  assertEquals(podActions(p), ["create a"]);
});

Deno.test("a pod that replaces a failed one has a name of its own, as upstream's generated names", () => {
  let c = f.cluster(adsSnapshot({}, [f.node("a")]));
  let p: Plan;
  [p, c] = step(c, f.t0);
  const first = c.snapshot.pods[0].metadata.name;
  c.snapshot.pods[0].status = { phase: "Failed", conditions: [{ type: "Ready", status: "False" }] };
  [p, c] = step(c, f.t0 + 60_000);
  assertEquals(podActions(p), ["delete a"]);
  [p, c] = step(c, f.t0 + 61_000);
  assertEquals(podActions(p), ["create a"]);
  const second = c.snapshot.pods.map((x) => x.metadata.name);
  assertEquals(second.length, 1);
  assertEquals(second[0] === first, false, `${first} named again`);
  // The same plan names the same pod: a create retried after a lost answer finds it.
  assertEquals(plan(c.snapshot, f.t0).actions, plan(c.snapshot, f.t0).actions);
});

Deno.test("Standard: maxUnavailable 1 replaces one node at a time, node names descending", () => {
  let c = rolledTo(adsSnapshot({ minReadySeconds: 10 }, f.nodes(3)));
  const order: string[] = [];
  let now = f.t0;
  for (let i = 0; i < 20; i++) {
    const [p, next] = step(c, now);
    const deletes = podActions(p).filter((a) => a.startsWith("delete"));
    assertEquals(deletes.length <= 1, true);
    order.push(...deletes);
    c = next;
    now += 5000;
  }
  assertEquals(order, ["delete node-2", "delete node-1", "delete node-0"]);
  const done = plan(c.snapshot, now);
  assertEquals(done.status.updatedNumberScheduled, 3);
  assertEquals(condition(done, "Complete"), "True Complete");
  assertEquals(done.requeueAfterSeconds, null);
});

Deno.test("a pod still starting brings the set back within a poll, for a tick-only controller", () => {
  let c = rolledTo(adsSnapshot({}, f.nodes(2)));
  let p: Plan;
  [p, c] = step(c, f.t0); // delete node-1
  p = plan(c.snapshot, f.t0 + 1000);
  assertEquals(podActions(p), ["create node-1"]);
  c = f.apply(c, p, f.t0 + 1000); // created; its kubelet has not started it yet
  p = plan(c.snapshot, f.t0 + 2000);
  assertEquals(podActions(p), []);
  // Polled 1, 2, 4, 8, 16, 32 s after the pod was created, then every 30 s; the status keeps
  // the first poll, which does not move: once it passed, the tick looks every tick.
  assertEquals(p.requeueAfterSeconds, 1);
  assertEquals(p.status.nextCheckAt, "2026-01-01T00:00:02Z");
  const later = plan(c.snapshot, f.t0 + 10_000);
  assertEquals([later.requeueAfterSeconds, later.status.nextCheckAt], [7, p.status.nextCheckAt]);
  assertEquals(plan(c.snapshot, f.t0 + 60_000).requeueAfterSeconds, startingPodPollSeconds);
  // Once every pod runs and the rollout is done, nothing is polled.
  c = f.kubelet(c, f.t0 + 3000);
  for (let now = f.t0 + 3000; now < f.t0 + 20_000; now += 1000) [p, c] = step(c, now);
  assertEquals(condition(p, "Complete"), "True Complete");
  assertEquals(p.requeueAfterSeconds, null);
});

Deno.test("a node's last pod still terminating brings the set back within a poll, for a tick-only controller", () => {
  let c = rolledTo(adsSnapshot({}, f.nodes(2)));
  const p = plan(c.snapshot, f.t0);
  assertEquals(podActions(p), ["delete node-1"]);
  // The API server marks the pod deleted (30 s of grace) rather than removing it at once.
  c = f.apply(c, { ...p, actions: p.actions.filter((a) => a.type !== "deletePod") }, f.t0);
  const deleted = p.actions.flatMap((a) => a.type === "deletePod" ? [a.name] : [])[0];
  const pod = c.snapshot.pods.find((x) => x.metadata.name === deleted)!;
  pod.metadata.deletionTimestamp = "2026-01-01T00:00:30Z";
  pod.metadata.deletionGracePeriodSeconds = 30;
  // The next look sees the deletion (its expectation met) and the pod not gone: no create yet,
  // and a poll from when the deletion began, or nothing would bring the set back but a resync.
  const next = plan(c.snapshot, f.t0 + 100);
  assertEquals(podActions(next), []);
  assertEquals(next.requeueAfterSeconds, 1);
  assertEquals(next.status.nextCheckAt, "2026-01-01T00:00:01Z");
  assertEquals(next.awaited.some((a) => a.what === `pod/${deleted} gone`), true);
  // Gone: the replacement is created.
  c.snapshot.pods = c.snapshot.pods.filter((x) => x.metadata.name !== deleted);
  assertEquals(podActions(plan(c.snapshot, f.t0 + 2000)), ["create node-1"]);
});

Deno.test("Standard: minReadySeconds holds the next wave and sets requeueAfter", () => {
  let c = rolledTo(adsSnapshot({ minReadySeconds: 30 }, f.nodes(2)));
  let p: Plan;
  [p, c] = step(c, f.t0); // delete node-1
  [p, c] = step(c, f.t0 + 1000); // create on node-1, started at +1s
  assertEquals(podActions(p), ["create node-1"]);
  [p, c] = step(c, f.t0 + 2000);
  assertEquals(podActions(p), []);
  // Ready at +1 s, written as a whole second: available a second later than 30 s after it.
  assertEquals(p.requeueAfterSeconds, 30);
  assertEquals(p.status.nextCheckAt, "2026-01-01T00:00:32Z");
  assertEquals(p.awaited.some((a) => a.why.includes("minReadySeconds 30")), true);
  [p, c] = step(c, f.t0 + 31_000);
  assertEquals(podActions(p), []);
  [p, c] = step(c, f.t0 + 32_000);
  assertEquals(podActions(p), ["delete node-0"]);
});

Deno.test("kruise #1323/#898: unavailable old pods count against maxUnavailable", () => {
  // 5 nodes, 3 old pods already down: upstream and Kruise delete those 3 *and* one available pod
  // (4 down). We replace the 3 in their own slots and delete no available pod.
  const base = rolledTo(adsSnapshot({}, f.nodes(5)));
  const s = structuredClone(base.snapshot);
  for (const name of ["node-0", "node-1", "node-2"]) {
    const pod = s.pods.find((p) => p.spec.nodeName === name)!;
    pod.status = { phase: "Running", conditions: [{ type: "Ready", status: "False" }] };
  }
  const p = plan(s, f.t0);
  assertEquals(podActions(p).sort(), ["delete node-0", "delete node-1", "delete node-2"]);
  assertEquals(p.events.filter((e) => e.reason === "ReplacingUnavailablePod").length, 3);
  assertEquals(condition(p, "BudgetExhausted"), "True BudgetExhausted");
});

Deno.test("kruise #1323: a broken new revision stops the rollout, naming the pods that hold the budget", () => {
  let c = rolledTo(
    adsSnapshot(
      { updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 2 } } },
      f.nodes(6),
    ),
  );
  let now = f.t0;
  const broken = new Set(["node-5", "node-4", "node-3", "node-2", "node-1", "node-0"]);
  let p: Plan;
  for (let i = 0; i < 10; i++) {
    [p, c] = step(c, now, broken);
    now += 20_000;
  }
  p = plan(c.snapshot, now);
  const down = c.snapshot.pods.filter((pod) => pod.status?.phase !== "Running").length +
    (6 - c.snapshot.pods.length);
  assertEquals(down <= 2, true);
  assertEquals(p.status.updatedNumberScheduled, 2);
  assertEquals(condition(p, "BudgetExhausted"), "True BudgetExhausted");
  const message = p.conditions.find((x) => x.type === "BudgetExhausted")?.message ?? "";
  assertEquals(message.includes("maxUnavailable 2"), true);
  assertEquals(message.split(": ")[1].split(";")[0].split(", ").length, 2);
});

Deno.test("Surging (seed: maxSurge 30%): new pods first, old ones deleted once the new are available", () => {
  const spec = {
    minReadySeconds: 5,
    updateStrategy: {
      type: "RollingUpdate" as const,
      rollingUpdate: { rollingUpdateType: "Surging" as const, maxSurge: "30%" },
    },
  };
  let c = rolledTo(adsSnapshot(spec, f.nodes(10)));
  let p: Plan;
  [p, c] = step(c, f.t0);
  assertEquals(podActions(p), ["create node-9", "create node-8", "create node-7"]);
  // kruise #1854: a node with an old and a new pod counts once.
  [p, c] = step(c, f.t0 + 1000);
  assertEquals(podActions(p), []);
  assertEquals(p.status.updatedNumberScheduled, 3);
  assertEquals(p.status.currentNumberScheduled, 10);
  assertEquals(p.status.numberAvailable, 10);
  [p, c] = step(c, f.t0 + 6000);
  // The old pods go and, as upstream, the next wave starts in the same call: the surge in use
  // is counted from new pods not yet available.
  assertEquals(podActions(p), [
    "delete node-7",
    "delete node-8",
    "delete node-9",
    "create node-6",
    "create node-5",
    "create node-4",
  ]);
});

Deno.test("partition 10 (seed) keeps the last 10 nodes of Kruise's order on the old revision", () => {
  const spec = {
    updateStrategy: {
      type: "RollingUpdate" as const,
      rollingUpdate: { partition: 10, maxUnavailable: 5 },
    },
  };
  let c = rolledTo(adsSnapshot(spec, f.nodes(12)));
  let now = f.t0;
  for (let i = 0; i < 6; i++) [, c] = step(c, now += 1000);
  const p = plan(c.snapshot, now);
  const hash = p.status.daemonSetHash;
  const updated = c.snapshot.pods.filter((x) => x.metadata.labels?.[Keys.revisionHash] === hash)
    .map((x) => x.spec.nodeName).sort();
  assertEquals(updated, ["node-10", "node-11"]);
  assertEquals(condition(p, "Progressing"), "False UpdateScopeReached");
  assertEquals(condition(p, "Complete"), "False Incomplete");
});

Deno.test("partition as a percent of desired is rounded down", () => {
  const spec = {
    updateStrategy: {
      type: "RollingUpdate" as const,
      rollingUpdate: { partition: "50%", maxUnavailable: 5 },
    },
  };
  let c = rolledTo(adsSnapshot(spec, f.nodes(5)));
  for (let i = 0; i < 6; i++) [, c] = step(c, f.t0 + i * 1000);
  const hash = hashOf(c, f.t0);
  // 50% of 5 = 2.5, rounded down to 2 kept: 3 updated.
  assertEquals(
    c.snapshot.pods.filter((x) => x.metadata.labels?.[Keys.revisionHash] === hash).length,
    3,
  );
});

Deno.test("selector (seed): only nodes labelled nodeType=canary are updated", () => {
  const nodes = [...f.nodes(4), f.node("canary-a", { labels: { nodeType: "canary" } })];
  const spec = {
    updateStrategy: {
      type: "RollingUpdate" as const,
      rollingUpdate: { selector: { matchLabels: { nodeType: "canary" } }, maxUnavailable: 3 },
    },
  };
  let c = rolledTo(adsSnapshot(spec, nodes));
  for (let i = 0; i < 5; i++) [, c] = step(c, f.t0 + i * 1000);
  const hash = hashOf(c, f.t0);
  assertEquals(
    c.snapshot.pods.filter((x) => x.metadata.labels?.[Keys.revisionHash] === hash).map((x) =>
      x.spec.nodeName
    ),
    ["canary-a"],
  );
});

Deno.test("paused (seed) stops updates but not creation on a new node", () => {
  const spec = {
    updateStrategy: { type: "RollingUpdate" as const, rollingUpdate: { paused: true } },
  };
  const c = rolledTo(adsSnapshot(spec, f.nodes(3)));
  c.snapshot.nodes.push(f.node("node-new"));
  const [p] = step(c, f.t0);
  assertEquals(podActions(p), ["create node-new"]);
  assertEquals(condition(p, "Paused"), "True Paused");
  assertEquals(p.awaited[0], {
    what: "rollingUpdate.paused: false",
    why: "3 nodes wait for the update",
  });
  assertEquals(p.events.some((e) => e.reason === "Paused"), true);
});

Deno.test("OnDelete never deletes for an update; a pod deleted by hand comes back new", () => {
  let c = rolledTo(adsSnapshot({ updateStrategy: { type: "OnDelete" } }, f.nodes(2)));
  let p: Plan;
  [p, c] = step(c, f.t0);
  assertEquals(podActions(p), []);
  assertEquals(condition(p, "Progressing"), "False OnDelete");
  assertEquals(p.awaited[0].what, "OnDelete");
  c.snapshot.pods = c.snapshot.pods.filter((x) => x.spec.nodeName !== "node-0");
  [p, c] = step(c, f.t0 + 1000);
  assertEquals(podActions(p), ["create node-0"]);
  const create = p.actions.find((a) => a.type === "createPod");
  assertEquals(create?.type === "createPod" && create.revision, p.status.daemonSetHash);
});

Deno.test("NotReady nodes neither consume the budget nor block; they update when back", () => {
  let c = rolledTo(adsSnapshot({}, f.nodes(3)));
  const setReady = (name: string, ready: boolean) => {
    const n = c.snapshot.nodes.find((x) => x.metadata.name === name)!;
    n.status = { conditions: [{ type: "Ready", status: ready ? "True" : "Unknown" }] };
  };
  setReady("node-1", false);
  setReady("node-2", false);
  let p: Plan;
  [p, c] = step(c, f.t0);
  assertEquals(podActions(p), ["delete node-0"]);
  assertEquals(p.awaited.filter((a) => a.what.startsWith("node/")).map((a) => a.what), [
    "node/node-2 Ready",
    "node/node-1 Ready",
  ]);
  [p, c] = step(c, f.t0 + 1000);
  [p, c] = step(c, f.t0 + 2000);
  assertEquals(condition(p, "Progressing"), "False WaitingForNodes");
  setReady("node-1", true);
  setReady("node-2", true);
  [p, c] = step(c, f.t0 + 3000);
  assertEquals(podActions(p), ["delete node-2"]);
});

Deno.test("the budget in use counts Ready nodes only; numberUnavailable every desired node without an available pod", () => {
  let c = rolledTo(adsSnapshot({}, f.nodes(4)));
  // node-1 cut off: its pod marked unready, as the node lifecycle controller marks it.
  c.snapshot.nodes.find((n) => n.metadata.name === "node-1")!.status = {
    conditions: [{ type: "Ready", status: "Unknown" }],
  };
  const cutPod = c.snapshot.pods.find((p) => p.spec.nodeName === "node-1")!;
  cutPod.status = { ...cutPod.status, conditions: [{ type: "Ready", status: "False" }] };
  let p: Plan;
  [p, c] = step(c, f.t0);
  assertEquals(p.status.numberUnavailable, 1, "upstream's count: the cut node's pod");
  assertEquals(p.budget, { rule: "maxUnavailable", limit: 1, inUse: 0 }, "it holds no share");
  assertEquals(podActions(p), ["delete node-3"], "so the one share goes to an update");
  [p] = step(c, f.t0 + 1000);
  assertEquals(p.budget?.inUse, 1, "the node being replaced holds it");

  const surge = rolledTo(adsSnapshot({
    updateStrategy: { type: "RollingUpdate", rollingUpdate: { maxUnavailable: 0, maxSurge: 2 } },
  }, f.nodes(4)));
  const first = plan(surge.snapshot, f.t0);
  assertEquals(first.budget, { rule: "maxSurge", limit: 2, inUse: 0 });
  const created = f.apply(surge, first, f.t0); // the new pods made, not yet started
  assertEquals(plan(created.snapshot, f.t0 + 1000).budget?.inUse, 2, "two new pods beside old");

  const onDelete = rolledTo(adsSnapshot({ updateStrategy: { type: "OnDelete" } }, f.nodes(2)));
  assertEquals(plan(onDelete.snapshot, f.t0).budget, undefined, "OnDelete: no budget bounds it");
});

const inPlaceSpec = {
  updateStrategy: {
    type: "RollingUpdate" as const,
    rollingUpdate: { rollingUpdateType: "InPlaceIfPossible" as const },
  },
};

Deno.test("InPlaceIfPossible: an image change patches pods in place, within the budget", () => {
  let c = rolledTo(adsSnapshot(inPlaceSpec, f.nodes(2)));
  const uids = c.snapshot.pods.map((x) => x.metadata.uid);
  let p = plan(c.snapshot, f.t0);
  const target = c.snapshot.pods.find((x) => x.spec.nodeName === "node-1")!;
  // As Kruise: its readiness gate closes first, then its images change.
  assertEquals(podActions(p), [
    `condition ${target.metadata.name} InPlaceUpdateReady=False`,
    `patch ${target.metadata.name}`,
  ]);
  const patch = p.actions.find((a) => a.type === "patchPod");
  if (patch?.type !== "patchPod") throw new Error("no patchPod");
  assertEquals(patch.patch.spec?.containers.map((x) => x.image), ["agent:v2"]);
  assertEquals(patch.patch.metadata.labels?.[Keys.revisionHash], p.status.daemonSetHash);
  // Patched but not restarted yet: it holds the budget, node-0 waits.
  c = f.apply(c, p, f.t0);
  p = plan(c.snapshot, f.t0 + 1000);
  assertEquals(podActions(p), []);
  assertEquals(p.status.updatedNumberScheduled, 1);
  assertEquals(p.status.numberAvailable, 1);
  // The kubelet restarts it with the new image; its gate opens; then node-0 goes, and no pod
  // was recreated.
  c = f.kubelet(c, f.t0 + 2000);
  [p, c] = step(c, f.t0 + 3000);
  assertEquals(podActions(p), [`condition ${target.metadata.name} InPlaceUpdateReady=True`]);
  [p, c] = step(c, f.t0 + 4000);
  const next = c.snapshot.pods.find((x) => x.spec.nodeName === "node-0")!.metadata.name;
  assertEquals(podActions(p), [`condition ${next} InPlaceUpdateReady=False`, `patch ${next}`]);
  assertEquals(c.snapshot.pods.map((x) => x.metadata.uid), uids);
});

Deno.test("InPlaceIfPossible: a pod whose gate was closed is unavailable, even while its Ready condition still says True", () => {
  // The gate went False and the image patch failed: the kubelet will turn the pod unready, so
  // it holds the budget (maxUnavailable 1) and no other pod is started next to it.
  const c = rolledTo(adsSnapshot(inPlaceSpec, f.nodes(3)));
  const first = plan(c.snapshot, f.t0);
  const started = first.actions.find((a) => a.type === "patchPod");
  if (started?.type !== "patchPod") throw new Error("no patchPod");
  const others = c.snapshot.pods.filter((x) => x.metadata.name !== started.name);
  const closed = others[others.length - 1];
  closed.status!.conditions = [
    ...(closed.status?.conditions ?? []).filter((x) => x.type !== "InPlaceUpdateReady"),
    { type: "InPlaceUpdateReady", status: "False", reason: "StartInPlaceUpdate" },
  ];
  // Its gate already closed, it is patched in its own slot, and nothing else starts.
  assertEquals(podActions(plan(c.snapshot, f.t0)), [`patch ${closed.metadata.name}`]);
});

Deno.test("InPlaceIfPossible: a pod whose gate this controller closed, not yet seen closed, is unavailable", () => {
  // The gate's False landed, the image patch did not (its expectation withdrawn), and the pods
  // as read are older than the write: the next plan must still count that pod as down.
  const c = rolledTo(adsSnapshot(inPlaceSpec, f.nodes(3)));
  const first = plan(c.snapshot, f.t0);
  const closing = first.status.expectations!.filter((e) => e.action === "setCondition");
  assertEquals(closing.map((e) => e.condition), ["InPlaceUpdateReady=False"]);
  c.snapshot.set.status = { ...first.status, expectations: closing };
  const next = plan(c.snapshot, f.t0 + 1000);
  // It holds the budget (maxUnavailable 1): no other pod is started while its gate closes.
  assertEquals(podActions(next), []);
  assertEquals(condition(next, "BudgetExhausted"), "True BudgetExhausted");
});

Deno.test("InPlaceIfPossible: every pod carries Kruise's InPlaceUpdateReady gate, opened once it runs its spec", () => {
  let c = f.cluster(adsSnapshot(inPlaceSpec, f.nodes(2)));
  let p = plan(c.snapshot, f.t0);
  const created = p.actions.filter((a) => a.type === "createPod");
  assertEquals(created.length, 2);
  for (const a of created) {
    assertEquals(a.type === "createPod" && a.pod.spec.readinessGates, [
      { conditionType: "InPlaceUpdateReady" },
    ]);
  }
  c = f.apply(c, p, f.t0);
  // A new pod runs its spec: the gate opens at once, as Kruise's refresh does, once each.
  p = plan(c.snapshot, f.t0 + 1000);
  assertEquals(
    podActions(p).sort(),
    c.snapshot.pods.map((x) => `condition ${x.metadata.name} InPlaceUpdateReady=True`).sort(),
  );
  c = f.apply(c, p, f.t0 + 1000);
  assertEquals(podActions(plan(c.snapshot, f.t0 + 2000)), []);
  // A Standard set's pods carry no gate.
  const standard = plan(f.cluster(adsSnapshot({}, f.nodes(1))).snapshot, f.t0);
  const pod = standard.actions.find((a) => a.type === "createPod");
  assertEquals(pod?.type === "createPod" && pod.pod.spec.readinessGates, undefined);
});

Deno.test("InPlaceIfPossible: a change beyond images recreates the pod", () => {
  const c = rolledTo(adsSnapshot(inPlaceSpec, f.nodes(2)));
  (c.snapshot.set.spec as { template: { spec: Record<string, unknown> } }).template.spec
    .hostNetwork = true;
  assertEquals(podActions(plan(c.snapshot, f.t0)), ["delete node-1"]);
});

Deno.test("preDelete: a hooked pod is marked PreparingDelete, deleted once released", () => {
  const spec = {
    template: f.template("agent:v1", { app: "agent", "example.io/block-deleting": "true" }),
    lifecycle: {
      preDelete: { labelsHandler: { "example.io/block-deleting": "true" }, markPodNotReady: true },
    },
  };
  let c = rolledTo(adsSnapshot(spec, f.nodes(1)));
  // Pods carry the hook label from their template.
  c.snapshot.pods.forEach((x) => (x.metadata.labels!["example.io/block-deleting"] = "true"));
  let p: Plan;
  [p, c] = step(c, f.t0);
  const podName = c.snapshot.pods[0].metadata.name!;
  assertEquals(podActions(p), [`patch ${podName}`, `condition ${podName} KruisePodReady=False`]);
  assertEquals(c.snapshot.pods[0].metadata.labels?.[Keys.lifecycleState], "PreparingDelete");
  [p, c] = step(c, f.t0 + 1000);
  assertEquals(podActions(p), []);
  assertEquals(p.awaited.some((a) => a.what === `pod/${podName} preDelete hook released`), true);
  delete c.snapshot.pods[0].metadata.labels!["example.io/block-deleting"];
  [p, c] = step(c, f.t0 + 2000);
  assertEquals(podActions(p), ["delete node-0"]);
});

Deno.test("an invalid spec changes nothing and says where it is wrong", () => {
  const spec = {
    updateStrategy: { type: "RollingUpdate" as const, rollingUpdate: { maxUnavailable: "ten" } },
  };
  const p = plan(adsSnapshot(spec, f.nodes(2)), f.t0);
  assertEquals(p.actions, []);
  const invalid = p.conditions.find((c) => c.type === "InvalidSpec");
  assertEquals(invalid?.status, "True");
  assertEquals(
    invalid?.message?.startsWith("spec.updateStrategy.rollingUpdate.maxUnavailable:"),
    true,
  );
  assertEquals(p.events.map((e) => e.reason), ["InvalidSpec"]);
  assertEquals(p.requeueAfterSeconds, null);
  // Its template and selector can be read: the fleet is still counted (2 nodes, no pod yet).
  assertEquals(
    [p.status.desiredNumberScheduled, p.status.currentNumberScheduled, p.status.numberAvailable],
    [2, 0, 0],
  );
  assertEquals(p.status.expectations, undefined);
});

Deno.test("a revision the API server refuses: InvalidSpec with its words, no pod touched", () => {
  const c = rolledTo(adsSnapshot({}, f.nodes(3)));
  const updating = plan(c.snapshot, f.t0);
  assertEquals(podActions(updating).filter((a) => a.startsWith("delete")).length, 1);
  // The plan names the pod to prove before its deletes: the new revision's, on that node.
  const probe = updating.probe!;
  assertEquals(probe.revision, hashOf(c, f.t0));
  assertEquals(probe.pod.spec.containers[0].image, "agent:v2");
  assertEquals(probe.pod.metadata.labels?.[Keys.revisionHash], probe.revision);

  const refused = plan({
    ...c.snapshot,
    refused: { revision: probe.revision, message: "spec.containers[0].image: Required value" },
  }, f.t0);
  assertEquals(refused.actions, []);
  assertEquals(refused.probe, undefined);
  // The counts go on telling the fleet against the revision asked for (UP-TO-DATE 0 of 3).
  assertEquals(
    [
      refused.status.observedGeneration,
      refused.status.desiredNumberScheduled,
      refused.status.updatedNumberScheduled,
      refused.status.numberAvailable,
    ],
    [2, 3, 0, 3],
  );
  assertEquals(
    refused.conditions.find((x) => x.type === "InvalidSpec")?.message,
    "spec.template: the API server refuses it: spec.containers[0].image: Required value",
  );
  // A refusal of another revision says nothing about this one.
  const other = plan({ ...c.snapshot, refused: { revision: "other", message: "no" } }, f.t0);
  assertEquals(podActions(other), podActions(updating));
});

Deno.test("a converged set plans no probe: there is nothing to prove", () => {
  let c = f.cluster(adsSnapshot({}, f.nodes(2)));
  for (let i = 0; i < 3; i++) [, c] = step(c, f.t0 - 3600_000);
  const p = plan(c.snapshot, f.t0);
  assertEquals(p.actions, []);
  assertEquals(p.probe, undefined);
});

Deno.test("expectations: an unchanged cluster with the written status plans nothing until the deadline", () => {
  const c = f.cluster(adsSnapshot({}, f.nodes(2)));
  const first = plan(c.snapshot, f.t0);
  assertEquals(podActions(first), ["create node-0", "create node-1"]);
  const statusOnly = structuredClone(c.snapshot);
  statusOnly.set.status = first.status;
  const again = plan(statusOnly, f.t0 + 5000);
  assertEquals(podActions(again), []);
  assertEquals(again.status, first.status);
  assertEquals(again.events, []);
  // Looked at 8 s after acting (1, 2, 4, 8 s …), at the deadline at the latest.
  assertEquals(again.requeueAfterSeconds, 3);
  const late = plan(statusOnly, f.t0 + 61_000);
  assertEquals(podActions(late), ["create node-0", "create node-1"]);
});

Deno.test("revisions: pruned past revisionHistoryLimit, reused on rollback", () => {
  let c = f.cluster(adsSnapshot({ revisionHistoryLimit: 1 }, f.nodes(1)));
  let now = f.t0;
  const roll = (image: string, generation: number) => {
    c = f.withTemplate(c, image, generation);
    for (let i = 0; i < 4; i++) [, c] = step(c, now += 1000);
  };
  for (let i = 0; i < 3; i++) [, c] = step(c, now += 1000);
  roll("agent:v2", 2);
  roll("agent:v3", 3);
  assertEquals(c.snapshot.revisions.map((r) => r.revision).sort(), [2, 3]);
  roll("agent:v2", 4);
  // v2's revision is reused and becomes the newest; v3 stays as the one old revision kept.
  assertEquals(c.snapshot.revisions.map((r) => r.revision).sort(), [3, 4]);
  const hash = hashOf(c, now);
  assertEquals(
    c.snapshot.revisions.find((r) => r.revision === 4)?.metadata.labels?.[Keys.revisionHash],
    hash,
  );
});

Deno.test("revisions: a name taken by different data bumps collisionCount", () => {
  const snapshot = adsSnapshot({}, f.nodes(1));
  const first = plan(snapshot, f.t0);
  const create = first.actions.find((a) => a.type === "createRevision");
  if (create?.type !== "createRevision") throw new Error("no createRevision");
  const squatter = structuredClone(create.revisionObject);
  squatter.data = { spec: { template: f.template("something-else") } };
  squatter.metadata.ownerReferences = [];
  const p = plan({ ...snapshot, revisions: [squatter] }, f.t0);
  assertEquals(p.status.collisionCount, 1);
  assertEquals(p.status.daemonSetHash === first.status.daemonSetHash, false);
});

Deno.test("progressive-create-pod: partition also holds back creation", () => {
  const spec = {
    updateStrategy: { type: "RollingUpdate" as const, rollingUpdate: { partition: 3 } },
  };
  const annotations = { annotations: { "daemonset.kruise.io/progressive-create-pod": "true" } };
  const p = plan(adsSnapshot(spec, f.nodes(5), [], annotations), f.t0);
  assertEquals(podActions(p), ["create node-0", "create node-1"]);
  const plain = plan(adsSnapshot(spec, f.nodes(5)), f.t0);
  assertEquals(podActions(plain).length, 5);
});

Deno.test("OpenYurt AdvancedRollingUpdate (seed 004): 2 of 3 nodes NotReady, the Ready one updates", () => {
  const nodes = [
    f.node("worker"),
    f.node("worker2", { ready: false }),
    f.node("worker3", { ready: false }),
  ];
  let c = f.yurtCluster("auto", nodes);
  let p: Plan;
  [p, c] = step(c, f.t0);
  assertEquals(podActions(p), ["delete worker"]);
  assertEquals(p.actions.some((a) => a.type === "createPod" || a.type === "createRevision"), false);
  c = f.kubelet(f.nativeController(c, "v2hash", f.t0 + 1000), f.t0 + 1000);
  [p, c] = step(c, f.t0 + 2000);
  assertEquals(podActions(p), []);
  assertEquals(condition(p, "Progressing"), "False WaitingForNodes");
  for (const n of c.snapshot.nodes) n.status = { conditions: [{ type: "Ready", status: "True" }] };
  let now = f.t0 + 3000;
  for (let i = 0; i < 6; i++) {
    [p, c] = step(c, now);
    c = f.kubelet(f.nativeController(c, "v2hash", now), now);
    now += 1000;
  }
  assertEquals(c.snapshot.pods.map((x) => x.metadata.labels?.[Keys.revisionHash]), [
    "v2hash",
    "v2hash",
    "v2hash",
  ]);
  p = plan(c.snapshot, now);
  assertEquals(condition(p, "Complete"), "True Complete");
});

Deno.test("OpenYurt OTA: pods marked PodNeedUpgrade, never deleted by edgeroll", () => {
  let c = f.yurtCluster("OTA", f.nodes(2));
  c.snapshot.pods[1].metadata.labels![Keys.revisionHash] = "v2hash";
  let p: Plan;
  [p, c] = step(c, f.t0);
  assertEquals(podActions(p), [
    "condition nginx-node-0 PodNeedUpgrade=True",
    "condition nginx-node-1 PodNeedUpgrade=False",
  ]);
  const cond = c.snapshot.pods[0].status?.conditions?.find((x) => x.type === "PodNeedUpgrade");
  assertEquals(cond?.message, "controllerrevision: v2hash");
  [p, c] = step(c, f.t0 + 1000);
  assertEquals(p.actions, []);
  assertEquals(condition(p, "Progressing"), "False WaitingForNodes");
});

Deno.test("OpenYurt OTA: the waiting message counts every pod marked, wanted on its node or not", () => {
  let c = f.yurtCluster("OTA", f.nodes(3));
  // node-2 stops tolerating the set (a NoExecute taint): its old pod is still live, and marked.
  c.snapshot.nodes[2].spec = {
    ...c.snapshot.nodes[2].spec,
    taints: [{ key: "example.io/drain", value: "x", effect: "NoExecute" }],
  };
  let p: Plan;
  [p, c] = step(c, f.t0);
  const marks = podActions(p).filter((a) => a.endsWith("PodNeedUpgrade=True"));
  [p, c] = step(c, f.t0 + 1000);
  const progressing = p.conditions.find((x) => x.type === "Progressing");
  assertEquals(progressing?.reason, "WaitingForNodes");
  assertEquals(
    progressing?.message?.startsWith(`${marks.length} pods marked PodNeedUpgrade`),
    true,
    `${marks.length} marked: ${progressing?.message}`,
  );
});

Deno.test("OpenYurt OTA marks left from OTA mode are set False once the set leaves it", () => {
  let c = f.yurtCluster("OTA", f.nodes(2));
  c.snapshot.pods[1].metadata.labels![Keys.revisionHash] = "v2hash";
  [, c] = step(c, f.t0);
  // The operator switches to AdvancedRollingUpdate: the edge agent trusts the mark alone, so
  // the one still True must not outlive OTA mode, or a node could delete outside the budget.
  c.snapshot.set.metadata.annotations!["apps.openyurt.io/update-strategy"] =
    "AdvancedRollingUpdate";
  const p = plan(c.snapshot, f.t0 + 1000);
  assertEquals(
    podActions(p).filter((a) => a.startsWith("condition")),
    ["condition nginx-node-0 PodNeedUpgrade=False"],
  );
  const mark = p.actions.find((a) => a.type === "setPodCondition");
  assertEquals(mark?.reason, "the set is not in OTA mode: the node no longer decides");
});

Deno.test("a DaemonSet without the OpenYurt annotation is left alone", () => {
  const c = f.yurtCluster("auto", f.nodes(1));
  const s = structuredClone(c.snapshot);
  s.set.metadata.annotations = {};
  const p = plan(s, f.t0);
  assertEquals(p.actions, []);
  assertEquals(p.awaited[0].why, "this DaemonSet is not managed by edgeroll");
});

Deno.test("preDelete by finalizer: a pod with a hook finalizer is marked, not deleted", () => {
  const spec = { lifecycle: { preDelete: { finalizersHandler: ["example.io/unready-blocker"] } } };
  const c = rolledTo(adsSnapshot(spec, f.nodes(2)));
  // node-1 is first in the update order.
  const hooked = c.snapshot.pods.find((x) => x.spec.nodeName === "node-1")!;
  hooked.metadata.finalizers = ["example.io/unready-blocker"];
  assertEquals(podActions(plan(c.snapshot, f.t0)), [`patch ${hooked.metadata.name}`]);
  hooked.metadata.finalizers = [];
  assertEquals(podActions(plan(c.snapshot, f.t0)), ["delete node-1"]);
});

Deno.test("an orphaned pod matching the selector is adopted; a stray unbound pod is deleted", () => {
  const hash = hashOf(f.cluster(adsSnapshot({}, [f.node("a")])), f.t0);
  const orphan = f.pod("orphan", "a", hash);
  orphan.metadata.ownerReferences = [];
  const stray = f.pod("stray", "gone", hash);
  delete stray.spec.nodeName;
  stray.spec.affinity = {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{
          matchFields: [{ key: "metadata.name", operator: "In", values: ["gone"] }],
        }],
      },
    },
  };
  const p = plan(adsSnapshot({}, [f.node("a")], [orphan, stray]), f.t0);
  const adopt = p.actions.find((a) => a.type === "patchPod");
  assertEquals(
    adopt?.type === "patchPod" && adopt.patch.metadata.ownerReferences?.[0].uid,
    f.setUid,
  );
  assertEquals(
    p.actions.filter((a) => a.type === "deletePod").map((a) => a.type === "deletePod" && a.name),
    ["stray"],
  );
});

Deno.test("scaleStrategy.partitionedScaling holds back creation like the Kruise annotation", () => {
  const spec = {
    updateStrategy: { type: "RollingUpdate" as const, rollingUpdate: { partition: 3 } },
    scaleStrategy: { partitionedScaling: true },
  };
  assertEquals(podActions(plan(adsSnapshot(spec, f.nodes(5)), f.t0)), [
    "create node-0",
    "create node-1",
  ]);
});

Deno.test("burstReplicas as a percent of desired", () => {
  const p = plan(adsSnapshot({ burstReplicas: "30%" }, f.nodes(10)), f.t0);
  assertEquals(podActions(p).length, 3);
  assertEquals(p.requeueAfterSeconds, 1);
});

Deno.test("an invalid spec records the generation it looked at", () => {
  const p = plan(adsSnapshot({ minReadySeconds: -1 }, f.nodes(1), [], { generation: 7 }), f.t0);
  assertEquals(p.status.observedGeneration, 7);
  assertEquals(
    p.conditions.find((c) => c.type === "InvalidSpec")?.message,
    "spec.minReadySeconds: must be non-negative",
  );
});

Deno.test("OpenYurt: a bad annotation is InvalidSpec; no revision yet means waiting for one", () => {
  const bad = f.yurtCluster("fast", f.nodes(1)).snapshot;
  const p = plan(bad, f.t0);
  assertEquals(p.actions, []);
  // Counted all the same: one node, its pod on the old revision.
  assertEquals([p.status.desiredNumberScheduled, p.status.updatedNumberScheduled], [1, 0]);
  assertEquals(
    p.conditions.find((c) => c.type === "InvalidSpec")?.message?.startsWith(
      "metadata.annotations[apps.openyurt.io/update-strategy]",
    ),
    true,
  );
  const early = { ...f.yurtCluster("auto", f.nodes(1)).snapshot, revisions: [] };
  const waiting = plan(early, f.t0);
  assertEquals(waiting.actions, []);
  assertEquals(condition(waiting, "Progressing"), "False WaitingForRevision");
});

Deno.test("OpenYurt: a template the DaemonSet controller has not observed waits for its revision", () => {
  // Generation 3 is the spec; the native controller observed 2, and its newest revision is 2's.
  const c = f.yurtCluster("AdvancedRollingUpdate", f.nodes(2));
  c.snapshot.set.metadata.generation = 3;
  const observedBy = (generation: number) => {
    c.snapshot.set.status = { observedGeneration: generation };
  };
  observedBy(2);
  // What the last plan judged: a stop, and the revision a rollback would return to.
  const stopped = {
    type: "RolloutStopped",
    status: "True" as const,
    reason: "FailureBudgetExceeded",
    message: "1 failed",
    lastTransitionTime: "2026-01-01T00:00:00Z",
  };
  const judged = { lastCompleteRevision: "v1hash", conditions: [stopped] };
  if (c.snapshot.kind === "DaemonSet") {
    c.snapshot.rolloutStatus = rolloutStatusObject(c.snapshot.set, judged);
  }
  const waiting = plan(c.snapshot, f.t0);
  assertEquals(waiting.actions, [], "nothing replaced for a revision that may be the old one");
  assertEquals(waiting.status.observedGeneration, 2, "the tick looks again until it moves");
  assertEquals(
    [condition(waiting, "Progressing"), condition(waiting, "Complete")].map((c) => c.split(" ")[1]),
    ["WaitingForRevision", "Incomplete"],
  );
  assertEquals(waiting.awaited[0]?.what, "the ControllerRevision of generation 3");
  assertEquals(waiting.status.lastCompleteRevision, "v1hash", "what was judged stands");
  assertEquals(waiting.conditions.find((c) => c.type === "RolloutStopped"), stopped);
  assertEquals(waiting.events, [], "nothing said again");
  // Counted against the revision written last: both pods are on the old one.
  assertEquals([waiting.status.desiredNumberScheduled, waiting.status.updatedNumberScheduled], [
    2,
    0,
  ]);

  observedBy(3);
  const observed = plan(c.snapshot, f.t0);
  assertEquals(observed.status.observedGeneration, 3);
  assertEquals(podActions(observed).some((a) => a.startsWith("delete")), true);
});

Deno.test("OpenYurt: max-unavailable 0 is OpenYurt's 10%, said once in an Event and kept in InvalidSpec", () => {
  let c = f.yurtCluster("AdvancedRollingUpdate", f.nodes(20));
  c.snapshot.set.metadata.annotations!["apps.openyurt.io/max-unavailable"] = "0";
  let p: Plan;
  [p, c] = step(c, f.t0);
  // 10% of 20 nodes: two old pods go at once.
  assertEquals(podActions(p).filter((a) => a.startsWith("delete")).length, 2);
  assertEquals(condition(p, "InvalidSpec"), "False Defaulted");
  assertEquals(
    p.events.filter((e) => e.reason === "Defaulted").map((e) => [e.type, e.message]),
    [[
      "Normal",
      `metadata.annotations[apps.openyurt.io/max-unavailable]: "0" means OpenYurt's default: 10% is used`,
    ]],
  );
  [p, c] = step(c, f.t0 + 1000);
  assertEquals(p.events.filter((e) => e.reason === "Defaulted"), [], "said once");
  assertEquals(condition(p, "InvalidSpec"), "False Defaulted");
});

Deno.test("nodes cut off stay desired: waited for since when, Complete False NodesUnreachable, said once", () => {
  let c = rolledTo(adsSnapshot({}, f.nodes(3)));
  // The node lifecycle controller's view of two lost nodes: Ready Unknown, and its taints.
  for (const node of c.snapshot.nodes.slice(1)) {
    node.status = {
      conditions: [{
        type: "Ready",
        status: "Unknown",
        lastTransitionTime: "2026-01-01T00:00:00Z",
      }],
    };
    node.spec = {
      taints: [
        { key: "node.kubernetes.io/unreachable", effect: "NoSchedule" },
        { key: "node.kubernetes.io/unreachable", effect: "NoExecute" },
      ],
    };
  }
  const events: string[] = [];
  let p: Plan = plan(c.snapshot, f.t0);
  for (let i = 0; i < 8; i++) {
    [p, c] = step(c, f.t0 + i * 60_000);
    events.push(...p.events.filter((e) => e.reason === "NodesUnreachable").map((e) => e.message));
  }
  assertEquals(p.status.desiredNumberScheduled, 3, "the cut nodes stay desired");
  assertEquals(p.status.updatedNumberScheduled, 1);
  assertEquals(p.status.numberMisscheduled ?? 0, 0);
  assertEquals(condition(p, "Complete"), "False NodesUnreachable");
  const message =
    "2 NotReady nodes run an old revision, updated when they come back: node-1, node-2";
  assertEquals(p.conditions.find((x) => x.type === "Complete")?.message, message);
  assertEquals(events, [message], "said once");
  assertEquals(
    p.awaited.filter((a) => a.what.startsWith("node/")).map((a) => [a.what, a.why]).sort(),
    ["node-1", "node-2"].map((n) => [
      `node/${n} Ready`,
      "NotReady or unreachable since 2026-01-01T00:00:00Z: its pod is updated when it comes back",
    ]),
  );
  // Their old pods are neither deleted nor replaced while they are away.
  assertEquals(podActions(p), []);
});

Deno.test("a spec whose selector cannot be counted either is InvalidSpec, counted as before", () => {
  const spec = { selector: { matchLabels: { app: "no such value!" } } };
  const snapshot = adsSnapshot(spec, f.nodes(2));
  (snapshot.set.spec as { template: { metadata: { labels: Record<string, string> } } }).template
    .metadata.labels.app = "no such value!";
  const p = plan(snapshot, f.t0);
  assertEquals(p.actions, []);
  assertEquals(condition(p, "InvalidSpec"), "True InvalidSpec");
  assertEquals(p.status.desiredNumberScheduled, 0, "nothing counted from a bad selector");
});
