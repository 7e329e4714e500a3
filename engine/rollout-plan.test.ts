/**
 * Rollout plans (ADR 0050) through `plan`: a fleet of zones rolled step by step on the fake
 * cluster of `testdata/fleet.ts`, and properties on random fleets and plans.
 */
import { assert, assertEquals } from "@std/assert";
import fc from "fast-check";
import { Keys, type Node, type Pod } from "../api/kube-objects.ts";
import type { RolloutPlanInput } from "../api/rollout-plan.ts";
import type { Plan, Snapshot } from "../api/plan.ts";
import { formatTime, isNodeReady, podNodeName } from "./pod-node-state.ts";
import { plan } from "./plan.ts";
import * as f from "./testdata/fleet.ts";

const zoneLabel = "topology.kubernetes.io/zone";
const stepMillis = 5000;

/** Zones a (3 nodes), b (3), c (2), and one node without the label. */
function zonedNodes(): Node[] {
  const zoned = (name: string, zone?: string) =>
    f.node(name, zone ? { labels: { [zoneLabel]: zone } } : {});
  return [
    zoned("a-1", "a"),
    zoned("a-2", "a"),
    zoned("a-3", "a"),
    zoned("b-1", "b"),
    zoned("b-2", "b"),
    zoned("b-3", "b"),
    zoned("c-1", "c"),
    zoned("c-2", "c"),
    zoned("edge-0"),
  ];
}

function plannedSet(rolloutPlan: Partial<RolloutPlanInput>, rollingUpdate: object = {}): Snapshot {
  return f.plannedSnapshot(
    { domainLabel: zoneLabel, steps: [{ nodes: "100%" }], ...rolloutPlan },
    { maxUnavailable: 2, ...rollingUpdate },
    zonedNodes(),
  );
}

/** One reconcile and the kubelets after it. */
function step(c: f.Cluster, now: number): [Plan, f.Cluster] {
  const p = plan(c.snapshot, now);
  return [p, f.kubelet(f.apply(c, p, now), now)];
}

/** Steps until a plan decides nothing; the last plan and the cluster it left. */
function settle(c: f.Cluster, start: number): { p: Plan; c: f.Cluster; now: number } {
  let now = start;
  for (let i = 0; i < 60; i++) {
    const [p, next] = step(c, now);
    c = next;
    if (p.actions.length === 0) return { p, c, now };
    now += stepMillis;
  }
  throw new Error("the fleet did not settle in 60 steps");
}

/** The fleet settled on agent:v1, then given agent:v2. */
function onV1ThenV2(snapshot: Snapshot): { c: f.Cluster; now: number } {
  const first = settle(f.cluster(snapshot), f.t0);
  assertEquals(first.p.status.plan?.state, "Done");
  return { c: f.withTemplate(first.c, "agent:v2", 2), now: first.now + stepMillis };
}

function nodesOn(c: f.Cluster, hash: string): string[] {
  return c.snapshot.pods.filter((p) => p.metadata.labels?.[Keys.revisionHash] === hash)
    .map((p) => podNodeName(p) ?? "").sort();
}

function annotate(c: f.Cluster, annotations: Record<string, string>): f.Cluster {
  const s = structuredClone(c.snapshot);
  s.set.metadata.annotations = { ...s.set.metadata.annotations, ...annotations };
  return { snapshot: s, serial: c.serial };
}

Deno.test("rollout plan: a one-node canary waits for an approval of its own revision", () => {
  const start = onV1ThenV2(plannedSet({
    firstDomains: ["b"],
    steps: [{ nodes: 1, pause: { approval: true } }, { nodes: "100%" }],
  }));
  const canary = settle(start.c, start.now);
  const hash = canary.p.status.daemonSetHash!;
  // The first domain listed, Kruise's order within it: names descending.
  assertEquals(nodesOn(canary.c, hash), ["b-3"]);
  assertEquals(canary.p.status.plan?.state, "AwaitingApproval");
  assertEquals(canary.p.status.plan?.step, 1);
  assertEquals(canary.p.status.plan?.domains.map((d) => [d.name, d.state, d.updated]), [
    ["b", "AwaitingApproval", 1],
    ["a", "Pending", 0],
    ["c", "Pending", 0],
    ["(no topology.kubernetes.io/zone)", "Pending", 0],
  ]);
  const paused = canary.p.conditions.find((c) => c.type === "Paused");
  assertEquals([paused?.status, paused?.reason], ["True", "AwaitingApproval"]);
  assert(canary.p.awaited.some((a) => a.what === "approval of step 1"));

  // An approval of another revision, or of a malformed value, passes nothing.
  for (const value of ["0123abcd/1", `${hash}`]) {
    const other = settle(
      annotate(canary.c, { "apps.edgeroll.dev/approved-step": value }),
      canary.now,
    );
    assertEquals(nodesOn(other.c, hash), ["b-3"]);
    assertEquals(other.p.status.plan?.state, "AwaitingApproval");
  }
  const approved = settle(
    annotate(canary.c, { "apps.edgeroll.dev/approved-step": `${hash}/1` }),
    canary.now,
  );
  assertEquals(nodesOn(approved.c, hash).length, 9);
  assertEquals(approved.p.status.plan?.state, "Done");
  assert(approved.p.events.some((e) => e.reason === "PlanDone"));
});

Deno.test("rollout plan: domains roll in order, one at a time, the unlabelled nodes last", () => {
  const start = onV1ThenV2(plannedSet({ steps: [{ nodes: "100%" }] }, { maxUnavailable: 3 }));
  let c = start.c;
  let now = start.now;
  const order = ["a", "b", "c", "(no topology.kubernetes.io/zone)"];
  const zoneOf = (name: string) =>
    c.snapshot.nodes.find((n) => n.metadata.name === name)?.metadata.labels?.[zoneLabel] ??
      order[3];
  for (let i = 0; i < 60; i++) {
    const before = plan(c.snapshot, now);
    const hash = before.status.daemonSetHash!;
    const updatedNodes = new Set(nodesOn(c, hash));
    const deleted = before.actions.filter((a) => a.type === "deletePod")
      .map((a) => a.type === "deletePod" ? a.node ?? "" : "");
    for (const node of deleted) {
      // Every node of every earlier domain already runs the revision.
      const earlier = order.slice(0, order.indexOf(zoneOf(node)));
      const behind = c.snapshot.nodes.map((n) => n.metadata.name ?? "")
        .filter((n) => earlier.includes(zoneOf(n)) && !updatedNodes.has(n));
      assertEquals(behind, [], `${node} updated before ${behind.join(", ")}`);
    }
    [, c] = step(c, now);
    now += stepMillis;
    if (before.status.plan?.state === "Done") break;
  }
  assertEquals(plan(c.snapshot, now).status.plan?.state, "Done");
});

Deno.test("rollout plan: a down pod in a later domain is replaced at once; its domain's healthy nodes wait for their turn", () => {
  const start = onV1ThenV2(plannedSet({ maxConcurrentDomains: 1 }, { maxUnavailable: 1 }));
  // Zone a takes the turn: one of its nodes at a time (maxUnavailable 1).
  const [first, c1] = step(start.c, start.now);
  const hash = first.status.daemonSetHash!;
  const deleted = (p: Plan) =>
    p.actions.flatMap((a) => a.type === "deletePod" ? [a.node ?? ""] : []).sort();
  assertEquals(deleted(first), ["a-3"]);
  // Meanwhile b-2's old pod goes down.
  const s = structuredClone(c1.snapshot);
  s.pods.find((p) => podNodeName(p) === "b-2")!.status = {
    phase: "Running",
    conditions: [{ type: "Ready", status: "False" }],
  };
  let c: f.Cluster = { snapshot: s, serial: c1.serial };
  let now = start.now + stepMillis;
  const [repair, c2] = step(c, now);
  // Replaced at once, in its own slot, though a holds the turn and the set's budget.
  assert(deleted(repair).includes("b-2"), `${deleted(repair)}`);
  assertEquals(deleted(repair).filter((n) => n.startsWith("b-") && n !== "b-2"), []);
  const stateOf = (p: Plan) => p.status.plan?.domains.map((d) => [d.name, d.state]);
  assertEquals(stateOf(repair)?.slice(0, 2), [["a", "Rolling"], ["b", "Pending"]]);
  c = c2;
  // b-2 on the revision gives b no turn: b-1 and b-3 wait until every node of a is updated.
  for (let i = 0; i < 40; i++) {
    now += stepMillis;
    const before = plan(c.snapshot, now);
    const healthyB = deleted(before).filter((n) => n === "b-1" || n === "b-3");
    if (healthyB.length > 0) {
      assertEquals(nodesOn(c, hash).filter((n) => n.startsWith("a-")), ["a-1", "a-2", "a-3"]);
      assertEquals(stateOf(before)?.slice(0, 2), [["a", "Done"], ["b", "Rolling"]]);
      return;
    }
    if (stateOf(before)?.[0][1] !== "Done") {
      assert(
        before.awaited.some((a) =>
          a.what.startsWith("3 domains (b, c, ") &&
          a.why === "maxConcurrentDomains 1: a is being updated"
        ),
        JSON.stringify(before.awaited),
      );
    }
    [, c] = step(c, now);
  }
  throw new Error("b's healthy nodes were never updated");
});

Deno.test("rollout plan: a soak holds the next domain and restarts when an updated pod turns unavailable", () => {
  const start = onV1ThenV2(plannedSet({
    steps: [{ domains: 1, pause: { soakSeconds: 60 } }, { nodes: "100%" }],
  }, { maxUnavailable: 3 }));
  const first = settle(start.c, start.now);
  const hash = first.p.status.daemonSetHash!;
  assertEquals(nodesOn(first.c, hash), ["a-1", "a-2", "a-3"]);
  assertEquals(first.p.status.plan?.state, "Soaking");
  const doneSince = Date.parse(first.p.status.plan!.doneSince!);
  assertEquals(
    first.p.status.nextCheckAt,
    new Date(doneSince + 60_000).toISOString().replace(".000", ""),
  );

  // 30 s in, a-2's new pod turns unavailable, then recovers: the soak counts again from then.
  const crashed = structuredClone(first.c.snapshot);
  const pod = crashed.pods.find((p) => podNodeName(p) === "a-2")!;
  pod.status = { phase: "Running", conditions: [{ type: "Ready", status: "False" }] };
  const down = plan(crashed, doneSince + 30_000);
  assertEquals(down.status.plan?.state, "Rolling");
  assertEquals(down.status.plan?.doneSince, undefined);
  let c = f.apply({ snapshot: crashed, serial: first.c.serial }, down, doneSince + 30_000);
  c = f.kubelet(c, doneSince + 30_000);
  const healed = structuredClone(c.snapshot);
  healed.pods.find((p) => podNodeName(p) === "a-2")!.status = f.pod("x", "a-2", hash).status;
  const again = plan(healed, doneSince + 35_000);
  assertEquals(again.status.plan?.state, "Soaking");
  assertEquals(Date.parse(again.status.plan!.doneSince!), doneSince + 35_000);
  assertEquals(again.actions.filter((a) => a.type === "deletePod"), []);

  // Once the soak has passed, domain b starts.
  const later = plan(
    f.apply({ snapshot: healed, serial: c.serial }, again, doneSince + 35_000).snapshot,
    doneSince + 96_000,
  );
  assertEquals(later.status.plan?.step, 2);
  assert(later.actions.some((a) => a.type === "deletePod" && a.node?.startsWith("b-")));
});

const deadlineExceeded = (p: Plan) =>
  p.conditions.find((c) => c.type === "Progressing")?.reason === "ProgressDeadlineExceeded";
const stopsOnDeadline = { maxFailed: 1, stopOnProgressDeadline: true };

Deno.test("rollout plan: an approval waited on longer than the progress deadline stops nothing; the clock starts at the approval", () => {
  const start = onV1ThenV2(plannedSet({
    steps: [{ nodes: 1, pause: { approval: true } }, { nodes: "100%" }],
  }));
  const canary = settle(f.withDeadline(start.c, 60, stopsOnDeadline), start.now);
  const hash = canary.p.status.daemonSetHash!;
  assertEquals(canary.p.status.plan?.state, "AwaitingApproval");
  // Ten minutes of waiting for the operator, ten deadlines: nothing is late, nothing stops.
  const waited = canary.now + 600_000;
  const [waiting, c] = step(canary.c, waited);
  assertEquals([deadlineExceeded(waiting), waiting.status.rolloutStop], [false, undefined]);
  assertEquals(waiting.status.plan?.state, "AwaitingApproval");
  // Approved: the clock counts from the approval, not from before the pause.
  const approved = plan(
    annotate(c, { "apps.edgeroll.dev/approved-step": `${hash}/1` }).snapshot,
    waited + 1000,
  );
  assertEquals(approved.status.progress?.at, formatTime(waited + 1000));
  assertEquals([deadlineExceeded(approved), approved.status.rolloutStop], [false, undefined]);
  assert(approved.actions.some((a) => a.type === "deletePod"));
});

Deno.test("rollout plan: a soak longer than the progress deadline stops nothing; the clock starts at its end", () => {
  const start = onV1ThenV2(plannedSet({
    steps: [{ domains: 1, pause: { soakSeconds: 300 } }, { nodes: "100%" }],
  }, { maxUnavailable: 3 }));
  const first = settle(f.withDeadline(start.c, 60, stopsOnDeadline), start.now);
  assertEquals(first.p.status.plan?.state, "Soaking");
  const doneSince = Date.parse(first.p.status.plan!.doneSince!);
  const [soaking, c] = step(first.c, doneSince + 200_000);
  assertEquals([deadlineExceeded(soaking), soaking.status.rolloutStop], [false, undefined]);
  assertEquals(soaking.status.plan?.state, "Soaking");
  const soaked = plan(c.snapshot, doneSince + 301_000);
  assertEquals(soaked.status.plan?.step, 2);
  assertEquals(soaked.status.progress?.at, formatTime(doneSince + 301_000));
  assertEquals([deadlineExceeded(soaked), soaked.status.rolloutStop], [false, undefined]);
  assert(soaked.actions.some((a) => a.type === "deletePod" && a.node?.startsWith("b-")));
});

Deno.test("rollout plan: a new template mid-plan starts again from the first step", () => {
  const start = onV1ThenV2(plannedSet({
    steps: [{ nodes: 1, pause: { approval: true } }, { nodes: "100%" }],
  }));
  const canary = settle(start.c, start.now);
  const v2 = canary.p.status.daemonSetHash!;
  const approved = annotate(canary.c, { "apps.edgeroll.dev/approved-step": `${v2}/1` });
  const v3 = settle(f.withTemplate(approved, "agent:v3", 3), canary.now + stepMillis);
  const hash = v3.p.status.daemonSetHash!;
  assert(hash !== v2);
  assertEquals(v3.p.status.plan?.revision, hash);
  assertEquals([v3.p.status.plan?.step, v3.p.status.plan?.state], [1, "AwaitingApproval"]);
  assertEquals(nodesOn(v3.c, hash), ["a-3"]);
});

Deno.test("rollout plan: an edited plan goes on from the step the status records", () => {
  const start = onV1ThenV2(plannedSet({
    steps: [{ nodes: 1, pause: { approval: true } }, { nodes: "100%" }],
  }));
  const canary = settle(start.c, start.now);
  assertEquals(canary.p.status.plan?.step, 1);
  // The operator widens step 1 to all of zone a and keeps the approval: a-2 and a-1 follow a-3,
  // and the plan waits again at step 1 before zone b.
  const edited = structuredClone(canary.c.snapshot);
  const spec = edited.set.spec as { updateStrategy: { rollingUpdate: { plan: RolloutPlanInput } } };
  spec.updateStrategy.rollingUpdate.plan.steps = [
    { domains: 1, pause: { approval: true } },
    { nodes: "100%" },
  ];
  const wider = settle({ snapshot: edited, serial: canary.c.serial }, canary.now);
  const hash = wider.p.status.daemonSetHash!;
  assertEquals(nodesOn(wider.c, hash), ["a-1", "a-2", "a-3"]);
  assertEquals([wider.p.status.plan?.step, wider.p.status.plan?.state], [1, "AwaitingApproval"]);
});

Deno.test("rollout plan: promote passes every pause; abort stops the rollout", () => {
  const start = onV1ThenV2(plannedSet({
    steps: [
      { nodes: 1, pause: { approval: true } },
      { domains: 1, pause: { soakSeconds: 600 } },
      { nodes: "100%" },
    ],
  }));
  const canary = settle(start.c, start.now);
  const hash = canary.p.status.daemonSetHash!;
  const aborted = settle(annotate(canary.c, { "apps.edgeroll.dev/aborted": hash }), canary.now);
  assertEquals(aborted.p.status.plan?.state, "Stopped");
  const progressing = aborted.p.conditions.find((c) => c.type === "Progressing");
  assertEquals(progressing?.reason, "Aborted");
  const promoted = settle(annotate(canary.c, { "apps.edgeroll.dev/promoted": hash }), canary.now);
  assertEquals(nodesOn(promoted.c, hash).length, 9);
  assertEquals(promoted.p.status.plan?.state, "Done");
});

Deno.test("rollout plan: failures are counted per domain; abort rolls back when the failure policy says so", () => {
  // Zones a and b at once: two of a's three new pods fail. Of the six updated, 20% allows 2
  // failures; of a's three, 1: domain a stops the rollout.
  const start = onV1ThenV2(plannedSet({ maxConcurrentDomains: 2, steps: [{ nodes: "100%" }] }, {
    maxUnavailable: 6,
    failurePolicy: { maxFailed: "20%" },
  }));
  let c = start.c;
  let now = start.now;
  let p = plan(c.snapshot, now);
  for (let i = 0; i < 10 && !p.status.rolloutStop; i++) {
    c = f.kubelet(f.apply(c, p, now), now, new Set(["a-1", "a-2"]));
    now += stepMillis;
    p = plan(c.snapshot, now);
  }
  assertEquals(p.status.rolloutStop?.domain, { name: "a", failed: 2, allowed: 1, updated: 3 });
  const stopped = p.conditions.find((x) => x.type === "RolloutStopped");
  assert(stopped?.message?.includes("failed in domain a"), stopped?.message);

  const canary = settle(
    onV1ThenV2(plannedSet({ steps: [{ nodes: 1, pause: { approval: true } }, { nodes: "100%" }] }, {
      failurePolicy: { maxFailed: 1, rollback: true },
    })).c,
    start.now,
  );
  const hash = canary.p.status.daemonSetHash!;
  const aborted = plan(
    annotate(canary.c, { "apps.edgeroll.dev/aborted": hash }).snapshot,
    canary.now,
  );
  const rollback = aborted.actions.find((a) => a.type === "rollbackTemplate");
  assert(rollback, "the template goes back");
  assertEquals(aborted.status.rollback?.reason, "Aborted");
  // The plan's Event and the rollback's, both.
  assertEquals(
    aborted.events.filter((e) => e.reason === "PlanAborted" || e.reason === "RolledBack")
      .map((e) => e.reason),
    ["PlanAborted", "RolledBack"],
  );
});

/** Reconciles with the kubelets failing the new pods on `failing` until the rollout stops. */
function untilStopped(c: f.Cluster, now: number, failing: string[]) {
  let p = plan(c.snapshot, now);
  for (let i = 0; i < 10 && !p.status.rolloutStop; i++) {
    c = f.kubelet(f.apply(c, p, now), now, new Set(failing));
    now += stepMillis;
    p = plan(c.snapshot, now);
  }
  assert(p.status.rolloutStop, "the rollout stops");
  return { p, c, now };
}

const stateOf = (p: Plan) => p.status.plan?.domains.map((d) => [d.name, d.state]);

Deno.test("rollout plan: a stopped rollout's plan says Stopped and why, the domain over its budget or those in flight Stopped, until a resume or a new revision", () => {
  // Zones a and b at once; of a's three new pods two fail: more than the 1 its 20% allows.
  const zones = onV1ThenV2(plannedSet({ maxConcurrentDomains: 2, steps: [{ nodes: "100%" }] }, {
    maxUnavailable: 6,
    failurePolicy: { maxFailed: "20%" },
  }));
  const overBudget = untilStopped(zones.c, zones.now, ["a-1", "a-2"]);
  const hash = overBudget.p.status.daemonSetHash!;
  assertEquals(overBudget.p.status.plan?.state, "Stopped");
  assertEquals(overBudget.p.status.plan?.stop, { reason: "FailureBudgetExceeded", domain: "a" });
  assertEquals(stateOf(overBudget.p), [
    ["a", "Stopped"],
    ["b", "Done"],
    ["c", "Pending"],
    ["(no topology.kubernetes.io/zone)", "Pending"],
  ]);
  const stopped = overBudget.p.conditions.find((x) => x.type === "RolloutStopped");
  assertEquals(stopped?.status, "True");
  // Told once, by RolloutStopped: the plan written, the next look says nothing of the plan again.
  const again = plan(f.apply(overBudget.c, overBudget.p, overBudget.now).snapshot, overBudget.now);
  assertEquals(again.status.plan, overBudget.p.status.plan);
  assertEquals(again.events.filter((e) => e.reason.startsWith("Plan")), []);

  // Resumed: the failures are acknowledged, the plan and its domains roll again.
  const resumed = plan(
    annotate(f.apply(overBudget.c, overBudget.p, overBudget.now), {
      "apps.edgeroll.dev/resume-revision": `${hash}/1`,
    }).snapshot,
    overBudget.now,
  );
  assertEquals(resumed.status.rolloutStop, undefined);
  assertEquals([resumed.status.plan?.state, resumed.status.plan?.stop], ["Rolling", undefined]);
  assertEquals(stateOf(resumed)?.slice(0, 2), [["a", "Rolling"], ["b", "Done"]]);

  // A whole-set stop (no failure allowed at all) at the canary: its domain is Stopped, the
  // domains not begun stay Pending.
  const canary = onV1ThenV2(plannedSet({
    steps: [{ nodes: 1, pause: { approval: true } }, { nodes: "100%" }],
  }, { failurePolicy: { maxFailed: 0 } }));
  const wholeSet = untilStopped(canary.c, canary.now, ["a-3"]);
  assertEquals(wholeSet.p.status.plan?.state, "Stopped");
  assertEquals(wholeSet.p.status.plan?.stop, { reason: "FailureBudgetExceeded" });
  assertEquals(stateOf(wholeSet.p), [
    ["a", "Stopped"],
    ["b", "Pending"],
    ["c", "Pending"],
    ["(no topology.kubernetes.io/zone)", "Pending"],
  ]);
  // A new revision ends the stop: its plan starts over.
  const v3 = plan(
    f.withTemplate(f.apply(wholeSet.c, wholeSet.p, wholeSet.now), "agent:v3", 3).snapshot,
    wholeSet.now,
  );
  assertEquals([v3.status.plan?.state, v3.status.plan?.step], ["Rolling", 1]);
  assertEquals(v3.status.plan?.stop, undefined);
});

Deno.test("rollout plan: a soak that ends while the rollout is stopped passes no step until a resume", () => {
  const start = onV1ThenV2(plannedSet({
    steps: [{ domains: 1, pause: { soakSeconds: 60 } }, { nodes: "100%" }],
  }, { maxUnavailable: 3, failurePolicy: { maxFailed: 0 } }));
  const first = settle(start.c, start.now);
  const hash = first.p.status.daemonSetHash!;
  assertEquals([first.p.status.plan?.state, first.p.status.plan?.step], ["Soaking", 1]);
  // a-2's new pod crash-loops: the rollout stops; then it recovers, and the stop stays.
  const crashed = structuredClone(first.c.snapshot);
  crashed.pods.find((p) => podNodeName(p) === "a-2")!.status = {
    phase: "Running",
    conditions: [{ type: "Ready", status: "False" }],
    containerStatuses: [{ name: "agent", state: { waiting: { reason: "CrashLoopBackOff" } } }],
  };
  const now = first.now + 1000;
  const stopped = plan(crashed, now);
  assertEquals(stopped.status.rolloutStop?.reason, "FailureBudgetExceeded");
  let c = f.apply({ snapshot: crashed, serial: first.c.serial }, stopped, now);
  const healed = structuredClone(c.snapshot);
  healed.pods.find((p) => podNodeName(p) === "a-2")!.status = f.pod("x", "a-2", hash).status;
  c = { snapshot: healed, serial: c.serial };
  // The soak, begun again once a-2 is back, would end twice over: the plan stays at step 1.
  for (const at of [now + 5000, now + 70_000, now + 140_000]) {
    const p = plan(c.snapshot, at);
    assertEquals([p.status.plan?.state, p.status.plan?.step], ["Stopped", 1]);
    assertEquals(p.events.filter((e) => e.reason === "PlanStepDone"), []);
    assertEquals(p.actions.filter((a) => a.type === "deletePod"), []);
    c = f.apply(c, p, at);
  }
  // Resumed, the plan goes on from the step the operator saw stop.
  const resumed = plan(
    annotate(c, { "apps.edgeroll.dev/resume-revision": `${hash}/1` }).snapshot,
    now + 145_000,
  );
  assertEquals([resumed.status.plan?.state, resumed.status.plan?.step], ["Rolling", 2]);
  assert(resumed.events.some((e) => e.reason === "PlanStepDone"));
});

/** The kubelets, with the new pods on `nodes` crash-looping: Running, never Ready. */
function crashLooping(c: f.Cluster, now: number, hash: string, nodes: string[]): f.Cluster {
  const s = f.kubelet(c, now).snapshot;
  for (const pod of s.pods) {
    if (
      !nodes.includes(podNodeName(pod) ?? "") || pod.metadata.labels?.[Keys.revisionHash] !== hash
    ) {
      continue;
    }
    pod.status = {
      phase: "Running",
      conditions: [{ type: "Ready", status: "False" }],
      containerStatuses: [{ name: "agent", state: { waiting: { reason: "CrashLoopBackOff" } } }],
    };
  }
  return { snapshot: s, serial: c.serial };
}

Deno.test("rollout plan: a rollback is held by no step: the crash-looping domain goes back first, no approval awaited", () => {
  const approvals = [
    { domains: 1, pause: { approval: true } },
    { domains: 1, pause: { approval: true } },
    { nodes: "100%" },
  ];
  const start = onV1ThenV2(plannedSet({ steps: approvals }, {
    failurePolicy: { maxFailed: 0, rollback: true },
  }));
  const v2 = settle(start.c, start.now);
  const complete = v2.p.status.daemonSetHash!;
  const promoted = settle(
    annotate(v2.c, { "apps.edgeroll.dev/promoted": complete }),
    v2.now,
  );
  assertEquals(promoted.p.status.lastCompleteRevision, complete);

  // v3: zone a approved, then zone b's new pods crash-loop and the rollout stops there.
  const canary = settle(f.withTemplate(promoted.c, "agent:v3", 3), promoted.now + stepMillis);
  const v3 = canary.p.status.daemonSetHash!;
  let c = annotate(canary.c, { "apps.edgeroll.dev/approved-step": `${v3}/1` });
  let now = canary.now;
  let p = plan(c.snapshot, now);
  for (let i = 0; i < 10 && !p.status.rolloutStop; i++) {
    c = crashLooping(f.apply(c, p, now), now, v3, ["b-1", "b-2", "b-3"]);
    now += stepMillis;
    p = plan(c.snapshot, now);
  }
  assert(p.actions.some((a) => a.type === "rollbackTemplate"), "the template goes back");
  assertEquals([p.status.plan?.revision, p.status.plan?.state], [v3, "Stopped"]);
  assertEquals(stateOf(p)?.slice(0, 2), [["a", "Done"], ["b", "Stopped"]]);

  // The template back on v2: the plan of the return is at its last step, and every node is
  // back on v2 without an approval, the crash-looping pods first.
  c = f.withTemplate(f.apply(c, p, now), "agent:v2", 4);
  const states: string[] = [];
  for (let i = 0; i < 20; i++) {
    now += stepMillis;
    p = plan(c.snapshot, now);
    states.push(p.status.plan!.state);
    if (i === 0) {
      assertEquals(p.status.plan?.rollbackFrom, v3);
      assertEquals(p.status.plan?.step, 3);
      const replaced = p.actions.flatMap((a) => a.type === "deletePod" ? [a.node] : []);
      assert(replaced.every((n) => n?.startsWith("b-")), `b first: ${replaced}`);
    }
    if (p.actions.length === 0) break;
    c = f.kubelet(f.apply(c, p, now), now);
  }
  assertEquals(p.status.daemonSetHash, complete);
  assertEquals(nodesOn(c, complete).length, 9);
  assertEquals(p.status.plan?.state, "Done");
  assert(!states.includes("AwaitingApproval"), `no approval awaited: ${states}`);
});

Deno.test("rollout plan: a cut node in a finished domain does not hold the plan, and is updated on its return", () => {
  const snapshot = plannedSet({
    steps: [{ domains: 1, pause: { approval: true } }, { nodes: "100%" }],
  });
  const start = onV1ThenV2(snapshot);
  const cut = structuredClone(start.c.snapshot);
  cut.nodes.find((n) => n.metadata.name === "a-1")!.status = {
    conditions: [{ type: "Ready", status: "Unknown" }],
  };
  const first = settle({ snapshot: cut, serial: start.c.serial }, start.now);
  const hash = first.p.status.daemonSetHash!;
  assertEquals(nodesOn(first.c, hash), ["a-2", "a-3"]);
  assertEquals(first.p.status.plan?.state, "AwaitingApproval");
  assertEquals(first.p.status.plan?.domains[0], {
    name: "a",
    state: "Done",
    nodes: 3,
    updated: 2,
    unreachable: 1,
  });
  const back = structuredClone(first.c.snapshot);
  back.nodes.find((n) => n.metadata.name === "a-1")!.status = f.node("a-1").status;
  const returned = settle({ snapshot: back, serial: first.c.serial }, first.now);
  assertEquals(nodesOn(returned.c, hash), ["a-1", "a-2", "a-3"]);
  assertEquals(returned.p.status.plan?.state, "AwaitingApproval");
});

Deno.test("rollout plan: plans the fleet cannot be ordered by, and bad plans, are InvalidSpec and change nothing", () => {
  const cases: [Partial<RolloutPlanInput>, object, string][] = [
    [{ firstDomains: ["z"] }, {}, "spec.updateStrategy.rollingUpdate.plan.firstDomains[0]"],
    [{ steps: [{ nodes: 1 }] }, {}, "spec.updateStrategy.rollingUpdate.plan.steps[0]"],
    [
      { steps: [{ domains: 1, nodes: 1 }, { nodes: "100%" }] },
      {},
      "spec.updateStrategy.rollingUpdate.plan.steps[0]",
    ],
    [
      { domainMaxUnavailable: 0 },
      {},
      "spec.updateStrategy.rollingUpdate.plan.domainMaxUnavailable",
    ],
    [{}, { partition: 2 }, "spec.updateStrategy.rollingUpdate.partition"],
    [{}, { selector: { matchLabels: { a: "b" } } }, "spec.updateStrategy.rollingUpdate.selector"],
    [{ firstDomains: ["a", "a"] }, {}, "spec.updateStrategy.rollingUpdate.plan.firstDomains[1]"],
    [{ domainLabel: "zone label" }, {}, "spec.updateStrategy.rollingUpdate.plan.domainLabel"],
  ];
  for (const [rolloutPlan, rollingUpdate, path] of cases) {
    const p = plan(plannedSet(rolloutPlan, rollingUpdate), f.t0);
    const invalid = p.conditions.find((c) => c.type === "InvalidSpec");
    assertEquals(invalid?.status, "True", path);
    assert(invalid?.message?.includes(path), `${invalid?.message} names ${path}`);
    assertEquals(p.actions, []);
  }
  // More than 100 domains.
  const crowded = plannedSet({});
  crowded.nodes = Array.from(
    { length: 102 },
    (_, i) => f.node(`n-${i}`, { labels: { [zoneLabel]: `z-${i}` } }),
  );
  const p = plan(crowded, f.t0);
  const invalid = p.conditions.find((c) => c.type === "InvalidSpec");
  assert(invalid?.message?.includes("plan.domainLabel"), invalid?.message);
  assertEquals(p.actions, []);
});

interface RandomPlan {
  zones: number[];
  unlabelled: number;
  /** Zones (by index) listed in `firstDomains`, those the fleet lacks left out. */
  first: number[];
  maxUnavailable: number;
  domainMaxUnavailable: number | null;
  maxConcurrentDomains: number;
  steps: { nodes?: number | string; domains?: number; approval: boolean; soak: boolean }[];
}

const randomPlan: fc.Arbitrary<RandomPlan> = fc.record({
  zones: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 4 }),
  unlabelled: fc.integer({ min: 0, max: 2 }),
  first: fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { maxLength: 2 }),
  maxUnavailable: fc.integer({ min: 1, max: 4 }),
  domainMaxUnavailable: fc.option(fc.integer({ min: 1, max: 3 })),
  maxConcurrentDomains: fc.integer({ min: 1, max: 3 }),
  steps: fc.array(
    fc.record({
      nodes: fc.option(fc.oneof(fc.integer({ min: 1, max: 6 }), fc.constantFrom("30%", "50%")), {
        nil: undefined,
      }),
      domains: fc.integer({ min: 1, max: 2 }),
      approval: fc.boolean(),
      soak: fc.boolean(),
    }).map(({ nodes, domains, approval, soak }) => ({
      ...(nodes !== undefined ? { nodes } : { domains }),
      approval,
      soak,
    })),
    { maxLength: 3 },
  ),
});

const soakSeconds = 20;
const unlabelled = `(no ${zoneLabel})`;
const domainOf = (n: Node) => n.metadata.labels?.[zoneLabel] ?? unlabelled;

function firstDomains(r: RandomPlan): string[] {
  return r.first.filter((z) => z < r.zones.length).map((z) => `z${z}`);
}

function randomSnapshot(r: RandomPlan): Snapshot {
  const nodes = [
    ...r.zones.flatMap((count, z) =>
      Array.from(
        { length: count },
        (_, i) => f.node(`z${z}-${i}`, { labels: { [zoneLabel]: `z${z}` } }),
      )
    ),
    ...Array.from({ length: r.unlabelled }, (_, i) => f.node(`u-${i}`)),
  ];
  const snapshot = plannedSet({
    firstDomains: firstDomains(r),
    maxConcurrentDomains: r.maxConcurrentDomains,
    ...(r.domainMaxUnavailable !== null ? { domainMaxUnavailable: r.domainMaxUnavailable } : {}),
    steps: [
      ...r.steps.map(({ nodes, domains, approval, soak }) => ({
        ...(nodes !== undefined ? { nodes } : { domains }),
        pause: { approval, ...(soak ? { soakSeconds } : {}) },
      })),
      { nodes: "100%" },
    ],
  }, { maxUnavailable: r.maxUnavailable });
  snapshot.nodes = nodes;
  return snapshot;
}

/**
 * The domains in the order ADR 0050 states, worked out here rather than read from status: the
 * first domains as listed, the others by name, the unlabelled last; each domain's nodes in
 * Kruise's order, names descending.
 */
function planOrder(r: RandomPlan, nodes: readonly Node[]): { name: string; nodes: string[] }[] {
  const first = firstDomains(r);
  const names = [...new Set(nodes.map(domainOf))];
  const rest = names.filter((d) => !first.includes(d) && d !== unlabelled).sort();
  return [...first, ...rest, ...names.filter((d) => d === unlabelled)].map((name) => ({
    name,
    nodes: nodes.filter((n) => domainOf(n) === name).map((n) => n.metadata.name ?? "").sort()
      .reverse(),
  }));
}

/** A random plan, and what disturbs its rollout look by look. */
interface RandomRollout {
  plan: RandomPlan;
  /** Per look, the node whose pod turns unavailable for one look (when a multiple of 3). */
  crashes: number[];
  /** Per look, whether an awaited approval is written naming another revision. */
  foreign: boolean[];
  /** The look before which v3 replaces v2 mid-plan, if any. */
  newTemplateAt: number | null;
}

const looks = 40;
const randomRollout: fc.Arbitrary<RandomRollout> = fc.record({
  plan: randomPlan,
  crashes: fc.array(fc.integer({ min: -1, max: 12 }), { minLength: looks, maxLength: looks }),
  foreign: fc.array(fc.boolean(), { minLength: looks, maxLength: looks }),
  newTemplateAt: fc.option(fc.integer({ min: 1, max: looks - 1 })),
});

/** One reconcile a property is shown: the cluster it planned on, the plan, its instant. */
interface Look {
  c: f.Cluster;
  p: Plan;
  now: number;
  hash: string;
  /** A pod of another revision is left: the plan has something to roll (ADR 0050). */
  outdated: boolean;
}

/**
 * A random plan's rollout from v1, disturbed: now and then a pod turns unavailable for one look;
 * each awaited step is approved, now and then by an approval naming another revision; and v3 may
 * replace v2 mid-plan, the approvals of v2 left on the set. Each reconcile is shown to `observe`.
 */
function disturbedRollout(run: RandomRollout, observe: (look: Look) => void): void {
  const start = onV1ThenV2(randomSnapshot(run.plan));
  let c = start.c;
  let now = start.now;
  const revisions: string[] = [];
  let crashed: { uid: string; status: Pod["status"] } | undefined;
  run.crashes.forEach((crash, i) => {
    if (i === run.newTemplateAt) c = f.withTemplate(c, "agent:v3", 3);
    const p = plan(c.snapshot, now);
    const hash = p.status.daemonSetHash!;
    if (!revisions.includes(hash)) revisions.push(hash);
    const outdated = c.snapshot.pods.some((pod) =>
      pod.metadata.labels?.[Keys.revisionHash] !== hash
    );
    observe({ c, p, now, hash, outdated });
    c = f.kubelet(f.apply(c, p, now), now);
    const s = structuredClone(c.snapshot);
    // The pod that crashed a look ago is back.
    const back = crashed && s.pods.find((x) => x.metadata.uid === crashed!.uid);
    if (back) back.status = crashed!.status;
    crashed = undefined;
    const victim = s.nodes[crash];
    const pod = victim && s.pods.find((x) => podNodeName(x) === victim.metadata.name);
    if (pod && crash % 3 === 0) {
      crashed = { uid: pod.metadata.uid ?? "", status: pod.status };
      pod.status = { phase: "Running", conditions: [{ type: "Ready", status: "False" }] };
    }
    c = { snapshot: s, serial: c.serial };
    const { state, step } = p.status.plan!;
    if (state === "AwaitingApproval") {
      const other = revisions.find((h) => h !== hash) ?? "0123abcd";
      const revision = run.foreign[i] ? other : hash;
      c = annotate(c, { "apps.edgeroll.dev/approved-step": `${revision}/${step}` });
    }
    now += 7000;
  });
}

/** Nodes with an available pod of `hash` (every node of the fleet is Ready). */
function updatedNodes(c: f.Cluster, hash: string): Set<string> {
  return new Set(
    c.snapshot.pods.filter((pod) =>
      pod.metadata.labels?.[Keys.revisionHash] === hash &&
      pod.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True")
    ).map((pod) => podNodeName(pod) ?? ""),
  );
}

/**
 * The nodes whose pod of another revision the plan deletes: the nodes it updates; `available`,
 * only those whose old pod was available (a pod already down is replaced in its own slot).
 */
function replacedNodes({ c, p, hash }: Look, only?: "available"): string[] {
  const old = new Set(
    c.snapshot.pods.filter((pod) =>
      pod.metadata.labels?.[Keys.revisionHash] !== hash &&
      (only !== "available" ||
        pod.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"))
    ).map((pod) => pod.metadata.uid),
  );
  return p.actions.flatMap((a) => a.type === "deletePod" && old.has(a.uid) ? [a.node ?? ""] : []);
}

const propertyRuns = { numRuns: 60 };

Deno.test("property: a plan keeps every domain's budget and the set's, reaches no node beyond its step, changes nothing while paused", () => {
  fc.assert(
    fc.property(randomRollout, (run) => {
      const r = run.plan;
      disturbedRollout(run, (look) => {
        const { c, p } = look;
        const plan_ = p.status.plan!;
        // The pods as they will be once the plan's deletions land: every Ready node without an
        // available pod counts against the budgets.
        const deleted = new Set(p.actions.flatMap((a) => a.type === "deletePod" ? [a.uid] : []));
        const availableOn = new Set(
          c.snapshot.pods.filter((pod) =>
            !deleted.has(pod.metadata.uid ?? "") &&
            pod.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True")
          ).map(podNodeName),
        );
        const down = c.snapshot.nodes.filter((n) =>
          isNodeReady(n) && !availableOn.has(n.metadata.name)
        );
        const downBefore = c.snapshot.nodes.filter((n) =>
          isNodeReady(n) &&
          !c.snapshot.pods.some((pod) =>
            podNodeName(pod) === n.metadata.name &&
            pod.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True")
          )
        );
        assert(down.length <= Math.max(r.maxUnavailable, downBefore.length), "the set's budget");
        if (r.domainMaxUnavailable !== null) {
          for (const d of new Set(c.snapshot.nodes.map(domainOf))) {
            const inDomain = (n: Node) => domainOf(n) === d;
            const limit = Math.max(r.domainMaxUnavailable, downBefore.filter(inDomain).length);
            assert(down.filter(inDomain).length <= limit, `domain ${d}'s budget`);
          }
        }
        const replaced = replacedNodes(look);
        // A pause changes nothing until approved: no update while soaking or awaiting.
        if (plan_.state === "AwaitingApproval" || plan_.state === "Soaking") {
          assertEquals(replaced, [], `updates while ${plan_.state}`);
        }
        // No node beyond the step's target in the plan's order is updated.
        const reached = planOrder(r, c.snapshot.nodes).flatMap((d) => d.nodes)
          .slice(0, plan_.target);
        for (const node of replaced) {
          assert(reached.includes(node), `${node} beyond step ${plan_.step}'s ${plan_.target}`);
        }
        // A domain starts only while fewer than maxConcurrentDomains are being updated. A pod
        // already down is replaced in any covered domain, turn or none (ADR 0050).
        const rolling = new Set(
          plan_.domains.filter((d) => d.state === "Rolling").map((d) => d.name),
        );
        const updates = replacedNodes(look, "available");
        const newDomains = new Set(
          c.snapshot.nodes.filter((n) => updates.includes(n.metadata.name ?? ""))
            .map(domainOf).filter((d) => !rolling.has(d)),
        );
        assert(
          newDomains.size === 0 || rolling.size + newDomains.size <= r.maxConcurrentDomains,
          `maxConcurrentDomains: ${[...rolling]} rolling, ${[...newDomains]} started`,
        );
      });
    }),
    propertyRuns,
  );
});

Deno.test("property: no node of a later domain is updated before the earlier domains are done, beyond maxConcurrentDomains", () => {
  fc.assert(
    fc.property(randomRollout, (run) => {
      // A domain is done once each of its nodes has had an available pod of the revision (a
      // pod that crashed since does not undo it: the bound is on where the update reaches).
      const everUpdated = new Map<string, Set<string>>();
      // Every domain is held to it: a pod already down replaced in a later domain, or a node
      // without a pod given the revision by placement, gives that domain no turn (ADR 0050).
      disturbedRollout(run, (look) => {
        const { c, hash } = look;
        const seen = everUpdated.get(hash) ?? new Set();
        everUpdated.set(hash, seen);
        for (const node of updatedNodes(c, hash)) seen.add(node);
        const domains = planOrder(run.plan, c.snapshot.nodes);
        const domainAt = (node: string) => domains.findIndex((d) => d.nodes.includes(node));
        for (const node of replacedNodes(look, "available")) {
          const at = domainAt(node);
          const notDone = domains.slice(0, at).filter((d) => !d.nodes.every((n) => seen.has(n)));
          assert(
            notDone.length + 1 <= run.plan.maxConcurrentDomains,
            `${node} updated while ${notDone.map((d) => d.name)} are not done`,
          );
        }
      });
    }),
    propertyRuns,
  );
});

Deno.test("property: an approval passes only the steps of the revision it names", () => {
  fc.assert(
    fc.property(randomRollout, (run) => {
      // The highest step approved for each revision, as the annotations written so far say.
      const approvedUpTo = new Map<string, number>();
      disturbedRollout(run, ({ c, p, hash, outdated }) => {
        const written = c.snapshot.set.metadata.annotations?.["apps.edgeroll.dev/approved-step"];
        if (written) {
          const [revision, step] = written.split("/");
          approvedUpTo.set(revision, Math.max(approvedUpTo.get(revision) ?? 0, Number(step)));
        }
        // With nothing left to roll there is nothing to pause for (ADR 0050).
        if (!outdated) return;
        const passed = run.plan.steps.slice(0, p.status.plan!.step - 1);
        passed.forEach((step, i) => {
          if (!step.approval) return;
          assert(
            (approvedUpTo.get(hash) ?? 0) >= i + 1,
            `step ${i + 1} of ${hash} passed with approvals ${[...approvedUpTo]}`,
          );
        });
      });
    }),
    propertyRuns,
  );
});

Deno.test("property: a soak holds while every updated pod of its step is available, restarts when one is not, and lasts its whole time", () => {
  fc.assert(
    fc.property(randomRollout, (run) => {
      // Per revision and step: the last look that saw the step not done, and the soak's start.
      const notDoneAt = new Map<string, number>();
      const soakingSince = new Map<string, number>();
      const passed = new Set<string>();
      disturbedRollout(run, ({ c, p, now, hash, outdated }) => {
        const plan_ = p.status.plan!;
        const key = `${hash}/${plan_.step}`;
        if (plan_.state === "Soaking") {
          const updated = updatedNodes(c, hash);
          const reached = planOrder(run.plan, c.snapshot.nodes).flatMap((d) => d.nodes)
            .slice(0, plan_.target);
          for (const node of reached) assert(updated.has(node), `soaking with ${node} down`);
          const since = Date.parse(plan_.doneSince!);
          assert(since > (notDoneAt.get(key) ?? -Infinity), `${key} soaks from before a crash`);
          soakingSince.set(key, since);
        }
        if (plan_.state === "Rolling") notDoneAt.set(key, now);
        if (!outdated) return;
        run.plan.steps.slice(0, plan_.step - 1).forEach((step, i) => {
          const soaked = `${hash}/${i + 1}`;
          if (!step.soak || passed.has(soaked)) return;
          passed.add(soaked);
          const since = soakingSince.get(soaked);
          assert(since !== undefined, `${soaked} passed without a soak`);
          assert(now >= since! + soakSeconds * 1000, `${soaked} passed before its soak ended`);
        });
      });
    }),
    propertyRuns,
  );
});
