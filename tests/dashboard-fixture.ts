/**
 * The dashboards' tests share this: on `target`, the controller rolling an AdvancedDaemonSet at
 * v1 in `ns` to completion, and `edgeroll dashboard` against it.
 */
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
): Promise<void> {
  await kube.installCrd();
  await kube.createNamespace(ns);
  // A wave waits two seconds for its pods to count as available: a rollout the stream can be
  // seen turning (a warm controller rolls three kwok nodes in a fifth of a second, ADR 0038).
  const set = advancedDaemonSet(ns, "v1");
  (set.spec as Record<string, unknown>).minReadySeconds = 2;
  await kube.apply(set);
  await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
    await completeOn(target, kube, ns, "v1");
    await withDashboard(
      target.kubeconfigPath,
      (url) => body(url, `/sets/advanceddaemonsets/${ns}/edge-agent`),
    );
  });
}
