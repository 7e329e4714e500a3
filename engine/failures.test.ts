/**
 * A rollout that stops itself (ADR 0035), on the fake fleet: a failing image spends the budget in
 * its first wave and no old pod is replaced after; creation on new nodes goes on; a new template
 * or a resume ends the stop; the progress deadline. And, on random fleets, the two promises:
 * failures past the budget never exceed the pods in flight when it was spent, and a stopped
 * rollout deletes no old pod.
 */
import { assert, assertEquals, assertStringIncludes } from "@std/assert";
import fc from "fast-check";
import { resumeRevisionAnnotation } from "../api/advanced-daemonset.ts";
import { scaleIntOrPercent } from "../api/int-or-percent.ts";
import type { Plan } from "../api/plan.ts";
import { podRevision } from "./pod-node-state.ts";
import { mergePatchTo } from "./failures.ts";
import { plan } from "./plan.ts";
import * as f from "./testdata/fleet.ts";

const condition = (p: Plan, type: string) => p.conditions.find((c) => c.type === type);
const oldDeletes = (c: f.Cluster, p: Plan, hash: string) =>
  p.actions.filter((a) =>
    a.type === "deletePod" &&
    c.snapshot.pods.some((pod) => pod.metadata.uid === a.uid && podRevision(pod) !== hash)
  );

/** A converged fleet of `nodes` on agent:v1 with a rolling update, moved to agent:v2. */
function fleet(
  nodes: number,
  rollingUpdate: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  metadata: Record<string, unknown> = {},
): f.Cluster {
  const spec = { updateStrategy: { type: "RollingUpdate", rollingUpdate }, ...extra };
  let c = f.cluster({
    kind: "AdvancedDaemonSet",
    set: f.advancedDaemonSet(spec as never, metadata) as never,
    pods: [],
    nodes: f.nodes(nodes),
    revisions: [],
  });
  const then = f.t0 - 3600_000;
  for (let i = 0; i < 3; i++) c = f.kubelet(f.apply(c, plan(c.snapshot, then), then), then);
  return f.withTemplate(c, "agent:v2", 2);
}

/** plan → apply → kubelet at `now`, pods on `failing` nodes failing. */
function step(c: f.Cluster, now: number, failing: Set<string>): [Plan, f.Cluster] {
  const p = plan(c.snapshot, now);
  return [p, f.kubelet(f.apply(c, p, now), now, failing)];
}

const everywhere = (n: number) => new Set(f.nodes(n).map((x) => x.metadata.name!));

Deno.test("failure budget: a failing image stops in its first wave; no old pod is replaced after, a Warning says which pods", () => {
  let c = fleet(6, { maxUnavailable: 2, failurePolicy: { maxFailed: 1 } });
  let p: Plan;
  // node-5 and node-4 replaced, their new pods created; both fail.
  [, c] = step(c, f.t0, everywhere(6));
  [, c] = step(c, f.t0 + 1000, everywhere(6));
  [p, c] = step(c, f.t0 + 2000, everywhere(6));
  const stopped = condition(p, "RolloutStopped");
  assertEquals([stopped?.status, stopped?.reason], ["True", "FailureBudgetExceeded"]);
  assertStringIncludes(stopped?.message ?? "", "more than the 1 allowed of 2 nodes updated");
  assertEquals(p.status.rolloutStop?.pods.map((x) => x.node).sort(), ["node-4", "node-5"]);
  assertEquals(p.status.rolloutStop?.pods[0].reason, "Failed");
  const warning = p.events.find((e) => e.reason === "FailureBudgetExceeded");
  assertEquals(warning?.type, "Warning");
  assertEquals(condition(p, "Progressing")?.reason, "FailureBudgetExceeded");
  const hash = p.status.daemonSetHash!;
  for (let i = 3; i < 9; i++) {
    const before = c;
    [p, c] = step(c, f.t0 + i * 1000, everywhere(6));
    assertEquals(oldDeletes(before, p, hash), [], `step ${i}`);
  }
  const onOld = c.snapshot.pods.filter((x) => podRevision(x) !== hash).length;
  assertEquals(onOld, 4, "the four nodes not reached stay on the old revision");
});

Deno.test("failure budget: a stopped rollout still creates pods on new nodes", () => {
  let c = fleet(4, { maxUnavailable: 1, failurePolicy: { maxFailed: 0 } });
  let p: Plan;
  [, c] = step(c, f.t0, everywhere(4));
  [, c] = step(c, f.t0 + 1000, everywhere(4));
  [p, c] = step(c, f.t0 + 2000, everywhere(4));
  assertEquals(condition(p, "RolloutStopped")?.status, "True");
  c.snapshot.nodes.push(f.node("node-9"));
  const before = c;
  [p, c] = step(c, f.t0 + 3000, new Set());
  assertEquals(p.actions.filter((a) => a.type === "createPod").map((a) => a.node), ["node-9"]);
  assertEquals(oldDeletes(before, p, p.status.daemonSetHash!), []);
});

Deno.test("failure budget: within it the rollout goes on; a percent counts the nodes updated so far", () => {
  // 50% of the nodes updated so far: one failure of two updated is within it.
  let c = fleet(6, { maxUnavailable: 2, failurePolicy: { maxFailed: "50%" } });
  let p: Plan;
  [, c] = step(c, f.t0, new Set(["node-5"]));
  [, c] = step(c, f.t0 + 1000, new Set(["node-5"]));
  const before = c;
  [p, c] = step(c, f.t0 + 2000, new Set(["node-5"]));
  const budget = condition(p, "RolloutStopped");
  assertEquals([budget?.status, budget?.reason], ["False", "WithinBudget"]);
  assertStringIncludes(budget?.message ?? "", "1 pod of the new revision failed of 1 allowed");
  assert(oldDeletes(before, p, p.status.daemonSetHash!).length > 0, "the next wave goes on");
});

Deno.test("failure budget: a new template ends the stop; a resume acknowledges the failed pods, once per value", () => {
  let c = fleet(4, { maxUnavailable: 1, failurePolicy: { maxFailed: 0 } });
  let p: Plan;
  [, c] = step(c, f.t0, everywhere(4));
  [, c] = step(c, f.t0 + 1000, everywhere(4));
  [p, c] = step(c, f.t0 + 2000, everywhere(4));
  const hash = p.status.daemonSetHash!;
  assertEquals(p.status.rolloutStop?.revision, hash);
  // Resumed: the failed pod no longer counts.
  const resumed = structuredClone(c);
  resumed.snapshot.set.metadata.annotations = { [resumeRevisionAnnotation]: `${hash}/1` };
  [p, c] = step(resumed, f.t0 + 3000, everywhere(4));
  assertEquals(condition(p, "RolloutStopped")?.status, "False");
  assertEquals([p.status.rolloutStop, p.status.acknowledgedFailures?.pods.length], [undefined, 1]);
  // Its pod recovers (the failure was passing): the rollout goes on to the next node...
  for (const pod of c.snapshot.pods) {
    if (podRevision(pod) === hash) {
      pod.status = {
        phase: "Running",
        conditions: [{ type: "Ready", status: "True", lastTransitionTime: "2026-01-01T00:00:03Z" }],
      };
    }
  }
  const recovered = c;
  [p, c] = step(c, f.t0 + 4000, everywhere(4));
  assertEquals(oldDeletes(recovered, p, hash).length, 1);
  // ...whose new pod fails: stopped again, and the same resume value does not lift it.
  for (let i = 5; i < 8; i++) [p, c] = step(c, f.t0 + i * 1000, everywhere(4));
  assertEquals(condition(p, "RolloutStopped")?.status, "True");
  const still = c;
  [p, c] = step(c, f.t0 + 8000, everywhere(4));
  assertEquals(oldDeletes(still, p, hash), []);
  // A new template: a new revision, the stop is over.
  c = f.withTemplate(c, "agent:v3", 3);
  const renewed = c;
  [p, c] = step(c, f.t0 + 9000, new Set());
  assertEquals(p.status.rolloutStop, undefined);
  assert(oldDeletes(renewed, p, p.status.daemonSetHash!).length > 0);
});

Deno.test("progress deadline: no updated pod available for the deadline sets Progressing False ProgressDeadlineExceeded; with stopOnProgressDeadline it stops", () => {
  // Pods that never become Ready: nothing fails by reason, the deadline tells.
  const notReady = (withStop: boolean) => {
    let c = fleet(4, {
      maxUnavailable: 1,
      failurePolicy: {
        maxFailed: 10,
        podStartTimeoutSeconds: 3600,
        stopOnProgressDeadline: withStop,
      },
    }, { progressDeadlineSeconds: 60 });
    let p: Plan;
    [p, c] = step(c, f.t0, new Set());
    // The new pod stays Pending (the kubelet never starts it).
    for (const pod of c.snapshot.pods) {
      if (podRevision(pod) === p.status.daemonSetHash) {
        pod.status = { phase: "Pending", conditions: [] };
      }
    }
    p = plan(c.snapshot, f.t0 + 30_000);
    assertEquals(condition(p, "Progressing")?.reason === "ProgressDeadlineExceeded", false);
    assert(p.status.nextCheckAt !== undefined);
    return plan(f.apply(c, p, f.t0 + 30_000).snapshot, f.t0 + 61_000);
  };
  const late = notReady(false);
  assertEquals(condition(late, "Progressing")?.reason, "ProgressDeadlineExceeded");
  assertEquals(condition(late, "RolloutStopped")?.status, "False");
  const stopped = notReady(true);
  assertEquals(condition(stopped, "RolloutStopped")?.reason, "ProgressDeadlineExceeded");
});

Deno.test("failure budget, property: failures never exceed the budget by more than the pods in flight, and a stopped rollout deletes no old pod", () => {
  fc.assert(
    fc.property(
      fc.record({
        nodes: fc.integer({ min: 2, max: 12 }),
        maxUnavailable: fc.integer({ min: 1, max: 4 }),
        maxFailed: fc.oneof(
          fc.integer({ min: 0, max: 3 }),
          fc.integer({ min: 1, max: 60 }).map((p) => `${p}%`),
        ),
        failing: fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }),
      }),
      ({ nodes, maxUnavailable, maxFailed, failing }) => {
        const bad = new Set(
          f.nodes(nodes).filter((_, i) => failing[i]).map((n) => n.metadata.name!),
        );
        let c = fleet(nodes, { maxUnavailable, failurePolicy: { maxFailed } });
        let p: Plan | undefined;
        let stoppedWith: { allowed: number } | undefined;
        for (let i = 0; i < 3 * nodes + 6; i++) {
          const before = c;
          const wasStopped = before.snapshot.set.status &&
            (before.snapshot.set.status as { rolloutStop?: unknown }).rolloutStop !== undefined;
          [p, c] = step(c, f.t0 + i * 1000, bad);
          const hash = p.status.daemonSetHash!;
          if (wasStopped) assertEquals(oldDeletes(before, p, hash), [], `step ${i}`);
          if (p.status.rolloutStop && !stoppedWith) {
            const updated = c.snapshot.pods.filter((x) => podRevision(x) === hash).length;
            stoppedWith = { allowed: scaleIntOrPercent(maxFailed, updated, true) };
          }
        }
        // Past the budget, at most the pods in flight when it was judged spent (one wave).
        const hash = p!.status.daemonSetHash!;
        const updated = c.snapshot.pods.filter((x) => podRevision(x) === hash);
        const failedNew = updated.filter((x) => x.status?.phase === "Failed").length;
        const allowed = stoppedWith?.allowed ?? scaleIntOrPercent(maxFailed, updated.length, true);
        assert(
          failedNew <= allowed + maxUnavailable,
          `${failedNew} failed, ${allowed} allowed, ${maxUnavailable} in flight`,
        );
      },
    ),
    { numRuns: 150, seed: 35 },
  );
});

Deno.test("failure budget on an OpenYurt DaemonSet: edgeroll's annotations, a bad one InvalidSpec with its path", () => {
  let c = f.yurtCluster("AdvancedRollingUpdate", f.nodes(4));
  c.snapshot.set.metadata.annotations = {
    ...c.snapshot.set.metadata.annotations,
    "apps.openyurt.io/max-unavailable": "1",
    "apps.edgeroll.dev/max-failed": "0",
  };
  const all = everywhere(4);
  let p: Plan;
  for (let i = 0; i < 4; i++) {
    [p, c] = step(c, f.t0 + i * 1000, all);
    c = f.kubelet(f.nativeController(c, "v2hash", f.t0 + i * 1000), f.t0 + i * 1000, all);
  }
  p = plan(c.snapshot, f.t0 + 5000);
  assertEquals(condition(p, "RolloutStopped")?.reason, "FailureBudgetExceeded");
  assertEquals(oldDeletes(c, p, "v2hash"), []);
  c.snapshot.set.metadata.annotations!["apps.edgeroll.dev/max-failed"] = "lots";
  const bad = plan(c.snapshot, f.t0 + 6000);
  assertStringIncludes(
    condition(bad, "InvalidSpec")?.message ?? "",
    "metadata.annotations[apps.edgeroll.dev/max-failed]",
  );
});

Deno.test("rollback: a stopped rollout puts back the last completed revision's template, whose pods then replace the failed ones; every node ends on it", () => {
  let c = fleet(5, { maxUnavailable: 1, failurePolicy: { maxFailed: 0, rollback: true } });
  // The converged v1 was recorded as complete before v2 came.
  const v1 = (c.snapshot.set.status as { lastCompleteRevision?: string }).lastCompleteRevision;
  assert(v1, "lastCompleteRevision kept for a set that may roll back");
  let p: Plan;
  for (let i = 0; i < 3; i++) [p, c] = step(c, f.t0 + i * 1000, everywhere(5));
  const rollback = p!.actions.find((a) => a.type === "rollbackTemplate");
  assertEquals(rollback?.type === "rollbackTemplate" && rollback.revision, v1);
  assertEquals(
    rollback?.type === "rollbackTemplate" && rollback.patch,
    { spec: { template: { spec: { containers: [{ name: "agent", image: "agent:v1" }] } } } },
  );
  assertEquals(p!.events.find((e) => e.reason === "RolledBack")?.type, "Warning");
  assertEquals(p!.status.rollback?.to, v1);
  // The API server applies the patch: the template is v1's again, its revision current.
  c = f.withTemplate(c, "agent:v1", 3);
  for (let i = 3; i < 20; i++) [p, c] = step(c, f.t0 + i * 1000, new Set());
  assertEquals(p!.status.daemonSetHash, v1);
  assertEquals(condition(p!, "Complete")?.status, "True");
  assertEquals(c.snapshot.pods.map((x) => x.spec.containers[0].image), Array(5).fill("agent:v1"));
  assertEquals(
    p!.status.rollback?.to,
    v1,
    "the rollback stays recorded while its revision is current",
  );
});

Deno.test("rollback: mergePatchTo removes what the target lacks and replaces lists whole", () => {
  assertEquals(
    mergePatchTo(
      { spec: { containers: [{ name: "a", image: "x:2", env: [] }], hostNetwork: true } },
      { spec: { containers: [{ name: "a", image: "x:1" }] } },
    ),
    { spec: { containers: [{ name: "a", image: "x:1" }], hostNetwork: null } },
  );
});
