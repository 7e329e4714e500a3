/**
 * Label selectors (`metav1.LabelSelector`) as the API server reads them: checking their shape and
 * matching a label set. Shared by validation (the selector must match the template) and the
 * engine (the rolling-update node selector, pod ownership).
 */
import type { z } from "zod";
import type { LabelSelector, LabelSelectorRequirement } from "./kube-objects.ts";

export interface FieldIssue {
  /** Dotted path from the object's root, e.g. `spec.updateStrategy.rollingUpdate.maxSurge`. */
  path: string;
  message: string;
}

/**
 * A value replaced by the default its origin (Kruise, OpenYurt) uses in its place, said once in
 * an Event of this type and kept in the InvalidSpec condition's message (reason `Defaulted`).
 */
export interface Notice extends FieldIssue {
  type: "Normal" | "Warning";
}

/** zod's issues as field issues, each path under `prefix` (a field path, or empty for the root). */
export function zodIssues(error: z.ZodError, prefix = ""): FieldIssue[] {
  return error.issues.map((issue) => {
    const path = issue.path.map((p, i) =>
      typeof p === "number" ? `[${p}]` : `${i || prefix ? "." : ""}${String(p)}`
    ).join("");
    return { path: prefix + path, message: issue.message };
  });
}

const labelName = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why `key` is no label key (apimachinery's IsQualifiedName), or undefined. */
function labelKeyProblem(key: string): string | undefined {
  const slash = key.lastIndexOf("/");
  const [prefix, name] = slash < 0 ? [undefined, key] : [key.slice(0, slash), key.slice(slash + 1)];
  if (prefix !== undefined && (prefix.length > 253 || !dnsSubdomain.test(prefix))) {
    return `prefix part must be a lowercase DNS-1123 subdomain of at most 253 characters`;
  }
  if (name.length > 63 || !labelName.test(name)) {
    return "name part must be at most 63 alphanumeric characters, '-', '_' or '.', " +
      "beginning and ending with an alphanumeric character";
  }
  return undefined;
}

/** A label key named at `path` that cannot be one, as its problem; none when it can. */
export function labelKeyIssues(key: string, path: string): FieldIssue[] {
  const problem = labelKeyProblem(key);
  return problem ? [{ path, message: `invalid key "${key}": ${problem}` }] : [];
}

/** Why `value` is no label value (apimachinery's IsValidLabelValue), or undefined. */
function labelValueProblem(value: string): string | undefined {
  if (value === "" || (value.length <= 63 && labelName.test(value))) return undefined;
  return "a label value must be empty or at most 63 alphanumeric characters, '-', '_' or '.', " +
    "beginning and ending with an alphanumeric character";
}

/**
 * Problems of a selector, as the API server would find them when it is used: label keys and
 * values that cannot be, In/NotIn without values, Exists/DoesNotExist with some.
 */
export function labelSelectorIssues(selector: LabelSelector, path: string): FieldIssue[] {
  const issues: FieldIssue[] = [];
  const check = (at: string, problem: string | undefined, what: string) => {
    if (problem) issues.push({ path: at, message: `invalid ${what}: ${problem}` });
  };
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    check(`${path}.matchLabels`, labelKeyProblem(key), `key "${key}"`);
    check(`${path}.matchLabels.${key}`, labelValueProblem(value), `value "${value}"`);
  }
  (selector.matchExpressions ?? []).forEach((req, i) => {
    const at = `${path}.matchExpressions[${i}]`;
    check(`${at}.key`, labelKeyProblem(req.key), `key "${req.key}"`);
    (req.values ?? []).forEach((value, j) => {
      if (req.operator === "In" || req.operator === "NotIn") {
        check(`${at}.values[${j}]`, labelValueProblem(value), `value "${value}"`);
      }
    });
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
