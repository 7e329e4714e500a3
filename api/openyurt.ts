/**
 * OpenYurt's daemonPodUpdater annotations on an `apps/v1` DaemonSet with
 * `updateStrategy.type: OnDelete`:
 *
 * - `apps.openyurt.io/update-strategy`: `AdvancedRollingUpdate` or `OTA`, case-insensitive; the
 *   older `auto` means AdvancedRollingUpdate.
 * - `apps.openyurt.io/max-unavailable`: int or percent of desired, rounded up; default `10%`,
 *   which OpenYurt also uses for `0` and `0%`.
 *
 * And edgeroll's, in the same style (ADR 0035): `apps.edgeroll.dev/max-failed` (int or percent of
 * the nodes updated so far), `-pod-start-timeout-seconds`, `-progress-deadline-seconds` and
 * `-stop-on-progress-deadline`, the AdvancedDaemonSet's failurePolicy and progressDeadlineSeconds.
 */
import {
  maintenanceAnnotationPath,
  readMaintenanceAnnotation,
  readSetMaintenance,
  type SetMaintenance,
} from "./maintenance.ts";
import {
  type Analysis,
  analysisAnnotationPath,
  readAnalysisAnnotation,
  setAnalysisIssues,
} from "./analysis.ts";
import { z } from "zod";
import { intOrPercentProblem } from "./int-or-percent.ts";
import type { DaemonSet, IntOrString } from "./kube-objects.ts";
import type { FieldIssue, Notice } from "./label-selector.ts";
import {
  planAnnotationPath,
  type PlanAnswers,
  readPlanAnnotation,
  readPlanAnswers,
  type RolloutPlan,
  rolloutPlanIssues,
} from "./rollout-plan.ts";

export const updateStrategyAnnotation = "apps.openyurt.io/update-strategy";
export const maxUnavailableAnnotation = "apps.openyurt.io/max-unavailable";
export const defaultMaxUnavailable = "10%";
export const failureAnnotations = {
  maxFailed: "apps.edgeroll.dev/max-failed",
  podStartTimeoutSeconds: "apps.edgeroll.dev/pod-start-timeout-seconds",
  progressDeadlineSeconds: "apps.edgeroll.dev/progress-deadline-seconds",
  stopOnProgressDeadline: "apps.edgeroll.dev/stop-on-progress-deadline",
  rollback: "apps.edgeroll.dev/rollback-on-failure",
} as const;

export const OpenYurtUpdateStrategy = z.string().transform((value, ctx) => {
  switch (value.toLowerCase()) {
    case "auto":
    case "advancedrollingupdate":
      return "AdvancedRollingUpdate" as const;
    case "ota":
      return "OTA" as const;
    default:
      ctx.addIssue({
        code: "custom",
        message: `must be AdvancedRollingUpdate, OTA or auto (any case), got "${value}"`,
      });
      return z.NEVER;
  }
});
export type OpenYurtUpdateStrategy = z.output<typeof OpenYurtUpdateStrategy>;

/** The annotation holds a string: digits alone are an int, `N%` a percent. */
export const OpenYurtMaxUnavailable = z.string().transform((value, ctx): IntOrString => {
  const parsed: IntOrString = /^\d+$/.test(value) ? Number(value) : value;
  const problem = intOrPercentProblem(parsed, { allowZero: false });
  if (problem) {
    ctx.addIssue({ code: "custom", message: problem });
    return z.NEVER;
  }
  return parsed;
});

export interface OpenYurtRollout {
  mode: OpenYurtUpdateStrategy;
  maxUnavailable: IntOrString;
  failurePolicy?: {
    maxFailed: IntOrString;
    podStartTimeoutSeconds: number;
    stopOnProgressDeadline: boolean;
    rollback: boolean;
  };
  progressDeadlineSeconds?: number;
  /** edgeroll's rollout plan, from its annotation (ADR 0053), and the operator's answers to it. */
  rolloutPlan?: { plan: RolloutPlan; answers: PlanAnswers };
  /** edgeroll's maintenance windows, from their annotation (ADR 0054), and their override. */
  maintenance?: SetMaintenance;
  /** edgeroll's analysis checks, from their annotation (ADR 0055). */
  analysis?: Analysis;
}

/** edgeroll's failure budget and deadline annotations, read; each problem with its path. */
function readFailureAnnotations(
  annotations: Record<string, string>,
  issues: FieldIssue[],
): Pick<OpenYurtRollout, "failurePolicy" | "progressDeadlineSeconds"> {
  const path = (name: string) => `metadata.annotations[${name}]`;
  const seconds = (name: string) => {
    const value = annotations[name];
    if (value === undefined) return undefined;
    if (/^\d+$/.test(value) && Number(value) > 0) return Number(value);
    issues.push({ path: path(name), message: `must be a positive integer, got "${value}"` });
    return undefined;
  };
  const read: Pick<OpenYurtRollout, "failurePolicy" | "progressDeadlineSeconds"> = {};
  const deadline = seconds(failureAnnotations.progressDeadlineSeconds);
  if (deadline !== undefined) read.progressDeadlineSeconds = deadline;
  const timeout = seconds(failureAnnotations.podStartTimeoutSeconds);
  const flag = (name: string) => {
    const value = annotations[name];
    if (value !== undefined && value !== "true" && value !== "false") {
      issues.push({ path: path(name), message: `must be "true" or "false", got "${value}"` });
    }
    return value === "true";
  };
  const stopOnProgressDeadline = flag(failureAnnotations.stopOnProgressDeadline);
  const rollback = flag(failureAnnotations.rollback);
  const maxFailed = annotations[failureAnnotations.maxFailed];
  if (maxFailed !== undefined) {
    const parsed: IntOrString = /^\d+$/.test(maxFailed) ? Number(maxFailed) : maxFailed;
    const problem = intOrPercentProblem(parsed, { allowZero: true });
    if (problem) issues.push({ path: path(failureAnnotations.maxFailed), message: problem });
    else {
      read.failurePolicy = {
        maxFailed: parsed,
        podStartTimeoutSeconds: timeout ?? 600,
        stopOnProgressDeadline,
        rollback,
      };
    }
  }
  return read;
}

export type OpenYurtResult =
  | { managed: false }
  | { managed: true; ok: true; rollout: OpenYurtRollout; notices: Notice[] }
  | { managed: true; ok: false; issues: FieldIssue[] };

/**
 * Whether edgeroll manages a plain DaemonSet: OpenYurt's update-strategy annotation is on it,
 * whatever its value (a value it cannot read is an InvalidSpec condition, not "unmanaged").
 * The one answer to "managed?" for the relay, the queue's keys, the tick and the reconcile.
 */
export function isManagedDaemonSet(set: { metadata: { annotations?: Record<string, string> } }) {
  return set.metadata.annotations?.[updateStrategyAnnotation] !== undefined;
}

/**
 * Reads a DaemonSet's OpenYurt annotations. Without the strategy annotation edgeroll does not
 * manage the set; with it, the set must use `OnDelete` or the native controller would roll it too.
 */
export function readOpenYurtRollout(set: DaemonSet): OpenYurtResult {
  const annotations = set.metadata.annotations ?? {};
  if (!isManagedDaemonSet(set)) return { managed: false };
  const strategyValue = annotations[updateStrategyAnnotation];
  const issues: FieldIssue[] = [];
  const strategy = OpenYurtUpdateStrategy.safeParse(strategyValue);
  if (!strategy.success) {
    issues.push({
      path: `metadata.annotations[${updateStrategyAnnotation}]`,
      message: strategy.error.issues[0].message,
    });
  }
  const notices: Notice[] = [];
  let given = annotations[maxUnavailableAnnotation] ?? defaultMaxUnavailable;
  if (/^0+%?$/.test(given)) {
    // OpenYurt's daemonPodUpdater reads a zero as "not set" and uses its default.
    notices.push({
      type: "Normal",
      path: `metadata.annotations[${maxUnavailableAnnotation}]`,
      message: `"${given}" means OpenYurt's default: ${defaultMaxUnavailable} is used`,
    });
    given = defaultMaxUnavailable;
  }
  const maxUnavailable = OpenYurtMaxUnavailable.safeParse(given);
  if (!maxUnavailable.success) {
    issues.push({
      path: `metadata.annotations[${maxUnavailableAnnotation}]`,
      message: maxUnavailable.error.issues[0].message,
    });
  }
  const failure = readFailureAnnotations(annotations, issues);
  const type = set.spec.updateStrategy?.type ?? "RollingUpdate";
  if (type !== "OnDelete") {
    issues.push({
      path: "spec.updateStrategy.type",
      message: `must be OnDelete for ${updateStrategyAnnotation}, got "${type}"`,
    });
  }
  if (strategy.success && strategy.data === "OTA" && failure.failurePolicy?.rollback) {
    // Each node chose its upgrade: what it did is not edgeroll's to undo (ADR 0053).
    issues.push({
      path: `metadata.annotations[${failureAnnotations.rollback}]`,
      message: "cannot be true in OTA mode: each node upgrades itself, a stop takes back the marks",
    });
  }
  const plan = readPlanAnnotation(annotations);
  issues.push(...plan.issues);
  if (plan.value) {
    issues.push(...rolloutPlanIssues(plan.value, { surges: false }, planAnnotationPath));
  }
  const written = readMaintenanceAnnotation(annotations);
  const windows = readSetMaintenance(
    written.value,
    maintenanceAnnotationPath,
    plan.value !== undefined,
    set.metadata,
  );
  issues.push(...written.issues, ...windows.issues);
  const checks = readAnalysisAnnotation(annotations);
  issues.push(
    ...checks.issues,
    ...setAnalysisIssues(checks.value, plan.value, analysisAnnotationPath, planAnnotationPath),
  );
  if (strategy.success && strategy.data === "OTA" && checks.value?.onFailure === "Rollback") {
    // As the failure budget's rollback: what each node chose is not edgeroll's to undo.
    issues.push({
      path: `${analysisAnnotationPath}.onFailure`,
      message: "cannot be Rollback in OTA mode: each node upgrades itself, a failed check stops",
    });
  }
  if (!strategy.success || !maxUnavailable.success || issues.length > 0) {
    return { managed: true, ok: false, issues };
  }
  const answers = plan.value && readPlanAnswers(annotations);
  return {
    managed: true,
    ok: true,
    rollout: {
      mode: strategy.data,
      maxUnavailable: maxUnavailable.data,
      ...failure,
      ...(plan.value && answers
        ? { rolloutPlan: { plan: plan.value, answers: answers.answers } }
        : {}),
      ...(windows.maintenance ? { maintenance: windows.maintenance } : {}),
      ...(checks.value ? { analysis: checks.value } : {}),
    },
    notices: [...notices, ...answers?.notices ?? []],
  };
}
