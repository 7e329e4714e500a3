/**
 * The simulated taint eviction controller (kube-controller-manager's NoExecute taint
 * manager): a pod on a node with a NoExecute taint it does not tolerate is deleted at once;
 * one it tolerates for `tolerationSeconds` is deleted that long after the taint is seen;
 * a toleration without seconds lets it stay. Before the delete the pod gets the
 * `DisruptionTarget` condition, as upstream writes it.
 *
 * kube-apiserver's DefaultTolerationSeconds admission gives every pod 300 s tolerations
 * for `not-ready` and `unreachable`; the simulator's API server does not add them, so they
 * are assumed here for pods that carry none, which has the same effect. DaemonSet pods
 * tolerate both without limit and are never evicted.
 */
import { isoSeconds, StoreError } from "../store.ts";
import { NODES, PODS, targetNodeName } from "./cache.ts";
import type { ClusterContext } from "./context.ts";
import { toleratesTaint } from "./placement.ts";
import { keyOf, type Node, type Pod, type Taint, type Toleration } from "./types.ts";
import { createWorkQueue } from "./work-queue.ts";

const COMPONENT = "taint-eviction-controller";
const DEFAULT_TOLERATION_SECONDS = 300;
const DEFAULTED_KEYS = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"];

export interface TaintEviction {
  stop(): void;
}

function noExecuteTaints(node: Node | undefined): Taint[] {
  return (node?.spec?.taints ?? []).filter((taint) => taint.effect === "NoExecute");
}

/** The pod's tolerations plus what DefaultTolerationSeconds admission would have added. */
export function effectiveTolerations(pod: Pod): Toleration[] {
  const own = pod.spec.tolerations ?? [];
  const added = DEFAULTED_KEYS
    .filter((key) => !own.some((t) => toleratesTaint(t, { key, effect: "NoExecute" })))
    .map((key): Toleration => ({
      key,
      operator: "Exists",
      effect: "NoExecute",
      tolerationSeconds: DEFAULT_TOLERATION_SECONDS,
    }));
  return [...own, ...added];
}

/**
 * Seconds until eviction: 0 when a taint is not tolerated, the smallest tolerationSeconds of
 * the tolerations in use, or undefined when the pod may stay for good.
 */
export function secondsUntilEviction(
  taints: Taint[],
  tolerations: Toleration[],
): number | undefined {
  let soonest: number | undefined;
  for (const taint of taints) {
    const used = tolerations.filter((t) => toleratesTaint(t, taint));
    if (used.length === 0) return 0;
    for (const toleration of used) {
      if (toleration.tolerationSeconds === undefined) continue;
      const seconds = Math.max(0, toleration.tolerationSeconds);
      soonest = soonest === undefined ? seconds : Math.min(soonest, seconds);
    }
  }
  return soonest;
}

export function startTaintEviction(ctx: ClusterContext): TaintEviction {
  const { store, cache, timeline } = ctx;
  /** Scheduled evictions by pod uid. */
  const scheduled = new Map<string, () => void>();
  const queue = createWorkQueue(timeline, syncNode, (node, error) => {
    if (!(error instanceof StoreError)) {
      ctx.log("warn", "taint eviction failed", { node, error: String(error) });
    }
  });

  cache.onChange((event, previous) => {
    if (event.resource === NODES) {
      const before = JSON.stringify(noExecuteTaints(previous as Node | undefined));
      if (before !== JSON.stringify(noExecuteTaints(event.object as Node))) {
        queue.add(event.object.metadata.name);
      }
    } else if (event.resource === PODS) {
      const pod = event.object as Pod;
      if (event.type === "DELETED") cancel(pod.metadata.uid!);
      const node = targetNodeName(pod);
      if (node && noExecuteTaints(cache.nodes.get(node)).length > 0) queue.add(node);
    }
  });
  for (const name of cache.nodes.keys()) queue.add(name);

  function cancel(uid: string): void {
    scheduled.get(uid)?.();
    scheduled.delete(uid);
  }

  function syncNode(name: string): void {
    const taints = noExecuteTaints(cache.nodes.get(name));
    for (const pod of cache.podsOn(name)) {
      const uid = pod.metadata.uid!;
      const seconds = pod.metadata.deletionTimestamp || taints.length === 0
        ? undefined
        : secondsUntilEviction(taints, effectiveTolerations(pod));
      if (seconds === undefined) {
        cancel(uid);
      } else if (seconds === 0) {
        cancel(uid);
        evict(keyOf(pod), uid);
      } else if (!scheduled.has(uid)) {
        const key = keyOf(pod);
        scheduled.set(
          uid,
          timeline.after(seconds, () => {
            scheduled.delete(uid);
            evict(key, uid);
          }),
        );
      }
    }
  }

  function evict(key: string, uid: string): void {
    const pod = cache.pods.get(key);
    if (!pod || pod.metadata.uid !== uid || pod.metadata.deletionTimestamp) return;
    const marked = structuredClone(pod);
    marked.status = {
      ...marked.status,
      conditions: [
        ...(marked.status?.conditions ?? []).filter((c) => c.type !== "DisruptionTarget"),
        {
          type: "DisruptionTarget",
          status: "True",
          reason: "DeletionByTaintManager",
          message: "Taint manager: deleting due to NoExecute taint",
          lastProbeTime: null,
          lastTransitionTime: isoSeconds(timeline.now()),
        },
      ],
    };
    store.update(PODS, marked);
    store.delete(PODS, pod.metadata.namespace, pod.metadata.name, { preconditions: { uid } });
    ctx.recordEvent({
      involved: pod,
      type: "Normal",
      reason: "TaintManagerEviction",
      message: `Marking for deletion Pod ${key}`,
      component: COMPONENT,
    });
  }

  return {
    stop() {
      queue.stop();
      for (const uid of [...scheduled.keys()]) cancel(uid);
    },
  };
}
