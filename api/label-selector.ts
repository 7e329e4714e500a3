/**
 * Label selectors (`metav1.LabelSelector`) as the API server reads them: checking their shape and
 * matching a label set. Shared by validation (the selector must match the template) and the
 * engine (the rolling-update node selector, pod ownership).
 */
import type { LabelSelector, LabelSelectorRequirement } from "./kube-objects.ts";

export interface FieldIssue {
  /** Dotted path from the object's root, e.g. `spec.updateStrategy.rollingUpdate.maxSurge`. */
  path: string;
  message: string;
}

/** Shape problems of a selector: In/NotIn need values, Exists/DoesNotExist take none. */
export function labelSelectorIssues(selector: LabelSelector, path: string): FieldIssue[] {
  const issues: FieldIssue[] = [];
  (selector.matchExpressions ?? []).forEach((req, i) => {
    const at = `${path}.matchExpressions[${i}]`;
    const count = req.values?.length ?? 0;
    if ((req.operator === "In" || req.operator === "NotIn") && count === 0) {
      issues.push({
        path: `${at}.values`,
        message: `must be non-empty for operator ${req.operator}`,
      });
    }
    if ((req.operator === "Exists" || req.operator === "DoesNotExist") && count > 0) {
      issues.push({ path: `${at}.values`, message: `must be empty for operator ${req.operator}` });
    }
  });
  return issues;
}

export function isEmptySelector(selector: LabelSelector): boolean {
  return Object.keys(selector.matchLabels ?? {}).length === 0 &&
    (selector.matchExpressions ?? []).length === 0;
}

function requirementMatches(req: LabelSelectorRequirement, labels: Record<string, string>) {
  const has = Object.hasOwn(labels, req.key);
  switch (req.operator) {
    case "In":
      return has && (req.values ?? []).includes(labels[req.key]);
    case "NotIn":
      return !has || !(req.values ?? []).includes(labels[req.key]);
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
  }
}

/** An empty selector matches everything, as `metav1.LabelSelectorAsSelector` does. */
export function matchesLabelSelector(
  selector: LabelSelector,
  labels: Record<string, string> | undefined,
): boolean {
  const set = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (set[key] !== value) return false;
  }
  return (selector.matchExpressions ?? []).every((req) => requirementMatches(req, set));
}
