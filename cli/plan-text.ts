/**
 * A rollout plan's step and state in words (ADR 0050), as `kubectl edgeroll status` and the
 * dashboard's set page show them: one text for both.
 */
import type { RolloutPlanStatus } from "../api/rollout-plan.ts";
import { plural } from "../engine/conditions.ts";

/** `step 1 of 3 (1 node), Stopped (FailureBudgetExceeded in zone-b)`, and what else holds. */
export function planHeadline(plan: RolloutPlanStatus): string {
  const stop = plan.stop &&
    ` (${plan.stop.reason}${plan.stop.domain !== undefined ? ` in ${plan.stop.domain}` : ""})`;
  return `step ${plan.step} of ${plan.steps} (${plural(plan.target, "node")}), ${plan.state}` +
    (stop ?? "") +
    (plan.rollbackFrom !== undefined ? `, rolled back from ${plan.rollbackFrom}` : "") +
    (plan.doneSince ? `, step done since ${plan.doneSince}` : "");
}
