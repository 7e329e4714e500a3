/**
 * The simulated kube-scheduler: binds every pod that has no `spec.nodeName` (and names no
 * other scheduler) to a feasible node. Filters as upstream's NodeAffinity, NodeName,
 * TaintToleration and NodeUnschedulable plugins do; scores by fewest pods, ties broken by the
 * seeded generator. A pod that fits nowhere gets PodScheduled=False/Unschedulable with
 * upstream's message shape and a FailedScheduling Event, and is retried when nodes change.
 * Pods pinned by `matchFields metadata.name` (DaemonSet pods) are checked against their
 * node only, so binding them costs the same at 5,000 nodes as at 5.
 */
import { isoSeconds, StoreError } from "../store.ts";
import { NODES, PODS } from "./cache.ts";
import type { ClusterContext } from "./context.ts";
import { pinnedNodeNames, unfitReason } from "./placement.ts";
import { type Condition, findCondition, keyOf, type Node, type Pod } from "./types.ts";
import { createWorkQueue } from "./work-queue.ts";

const COMPONENT = "default-scheduler";

export interface Scheduler {
  stop(): void;
}

export function startScheduler(ctx: ClusterContext): Scheduler {
  const { store, cache, timeline } = ctx;
  const queue = createWorkQueue(timeline, schedule, (key, error) => {
    if (!(error instanceof StoreError)) {
      ctx.log("warn", "scheduling failed", { pod: key, error: String(error) });
    }
  });

  cache.onChange((event, previous) => {
    if (event.resource === PODS && event.type !== "DELETED") {
      const key = keyOf(event.object);
      if (cache.unscheduled.has(key)) queue.add(key);
    }
    // A node that appears, or whose labels or taints change, may make waiting pods fit;
    // heartbeats cannot, and re-filtering on each would cost pods × nodes per heartbeat.
    if (
      event.resource === NODES && event.type !== "DELETED" &&
      (!previous ||
        placementFingerprint(previous as Node) !== placementFingerprint(event.object as Node))
    ) {
      for (const key of cache.unscheduled) queue.add(key);
    }
  });
  for (const key of cache.unscheduled) queue.add(key);

  function candidates(pod: Pod): Node[] {
    const pinned = pinnedNodeNames(pod.spec);
    if (pinned) {
      return pinned.map((name) => cache.nodes.get(name)).filter((n): n is Node => n !== undefined);
    }
    return [...cache.nodes.values()];
  }

  function schedule(key: string): void {
    const pod = cache.pods.get(key);
    if (!pod || !cache.unscheduled.has(key)) return;
    const scheduler = pod.spec.schedulerName ?? COMPONENT;
    if (scheduler !== COMPONENT) return;
    const reasons = new Map<string, number>();
    let best: Node[] = [];
    let fewest = Infinity;
    for (const node of candidates(pod)) {
      const reason = unfitReason(pod.spec, node);
      if (reason) {
        reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
        continue;
      }
      const load = cache.podsByNode.get(node.metadata.name)?.size ?? 0;
      if (load < fewest) {
        fewest = load;
        best = [node];
      } else if (load === fewest) {
        best.push(node);
      }
    }
    if (best.length === 0) {
      markUnschedulable(pod, reasons);
      return;
    }
    const node = best[Math.floor(ctx.random() * best.length)];
    bind(pod, node);
  }

  /** Writes PodScheduled (and, when binding, `spec.nodeName`) unless nothing changes. */
  function writeScheduled(pod: Pod, nodeName: string | undefined, condition: Condition): boolean {
    const previous = findCondition(pod.status?.conditions, "PodScheduled");
    if (
      !nodeName && previous?.status === condition.status && previous.message === condition.message
    ) {
      return false;
    }
    const lastTransitionTime = previous?.status === condition.status
      ? previous.lastTransitionTime
      : isoSeconds(timeline.now());
    // Shallow copies: the store copies what it is given, and the cached pod stays untouched.
    store.update(PODS, {
      ...pod,
      spec: nodeName ? { ...pod.spec, nodeName } : pod.spec,
      status: {
        ...pod.status,
        phase: pod.status?.phase ?? "Pending",
        conditions: [
          ...(pod.status?.conditions ?? []).filter((c) => c.type !== "PodScheduled"),
          { ...condition, lastProbeTime: null, lastTransitionTime },
        ],
      },
    });
    return true;
  }

  function bind(pod: Pod, node: Node): void {
    writeScheduled(pod, node.metadata.name, { type: "PodScheduled", status: "True" });
    ctx.recordEvent({
      involved: pod,
      type: "Normal",
      reason: "Scheduled",
      message:
        `Successfully assigned ${pod.metadata.namespace}/${pod.metadata.name} to ${node.metadata.name}`,
      component: COMPONENT,
    });
  }

  function markUnschedulable(pod: Pod, reasons: Map<string, number>): void {
    const detail = [...reasons.entries()].sort(([a], [b]) => a.localeCompare(b))
      .map(([reason, count]) => `${count} ${reason}`);
    const total = cache.nodes.size;
    const message = `0/${total} nodes are available: ${
      detail.length ? detail.join(", ") + "." : "no nodes available to schedule pods."
    } preemption: 0/${total} nodes are available: ${total} Preemption is not helpful for scheduling.`;
    const condition: Condition = {
      type: "PodScheduled",
      status: "False",
      reason: "Unschedulable",
      message,
    };
    if (!writeScheduled(pod, undefined, condition)) return;
    ctx.recordEvent({
      involved: pod,
      type: "Warning",
      reason: "FailedScheduling",
      message,
      component: COMPONENT,
    });
  }

  return { stop: () => queue.stop() };
}

/** What of a node the filters read. */
function placementFingerprint(node: Node): string {
  const { labels, deletionTimestamp } = node.metadata;
  return JSON.stringify([labels, node.spec?.taints, node.spec?.unschedulable, deletionTimestamp]);
}
