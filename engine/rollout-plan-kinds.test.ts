/**
 * Rollout plans on the kinds whose schema has no field for one (ADR 0053): carried by the
 * annotation `apps.edgeroll.dev/rollout-plan` on Kruise's DaemonSets and OpenYurt's, and in OTA
 * mode deciding which pods are marked PodNeedUpgrade, and when.
 */
import { assert, assertEquals } from "@std/assert";
import { Keys, type Node } from "../api/kube-objects.ts";
import type { Plan, Snapshot } from "../api/plan.ts";
import type { RolloutPlanInput } from "../api/rollout-plan.ts";
import { podNodeName } from "./pod-node-state.ts";
import { plan } from "./plan.ts";
import * as f from "./testdata/fleet.ts";

const zoneLabel = "topology.kubernetes.io/zone";
const planAnnotation = "apps.edgeroll.dev/rollout-plan";

/** Zones a and b, two nodes each. */
function zonedNodes(): Node[] {
  return ["a-1", "a-2", "b-1", "b-2"].map((name) =>
    f.node(name, { labels: { [zoneLabel]: name[0] } })
  );
}

const canaryThenAll: RolloutPlanInput = {
  domainLabel: zoneLabel,
  firstDomains: ["b"],
  domainMaxUnavailable: 1,
  steps: [{ nodes: 1, pause: { approval: true } }, { nodes: "100%" }],
};

function annotated(c: f.Cluster, annotations: Record<string, string>): f.Cluster {
  const s = structuredClone(c.snapshot);
  s.set.metadata.annotations = { ...s.set.metadata.annotations, ...annotations };
  return { snapshot: s, serial: c.serial };
}

/** An OpenYurt DaemonSet in `strategy` mode with a plan, its pods on v1, v2 written. */
function yurtWithPlan(strategy: string, rolloutPlan: RolloutPlanInput = canaryThenAll) {
  return annotated(f.yurtCluster(strategy, zonedNodes()), {
    [planAnnotation]: JSON.stringify(rolloutPlan),
  });
}

/** The nodes whose pods the plan marked PodNeedUpgrade True. */
function marked(p: Plan): string[] {
  return p.actions.flatMap((a) =>
    a.type === "setPodCondition" && a.condition.type === Keys.podNeedUpgrade &&
      a.condition.status === "True"
      ? [a.name.replace(/^nginx-/, "")]
      : []
  );
}

/** The kubelet of each node whose pod is marked: it upgrades (deletes the pod) at once. */
function nodesUpgrade(c: f.Cluster, now: number): f.Cluster {
  const s = structuredClone(c.snapshot);
  s.pods = s.pods.filter((pod) =>
    !pod.status?.conditions?.some((x) => x.type === Keys.podNeedUpgrade && x.status === "True")
  );
  const placed = f.nativeController({ snapshot: s, serial: c.serial }, "v2hash", now);
  return f.kubelet(placed, now);
}

/** One reconcile, its actions applied, then the nodes' part; the plan and the cluster left. */
function otaRound(c: f.Cluster, now: number): [Plan, f.Cluster] {
  const p = plan(c.snapshot, now);
  return [p, nodesUpgrade(f.apply(c, p, now), now + 500)];
}

function invalidSpec(p: Plan) {
  return p.conditions.find((c) => c.type === "InvalidSpec" && c.status === "True");
}

Deno.test("OTA under a plan: a node's pod is marked when the plan reaches it and its domain has room", () => {
  let c = yurtWithPlan("OTA");
  let p: Plan;
  const rounds: string[][] = [];
  [p, c] = otaRound(c, f.t0);
  rounds.push(marked(p));
  // The canary (the first domain listed, names descending), upgraded by its node: step 1 done.
  assertEquals(rounds, [["b-2"]]);
  [p, c] = otaRound(c, f.t0 + 1000);
  assertEquals(marked(p), []);
  assertEquals(p.status.plan?.state, "AwaitingApproval");
  assertEquals(
    c.snapshot.pods.filter((x) => x.metadata.labels?.[Keys.revisionHash] === "v2hash")
      .map((x) => podNodeName(x)),
    ["b-2"],
  );
  c = annotated(c, { "apps.edgeroll.dev/approved-step": "v2hash/1" });
  // One upgrade in flight per domain, one domain at a time: b-1, then a-2, then a-1.
  let now = f.t0 + 2000;
  for (let i = 0; i < 6; i++) {
    [p, c] = otaRound(c, now);
    if (marked(p).length) rounds.push(marked(p));
    now += 1000;
  }
  assertEquals(rounds, [["b-2"], ["b-1"], ["a-2"], ["a-1"]]);
  assertEquals(p.status.plan?.state, "Done");
  // Only ever marked: the nodes deleted their pods themselves.
  assertEquals(p.actions.filter((a) => a.type === "deletePod"), []);
});

Deno.test("OTA under a plan: held by the domain's budget while a marked node has not upgraded", () => {
  let c = yurtWithPlan("OTA", { ...canaryThenAll, steps: [{ nodes: "100%" }] });
  const first = plan(c.snapshot, f.t0);
  assertEquals(marked(first), ["b-2"]);
  // The node has not upgraded yet: its mark holds domain b's one slot, domain a waits its turn.
  c = f.apply(c, first, f.t0);
  const again = plan(c.snapshot, f.t0 + 1000);
  assertEquals(marked(again), []);
  assert(
    again.awaited.some((a) => a.what.includes("(a)") && a.why.includes("maxConcurrentDomains")),
    JSON.stringify(again.awaited),
  );
});

Deno.test("OTA under a plan: an abort takes back the marks of nodes that have not upgraded", () => {
  let c = yurtWithPlan("OTA", { ...canaryThenAll, steps: [{ nodes: "100%" }] });
  const first = plan(c.snapshot, f.t0);
  c = annotated(f.apply(c, first, f.t0), { "apps.edgeroll.dev/aborted": "v2hash" });
  const aborted = plan(c.snapshot, f.t0 + 1000);
  const taken = aborted.actions.flatMap((a) =>
    a.type === "setPodCondition" ? [[a.name, a.condition.status, a.reason]] : []
  );
  assertEquals(taken, [[
    "nginx-b-2",
    "False",
    "the rollout is stopped",
  ]]);
  assertEquals(aborted.status.plan?.state, "Stopped");
});

Deno.test("AdvancedRollingUpdate under a plan: the canary, then the domains in turn", () => {
  let c = yurtWithPlan("AdvancedRollingUpdate");
  const deleted: string[][] = [];
  let now = f.t0;
  let p: Plan | undefined;
  const round = () => {
    p = plan(c.snapshot, now);
    const gone = p.actions.flatMap((a) => a.type === "deletePod" ? [a.name] : []);
    if (gone.length) deleted.push(gone);
    c = f.kubelet(f.nativeController(f.apply(c, p, now), "v2hash", now), now);
    now += 1000;
  };
  for (let i = 0; i < 3; i++) round();
  assertEquals(deleted, [["nginx-b-2"]]);
  assertEquals(p?.status.plan?.state, "AwaitingApproval");
  c = annotated(c, { "apps.edgeroll.dev/approved-step": "v2hash/1" });
  for (let i = 0; i < 8; i++) round();
  assertEquals(deleted, [["nginx-b-2"], ["nginx-b-1"], ["nginx-a-2"], ["nginx-a-1"]]);
  assertEquals(p?.status.plan?.state, "Done");
});

/** A Kruise DaemonSet (v1beta1) over the zoned nodes, with `annotations`. */
function kruiseSet(annotations: Record<string, string>, rollingUpdate: object = {}): Snapshot {
  const set = f.advancedDaemonSet({
    updateStrategy: {
      type: "RollingUpdate",
      rollingUpdate: { maxUnavailable: 2, ...rollingUpdate },
    },
  }, { annotations });
  return {
    kind: "KruiseDaemonSet",
    set: { ...set, apiVersion: "apps.kruise.io/v1beta1", kind: "DaemonSet" } as Snapshot["set"],
    pods: [],
    nodes: zonedNodes(),
    revisions: [],
  };
}

Deno.test("a Kruise DaemonSet's plan is read from its annotation and rolls the canary first", () => {
  let { c, now } = f.settledThenV2(
    f.cluster(kruiseSet({ [planAnnotation]: JSON.stringify(canaryThenAll) })),
    f.t0,
  );
  for (let i = 0; i < 6; i++, now += 1000) c = f.reconciled(c, now);
  const p = plan(c.snapshot, now);
  const hash = p.status.daemonSetHash!;
  const onNew = c.snapshot.pods.filter((x) => x.metadata.labels?.[Keys.revisionHash] === hash)
    .map((x) => podNodeName(x));
  assertEquals(onNew, ["b-2"]);
  assertEquals(p.status.plan?.state, "AwaitingApproval");
  assertEquals(invalidSpec(p), undefined);
});

Deno.test("a plan annotation that is no plan, beside another plan or Kruise Rollout's partition, is InvalidSpec naming where", () => {
  const path = `metadata.annotations[${planAnnotation}]`;
  const cases: [Snapshot, string][] = [
    [kruiseSet({ [planAnnotation]: "{steps: [" }), `${path}: must be a rollout plan as JSON`],
    [
      kruiseSet({ [planAnnotation]: JSON.stringify({ ...canaryThenAll, steps: [{ nodes: 1 }] }) }),
      `${path}.steps[0]`,
    ],
    [
      kruiseSet({ [planAnnotation]: JSON.stringify({ steps: [{ nodes: "100%" }] }) }),
      `${path}.domainLabel`,
    ],
    [
      kruiseSet({ [planAnnotation]: JSON.stringify(canaryThenAll) }, { partition: 3 }),
      "spec.updateStrategy.rollingUpdate.partition",
    ],
    [
      kruiseSet({
        [planAnnotation]: JSON.stringify(canaryThenAll),
        "batchrelease.rollouts.kruise.io/control-info": "{}",
      }, { partition: 32767 }),
      "(Kruise Rollout, which controls this set, writes it",
    ],
    [
      kruiseSet({ [planAnnotation]: JSON.stringify(canaryThenAll) }, { plan: canaryThenAll }),
      `${path}: may not be set beside spec.updateStrategy.rollingUpdate.plan`,
    ],
    [
      {
        ...yurtWithPlan("OTA").snapshot,
        set: f.openYurtDaemonSet({
          "apps.openyurt.io/update-strategy": "OTA",
          "apps.edgeroll.dev/max-failed": "0",
          "apps.edgeroll.dev/rollback-on-failure": "true",
        }),
      },
      "metadata.annotations[apps.edgeroll.dev/rollback-on-failure]: cannot be true in OTA mode",
    ],
    [
      {
        ...yurtWithPlan("OTA").snapshot,
        set: f.openYurtDaemonSet({
          "apps.openyurt.io/update-strategy": "OTA",
          [planAnnotation]: JSON.stringify({ ...canaryThenAll, firstDomains: ["z"] }),
        }),
      },
      `${path}.firstDomains[0]`,
    ],
    [
      {
        kind: "AdvancedDaemonSet",
        set: f.advancedDaemonSet({}, {
          annotations: { [planAnnotation]: JSON.stringify(canaryThenAll) },
        }) as Snapshot["set"],
        pods: [],
        nodes: zonedNodes(),
        revisions: [],
      },
      `${path}: is read on Kruise's and OpenYurt's DaemonSets`,
    ],
  ];
  for (const [snapshot, named] of cases) {
    const p = plan(snapshot, f.t0);
    const invalid = invalidSpec(p);
    assert(invalid?.message?.includes(named), `${invalid?.message} names ${named}`);
    assertEquals(p.actions.filter((a) => a.type !== "createRevision"), []);
  }
});

Deno.test("OTA under a plan: a failed upgrade past the domain's budget stops the marks", () => {
  // Room for both of a's nodes at once.
  let c = annotated(
    yurtWithPlan("OTA", {
      ...canaryThenAll,
      firstDomains: [],
      domainMaxUnavailable: 2,
      steps: [{ nodes: "100%" }],
    }),
    { "apps.edgeroll.dev/max-failed": "0" },
  );
  const first = plan(c.snapshot, f.t0);
  assertEquals(marked(first).sort(), ["a-1", "a-2"]);
  // a-2's node upgrades; the new pod fails.
  c = f.apply(c, first, f.t0);
  c.snapshot.pods = c.snapshot.pods.filter((x) => podNodeName(x) !== "a-2");
  c = f.kubelet(f.nativeController(c, "v2hash", f.t0 + 500), f.t0 + 500, new Set(["a-2"]));
  const judged = plan(c.snapshot, f.t0 + 1000);
  // a-1 has not upgraded: its mark is taken back, and no other node is marked.
  const marks = judged.actions.flatMap((a) =>
    a.type === "setPodCondition" && a.condition.type === Keys.podNeedUpgrade
      ? [[a.name, a.condition.status, a.reason]]
      : []
  );
  assertEquals(marks.filter(([, status]) => status === "True"), []);
  assert(
    marks.some(([name, status, reason]) =>
      name === "nginx-a-1" && status === "False" && reason === "the rollout is stopped"
    ),
    JSON.stringify(marks),
  );
  const stopped = judged.conditions.find((x) => x.type === "RolloutStopped");
  assertEquals([stopped?.status, stopped?.reason], ["True", "FailureBudgetExceeded"]);
});
