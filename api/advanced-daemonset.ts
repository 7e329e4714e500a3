/**
 * The AdvancedDaemonSet custom resource (`apps.edgeroll.dev/v1alpha1`, short name `ads`).
 *
 * Field names and defaults are Kruise's Advanced DaemonSet (`apps.kruise.io/v1alpha1` DaemonSet),
 * so a Kruise manifest migrates by changing `apiVersion` and `kind` only. Defaults that depend on
 * other fields (maxUnavailable/maxSurge, the deprecated `Surging` type) are not zod defaults: they
 * are resolved by `effectiveRollingUpdate` in `api/validation.ts`, as Kruise's mutating webhook
 * does, so that `maxSurge: 1` alone does not also get `maxUnavailable: 1`.
 */
import { z } from "zod";
import {
  daemonSetStatusCounters,
  IntOrString,
  LabelSelector,
  ObjectMeta,
  PodTemplateSpec,
  SetCondition,
} from "./kube-objects.ts";
import { RolloutPlan, RolloutPlanStatus, StopReason } from "./rollout-plan.ts";
import { Maintenance, MaintenanceStatus } from "./maintenance.ts";
import { Analysis, AnalysisStatus } from "./analysis.ts";

export const group = "apps.edgeroll.dev";
export const version = "v1alpha1";
export const apiVersion = `${group}/${version}`;
export const kind = "AdvancedDaemonSet";
export const plural = "advanceddaemonsets";

export const RollingUpdateType = z.enum(["Standard", "Surging", "InPlaceIfPossible"]);
export type RollingUpdateType = z.infer<typeof RollingUpdateType>;

/** When a rollout stops itself (ADR 0035): edgeroll's, beyond Kruise. */
export const FailurePolicy = z.object({
  maxFailed: IntOrString.describe(
    "New-revision pods that may fail before the rollout stops: an int, or a percent of the " +
      "nodes updated so far (rounded up). A pod fails when it is Failed, crash-loops, cannot pull " +
      "its image, or is not Ready podStartTimeoutSeconds after its creation.",
  ),
  podStartTimeoutSeconds: z.number().int().min(1).default(600).describe(
    "A new pod not Ready this long after its creation counts as failed.",
  ),
  stopOnProgressDeadline: z.boolean().default(false).describe(
    "Also stop when spec.progressDeadlineSeconds passes without progress.",
  ),
  rollback: z.boolean().default(false).describe(
    "When the rollout stops, put back the template of the last revision that completed; its " +
      "pods then replace the new ones within the same budget.",
  ),
});
export type FailurePolicy = z.infer<typeof FailurePolicy>;

export const RollingUpdate = z.object({
  rollingUpdateType: RollingUpdateType.default("Standard").describe(
    "Standard recreates pods; Surging (deprecated in Kruise) is Standard with maxSurge 1 and " +
      "maxUnavailable 0 unless given; InPlaceIfPossible patches images in place when only images changed.",
  ),
  maxUnavailable: IntOrString.optional().describe(
    "Pods that may be unavailable during the update, an int or a percent of desired (rounded " +
      "up). Defaults to 1 when neither maxUnavailable nor maxSurge is set.",
  ),
  maxSurge: IntOrString.optional().describe(
    "Extra pods above desired during the update, an int or a percent of desired (rounded up). " +
      "Defaults to 0.",
  ),
  partition: IntOrString.optional().describe(
    "Nodes kept on the old revision, an int or a percent of desired (rounded down).",
  ),
  selector: LabelSelector.optional().describe("Only nodes matching this selector are updated."),
  paused: z.boolean().optional().describe(
    "Stops updates; pods are still created on new nodes.",
  ),
  failurePolicy: FailurePolicy.optional().describe(
    "edgeroll's failure budget: past it the rollout stops replacing old pods (ADR 0035).",
  ),
  plan: RolloutPlan.optional().describe(
    "edgeroll's rollout plan: domains by a node label, steps over them, pauses (ADR 0050).",
  ),
  maintenance: Maintenance.optional().describe(
    "edgeroll's maintenance windows: pods are replaced only while their node's window is open " +
      "(ADR 0054).",
  ),
  analysis: Analysis.optional().describe(
    "edgeroll's analysis checks: Prometheus queries and HTTP GETs that gate the plan's steps and " +
      "watch each domain during the rollout (ADR 0055).",
  ),
});
export type RollingUpdate = z.infer<typeof RollingUpdate>;

export const UpdateStrategy = z.object({
  type: z.enum(["RollingUpdate", "OnDelete"]).default("RollingUpdate"),
  // Present, as Kruise's defaulting webhook makes it: Kruise Rollout's webhook and BatchRelease
  // read rollingUpdate's fields without a nil check (ADR 0051). A CRD default of {} that the API
  // server fills in turn (rollingUpdateType Standard).
  rollingUpdate: RollingUpdate.prefault({}),
});
export type UpdateStrategy = z.infer<typeof UpdateStrategy>;

export const LifecycleHook = z.object({
  labelsHandler: z.record(z.string(), z.string()).optional(),
  finalizersHandler: z.array(z.string()).optional(),
  markPodNotReady: z.boolean().optional(),
});
export type LifecycleHook = z.infer<typeof LifecycleHook>;

export const Lifecycle = z.object({
  preDelete: LifecycleHook.optional(),
});
export type Lifecycle = z.infer<typeof Lifecycle>;

export const AdvancedDaemonSetSpec = z.object({
  selector: LabelSelector,
  template: PodTemplateSpec,
  updateStrategy: UpdateStrategy.prefault({}),
  minReadySeconds: z.number().int().default(0),
  burstReplicas: IntOrString.default(250).describe(
    "Pods created at most per reconcile, an int or a percent of desired.",
  ),
  revisionHistoryLimit: z.number().int().default(10),
  progressDeadlineSeconds: z.number().int().min(1).optional().describe(
    "As a Deployment's: no updated pod becoming available for this long sets Progressing False " +
      "with reason ProgressDeadlineExceeded (ADR 0035). While an analysis check still measures, " +
      "after the last node too, a measurement it counts is progress as well (ADR 0055).",
  ),
  lifecycle: Lifecycle.optional(),
  scaleStrategy: z.object({
    partitionedScaling: z.boolean().optional().describe(
      "Partition also holds back creation on nodes without a pod (Kruise v1beta1; the same as " +
        "the daemonset.kruise.io/progressive-create-pod annotation).",
    ),
  }).optional(),
});
export type AdvancedDaemonSetSpec = z.infer<typeof AdvancedDaemonSetSpec>;

/**
 * One action taken and not yet observed. The next reconcile, on any replica, does not repeat an
 * action whose expectation is still pending; past `deadline` it is dropped and re-planned.
 * There are at most as many as the budgets allow (burstReplicas creations, maxUnavailable +
 * maxSurge updates), never one per node.
 */
export const Expectation = z.object({
  action: z.enum(["create", "delete", "patch", "setCondition"]),
  pod: z.string(),
  node: z.string().optional(),
  uid: z.string().optional(),
  revision: z.string().optional(),
  /**
   * What a `setCondition` expects to read back, as `Type=Status` (`InPlaceUpdateReady=True`) or
   * `Type=Status/Reason` (`PodImageReady=False/PullImageFail`); absent: OpenYurt's
   * `PodNeedUpgrade` for `revision`.
   */
  condition: z.string().max(128).optional(),
  /** RFC 3339; after it the expectation is forgotten. */
  deadline: z.string(),
});
export type Expectation = z.infer<typeof Expectation>;

export const AdvancedDaemonSetStatus = z.object({
  ...daemonSetStatusCounters,
  /** The current revision's hash (Kruise's `daemonSetHash`). */
  daemonSetHash: z.string().optional(),
  conditions: z.array(SetCondition).optional(),
  /** edgeroll's bookkeeping: actions taken and not yet observed. */
  expectations: z.array(Expectation).optional(),
  /** RFC 3339: when this set wants to be reconciled again even if nothing is reported. */
  nextCheckAt: z.string().optional(),
  /**
   * The resourceVersion of the pods the last status write was planned from. A controller whose
   * cached pods are older lists them instead, so it never plans from less than the writer saw
   * (an expectation dropped for a pod it has not seen yet).
   */
  observedPodsVersion: z.string().optional(),
  /**
   * Kruise's image pre-download for `revision` (ADR 0034): nodes of old pods in the update's
   * scope, and how many have pulled, are pulling and failed (the first failed nodes named).
   */
  /** The rollout of `revision` stopped itself (ADR 0035): why, when, and the failed pods. */
  rolloutStop: z.object({
    revision: z.string(),
    reason: StopReason.exclude(["Aborted"]),
    at: z.string(),
    pods: z.array(z.object({ name: z.string(), node: z.string(), reason: z.string() })).max(20),
    /** A rollout plan's domain over its own budget, when that stopped it (ADR 0050). */
    domain: z.object({
      name: z.string(),
      failed: z.number().int(),
      allowed: z.number().int(),
      updated: z.number().int(),
    }).optional(),
  }).optional(),
  /** Pods of `revision` whose failure an operator acknowledged by resuming: they no longer count. */
  acknowledgedFailures: z.object({
    revision: z.string(),
    pods: z.array(z.string()).max(1000),
    /** The resume annotation's value that acknowledged them: the same value resumes once. */
    resumedWith: z.string().optional(),
  }).optional(),
  /** The last revision every desired node ran, available: what a rollback returns to. */
  lastCompleteRevision: z.string().optional(),
  /** The template was put back from revision `from` to `to` when the rollout stopped. */
  rollback: z.object({
    from: z.string(),
    to: z.string(),
    at: z.string(),
    reason: z.string(),
  }).optional(),
  /** The updated pods available for `revision`, and when that count last grew (the deadline's clock). */
  progress: z.object({
    revision: z.string(),
    updatedAvailable: z.number().int(),
    at: z.string(),
  }).optional(),
  /** Where the rollout plan of the current revision stands (ADR 0050). */
  plan: RolloutPlanStatus.optional(),
  /** The maintenance windows the outdated nodes wait for (ADR 0054). */
  maintenance: MaintenanceStatus.optional(),
  /** The analysis checks of the current revision, per domain, and their last measurements (ADR 0055). */
  analysis: AnalysisStatus.optional(),
  imagePreDownload: z.object({
    revision: z.string(),
    nodes: z.number().int(),
    pulled: z.number().int(),
    pulling: z.number().int(),
    failed: z.number().int(),
    failedNodes: z.array(z.string()).max(10).optional(),
  }).optional(),
});
export type AdvancedDaemonSetStatus = z.infer<typeof AdvancedDaemonSetStatus>;

export const AdvancedDaemonSet = z.object({
  apiVersion: z.literal(apiVersion),
  kind: z.literal(kind),
  metadata: ObjectMeta,
  spec: AdvancedDaemonSetSpec,
  status: AdvancedDaemonSetStatus.optional(),
});
export type AdvancedDaemonSet = z.infer<typeof AdvancedDaemonSet>;
/** What a user writes: every defaulted field optional. */
export type AdvancedDaemonSetInput = z.input<typeof AdvancedDaemonSet>;

/**
 * For an `apps/v1` DaemonSet in OpenYurt mode the native controller owns `.status`, so edgeroll's
 * own status (same shape as the AdvancedDaemonSet status) is kept as JSON in this annotation.
 */
export const rolloutStatusAnnotation = `${group}/rollout-status`;

/** Annotations Kruise reads on a DaemonSet; edgeroll also accepts them under its own group. */
export const annotationNames = {
  progressiveCreatePod: [
    "daemonset.kruise.io/progressive-create-pod",
    `${group}/progressive-create-pod`,
  ],
  imagePredownloadParallelism: [
    "apps.kruise.io/image-predownload-parallelism",
    `${group}/image-predownload-parallelism`,
  ],
  imagePredownloadTimeoutSeconds: [
    "apps.kruise.io/image-predownload-timeout-seconds",
    `${group}/image-predownload-timeout-seconds`,
  ],
  imagePredownloadMinUpdatedReadyPods: [
    "apps.kruise.io/image-predownload-min-updated-ready-pods",
    `${group}/image-predownload-min-updated-ready-pods`,
  ],
} as const;

/** On a plain DaemonSet, which has no `rollingUpdate.paused`: `edgeroll pause` writes "true". */
export const pausedAnnotation = `${group}/paused`;

/**
 * Written by an operator (`edgeroll resume`): `<revision>/<anything unique>` resumes the rollout
 * of that revision stopped by its failures, once per value (ADR 0035).
 */
export const resumeRevisionAnnotation = `${group}/resume-revision`;

/**
 * Whether a set's spec (an AdvancedDaemonSet's or Kruise's, as read) updates its pods in place
 * (`rollingUpdateType: InPlaceIfPossible`): only such a set may resize them (ADR 0056).
 */
export function updatesInPlace(spec: unknown): boolean {
  const strategy =
    (spec as { updateStrategy?: { rollingUpdate?: { rollingUpdateType?: unknown } } })
      ?.updateStrategy;
  return strategy?.rollingUpdate?.rollingUpdateType === "InPlaceIfPossible";
}

/** Whether a set's annotations ask for Kruise's image pre-download (ADR 0034). */
export function asksPreDownload(annotations: Record<string, string> | undefined): boolean {
  return [
    ...annotationNames.imagePredownloadParallelism,
    ...annotationNames.imagePredownloadTimeoutSeconds,
    ...annotationNames.imagePredownloadMinUpdatedReadyPods,
  ].some((name) => annotations?.[name] !== undefined);
}
