/**
 * Analysis checks as a set's author writes them (issue 40, ADR 0055): Prometheus instant queries
 * and HTTP GETs, compared with ranges every interval, per plan domain when they name it. Here: the
 * spec's shape, the rules that need no nodes (each problem with its field path), the placeholder's
 * expansion, what the controller measured, and the status the plan writes.
 */
import { z } from "zod";
import type { FieldIssue } from "./label-selector.ts";
import { canonicalJson, nameSuffix } from "./hash.ts";
import { annotationPath, readJsonAnnotation } from "./json-annotation.ts";
import { maxPlanDomains, type RolloutPlan } from "./rollout-plan.ts";

/** Checks on one set: more is a dashboard, not a gate; each adds a request per domain. */
export const maxChecks = 8;
/** Measurements kept in status per check and domain. */
export const keptMeasurements = 3;
/** What a check's query or URL writes where the plan's domain goes. */
export const domainPlaceholder = "{{domain}}";

const checkName = z.string().regex(
  /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
  "a check's name is a DNS label: lower case letters, digits and '-', at most 63",
);

export const ValueRange = z.object({
  min: z.number().optional().describe("Lowest value in the range (inclusive)."),
  max: z.number().optional().describe("Highest value in the range (inclusive)."),
  equals: z.string().max(256).optional().describe(
    "The value's text, for a JSON field that is a string or a boolean (HTTP checks).",
  ),
});
export type ValueRange = z.infer<typeof ValueRange>;

export const AnalysisCheck = z.object({
  name: checkName,
  prometheus: z.object({
    address: z.string().max(2048).describe(
      "Prometheus's base URL, http(s)://host:port; the host must be on the controller's " +
        "--analysis-hosts.",
    ),
    query: z.string().min(1).max(8192).describe(
      "An instant query (PromQL); {{domain}} is the plan's domain being judged.",
    ),
  }).optional(),
  http: z.object({
    url: z.string().max(2048).describe(
      "A GET; {{domain}} is the plan's domain being judged. Passes on 2xx unless jsonPath says.",
    ),
    jsonPath: z.string().max(256).optional().describe(
      "A dotted path into the JSON answer (status.errorRatio, items.0.ok) whose value the " +
        "conditions judge.",
    ),
  }).optional(),
  successCondition: ValueRange.optional().describe(
    "A value inside passes; with no failureCondition, a value outside fails.",
  ),
  failureCondition: ValueRange.optional().describe(
    "A value inside fails; with no successCondition, a value outside passes.",
  ),
  intervalSeconds: z.number().int().min(1).max(3600).default(30).describe(
    "Seconds between two measurements of one domain.",
  ),
  count: z.number().int().min(1).max(100).default(3).describe(
    "Measurements a step's gate needs, passed or failed (inconclusive ones are not counted).",
  ),
  failureLimit: z.number().int().min(0).max(100).default(0).describe(
    "Failed measurements allowed; one more fails the check.",
  ),
  secretRef: z.object({ name: z.string().min(1).max(253) }).optional().describe(
    "A Secret in the set's namespace labelled apps.edgeroll.dev/analysis-credentials=true: " +
      "`token` (a bearer token) or `username` and `password`.",
  ),
});
export type AnalysisCheck = z.infer<typeof AnalysisCheck>;
export type AnalysisCheckInput = z.input<typeof AnalysisCheck>;

export const AnalysisOnFailure = z.enum(["Pause", "Rollback"]);
export type AnalysisOnFailure = z.infer<typeof AnalysisOnFailure>;

export const Analysis = z.object({
  checks: z.array(AnalysisCheck).min(1).max(maxChecks),
  background: z.array(checkName).max(maxChecks).default([]).describe(
    "Checks measured during the whole rollout, for each domain with a node on the revision.",
  ),
  onFailure: AnalysisOnFailure.default("Pause").describe(
    "A failed check stops its domain (or the rollout, for a check without {{domain}}); " +
      "Rollback also returns its updated nodes to the last revision that completed.",
  ),
});
export type Analysis = z.infer<typeof Analysis>;
export type AnalysisInput = z.input<typeof Analysis>;

/** Where an AdvancedDaemonSet's checks are written. */
export const analysisFieldPath = "spec.updateStrategy.rollingUpdate.analysis";

/** Where the checks of a Kruise or OpenYurt DaemonSet are written (ADR 0053's way). */
export const analysisAnnotation = "apps.edgeroll.dev/analysis";
export const analysisAnnotationPath = annotationPath(analysisAnnotation);
/** Eight checks of 8 KiB queries: more is not a gate. */
const maxAnalysisAnnotationBytes = 80 * 1024;

export const readAnalysisAnnotation = (annotations: Record<string, string> | undefined) =>
  readJsonAnnotation(
    annotations,
    analysisAnnotation,
    Analysis,
    "analysis checks",
    maxAnalysisAnnotationBytes,
  );

/** The label a Secret must carry for a check to read it (ADR 0055). */
export const credentialsLabel = "apps.edgeroll.dev/analysis-credentials";

/** Whether the check is measured once per plan domain. */
export function perDomain(check: AnalysisCheck): boolean {
  const text = check.prometheus ? check.prometheus.query : check.http?.url ?? "";
  return text.includes(domainPlaceholder);
}

/** `host:port` of a URL, the port written out (80 and 443 by scheme), or undefined. */
export function hostPort(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url.replaceAll(domainPlaceholder, "d"));
  } catch {
    return undefined;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return undefined;
  const port = parsed.port || (parsed.protocol === "https:" ? "443" : "80");
  return `${parsed.hostname}:${port}`;
}

/** Where a check's requests go: the field that names the host, and its URL. */
function targetOf(check: AnalysisCheck, at: string): { field: string; url: string } | undefined {
  if (check.prometheus) return { field: `${at}.prometheus.address`, url: check.prometheus.address };
  if (check.http) return { field: `${at}.http.url`, url: check.http.url };
  return undefined;
}

/**
 * What is wrong with the checks before any node is read: neither or both of prometheus and http,
 * an address or URL that is no http(s) URL, a name written twice, a background or step check never
 * defined, `{{domain}}` without a plan, a range with no bound. Which hosts the controller may
 * reach is its own configuration: `hostIssues`.
 */
export function analysisIssues(
  analysis: Analysis,
  context: {
    path: string;
    hasPlan: boolean;
    /** Each plan step's check names, by step index. */
    stepChecks: readonly (readonly string[] | undefined)[];
    stepsPath: string;
  },
): FieldIssue[] {
  const { path } = context;
  const issues: FieldIssue[] = [];
  const names = new Set<string>();
  analysis.checks.forEach((check, i) => {
    const at = `${path}.checks[${i}]`;
    if (names.has(check.name)) issues.push({ path: `${at}.name`, message: "is used twice" });
    names.add(check.name);
    if ((check.prometheus === undefined) === (check.http === undefined)) {
      issues.push({ path: at, message: "needs exactly one of prometheus and http" });
    }
    const target = targetOf(check, at);
    if (target && !hostPort(target.url)) {
      issues.push({ path: target.field, message: `"${target.url}" is no http(s) URL` });
    }
    if (check.prometheus?.address.includes(domainPlaceholder)) {
      issues.push({
        path: `${at}.prometheus.address`,
        message: `may not hold ${domainPlaceholder}: the query names the domain`,
      });
    }
    if (perDomain(check) && !context.hasPlan) {
      issues.push({
        path: check.prometheus ? `${at}.prometheus.query` : `${at}.http.url`,
        message: `${domainPlaceholder} needs a rollout plan: its domainLabel says what a domain is`,
      });
    }
    if (!check.successCondition && !check.failureCondition && !check.http) {
      issues.push({ path: at, message: "needs a successCondition or a failureCondition" });
    }
    if (check.http?.jsonPath !== undefined && !check.successCondition && !check.failureCondition) {
      issues.push({
        path: `${at}.http.jsonPath`,
        message: "needs a successCondition or a failureCondition to judge the field",
      });
    }
    for (const key of ["successCondition", "failureCondition"] as const) {
      const range = check[key];
      if (!range) continue;
      if (range.min === undefined && range.max === undefined && range.equals === undefined) {
        issues.push({ path: `${at}.${key}`, message: "needs min, max or equals" });
      } else if (range.min !== undefined && range.max !== undefined && range.min > range.max) {
        issues.push({ path: `${at}.${key}`, message: "min is above max" });
      }
    }
  });
  const known = (name: string, field: string) => {
    if (!names.has(name)) issues.push({ path: field, message: `no check is named ${name}` });
  };
  analysis.background.forEach((name, i) => known(name, `${path}.background[${i}]`));
  context.stepChecks.forEach((checks, step) =>
    checks?.forEach((name, i) => known(name, `${context.stepsPath}[${step}].checks[${i}]`))
  );
  return issues;
}

/**
 * What is wrong with a set's checks (`analysisIssues`), or with a plan whose steps name checks
 * when the set defines none. `path` is where the checks are written, `planPath` the plan.
 */
export function setAnalysisIssues(
  analysis: Analysis | undefined,
  plan: RolloutPlan | undefined,
  path: string,
  planPath: string,
): FieldIssue[] {
  const stepChecks = plan?.steps.map((s) => s.checks) ?? [];
  if (analysis) {
    return analysisIssues(analysis, {
      path,
      hasPlan: plan !== undefined,
      stepChecks,
      stepsPath: `${planPath}.steps`,
    });
  }
  return stepChecks.flatMap((checks, i) =>
    checks?.length
      ? [{ path: `${planPath}.steps[${i}].checks`, message: `names checks, and ${path} has none` }]
      : []
  );
}

/**
 * The checks whose host is not among those the controller may reach (`--analysis-hosts`): a set's
 * author must not make the controller request anything else (ADR 0055).
 */
export function hostIssues(
  analysis: Analysis,
  path: string,
  allowedHosts: readonly string[],
): FieldIssue[] {
  const allowed = new Set(allowedHosts);
  return analysis.checks.flatMap((check, i) => {
    const target = targetOf(check, `${path}.checks[${i}]`);
    const host = target && hostPort(target.url);
    if (!target || !host || allowed.has(host)) return [];
    return [{
      path: target.field,
      message: `${host} is not among the hosts the controller may reach (--analysis-hosts: ${
        allowedHosts.join(", ") || "none"
      })`,
    }];
  });
}

/**
 * The check's request for one domain: the placeholder replaced, as a PromQL string's text in a
 * query and URL-escaped in a URL. A domain is a label value, yet it is escaped all the same.
 */
export function expandCheck(
  check: AnalysisCheck,
  domain: string | undefined,
): { kind: "prometheus"; address: string; query: string } | { kind: "http"; url: string } {
  const value = domain ?? "";
  if (check.prometheus) {
    const escaped = value.replaceAll("\\", "\\\\").replaceAll('"', '\\"');
    return {
      kind: "prometheus",
      address: check.prometheus.address,
      query: check.prometheus.query.replaceAll(domainPlaceholder, escaped),
    };
  }
  return {
    kind: "http",
    url: check.http!.url.replaceAll(domainPlaceholder, encodeURIComponent(value)),
  };
}

/**
 * One measurement as the controller took it, before it is judged: Prometheus's samples (one per
 * series), an HTTP answer's status and its JSON field's value, or why there is no answer. A query
 * Prometheus refuses as bad_data is `refused`: the spec is wrong, not the service.
 */
export const Measurement = z.object({
  check: z.string(),
  domain: z.string().optional(),
  /** RFC 3339. */
  at: z.string(),
  values: z.array(z.union([z.number(), z.string(), z.boolean(), z.null()])).max(1000).optional(),
  httpStatus: z.number().int().optional(),
  /** No answer to judge: unreachable, a timeout, 422 or 503, an answer too large or not JSON. */
  error: z.string().max(1024).optional(),
  /** Prometheus's own words for a query it refuses (400 bad_data). */
  refused: z.string().max(1024).optional(),
});
export type Measurement = z.infer<typeof Measurement>;

export const MeasurementPhase = z.enum(["Passed", "Failed", "Inconclusive"]);
export type MeasurementPhase = z.infer<typeof MeasurementPhase>;

/**
 * A check's standing for one domain: `Running` while measured, `Inconclusive` while its last
 * measurement decided nothing, `Passed` (a gate's count reached within its failure limit) or
 * `Failed` (more failed measurements than its limit).
 */
export const CheckPhase = z.enum(["Running", "Inconclusive", "Passed", "Failed"]);
export type CheckPhase = z.infer<typeof CheckPhase>;

export const CheckStatus = z.object({
  check: z.string(),
  /** Absent for a check measured once for the set. */
  domain: z.string().optional(),
  /** The plan step the gate is of (numbered from 1); absent for a background check. */
  step: z.number().int().min(1).optional(),
  phase: CheckPhase,
  passed: z.number().int(),
  failed: z.number().int(),
  inconclusive: z.number().int(),
  /** RFC 3339: when the next measurement is due; absent once the check is decided. */
  nextAt: z.string().optional(),
  measurements: z.array(z.object({
    at: z.string(),
    phase: MeasurementPhase,
    value: z.string().max(64).optional(),
    message: z.string().max(256).optional(),
  })).max(keptMeasurements),
});
export type CheckStatus = z.infer<typeof CheckStatus>;

export const AnalysisStatus = z.object({
  revision: z.string(),
  checks: z.array(CheckStatus).max(maxChecks * (maxPlanDomains + 1) * 2),
  /** The `resume` value whose acknowledgement cleared this revision's failed checks. */
  resumedWith: z.string().optional(),
  /**
   * `queriesHash` of the queries Prometheus accepted: they are sent again once it differs. (An
   * edgeroll before it wrote `validatedGeneration`, read as none: the queries are sent once more.)
   */
  validatedQueriesHash: z.string().optional(),
});
export type AnalysisStatus = z.infer<typeof AnalysisStatus>;

/**
 * What validating the queries covers: each Prometheus check's address and query, hashed in an
 * order of their own (a reordering is no change). The spec's field and the annotation carry the
 * same checks, and an annotation edit does not bump the generation: this changes with either.
 */
export function queriesHash(analysis: Analysis): string {
  const queries = analysis.checks.flatMap((c) => c.prometheus ? [canonicalJson(c.prometheus)] : []);
  return nameSuffix(JSON.stringify(queries.sort()));
}

/** The key of a check's standing: a gate's is its step's, a background check's has none. */
export const standingKey = (check: string, domain: string | undefined, step: number | undefined) =>
  `${check}\u0000${domain ?? ""}\u0000${step ?? 0}`;

/** What `dueMeasurements` hands the controller: the check, and the domain it is measured for. */
export interface DueMeasurement {
  check: AnalysisCheck;
  domain?: string;
}

/**
 * What to measure now: each undecided standing of the current revision whose `nextAt` has come.
 * Read from the previous status, so the controller measures before the plan is made.
 */
export function dueMeasurements(
  analysis: Analysis,
  previous: AnalysisStatus | undefined,
  hash: string,
  now: number,
): DueMeasurement[] {
  if (previous?.revision !== hash) return [];
  const checks = new Map(analysis.checks.map((c) => [c.name, c]));
  const due = new Map<string, DueMeasurement>();
  for (const s of previous.checks) {
    const check = checks.get(s.check);
    const at = s.nextAt === undefined ? NaN : Date.parse(s.nextAt);
    if (!check || Number.isNaN(at) || at > now) continue;
    // A gate and a background check of one domain ask the same question: asked once.
    due.set(standingKey(s.check, s.domain, undefined), { check, domain: s.domain });
  }
  return [...due.values()];
}
