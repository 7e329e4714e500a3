/**
 * Where a pod may run: node selector, required node affinity, taints and tolerations. The
 * scheduler and the DaemonSet controller both decide with these, as upstream both use the
 * component-helpers predicates.
 */
import type {
  Node,
  NodeSelectorRequirement,
  NodeSelectorTerm,
  PodSpec,
  Taint,
  TaintEffect,
  Toleration,
} from "./types.ts";

export function toleratesTaint(toleration: Toleration, taint: Taint): boolean {
  if (toleration.effect && toleration.effect !== taint.effect) return false;
  if (toleration.key && toleration.key !== taint.key) return false;
  if (toleration.operator === "Exists") return true;
  return (toleration.value ?? "") === (taint.value ?? "");
}

/** The first taint with one of `effects` that no toleration tolerates. */
export function untoleratedTaint(
  taints: Taint[] | undefined,
  tolerations: Toleration[] | undefined,
  effects: readonly TaintEffect[],
): Taint | undefined {
  return (taints ?? []).find((taint) =>
    effects.includes(taint.effect) &&
    !(tolerations ?? []).some((toleration) => toleratesTaint(toleration, taint))
  );
}

function requirementMatches(
  requirement: NodeSelectorRequirement,
  value: string | undefined,
): boolean {
  const values = requirement.values ?? [];
  switch (requirement.operator) {
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
      const actual = parseInt64(value);
      const bound = parseInt64(values[0]);
      if (actual === undefined || bound === undefined) return false;
      return requirement.operator === "Gt" ? actual > bound : actual < bound;
    }
  }
}

/**
 * `strconv.ParseInt(text, 10, 64)`, as upstream reads Gt and Lt: an optional sign and decimal
 * digits within int64, else nothing. Kept in the same words in engine/should-run.ts
 * (sim may not import engine/); tests/placement-agreement.test.ts holds the two together.
 */
function parseInt64(text: string | undefined): bigint | undefined {
  if (text === undefined || !/^[+-]?\d+$/.test(text)) return undefined;
  const n = BigInt(text);
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined;
}

function fieldValue(node: Node, key: string): string | undefined {
  return key === "metadata.name" ? node.metadata.name : undefined;
}

/** A term matches when all its requirements do; a term without any matches nothing. */
export function termMatches(term: NodeSelectorTerm, node: Node): boolean {
  const expressions = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (expressions.length === 0 && fields.length === 0) return false;
  const labels = node.metadata.labels ?? {};
  return expressions.every((req) => requirementMatches(req, labels[req.key])) &&
    fields.every((req) => requirementMatches(req, fieldValue(node, req.key)));
}

/** nodeSelector and requiredDuringScheduling node affinity (terms are ORed). */
export function matchesNodeAffinity(spec: PodSpec, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [key, value] of Object.entries(spec.nodeSelector ?? {})) {
    if (labels[key] !== value) return false;
  }
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms;
  return terms === undefined || terms.some((term) => termMatches(term, node));
}

/**
 * The node names a pod's required affinity pins it to with `matchFields metadata.name In`
 * (as the DaemonSet controller writes it), or undefined when it can go anywhere.
 */
export function pinnedNodeNames(spec: PodSpec): string[] | undefined {
  const terms = spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution
    ?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return undefined;
  const names: string[] = [];
  for (const term of terms) {
    const pin = term.matchFields?.find((req) =>
      req.key === "metadata.name" && req.operator === "In"
    );
    if (!pin) return undefined;
    names.push(...(pin.values ?? []));
  }
  return names;
}

export const NO_SCHEDULE_EFFECTS: readonly TaintEffect[] = ["NoSchedule", "NoExecute"];

/** Why a pod does not fit a node, or undefined when it fits (the scheduler's filter). */
export function unfitReason(spec: PodSpec, node: Node): string | undefined {
  if (node.metadata.deletionTimestamp) return "node(s) were being deleted";
  if (!matchesNodeAffinity(spec, node)) return "node(s) didn't match Pod's node affinity/selector";
  const taints = [...(node.spec?.taints ?? [])];
  if (node.spec?.unschedulable && !taints.some((t) => t.key === UNSCHEDULABLE_TAINT.key)) {
    taints.push(UNSCHEDULABLE_TAINT);
  }
  const taint = untoleratedTaint(taints, spec.tolerations, NO_SCHEDULE_EFFECTS);
  if (taint) {
    return taint.key === UNSCHEDULABLE_TAINT.key
      ? "node(s) were unschedulable"
      : `node(s) had untolerated taint {${taint.key}: ${taint.value ?? ""}}`;
  }
  return undefined;
}

export const UNSCHEDULABLE_TAINT: Taint = {
  key: "node.kubernetes.io/unschedulable",
  effect: "NoSchedule",
};
