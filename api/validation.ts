/**
 * Validation of an AdvancedDaemonSet: the zod shape, then the rules of Kruise's validating
 * webhook, then the stricter ones edgeroll adds where Kruise lets bad input through (a malformed
 * percent, burstReplicas silently read as 0, a partition above 100%). Each problem carries the
 * field path; the list becomes the `InvalidSpec` condition and HTTP 400 bodies.
 */
import {
  AdvancedDaemonSet,
  type AdvancedDaemonSetSpec,
  annotationNames,
  type FailurePolicy,
  type RollingUpdate,
} from "./advanced-daemonset.ts";
import { intOrPercentProblem, isZero } from "./int-or-percent.ts";
import type { IntOrString, LabelSelector } from "./kube-objects.ts";
import {
  type FieldIssue,
  isEmptySelector,
  labelSelectorIssues,
  matchesLabelSelector,
  type Notice,
  zodIssues,
} from "./label-selector.ts";
import {
  planAnnotationPath,
  type PlanAnswers,
  planFieldPath,
  readPlanAnnotation,
  readPlanAnswers,
  type RolloutPlan,
  rolloutPlanAnnotation,
  rolloutPlanIssues,
} from "./rollout-plan.ts";
import {
  maintenanceAnnotation,
  maintenanceAnnotationPath,
  maintenanceFieldPath,
  readMaintenanceAnnotation,
  readSetMaintenance,
  type SetMaintenance,
} from "./maintenance.ts";
import {
  analysisAnnotation,
  analysisAnnotationPath,
  analysisFieldPath,
  readAnalysisAnnotation,
  setAnalysisIssues,
} from "./analysis.ts";

export type { FieldIssue };
export { zodIssues };

/** The rolling update with every default resolved, as the engine uses it. */
export interface EffectiveRollingUpdate {
  /** `Surging` is folded into Standard, as Kruise's mutating webhook does. */
  rollingUpdateType: "Standard" | "InPlaceIfPossible";
  maxUnavailable: IntOrString;
  maxSurge: IntOrString;
  partition: IntOrString;
  selector?: LabelSelector;
  paused: boolean;
  failurePolicy?: FailurePolicy;
  plan?: RolloutPlan;
}

/** Kruise's defaulting: `Surging` means maxSurge 1 and maxUnavailable 0 unless given. */
export function effectiveRollingUpdate(
  rollingUpdate: RollingUpdate | undefined,
): EffectiveRollingUpdate {
  const given = rollingUpdate ?? { rollingUpdateType: "Standard" as const };
  const surging = given.rollingUpdateType === "Surging";
  const neitherGiven = given.maxUnavailable === undefined && given.maxSurge === undefined;
  return {
    rollingUpdateType: given.rollingUpdateType === "InPlaceIfPossible"
      ? "InPlaceIfPossible"
      : "Standard",
    maxUnavailable: given.maxUnavailable ?? (surging || !neitherGiven ? 0 : 1),
    maxSurge: given.maxSurge ?? (surging ? 1 : 0),
    partition: given.partition ?? 0,
    selector: given.selector,
    paused: given.paused ?? false,
    ...(given.failurePolicy ? { failurePolicy: given.failurePolicy } : {}),
    ...(given.plan ? { plan: given.plan } : {}),
  };
}

export interface KruiseAnnotations {
  progressiveCreatePod: boolean;
  imagePredownloadParallelism?: number;
  imagePredownloadTimeoutSeconds?: number;
  /** An int or a percent of the desired pods (Kruise parses it as an IntOrString). */
  imagePredownloadMinUpdatedReadyPods?: number | string;
}

export type ValidationResult =
  | {
    ok: true;
    set: AdvancedDaemonSet;
    rollingUpdate: EffectiveRollingUpdate;
    annotations: KruiseAnnotations;
    /** An operator's approvals of the plan's steps, promote and abort (ADR 0050). */
    planAnswers: PlanAnswers;
    /** Where the plan was written: the field, or the annotation (ADR 0053). */
    planPath: string;
    /** The maintenance windows read, and the override lifting them (ADR 0054). */
    maintenance?: SetMaintenance;
    /** Where the analysis checks were written: the field, or the annotation (ADR 0055). */
    analysisPath: string;
    /** Values replaced by the default Kruise uses in their place. */
    notices: Notice[];
  }
  | { ok: false; issues: FieldIssue[] };

function intOrPercentIssues(
  value: IntOrString | undefined,
  path: string,
  allowZero: boolean,
): FieldIssue[] {
  if (value === undefined) return [];
  const message = intOrPercentProblem(value, { allowZero });
  return message ? [{ path, message }] : [];
}

/** Where the set's plan was written, and who writes its partition when a controller does. */
interface PlanContext {
  path: string;
  partitionWrittenBy?: string;
}

function rollingUpdateIssues(given: RollingUpdate, path: string, plan: PlanContext): FieldIssue[] {
  const issues = [
    ...intOrPercentIssues(given.maxUnavailable, `${path}.maxUnavailable`, true),
    ...intOrPercentIssues(given.maxSurge, `${path}.maxSurge`, true),
    ...intOrPercentIssues(given.partition, `${path}.partition`, true),
    ...intOrPercentIssues(
      given.failurePolicy?.maxFailed,
      `${path}.failurePolicy.maxFailed`,
      true,
    ),
  ];
  if (given.selector) issues.push(...labelSelectorIssues(given.selector, `${path}.selector`));
  if (issues.length > 0) return issues;

  const effective = effectiveRollingUpdate(given);
  const hasUnavailable = !isZero(effective.maxUnavailable);
  const hasSurge = !isZero(effective.maxSurge);
  if (hasUnavailable && hasSurge) {
    issues.push({
      path: `${path}.maxSurge`,
      message: "may not be set when maxUnavailable is non-zero",
    });
  } else if (!hasUnavailable && !hasSurge) {
    issues.push({ path: `${path}.maxUnavailable`, message: "cannot be 0 when maxSurge is 0" });
  }
  if (given.rollingUpdateType === "InPlaceIfPossible" && hasSurge) {
    issues.push({ path: `${path}.maxSurge`, message: "must be 0 for InPlaceIfPossible type" });
  }
  if (given.rollingUpdateType === "Surging" && hasUnavailable) {
    issues.push({ path: `${path}.maxUnavailable`, message: "must be 0 for Surging type" });
  }
  if (given.plan) {
    issues.push(...rolloutPlanIssues(given.plan, {
      partition: given.partition,
      selector: given.selector,
      surges: hasSurge,
      partitionWrittenBy: plan.partitionWrittenBy,
    }, plan.path));
  }
  return issues;
}

function specIssues(spec: AdvancedDaemonSetSpec, plan: PlanContext): FieldIssue[] {
  const issues = labelSelectorIssues(spec.selector, "spec.selector");
  if (isEmptySelector(spec.selector)) {
    issues.push({ path: "spec.selector", message: "empty selector is invalid for a daemon set" });
  } else if (!matchesLabelSelector(spec.selector, spec.template.metadata?.labels)) {
    issues.push({
      path: "spec.template.metadata.labels",
      message: "`selector` does not match template `labels`",
    });
  }
  const restartPolicy = spec.template.spec.restartPolicy ?? "Always";
  if (restartPolicy !== "Always") {
    issues.push({
      path: "spec.template.spec.restartPolicy",
      message: `Unsupported value: "${restartPolicy}": supported values: "Always"`,
    });
  }
  if (spec.template.spec.activeDeadlineSeconds !== undefined) {
    issues.push({
      path: "spec.template.spec.activeDeadlineSeconds",
      message: "activeDeadlineSeconds in a daemon set is not supported",
    });
  }
  if (spec.template.spec.containers.length === 0) {
    issues.push({
      path: "spec.template.spec.containers",
      message: "must have at least one container",
    });
  }
  if (spec.minReadySeconds < 0) {
    issues.push({ path: "spec.minReadySeconds", message: "must be non-negative" });
  }
  if (spec.revisionHistoryLimit < 0) {
    issues.push({ path: "spec.revisionHistoryLimit", message: "must be non-negative" });
  }
  issues.push(...intOrPercentIssues(spec.burstReplicas, "spec.burstReplicas", false));
  const strategy = spec.updateStrategy;
  if (strategy.type === "RollingUpdate") {
    issues.push(...rollingUpdateIssues(
      strategy.rollingUpdate ?? { rollingUpdateType: "Standard" },
      "spec.updateStrategy.rollingUpdate",
      plan,
    ));
  }
  (spec.lifecycle?.preDelete?.finalizersHandler ?? []).forEach((finalizer, i) => {
    if (finalizer === "") {
      issues.push({
        path: `spec.lifecycle.preDelete.finalizersHandler[${i}]`,
        message: "must not be empty",
      });
    }
  });
  return issues;
}

/** The first of an annotation's accepted names that is present, with its value. */
function annotationValue(
  annotations: Record<string, string> | undefined,
  names: readonly string[],
): [string, string] | undefined {
  for (const name of names) {
    const value = annotations?.[name];
    if (value !== undefined) return [name, value];
  }
  return undefined;
}

function annotationIssuesAndValues(
  annotations: Record<string, string> | undefined,
): { issues: FieldIssue[]; notices: Notice[]; values: KruiseAnnotations } {
  const issues: FieldIssue[] = [];
  const notices: Notice[] = [];
  const values: KruiseAnnotations = { progressiveCreatePod: false };
  const progressive = annotationValue(annotations, annotationNames.progressiveCreatePod);
  if (progressive) {
    if (progressive[1] !== "true" && progressive[1] !== "false") {
      issues.push({
        path: `metadata.annotations[${progressive[0]}]`,
        message: `must be "true" or "false", got "${progressive[1]}"`,
      });
    }
    values.progressiveCreatePod = progressive[1] === "true";
  }
  const minReady = annotationValue(
    annotations,
    annotationNames.imagePredownloadMinUpdatedReadyPods,
  );
  if (minReady) {
    const [name, value] = minReady;
    if (/^\d+%$/.test(value) && Number(value.slice(0, -1)) <= 100) {
      values.imagePredownloadMinUpdatedReadyPods = value;
    } else if (/^\d+$/.test(value)) {
      values.imagePredownloadMinUpdatedReadyPods = Number(value);
    } else {
      issues.push({
        path: `metadata.annotations[${name}]`,
        message: `must be a non-negative integer or a percent up to 100%, got "${value}"`,
      });
    }
  }
  const positiveInts = [
    ["imagePredownloadParallelism", annotationNames.imagePredownloadParallelism],
    ["imagePredownloadTimeoutSeconds", annotationNames.imagePredownloadTimeoutSeconds],
  ] as const;
  for (const [field, names] of positiveInts) {
    const found = annotationValue(annotations, names);
    if (!found) continue;
    const valid = /^\d+$/.test(found[1]) && Number(found[1]) > 0;
    if (!valid && field === "imagePredownloadParallelism") {
      // Kruise falls back to 1 for a parallelism it cannot read, and rolls on.
      notices.push({
        type: "Warning",
        path: `metadata.annotations[${found[0]}]`,
        message: `must be a positive integer, got "${found[1]}": 1 is used, as Kruise does`,
      });
      values[field] = 1;
    } else if (!valid) {
      issues.push({
        path: `metadata.annotations[${found[0]}]`,
        message: `must be a positive integer, got "${found[1]}"`,
      });
    } else {
      values[field] = Number(found[1]);
    }
  }
  return { issues, notices, values };
}

/**
 * Where a set's rollout plan and maintenance windows are written: an AdvancedDaemonSet's fields,
 * or the annotations a Kruise DaemonSet carries them in (its schema has no such fields, ADRs 0053
 * and 0054).
 */
export type PlanSource = "field" | "annotation";

/** The fields of the rolling update that Kruise's and OpenYurt's DaemonSets carry in annotations. */
type AnnotatedKey = "plan" | "maintenance" | "analysis";

/** A field of the rolling update that Kruise's and OpenYurt's DaemonSets carry in an annotation. */
interface AnnotatedField<K extends AnnotatedKey> {
  field: K;
  fieldPath: string;
  annotation: string;
  annotationPath: string;
  /** What it is, in messages: "one plan, in one place". */
  what: string;
  read(annotations: Record<string, string>): { value?: RollingUpdate[K]; issues: FieldIssue[] };
}

const annotatedPlan: AnnotatedField<"plan"> = {
  field: "plan",
  fieldPath: planFieldPath,
  annotation: rolloutPlanAnnotation,
  annotationPath: planAnnotationPath,
  what: "plan",
  read: readPlanAnnotation,
};

const annotatedMaintenance: AnnotatedField<"maintenance"> = {
  field: "maintenance",
  fieldPath: maintenanceFieldPath,
  annotation: maintenanceAnnotation,
  annotationPath: maintenanceAnnotationPath,
  what: "set of maintenance windows",
  read: readMaintenanceAnnotation,
};

const annotatedAnalysis: AnnotatedField<"analysis"> = {
  field: "analysis",
  fieldPath: analysisFieldPath,
  annotation: analysisAnnotation,
  annotationPath: analysisAnnotationPath,
  what: "set of analysis checks",
  read: readAnalysisAnnotation,
};

/**
 * A field written in its annotation, moved where the AdvancedDaemonSet has it (in the parsed
 * copy), and the path its issues are named under. On an AdvancedDaemonSet the annotation would be
 * ignored: refused. A Kruise DaemonSet under edgeroll's own CRD (ADR 0027) may have the field too:
 * one of the two.
 */
function fromAnnotation<K extends AnnotatedKey>(
  set: AdvancedDaemonSet,
  source: PlanSource,
  spec: AnnotatedField<K>,
): { issues: FieldIssue[]; path: string } {
  const annotations = set.metadata.annotations ?? {};
  const strategy = set.spec.updateStrategy;
  if (annotations[spec.annotation] === undefined) return { issues: [], path: spec.fieldPath };
  const refused = (message: string) => ({
    issues: [{ path: spec.annotationPath, message }],
    path: spec.fieldPath,
  });
  if (source === "field") {
    return refused(
      `is read on Kruise's and OpenYurt's DaemonSets: an AdvancedDaemonSet's ${spec.what} is ${spec.fieldPath}`,
    );
  }
  if (strategy.rollingUpdate[spec.field] !== undefined) {
    return refused(`may not be set beside ${spec.fieldPath}: one ${spec.what}, in one place`);
  }
  if (strategy.type !== "RollingUpdate") {
    return refused(`needs spec.updateStrategy.type RollingUpdate, got "${strategy.type}"`);
  }
  const read = spec.read(annotations);
  if (read.value !== undefined) {
    strategy.rollingUpdate = { ...strategy.rollingUpdate, [spec.field]: read.value };
  }
  return { issues: read.issues, path: spec.annotationPath };
}

/** The windows of a rolling update and its override, read; a set in OnDelete has none. */
function windowsOf(set: AdvancedDaemonSet, path: string) {
  const strategy = set.spec.updateStrategy;
  const rolling = strategy.type === "RollingUpdate";
  return readSetMaintenance(
    rolling ? strategy.rollingUpdate.maintenance : undefined,
    path,
    rolling && strategy.rollingUpdate.plan !== undefined,
    set.metadata,
  );
}

/** Kruise Rollout's marks on a set it controls (openkruise/rollouts pkg/util/constant.go). */
const kruiseRolloutAnnotations = [
  "batchrelease.rollouts.kruise.io/control-info",
  "rollouts.kruise.io/in-progressing",
];

/** Whether Kruise Rollout controls the set, writing its partition batch by batch (ADR 0051). */
function underKruiseRollout(annotations: Record<string, string> | undefined): boolean {
  return kruiseRolloutAnnotations.some((name) => annotations?.[name] !== undefined);
}

/**
 * Parses and validates an AdvancedDaemonSet as read from the API server or an HTTP body (a Kruise
 * DaemonSet read as one has its plan in an annotation: `planSource`).
 */
export function validateAdvancedDaemonSet(
  input: unknown,
  planSource: PlanSource = "field",
): ValidationResult {
  const parsed = AdvancedDaemonSet.safeParse(input);
  if (!parsed.success) return { ok: false, issues: zodIssues(parsed.error) };
  const set = parsed.data;
  const annotations = annotationIssuesAndValues(set.metadata.annotations);
  const plan = fromAnnotation(set, planSource, annotatedPlan);
  const maintenance = fromAnnotation(set, planSource, annotatedMaintenance);
  const windows = windowsOf(set, maintenance.path);
  const analysis = fromAnnotation(set, planSource, annotatedAnalysis);
  const issues = [
    ...plan.issues,
    ...maintenance.issues,
    ...windows.issues,
    ...analysis.issues,
    ...(set.spec.updateStrategy.type === "RollingUpdate"
      ? setAnalysisIssues(
        set.spec.updateStrategy.rollingUpdate.analysis,
        set.spec.updateStrategy.rollingUpdate.plan,
        analysis.path,
        plan.path,
      )
      : []),
    ...specIssues(set.spec, {
      path: plan.path,
      ...(underKruiseRollout(set.metadata.annotations)
        ? { partitionWrittenBy: "Kruise Rollout" }
        : {}),
    }),
    ...annotations.issues,
  ];
  if (issues.length > 0) return { ok: false, issues };
  const answers = readPlanAnswers(set.metadata.annotations);
  return {
    ok: true,
    set,
    rollingUpdate: effectiveRollingUpdate(set.spec.updateStrategy.rollingUpdate),
    annotations: annotations.values,
    planAnswers: answers.answers,
    planPath: plan.path,
    analysisPath: analysis.path,
    ...(windows.maintenance ? { maintenance: windows.maintenance } : {}),
    notices: [...annotations.notices, ...answers.notices],
  };
}
