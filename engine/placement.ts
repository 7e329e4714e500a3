/**
 * Phase 1, placement (upstream's `manage`): a pod on every node that should run one, none on
 * the others; failed pods replaced after a backoff; duplicates removed (with surge, one old and
 * one new pod may share a node until the new one is available); released preDelete pods deleted.
 */
import type { Pod } from "../api/kube-objects.ts";
import { resolve } from "./config.ts";
import {
  availableAt,
  compareOldestFirst,
  isFailed,
  isPodReady,
  parseTime,
  podRevision,
} from "./pod-node-state.ts";
import { type Allowance, PhaseDecisions, type PhaseResult, type PlanFacts } from "./decisions.ts";
import { isHooked, isPreDeleting, type NodeView } from "./node-view.ts";

/** A failed pod is deleted (and so recreated) at most this often per node: a pure backoff. */
export const failedPodMinAgeSeconds = 10;

export function planPlacement(
  facts: PlanFacts,
  allowance: Allowance,
  views: readonly NodeView[],
  desiredCount: number,
  strays: readonly Pod[],
  available: (p: Pod) => boolean,
): PhaseResult {
  const out = new PhaseDecisions(facts, allowance);
  const { config, hash } = facts;
  const surge = config.mode === "Surge";
  const desired = views.filter((v) => v.placement.shouldRun);
  for (const pod of strays) out.remove(pod, "its node no longer exists");
  const needing: NodeView[] = [];
  for (const view of views) {
    if (!view.placement.shouldContinueRunning) {
      for (const pod of view.live) {
        out.remove(pod, `node ${view.name} no longer matches the set's placement`);
      }
      continue;
    }
    const running = runningPods(out, view);
    if (running.length === 0) {
      // Without surge, the node's last pod must be gone first (upstream: one pod per node).
      const empty = view.live.length === 0 && view.leaving.length === 0;
      if (view.placement.shouldRun && !view.pendingCreate && (surge || empty)) needing.push(view);
      continue;
    }
    if (!surge) {
      // Duplicates: keep the oldest available pod (oldest when none is available).
      const keep = running.find(available) ?? running[0];
      for (const pod of running) {
        if (pod !== keep) out.remove(pod, "duplicate daemon pod on the node");
      }
      continue;
    }
    keepSurgePair(out, running, available);
  }
  // Kruise's progressive creation: with the annotation, partition also holds back new nodes.
  let toCreate = needing;
  const partition = resolve(config.partition, desiredCount, false);
  if (config.progressiveCreatePod && partition > 0 && config.mode !== "OnDelete") {
    const newPods = desired.filter((v) => v.live.some((p) => podRevision(p) === hash)).length;
    toCreate = needing.slice(0, Math.max(0, desiredCount - newPods - partition));
    if (toCreate.length < needing.length) {
      out.wait(
        `${needing.length - toCreate.length} nodes`,
        "progressive creation: held back by partition",
      );
    }
  }
  for (const view of toCreate) {
    out.create(view, "the node should run the daemon pod and has none");
  }
  return out.done();
}

/**
 * The node's live pods that keep running: a failed pod is deleted after a backoff, a pod whose
 * preDelete hook was released is deleted, one still hooked waits.
 */
function runningPods(out: PhaseDecisions, view: NodeView): Pod[] {
  const running: Pod[] = [];
  for (const pod of view.live) {
    if (isFailed(pod)) {
      const oldEnough = (parseTime(pod.metadata.creationTimestamp) ?? 0) +
        failedPodMinAgeSeconds * 1000;
      if (oldEnough <= out.now) out.remove(pod, "the pod failed");
      else {
        out.wait(
          `pod/${pod.metadata.name} deleted`,
          "a failed pod is replaced after a backoff",
          oldEnough,
        );
      }
    } else if (isPreDeleting(pod)) {
      if (!isHooked(out.config, pod)) out.remove(pod, "its preDelete hook was released");
      else {
        out.wait(
          `pod/${pod.metadata.name} preDelete hook released`,
          "the pod is PreparingDelete",
        );
      }
    } else running.push(pod);
  }
  return running;
}

/**
 * Surge: of each revision the best pod stays (available, then ready, then oldest); the old
 * one goes once the new one is available, or at once when it is not ready itself.
 */
function keepSurgePair(out: PhaseDecisions, running: Pod[], available: (p: Pod) => boolean) {
  const rank = (p: Pod) => (available(p) ? 0 : isPodReady(p) ? 1 : 2);
  const best = (pods: Pod[]) => pods.sort((x, y) => rank(x) - rank(y) || compareOldestFirst(x, y));
  const newest = best(running.filter((p) => podRevision(p) === out.hash));
  const olds = best(running.filter((p) => podRevision(p) !== out.hash));
  const [oldestNew, oldestOld] = [newest[0], olds[0]];
  for (const pod of [...newest.slice(1), ...olds.slice(1)]) {
    out.remove(pod, "duplicate daemon pod on the node");
  }
  if (!oldestNew || !oldestOld) return;
  if (!isPodReady(oldestOld)) {
    out.remove(oldestOld, "replaced by a new pod: the old one is not ready");
  } else if (available(oldestNew)) out.remove(oldestOld, "its replacement is available");
  else {
    out.wait(
      `pod/${oldestNew.metadata.name} available`,
      "surge: the old pod goes once the new one is available",
      availableAt(oldestNew, out.config.minReadySeconds),
    );
  }
}
