/**
 * `kubectl edgeroll dashboard`: the plugin (bin/kubectl-edgeroll) starts the same dashboard. What
 * the dashboard does over a rollout is the e2e suite's (tests/e2e/dashboard-scenario.ts, on sim
 * and on cluster/) and the browser stage's.
 */
import { assertStringIncludes } from "@std/assert";
import { withDashboard } from "./processes.ts";
import { withTarget } from "./e2e/target.ts";
import { Kube } from "./e2e/kube.ts";
import { advancedDaemonSet } from "./e2e/edgeroll-scenarios.ts";

Deno.test({
  name: "kubectl edgeroll dashboard serves the same pages (bin/kubectl-edgeroll on PATH)",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await withTarget("sim", { nodes: 1 }, async (target) => {
      const kube = new Kube(target.kubeconfigPath);
      await kube.installCrd();
      await kube.createNamespace("plugin");
      await kube.apply(advancedDaemonSet("plugin", "v1"));
      await withDashboard(target.kubeconfigPath, async (url) => {
        const list = await (await fetch(`${url}/`)).text();
        assertStringIncludes(list, 'href="/sets/advanceddaemonsets/plugin/edge-agent"');
      }, { kubectlPlugin: true });
    });
  },
});
