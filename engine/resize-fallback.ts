/**
 * A resize its node will not apply falls back to recreating the pod (ADR 0056): Kruise leaves
 * such a pod unfinished for ever; here a pod of the current revision whose kubelet finds the
 * resize Infeasible, or has deferred it for `deferredResizeDeadlineMs`, is deleted (with an
 * Event) and placement creates it anew from the template. The pod is already unavailable (it
 * does not run its spec), so this takes no more of the budget. A pod on a node that is NotReady
 * or cut off waits for it, as any update does.
 */
import { type Allowance, PhaseDecisions, type PhaseResult, type PlanFacts } from "./decisions.ts";
import type { NodeView } from "./node-view.ts";
import { heldResize, podRevision } from "./pod-node-state.ts";

/** How long a resize may stay Deferred before the pod is recreated instead. */
export const deferredResizeDeadlineMs = 5 * 60_000;

export function planRefusedResizes(
  facts: PlanFacts,
  allowance: Allowance,
  views: readonly NodeView[],
): PhaseResult {
  const out = new PhaseDecisions(facts, allowance);
  for (const view of views) {
    if (!view.ready) continue;
    for (const pod of view.live) {
      if (podRevision(pod) !== out.hashFor(view.name)) continue;
      const held = heldResize(pod, facts.now, deferredResizeDeadlineMs);
      const name = pod.metadata.name ?? "";
      if (held?.state === "deferred") {
        out.wait(`pod/${name} resized`, `${held.why}: recreated if still deferred`, held.until);
      }
      if (held?.state !== "refused") continue;
      if (!out.remove(pod, `update: ${held.why}; recreated with its new resources`)) {
        return out.done();
      }
      out.event({
        type: "Warning",
        reason: "ResizeRefused",
        message: `Pod ${name} on ${view.name}: ${held.why}; recreating it`,
        pod: name,
        onSet: true,
      });
    }
  }
  return out.done();
}
