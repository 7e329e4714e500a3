/**
 * Which nodes should run the daemon pod: upstream's `NodeShouldRunDaemonPod`. The template's
 * `nodeName`, `nodeSelector` and required node affinity must match; taints must be tolerated
 * (with the tolerations every daemon pod gets, so unschedulable, NotReady and unreachable nodes
 * keep their pods). An untolerated NoSchedule taint stops new pods but lets running ones stay;
 * an untolerated NoExecute taint removes them.
 */
import type {
  Node,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  PodSpec,
  Taint,
  Toleration,
} from "../api/kube-objects.ts";

export interface Placement {
  /** A daemon pod should be created here. */
  shouldRun: boolean;
  /** A daemon pod already here may stay. */
  shouldContinueRunning: boolean;
}

/** The tolerations upstream adds to every daemon pod (`AddOrUpdateDaemonPodTolerations`). */
export function daemonPodTolerations(spec: PodSpec): Toleration[] {
  const exists = (key: string, effect: "NoSchedule" | "NoExecute"): Toleration => ({
    key,
    operator: "Exists",
    effect,
  });
  const defaults = [
    exists("node.kubernetes.io/not-ready", "NoExecute"),
    exists("node.kubernetes.io/unreachable", "NoExecute"),
    exists("node.kubernetes.io/disk-pressure", "NoSchedule"),
    exists("node.kubernetes.io/memory-pressure", "NoSchedule"),
    exists("node.kubernetes.io/pid-pressure", "NoSchedule"),
    exists("node.kubernetes.io/unschedulable", "NoSchedule"),
    ...(spec.hostNetwork ? [exists("node.kubernetes.io/network-unavailable", "NoSchedule")] : []),
  ];
  const own = spec.tolerations ?? [];
  const missing = defaults.filter((d) =>
    !own.some((t) => t.key === d.key && t.effect === d.effect && t.operator === "Exists")
  );
  return [...own, ...missing];
}

function tolerates(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  if (!toleration.key && toleration.operator !== "Exists") return false;
  if (toleration.operator === "Exists") return true;
  return (toleration.value ?? "") === (taint.value ?? "");
}

function untolerated(taints: Taint[], tolerations: Toleration[], effects: string[]): boolean {
  return taints.some((taint) =>
    effects.includes(taint.effect) && !tolerations.some((t) => tolerates(t, taint))
  );
}

function requirementMatches(req: NodeSelectorRequirement, value: string | undefined): boolean {
  const values = req.values ?? [];
  switch (req.operator) {
    case "In":
      return value !== undefined && values.includes(value);
    case "NotIn":
      return value === undefined || !values.includes(value);
    case "Exists":
      return value !== undefined;
    case "DoesNotExist":
      return value === undefined;
    case "Gt":
    case "Lt": {
      if (values.length !== 1) return false;
      const have = parseInt64(value);
      const want = parseInt64(values[0]);
      if (have === undefined || want === undefined) return false;
      return req.operator === "Gt" ? have > want : have < want;
    }
  }
}

/**
 * `strconv.ParseInt(text, 10, 64)`, as upstream reads Gt and Lt: an optional sign and decimal
 * digits within int64, else nothing. Kept in the same words in sim/cluster/placement.ts
 * (sim may not import engine/); tests/placement-agreement.test.ts holds the two together.
 */
function parseInt64(text: string | undefined): bigint | undefined {
  if (text === undefined || !/^[+-]?\d+$/.test(text)) return undefined;
  const n = BigInt(text);
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined;
}

/** A term matches when all its requirements do; an empty term matches nothing (upstream). */
function termMatches(term: NodeSelectorTerm, node: Node): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) return false;
  const labels = node.metadata.labels ?? {};
  return expressions.every((req) => requirementMatches(req, labels[req.key])) &&
    fields.every((req) =>
      req.key === "metadata.name" && requirementMatches(req, node.metadata.name)
    );
}

function fitsNodeSelectorAndAffinity(spec: PodSpec, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [key, value] of Object.entries(spec.nodeSelector ?? {})) {
    if (labels[key] !== value) return false;
  }
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms;
  return terms === undefined || terms.some((term) => termMatches(term, node));
}

/** `tolerations`: `daemonPodTolerations(spec)`, computed once per plan rather than per node. */
export function nodeShouldRunDaemonPod(
  node: Node,
  spec: PodSpec,
  tolerations: Toleration[] = daemonPodTolerations(spec),
): Placement {
  const no = { shouldRun: false, shouldContinueRunning: false };
  if (spec.nodeName && spec.nodeName !== node.metadata.name) return no;
  if (!fitsNodeSelectorAndAffinity(spec, node)) return no;
  const taints = node.spec?.taints ?? [];
  if (untolerated(taints, tolerations, ["NoSchedule", "NoExecute"])) {
    return {
      shouldRun: false,
      shouldContinueRunning: !untolerated(taints, tolerations, ["NoExecute"]),
    };
  }
  return { shouldRun: true, shouldContinueRunning: true };
}

/** The taints the node lifecycle controller puts on a node it has lost (NotReady, Unknown). */
const lostNodeTaints = new Set(["node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"]);

/**
 * A node cut off from the cloud keeps its place while its pod runs on (ADR 0006): upstream
 * counts it misscheduled, because a new pod would not be scheduled there, and calls the set
 * complete while that pod is old. Here it stays desired and is updated when it is back. Only
 * when the lost-node taints are all that keep a new pod off it, and it has a pod of the set.
 */
export function keepsPlaceWhileCut(
  node: Node,
  placement: Placement,
  spec: PodSpec,
  tolerations: Toleration[],
  hasPod: boolean,
): Placement {
  if (placement.shouldRun || !placement.shouldContinueRunning || !hasPod) return placement;
  const taints = node.spec?.taints ?? [];
  if (!taints.some((t) => lostNodeTaints.has(t.key))) return placement;
  const reachable = {
    ...node,
    spec: { ...node.spec, taints: taints.filter((t) => !lostNodeTaints.has(t.key)) },
  };
  return nodeShouldRunDaemonPod(reachable, spec, tolerations).shouldRun
    ? { shouldRun: true, shouldContinueRunning: true }
    : placement;
}
