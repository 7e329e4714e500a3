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
  await kube.apply(advancedDaemonSet(ns, "v1"));
  await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
    await completeOn(target, kube, ns, "v1");
    await withDashboard(
      target.kubeconfigPath,
      (url) => body(url, `/sets/advanceddaemonsets/${ns}/edge-agent`),
    );
  });
}
