/**
 * A node as the plan sees it: its pods, whether the set wants one there, and the earlier actions
 * not observed yet counted as done; and the questions asked of a node's pods on that view.
 */
import type { Expectation } from "../api/advanced-daemonset.ts";
import { Keys, type Node, type Pod, type PodTemplateSpec } from "../api/kube-objects.ts";
import type { SetConfig } from "./config.ts";
import { updatedInPlace } from "./in-place.ts";
import { isTerminating } from "./pod-node-state.ts";
import type { Placement } from "./should-run.ts";

export const preparingDelete = "PreparingDelete";

export interface NodeView {
  name: string;
  node: Node;
  ready: boolean;
  placement: Placement;
  /** Owned, visible, not terminating and not being deleted by us; oldest first. */
  live: Pod[];
  /** Terminating, or deleted by us and not yet observed so. */
  leaving: Pod[];
  pendingCreate?: Expectation;
  /** The node's non-terminating pods as read, whatever we expect of them: what status counts. */
  observed: Pod[];
}

/** What a write of the in-place gate's condition expects to read back (`Expectation.condition`). */
export function inPlaceGateExpected(status: "True" | "False"): string {
  return `${Keys.inPlaceUpdateReady}=${status}`;
}

/** Whether the pod carries Kruise's in-place readiness gate. */
export function hasInPlaceGate(pod: Pod): boolean {
  return (pod.spec.readinessGates ?? []).some((g) => g.conditionType === Keys.inPlaceUpdateReady);
}

export function isPreDeleting(pod: Pod): boolean {
  return pod.metadata.labels?.[Keys.lifecycleState] === preparingDelete;
}

/** Kruise's `IsPodHooked`: the pod carries every hook label or one of the hook finalizers. */
export function isHooked(config: SetConfig, pod: Pod): boolean {
  const hook = config.preDelete;
  if (!hook) return false;
  const labels = pod.metadata.labels ?? {};
  const byLabel = Object.keys(hook.labelsHandler ?? {}).length > 0 &&
    Object.entries(hook.labelsHandler ?? {}).every(([k, v]) => labels[k] === v);
  const byFinalizer = (hook.finalizersHandler ?? []).some((f) =>
    (pod.metadata.finalizers ?? []).includes(f)
  );
  return byLabel || byFinalizer;
}

/**
 * A node as the next call will see it once this call's actions so far are done: removed pods
 * leaving, marked pods PreparingDelete, created pods expected. Phase 2 plans on this, so its
 * budget already counts phase 1's work and a repeated call plans the same.
 */
export function afterActions(
  view: NodeView,
  byNode: Map<string, Expectation[]>,
  template: PodTemplateSpec,
): NodeView {
  const mine = byNode.get(view.name);
  if (!mine) return view;
  const removed = new Set(mine.filter((e) => e.action === "delete").map((e) => e.uid));
  const patched = new Map(mine.filter((e) => e.action === "patch").map((e) => [e.uid, e]));
  const live = view.live.filter((p) => !removed.has(p.metadata.uid)).map((p) => {
    const patch = patched.get(p.metadata.uid);
    if (!patch) return p;
    // A patch with a revision is an in-place update; without, the preDelete mark.
    if (patch.revision !== undefined) return updatedInPlace(p, template, patch.revision);
    return {
      ...p,
      metadata: {
        ...p.metadata,
        labels: { ...p.metadata.labels, [Keys.lifecycleState]: preparingDelete },
      },
    };
  });
  return {
    ...view,
    live,
    leaving: [...view.leaving, ...view.live.filter((p) => removed.has(p.metadata.uid))],
    pendingCreate: view.pendingCreate ?? mine.find((e) => e.action === "create"),
  };
}

/** Whether an earlier action has now been observed (then its expectation is dropped). */
export function isObserved(
  exp: Expectation,
  byName: Map<string, Pod>,
  byUid: Map<string, Pod>,
): boolean {
  switch (exp.action) {
    case "create":
      return byName.has(exp.pod);
    case "delete": {
      const pod = exp.uid ? byUid.get(exp.uid) : undefined;
      return pod === undefined || isTerminating(pod);
    }
    case "patch": {
      const pod = exp.uid ? byUid.get(exp.uid) : undefined;
      if (pod === undefined) return true;
      return exp.revision !== undefined
        ? pod.metadata.labels?.[Keys.revisionHash] === exp.revision
        : isPreDeleting(pod);
    }
    case "setCondition": {
      const pod = exp.uid ? byUid.get(exp.uid) : undefined;
      return pod === undefined ||
        (pod.status?.conditions ?? []).some((c) =>
          exp.condition !== undefined
            ? `${c.type}=${c.status}` === exp.condition ||
              `${c.type}=${c.status}/${c.reason ?? ""}` === exp.condition
            : c.type === Keys.podNeedUpgrade && c.message === `controllerrevision: ${exp.revision}`
        );
    }
  }
}

/** The pods that still count for a node: not leaving, not PreparingDelete. */
export function activePods(view: NodeView): Pod[] {
  return view.live.filter((p) => !isPreDeleting(p));
}
