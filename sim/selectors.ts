/**
 * Label and field selectors, in the two forms the API uses: the query-string syntax
 * (`app=web,tier!=db,env in (a,b),!legacy`) and the `LabelSelector` object of workload specs.
 */
import { StoreError } from "./store.ts";

export interface LabelSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export type Labels = Record<string, string> | undefined;
export type LabelMatcher = (labels: Labels) => boolean;

function requirementMatches(req: LabelSelectorRequirement, labels: Labels): boolean {
  const has = labels !== undefined && Object.hasOwn(labels, req.key);
  const value = has ? labels![req.key] : undefined;
  switch (req.operator) {
    case "In":
      return has && (req.values ?? []).includes(value!);
    case "NotIn":
      return !has || !(req.values ?? []).includes(value!);
    case "Exists":
      return has;
    case "DoesNotExist":
      return !has;
  }
}

/** A `LabelSelector` object as a predicate. An empty selector matches everything. */
export function labelSelectorMatcher(selector: LabelSelector | undefined): LabelMatcher {
  const requirements: LabelSelectorRequirement[] = [
    ...Object.entries(selector?.matchLabels ?? {}).map(([key, value]) => ({
      key,
      operator: "In" as const,
      values: [value],
    })),
    ...(selector?.matchExpressions ?? []),
  ];
  return (labels) => requirements.every((req) => requirementMatches(req, labels));
}

/** Splits on commas that are not inside parentheses. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      terms.push(current);
      current = "";
    } else {
      current += ch;
    }
  }
  terms.push(current);
  return terms.map((t) => t.trim()).filter((t) => t.length > 0);
}

const SET_TERM = /^([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)$/;
const EQUALITY_TERM = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/;
const EXISTS_TERM = /^(!?)([^\s!=(),]+)$/;

/** Parses the query-string label selector syntax; a malformed one is a 400. */
export function parseLabelSelector(text: string | null | undefined): LabelMatcher {
  if (!text) return () => true;
  const requirements = splitTerms(text).map((term): LabelSelectorRequirement => {
    let m = SET_TERM.exec(term);
    if (m) {
      const values = m[3].split(",").map((v) => v.trim()).filter((v) => v.length > 0);
      return { key: m[1], operator: m[2] === "in" ? "In" : "NotIn", values };
    }
    m = EQUALITY_TERM.exec(term);
    if (m) return { key: m[1], operator: m[2] === "!=" ? "NotIn" : "In", values: [m[3]] };
    m = EXISTS_TERM.exec(term);
    if (m) return { key: m[2], operator: m[1] ? "DoesNotExist" : "Exists" };
    throw new StoreError(400, "BadRequest", `unable to parse requirement: "${term}"`);
  });
  return (labels) => requirements.every((req) => requirementMatches(req, labels));
}

/**
 * What kube-apiserver's field sets hold for an absent field: booleans are formatted, so an
 * unset `spec.unschedulable` is "false" (the e2e framework lists nodes with
 * `spec.unschedulable=false`).
 */
const absentFieldValues: Record<string, string> = {
  "spec.unschedulable": "false",
  "spec.hostNetwork": "false",
};

/**
 * Parses a field selector (`spec.nodeName=edge-1,metadata.name!=x`) into a predicate over
 * the object. Only `=`, `==` and `!=` exist for fields; a field `supported` refuses is a 400.
 */
export function parseFieldSelector(
  text: string | null | undefined,
  supported: (field: string) => boolean = () => true,
): (object: Record<string, unknown>) => boolean {
  if (!text) return () => true;
  const terms = splitTerms(text).map((term) => {
    const m = /^([^\s!=]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!m) throw new StoreError(400, "BadRequest", `invalid field selector: "${term}"`);
    if (!supported(m[1])) {
      throw new StoreError(400, "BadRequest", `field label not supported: ${m[1]}`);
    }
    return { field: m[1], path: m[1].split("."), negate: m[2] === "!=", value: m[3] };
  });
  return (object) =>
    terms.every(({ field, path, negate, value }) => {
      let cursor: unknown = object;
      for (const part of path) cursor = (cursor as Record<string, unknown> | undefined)?.[part];
      const actual = cursor === undefined || cursor === null
        ? absentFieldValues[field] ?? ""
        : String(cursor);
      return negate ? actual !== value : actual === value;
    });
}
