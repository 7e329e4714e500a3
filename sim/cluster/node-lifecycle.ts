/**
 * The simulated node lifecycle controller (kube-controller-manager's nodelifecycle):
 * - every monitor period it looks at when each node last showed life (its Lease renewed or
 *   its Ready heartbeat moved, as observed here, not as the node's own clock says); a node
 *   silent for longer than the grace period gets every condition set to Unknown
 *   ("Kubelet stopped posting node status.");
 * - when a node stops being Ready it marks the Ready condition of the node's pods False;
 * - it keeps the condition taints in step with the Ready condition: `node.kubernetes.io/
 *   not-ready` for False, `node.kubernetes.io/unreachable` for Unknown, each NoSchedule and
 *   NoExecute, plus `node.kubernetes.io/unschedulable:NoSchedule` for cordoned nodes.
 * - it deletes pods bound to nodes that no longer exist (the pod GC controller's job).
 * Evicting pods that do not tolerate the NoExecute taints is `taint-eviction.ts`'s job.
 */
import { isoSeconds, StoreError } from "../store.ts";
import { NODES, PODS } from "./cache.ts";
import type { ClusterContext } from "./context.ts";
import { UNSCHEDULABLE_TAINT } from "./placement.ts";
import { type ConditionStatus, findCondition, type Node, type Taint } from "./types.ts";
import { createWorkQueue } from "./work-queue.ts";

const COMPONENT = "node-controller";
const NOT_READY = "node.kubernetes.io/not-ready";
const UNREACHABLE = "node.kubernetes.io/unreachable";
const MANAGED_TAINTS = new Set([NOT_READY, UNREACHABLE, UNSCHEDULABLE_TAINT.key]);
const KUBELET_CONDITIONS = new Set(["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"]);

export interface NodeLifecycle {
  stop(): void;
}

function readyStatus(node: Node | undefined): ConditionStatus | undefined {
  return findCondition(node?.status?.conditions, "Ready")?.status;
}

function heartbeat(node: Node | undefined): string | undefined {
  return findCondition(node?.status?.conditions, "Ready")?.lastHeartbeatTime;
}

export function startNodeLifecycle(ctx: ClusterContext): NodeLifecycle {
  const { store, cache, timeline, durations } = ctx;
  const startedAt = timeline.now();
  const statusSeenAt = new Map<string, number>();
  /** The Ready status this controller last acted on, per node (to see transitions). */
  const observedReady = new Map<string, ConditionStatus | undefined>();
  const taintQueue = createWorkQueue(timeline, syncTaints, (node, error) => {
    if (!(error instanceof StoreError)) {
      ctx.log("warn", "node taint sync failed", { node, error: String(error) });
    }
  });
  const orphanedSince = new Map<string, number>();
  let stopped = false;

  cache.onChange((event, previous) => {
    if (event.resource !== NODES || event.type === "DELETED") return;
    const node = event.object as Node;
    const name = node.metadata.name;
    if (heartbeat(node) !== heartbeat(previous as Node | undefined)) {
      statusSeenAt.set(name, timeline.now());
    }
    const prior = previous as Node | undefined;
    if (
      !prior || readyStatus(prior) !== readyStatus(node) ||
      prior.spec?.unschedulable !== node.spec?.unschedulable
    ) {
      taintQueue.add(name);
    }
  });
  for (const name of cache.nodes.keys()) taintQueue.add(name);

  function monitor(): void {
    if (stopped) return;
    const now = timeline.now();
    const grace = timeline.realMs(durations.nodeMonitorGraceSeconds);
    for (const node of cache.nodes.values()) {
      const name = node.metadata.name;
      const lastSeen = Math.max(
        statusSeenAt.get(name) ?? startedAt,
        cache.leaseObservedAt.get(name) ?? startedAt,
      );
      let current = node;
      if (readyStatus(node) !== "Unknown" && now - lastSeen > grace) current = markUnknown(node);
      const ready = readyStatus(current);
      if (observedReady.get(name) === "True" && ready !== "True") {
        ctx.recordEvent({
          involved: current,
          type: "Normal",
          reason: "NodeNotReady",
          message: `Node ${name} status is now: NodeNotReady`,
          component: COMPONENT,
        });
        markPodsNotReady(name);
      }
      observedReady.set(name, ready);
    }
    collectOrphans(now);
    timeline.after(durations.nodeMonitorPeriodSeconds, monitor);
  }

  /**
   * As the pod GC controller does: pods bound to a node that has been gone for the
   * quarantine period are deleted at once (nobody is left to confirm a graceful delete).
   */
  function collectOrphans(now: number): void {
    for (const nodeName of cache.podsByNode.keys()) {
      if (cache.nodes.has(nodeName)) {
        orphanedSince.delete(nodeName);
        continue;
      }
      const since = orphanedSince.get(nodeName) ?? now;
      orphanedSince.set(nodeName, since);
      if (now - since < timeline.realMs(durations.orphanQuarantineSeconds)) continue;
      for (const pod of cache.podsOn(nodeName)) {
        const { namespace, name, uid } = pod.metadata;
        store.delete(PODS, namespace, name, { gracePeriodSeconds: 0, preconditions: { uid } });
      }
      orphanedSince.delete(nodeName);
    }
  }
  timeline.after(durations.nodeMonitorPeriodSeconds, monitor);

  function markUnknown(node: Node): Node {
    const now = isoSeconds(timeline.now());
    const updated = structuredClone(node);
    updated.status = {
      ...updated.status,
      conditions: (updated.status?.conditions ?? []).map((condition) =>
        KUBELET_CONDITIONS.has(condition.type)
          ? {
            ...condition,
            status: "Unknown",
            reason: "NodeStatusUnknown",
            message: "Kubelet stopped posting node status.",
            lastTransitionTime: now,
          }
          : condition
      ),
    };
    return store.update(NODES, updated) as Node;
  }

  function markPodsNotReady(nodeName: string): void {
    for (const pod of cache.podsOn(nodeName)) {
      const ready = findCondition(pod.status?.conditions, "Ready");
      if (ready?.status !== "True") continue;
      const updated = structuredClone(pod);
      const condition = findCondition(updated.status?.conditions, "Ready")!;
      condition.status = "False";
      condition.lastTransitionTime = isoSeconds(timeline.now());
      store.update(PODS, updated);
    }
  }

  function syncTaints(name: string): void {
    const node = cache.nodes.get(name);
    if (!node) return;
    const existing = node.spec?.taints ?? [];
    const wanted: Taint[] = existing.filter((taint) => !MANAGED_TAINTS.has(taint.key));
    const ready = readyStatus(node);
    const conditionTaint = ready === "False"
      ? NOT_READY
      : ready === "Unknown"
      ? UNREACHABLE
      : undefined;
    const keep = (key: string, effect: Taint["effect"]) =>
      existing.find((taint) => taint.key === key && taint.effect === effect);
    if (conditionTaint) {
      wanted.push(
        keep(conditionTaint, "NoSchedule") ?? { key: conditionTaint, effect: "NoSchedule" },
      );
      wanted.push(
        keep(conditionTaint, "NoExecute") ??
          { key: conditionTaint, effect: "NoExecute", timeAdded: isoSeconds(timeline.now()) },
      );
    }
    if (node.spec?.unschedulable) {
      wanted.push(
        keep(UNSCHEDULABLE_TAINT.key, "NoSchedule") ??
          { ...UNSCHEDULABLE_TAINT, timeAdded: isoSeconds(timeline.now()) },
      );
    }
    if (JSON.stringify(wanted) === JSON.stringify(existing)) return;
    const updated = structuredClone(node);
    updated.spec = { ...updated.spec, taints: wanted };
    if (wanted.length === 0) delete updated.spec.taints;
    store.update(NODES, updated);
  }

  return {
    stop() {
      stopped = true;
      taintQueue.stop();
    },
  };
}
