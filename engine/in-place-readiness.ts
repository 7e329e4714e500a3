/**
 * Opens the in-place readiness gate (`InPlaceUpdateReady` True) of every pod that carries it
 * and runs its spec: a new pod at once, as Kruise's refresh does, and a pod updated in place
 * once its containers run the new images. A pod with a condition write or a patch still
 * expected (from an earlier call, `pending`, or from this one, `planned`) is left until it is seen.
 */
import type { Expectation } from "../api/advanced-daemonset.ts";
import { Keys } from "../api/kube-objects.ts";
import { type Allowance, PhaseDecisions, type PhaseResult, type PlanFacts } from "./decisions.ts";
import { hasInPlaceGate, type NodeView } from "./node-view.ts";
import { runsItsSpec } from "./pod-node-state.ts";

export function planInPlaceReadiness(
  facts: PlanFacts,
  allowance: Allowance,
  views: readonly NodeView[],
  pending: readonly Expectation[],
  planned: readonly Expectation[],
): PhaseResult {
  const out = new PhaseDecisions(facts, allowance);
  const busy = new Set(
    [...pending, ...planned]
      .filter((e) => e.action === "setCondition" || e.action === "patch")
      .map((e) => e.pod),
  );
  for (const view of views) {
    for (const pod of view.live) {
      if (!hasInPlaceGate(pod) || busy.has(pod.metadata.name ?? "") || !runsItsSpec(pod)) continue;
      const gate = pod.status?.conditions?.find((c) => c.type === Keys.inPlaceUpdateReady);
      if (gate?.status === "True") continue;
      const reason = "the pod runs its spec: its in-place readiness gate opens";
      if (!out.markInPlaceReady(pod, "True", reason)) return out.done();
    }
  }
  return out.done();
}
