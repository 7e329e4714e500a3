/**
 * The dashboards' tests share this: on `target`, the controller rolling an AdvancedDaemonSet at
 * v1 in `ns` to completion, and `edgeroll dashboard` against it.
 */
import type { RolloutPlanInput } from "../api/rollout-plan.ts";
import { withDashboard, withEdgeroll } from "./processes.ts";
import type { E2eTarget } from "./e2e/target.ts";
import type { Kube } from "./e2e/kube.ts";
import { advancedDaemonSet, completeOn } from "./e2e/edgeroll-scenarios.ts";

export async function withRollingDashboard(
  target: E2eTarget,
  kube: Kube,
  ns: string,
  /** The dashboard's base URL, and its page of the set. */
  body: (url: string, setPath: string) => Promise<void>,
  /**
   * How long a wave waits for its pods to count as available: a few nodes roll faster than the
   * stream shows a tile turning (a warm controller rolls three kwok nodes in a fifth of a second,
   * ADR 0038). None by default.
   */
  minReadySeconds?: number,
  /** A rollout plan for the set (ADR 0050). */
  plan?: RolloutPlanInput,
): Promise<void> {
  await kube.installCrd();
  await kube.createNamespace(ns);
  const set = advancedDaemonSet(ns, "v1");
  if (minReadySeconds !== undefined) {
    (set.spec as Record<string, unknown>).minReadySeconds = minReadySeconds;
  }
  if (plan) (set.spec.updateStrategy.rollingUpdate as Record<string, unknown>).plan = plan;
  await kube.apply(set);
  await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
    await completeOn(target, kube, ns, "v1");
    await withDashboard(
      target.kubeconfigPath,
      (url) => body(url, `/sets/advanceddaemonsets/${ns}/edge-agent`),
    );
  });
}
