/**
 * The end-to-end suite, written once: every scenario on one target, started and stopped here
 * (in `finally`). On sim, `deno task test` runs it in parts, one file each (`on-sim-*.test.ts`),
 * each on a sim of its own, so `deno test --parallel` runs the parts side by side; every part's
 * test bears the same name, so each scenario keeps its full name. `suite.e2e.ts` runs every part
 * in one test on the target `EDGEROLL_E2E_TARGET` names (`deno task test:cluster`: cluster/ has
 * one control plane).
 */
import { Kube } from "./kube.ts";
import { type Scenario, scenarios } from "./scenarios.ts";
import { edgerollScenarios } from "./edgeroll-scenarios.ts";
import { triggerScenarios } from "./trigger-scenarios.ts";
import { otaScenarios } from "./ota-scenarios.ts";
import { preDownloadScenario } from "./predownload-scenario.ts";
import { failureBudgetScenario, rollbackScenarios } from "./failure-scenario.ts";
import { dashboardScenario } from "./dashboard-scenario.ts";
import { failoverScenario } from "./failover-scenario.ts";
import { planScenarios } from "./plan-scenarios.ts";
import { maintenanceScenario, otaMaintenanceScenario } from "./maintenance-scenario.ts";
import { admissionScenario, admissionVersionsScenario } from "./admission-scenario.ts";
import { resizeBehaviourScenario, resizeRolloutScenario } from "./resize-scenario.ts";
import { type TargetKind, withTarget } from "./target.ts";
import { analysisScenarios } from "./analysis-scenario.ts";

/** The suite's parts, in the order a single run takes them; together, every scenario once. */
export const e2eParts = {
  /** The cluster's behaviour, edgeroll's rollouts, the dashboard and OTA. */
  fleet: [
    ...scenarios,
    resizeBehaviourScenario,
    admissionScenario,
    admissionVersionsScenario,
    ...edgerollScenarios,
    dashboardScenario,
    ...otaScenarios,
  ],
  /**
   * Rollouts that wait on the controller's clock (pre-download, the failure budget, rollback,
   * rollout plans' soaks and approvals) or on a Lease's (failover).
   */
  waits: [
    preDownloadScenario,
    failureBudgetScenario,
    ...rollbackScenarios,
    failoverScenario,
    ...planScenarios,
  ],
  /**
   * Each trigger alone, then at rest; maintenance windows, whose next opening only the tick wakes
   * the set for; analysis checks, measured as the controller's clock says; and a rollout that
   * resizes in place (here rather than in `waits` or `fleet`: on two workers the parts then end
   * together).
   */
  triggers: [
    ...triggerScenarios,
    maintenanceScenario,
    otaMaintenanceScenario,
    // Analysis checks (ADR 0055), here too: on two workers the fleet part and the waits part run
    // one after the other on one worker, the triggers part alone on the other (in the fleet
    // part they took the unit stage to 435 s, 15 over its budget).
    ...analysisScenarios,
    // Resources resized in place through a rollout (ADR 0056), for the same reason.
    resizeRolloutScenario,
  ],
} satisfies Record<string, Scenario[]>;

export type E2ePart = keyof typeof e2eParts;

export function e2eSuite(kind: TargetKind, parts: E2ePart[] = Object.keys(e2eParts) as E2ePart[]) {
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
        const all = parts.flatMap((part) => e2eParts[part]);
        for (const scenario of all.filter((s) => !only || s.name.includes(only))) {
          await t.step(scenario.name, () => scenario.run(target, kube));
        }
      });
    },
  });
}
