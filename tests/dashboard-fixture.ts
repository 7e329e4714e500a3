/**
 * The dashboards' tests share this: sim with `nodes` nodes (in `zones`), the controller rolling
 * an AdvancedDaemonSet at v1 in `ns` to completion, and `edgeroll dashboard` against it.
 */
import { withDashboard, withEdgeroll } from "./processes.ts";
import { type E2eTarget, startTarget } from "./e2e/target.ts";
import { Kube } from "./e2e/kube.ts";
import { advancedDaemonSet, completeOn } from "./e2e/edgeroll-scenarios.ts";

export interface DashboardOnSim {
  target: E2eTarget;
  kube: Kube;
  /** The dashboard's base URL, and its page of the set. */
  url: string;
  setPath: string;
}

export async function withDashboardOnSim(
  options: { nodes: number; zones?: number; ns: string },
  body: (fixture: DashboardOnSim) => Promise<void>,
): Promise<void> {
  const target = await startTarget("sim", { nodes: options.nodes, zones: options.zones });
  try {
    const kube = new Kube(target.kubeconfigPath);
    const { ns } = options;
    await kube.installCrd();
    await kube.createNamespace(ns);
    await kube.apply(advancedDaemonSet(ns, "v1"));
    await withEdgeroll(target.kubeconfigPath, { serveArgs: ["--tick=1s"] }, async () => {
      await completeOn(target, kube, ns, "v1");
      await withDashboard(
        target.kubeconfigPath,
        (url) => body({ target, kube, url, setPath: `/sets/advanceddaemonsets/${ns}/edge-agent` }),
      );
    });
  } finally {
    await target.stop();
  }
}
