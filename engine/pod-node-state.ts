/**
 * Reading pods and nodes the way the upstream DaemonSet controller does: readiness and
 * availability (`podutil.IsPodAvailable`), the node a pod is bound or pinned to, the oldest-first
 * order of pods on one node (`podByCreationTimestampAndPhase`), node health.
 */
import { Keys, type Node, type Pod } from "../api/kube-objects.ts";
import type { EpochMillis } from "../api/plan.ts";
import { changedResources } from "../api/pod-resources.ts";

export function parseTime(rfc3339: string | undefined): EpochMillis | undefined {
  if (rfc3339 === undefined) return undefined;
  const ms = Date.parse(rfc3339);
  return Number.isNaN(ms) ? undefined : ms;
}

/** RFC 3339 without milliseconds, as the API server writes timestamps. */
export function formatTime(ms: EpochMillis): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

function readyCondition(pod: Pod) {
  return pod.status?.conditions?.find((c) => c.type === "Ready");
}

export function isPodReady(pod: Pod): boolean {
  return readyCondition(pod)?.status === "True";
}

/**
 * Every readiness gate's condition is True. A gate closed by a controller (Kruise's
 * InPlaceUpdateReady before an in-place update) makes the kubelet turn Ready False: the pod is
 * unready from that write on, even while its Ready condition still says True.
 */
function gatesOpen(pod: Pod): boolean {
  return (pod.spec.readinessGates ?? []).every((gate) =>
    pod.status?.conditions?.some((c) => c.type === gate.conditionType && c.status === "True")
  );
}

/**
 * When a ready pod becomes available (ready for minReadySeconds), or undefined when it is not
 * ready (its gates included) or its Ready condition has no transition time while
 * minReadySeconds > 0. Transition times are whole seconds, cut down: the pod may have turned
 * Ready up to a second after the one written, so a second is added to be sure it has been
 * ready for minReadySeconds (Kruise's surge spec checks more than minReadySeconds have passed).
 */
export function availableAt(pod: Pod, minReadySeconds: number): EpochMillis | undefined {
  const ready = readyCondition(pod);
  if (ready?.status !== "True" || !gatesOpen(pod) || !runsItsSpec(pod)) return undefined;
  if (minReadySeconds <= 0) return Number.NEGATIVE_INFINITY;
  const since = parseTime(ready.lastTransitionTime);
  return since === undefined ? undefined : since + (minReadySeconds + 1) * 1000;
}

/**
 * `nginx:1.27` as a container runtime reports it: `docker.io/library/nginx:1.27` (Docker Hub
 * names completed, `:latest` when neither tag nor digest is given).
 */
export function normalizeImage(ref: string): string {
  const [name, digest] = ref.split("@");
  const slash = name.indexOf("/");
  const first = slash < 0 ? "" : name.slice(0, slash);
  const hasRegistry = first.includes(".") || first.includes(":") || first === "localhost";
  const path = hasRegistry ? name : `docker.io/${slash < 0 ? `library/${name}` : name}`;
  const hasTag = path.slice(path.lastIndexOf("/") + 1).includes(":");
  if (digest !== undefined) return `${path}@${digest}`;
  return hasTag ? path : `${path}:latest`;
}

/**
 * False while a pod updated in place still runs old images or old resources: its containers
 * have not restarted with the images of its spec, or its kubelet has not applied the spec's cpu
 * and memory (the resources it reports differ, or a resize is pending or in progress), whatever
 * its Ready condition says. Other pods: true. A kubelet that reports no resources cannot resize
 * (the API server refuses to), so their absence says nothing.
 */
export function runsItsSpec(pod: Pod): boolean {
  if (pod.metadata.annotations?.[Keys.inPlaceUpdate] === undefined) return true;
  if (
    pod.status?.conditions?.some((c) =>
      (c.type === Keys.podResizePending || c.type === Keys.podResizeInProgress) &&
      c.status === "True"
    )
  ) return false;
  const statuses = pod.status?.containerStatuses ?? [];
  return pod.spec.containers.every((c) => {
    const s = statuses.find((x) => x.name === c.name);
    return s?.ready === true && c.image !== undefined && s.image !== undefined &&
      normalizeImage(s.image) === normalizeImage(c.image) &&
      (s.resources === undefined || changedResources(c.resources, s.resources).length === 0);
  });
}

/** Where a pod's resize stands, when its kubelet holds it back (`PodResizePending`). */
export type HeldResize =
  | { state: "refused"; why: string }
  | { state: "deferred"; why: string; until: EpochMillis };

/**
 * A resize its kubelet will not apply: Infeasible (the node has not the room at all), or
 * Deferred (not now) for `deferredForMs` (then `refused`, and the pod is recreated: ADR 0056;
 * before, `deferred` until then). Undefined when no resize is held back.
 */
export function heldResize(
  pod: Pod,
  now: EpochMillis,
  deferredForMs: number,
): HeldResize | undefined {
  const pending = pod.status?.conditions?.find((c) =>
    c.type === Keys.podResizePending && c.status === "True"
  );
  if (!pending) return undefined;
  const said = pending.message ? ` (${pending.message})` : "";
  if (pending.reason !== "Deferred") {
    return {
      state: "refused",
      why: `its node finds the resize ${pending.reason ?? "infeasible"}${said}`,
    };
  }
  const since = parseTime(pending.lastTransitionTime) ?? now;
  const why = `its node has deferred the resize since ${formatTime(since)}${said}`;
  const until = since + deferredForMs;
  return now >= until ? { state: "refused", why } : { state: "deferred", why, until };
}

export function isPodAvailable(pod: Pod, minReadySeconds: number, now: EpochMillis): boolean {
  const at = availableAt(pod, minReadySeconds);
  return at !== undefined && at <= now;
}

export function isTerminating(pod: Pod): boolean {
  return pod.metadata.deletionTimestamp !== undefined;
}

export function isFailed(pod: Pod): boolean {
  return pod.status?.phase === "Failed";
}

export function podRevision(pod: Pod): string | undefined {
  return pod.metadata.labels?.[Keys.revisionHash];
}

/**
 * The node a daemon pod belongs to: `spec.nodeName` once bound, else the node its required
 * affinity pins it to (`matchFields metadata.name In [node]`, as upstream writes it).
 */
export function podNodeName(pod: Pod): string | undefined {
  if (pod.spec.nodeName) return pod.spec.nodeName;
  const terms = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms ?? [];
  for (const term of terms) {
    for (const field of term.matchFields ?? []) {
      if (field.key === "metadata.name" && field.operator === "In" && field.values?.length === 1) {
        return field.values[0];
      }
    }
  }
  return undefined;
}

/** Bound pods first, then oldest first, then by name: upstream's order of pods on one node. */
export function compareOldestFirst(a: Pod, b: Pod): number {
  const boundA = a.spec.nodeName ? 0 : 1;
  const boundB = b.spec.nodeName ? 0 : 1;
  if (boundA !== boundB) return boundA - boundB;
  const ta = parseTime(a.metadata.creationTimestamp) ?? 0;
  const tb = parseTime(b.metadata.creationTimestamp) ?? 0;
  if (ta !== tb) return ta - tb;
  const na = a.metadata.name ?? "";
  const nb = b.metadata.name ?? "";
  return na < nb ? -1 : na > nb ? 1 : 0;
}

/**
 * A node edgeroll can act on now. NotReady or unreachable nodes (Ready False/Unknown or missing,
 * or the `unreachable` taint) neither consume the update budget nor block the rollout.
 */
export function isNodeReady(node: Node): boolean {
  const ready = node.status?.conditions?.find((c) => c.type === "Ready");
  if (ready?.status !== "True") return false;
  return !(node.spec?.taints ?? []).some((t) => t.key === "node.kubernetes.io/unreachable");
}
