/**
 * The end-to-end suite, written once: every scenario on one target, started and stopped here
 * (in `finally`). `on-sim.test.ts` runs it on sim within `deno task test`; `suite.e2e.ts`
 * runs it on the target `EDGEROLL_E2E_TARGET` names (`deno task test:cluster`).
 */
import { Kube } from "./kube.ts";
import { scenarios } from "./scenarios.ts";
import { edgerollScenarios } from "./edgeroll-scenarios.ts";
import { triggerScenarios } from "./trigger-scenarios.ts";
import { otaScenarios } from "./ota-scenarios.ts";
import { preDownloadScenario } from "./predownload-scenario.ts";
import { failureBudgetScenario, rollbackScenarios } from "./failure-scenario.ts";
import { dashboardScenario } from "./dashboard-scenario.ts";
import { type TargetKind, withTarget } from "./target.ts";

export function e2eSuite(kind: TargetKind): void {
  Deno.test({
    name: `e2e scenarios on ${kind}`,
    // kubectl children and the cluster's detached processes are ours to stop, not the sanitizer's.
    sanitizeResources: false,
    sanitizeOps: false,
    async fn(t) {
      await withTarget(kind, { nodes: 3 }, async (target) => {
        const kube = new Kube(target.kubeconfigPath);
        // EDGEROLL_E2E_ONLY=text runs the scenarios whose name holds it, while one is written.
        const only = Deno.env.get("EDGEROLL_E2E_ONLY");
        const all = [
          ...scenarios,
          ...edgerollScenarios,
          preDownloadScenario,
          failureBudgetScenario,
          ...rollbackScenarios,
          dashboardScenario,
          ...otaScenarios,
          ...triggerScenarios,
        ];
        for (const scenario of all.filter((s) => !only || s.name.includes(only))) {
          await t.step(scenario.name, () => scenario.run(target, kube));
        }
      });
    },
  });
}
