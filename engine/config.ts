/**
 * What the planner needs to know about a set, whatever its kind: an AdvancedDaemonSet validated
 * and defaulted, or an `apps/v1` DaemonSet read through its OpenYurt annotations. `plan` works on
 * this one shape only.
 */
import {
  type AdvancedDaemonSetStatus,
  AdvancedDaemonSetStatus as StatusSchema,
  apiVersion,
  asksPreDownload,
  type FailurePolicy,
  kind,
  type LifecycleHook,
  pausedAnnotation,
  resumeRevisionAnnotation,
} from "../api/advanced-daemonset.ts";
import { isZero, scaleIntOrPercent } from "../api/int-or-percent.ts";
import type { IntOrString, LabelSelector, PodTemplateSpec } from "../api/kube-objects.ts";
import type { FieldIssue, Notice } from "../api/label-selector.ts";
import { readOpenYurtRollout } from "../api/openyurt.ts";
import { planAnnotationPath, type PlanAnswers, type RolloutPlan } from "../api/rollout-plan.ts";
import { validateAdvancedDaemonSet } from "../api/validation.ts";
import { kruiseApiVersion, kruiseAsAdvancedDaemonSet, kruiseKind } from "../api/kruise.ts";
import { writtenStatus } from "../api/written-status.ts";
import { pullJobDeadlineSeconds } from "../api/image-pull.ts";
import type { SetIdentity } from "./revisions.ts";
import type { SetMaintenance } from "../api/maintenance.ts";
import type { Snapshot } from "../api/plan.ts";
import { type Analysis, analysisAnnotationPath, hostIssues } from "../api/analysis.ts";

/** How pods are replaced when the template changes. */
export type UpdateMode =
  /** Standard rolling update without surge: delete old pods within maxUnavailable. */
  | "Recreate"
  /** Standard rolling update with maxSurge: new pod first, old pod deleted once it is available. */
  | "Surge"
  /** Never delete for an update (OnDelete). */
  | "OnDelete"
  /** OpenYurt OTA: mark pods `PodNeedUpgrade`, the node decides. */
  | "OTA";

export interface SetConfig {
  kind: Snapshot["kind"];
  identity: SetIdentity;
  /** The generation the plan reflects, written as the status' `observedGeneration`. */
  generation: number;
  /**
   * OpenYurt DaemonSet: the generation whose ControllerRevision the native controller has not
   * written yet (it writes it, then observes the generation): the plan waits for it.
   */
  revisionAwaited?: number;
  /** Values read as their origin's default, said in the InvalidSpec condition and an Event. */
  notices: Notice[];
  template: PodTemplateSpec;
  selector: LabelSelector;
  minReadySeconds: number;
  burstReplicas: IntOrString;
  revisionHistoryLimit: number;
  mode: UpdateMode;
  maxUnavailable: IntOrString;
  maxSurge: IntOrString;
  partition: IntOrString;
  updateSelector?: LabelSelector;
  paused: boolean;
  preDelete?: LifecycleHook;
  /** InPlaceIfPossible: patch images in place when nothing else changed. */
  inPlace: boolean;
  progressiveCreatePod: boolean;
  /**
   * Kruise's image pre-download, asked by its annotations (ADR 0034): Jobs per node, at most
   * `parallelism` at once, each `timeoutSeconds` at most, once `minUpdatedReadyPods` are Ready.
   */
  preDownload?: { parallelism: number; timeoutSeconds: number; minUpdatedReadyPods: IntOrString };
  /** When the rollout stops itself (ADR 0035). */
  failurePolicy?: FailurePolicy;
  progressDeadlineSeconds?: number;
  /** The revision an operator resumed after it stopped (annotation `resumeRevisionAnnotation`). */
  resumeRevision?: string;
  /**
   * The rollout plan, where it was written (`path`, for the issues only nodes can reveal), and
   * the operator's answers to it (ADRs 0050, 0053).
   */
  rolloutPlan?: { plan: RolloutPlan; answers: PlanAnswers; path: string };
  /** Maintenance windows: pods replaced only while their node's is open (ADR 0054). */
  maintenance?: SetMaintenance;
  /** Analysis checks, and where they were written (ADR 0055). */
  analysis?: { analysis: Analysis; path: string };
  /**
   * AdvancedDaemonSet: edgeroll creates pods and revisions and removes misscheduled ones. OpenYurt
   * DaemonSet: the native controller does, edgeroll only replaces (deletes) or marks old pods.
   */
  ownsPlacement: boolean;
}

export type SetReading =
  | { ok: true; config: SetConfig; previous: AdvancedDaemonSetStatus }
  | { ok: false; managed: boolean; issues: FieldIssue[]; previous: AdvancedDaemonSetStatus };

function parseStatus(raw: unknown): AdvancedDaemonSetStatus {
  const parsed = StatusSchema.safeParse(raw ?? {});
  return parsed.success ? parsed.data : StatusSchema.parse({});
}

/** Resolves an int-or-percent against the desired node count (percent rounded up or down). */
export function resolve(value: IntOrString, desired: number, roundUp: boolean): number {
  return scaleIntOrPercent(value, desired, roundUp);
}

/**
 * The set's update budgets over `desired` nodes, percentages rounded up; both zero means a
 * maxUnavailable of 1, as upstream's DaemonSet controller reads them. The one resolution the
 * engine's phases, `status` and the dashboard use.
 */
export function updateBudget(
  config: Pick<SetConfig, "maxUnavailable" | "maxSurge">,
  desired: number,
): { maxUnavailable: number; maxSurge: number } {
  const maxUnavailable = resolve(config.maxUnavailable, desired, true);
  const maxSurge = resolve(config.maxSurge, desired, true);
  if (desired > 0 && maxUnavailable === 0 && maxSurge === 0) return { maxUnavailable: 1, maxSurge };
  return { maxUnavailable, maxSurge };
}

export function readSet(snapshot: Snapshot): SetReading {
  const meta = snapshot.set.metadata;
  const identityBase = {
    name: meta.name ?? "",
    namespace: meta.namespace ?? "default",
    uid: meta.uid ?? "",
  };
  const reading = snapshot.kind === "AdvancedDaemonSet" || snapshot.kind === "KruiseDaemonSet"
    ? readAdvancedDaemonSet(snapshot, identityBase)
    : readOpenYurtDaemonSet(snapshot, identityBase);
  // Which hosts checks may reach is the measuring controller's configuration, given in the
  // snapshot; a planner that does not measure (a view: status, the dashboard) is given none.
  if (!reading.ok || !reading.config.analysis || !snapshot.analysis) return reading;
  const { analysis, path } = reading.config.analysis;
  const issues = hostIssues(analysis, path, snapshot.analysis.allowedHosts);
  return issues.length > 0
    ? { ok: false, managed: true, issues, previous: reading.previous }
    : reading;
}

type IdentityBase = Pick<SetConfig["identity"], "name" | "namespace" | "uid">;

/**
 * An AdvancedDaemonSet, or a Kruise DaemonSet planned as the AdvancedDaemonSet it is (it owns
 * what it makes under its own apiVersion and kind): its spec validated, Kruise's annotations read.
 */
function readAdvancedDaemonSet(
  snapshot: Exclude<Snapshot, { kind: "DaemonSet" }>,
  identityBase: IdentityBase,
): SetReading {
  const meta = snapshot.set.metadata;
  const kruise = snapshot.kind === "KruiseDaemonSet";
  const asRead = kruise ? kruiseAsAdvancedDaemonSet(snapshot.set) : snapshot.set;
  const identity = kruise
    ? { apiVersion: kruiseApiVersion, kind: kruiseKind, ...identityBase }
    : { apiVersion, kind, ...identityBase };
  const previous = parseStatus(asRead.status);
  const result = validateAdvancedDaemonSet(asRead, kruise ? "annotation" : "field");
  if (!result.ok) return { ok: false, managed: true, issues: result.issues, previous };
  const { set, rollingUpdate, annotations, notices } = result;
  const strategy = set.spec.updateStrategy;
  const rolling = strategy.type === "RollingUpdate";
  return {
    ok: true,
    previous,
    config: {
      kind: "AdvancedDaemonSet",
      identity,
      generation: meta.generation ?? 0,
      notices,
      template: set.spec.template,
      selector: set.spec.selector,
      minReadySeconds: set.spec.minReadySeconds,
      burstReplicas: set.spec.burstReplicas,
      revisionHistoryLimit: set.spec.revisionHistoryLimit,
      mode: !rolling ? "OnDelete" : isZero(rollingUpdate.maxSurge) ? "Recreate" : "Surge",
      maxUnavailable: rollingUpdate.maxUnavailable,
      maxSurge: rollingUpdate.maxSurge,
      partition: rolling ? rollingUpdate.partition : 0,
      updateSelector: rolling ? rollingUpdate.selector : undefined,
      paused: rolling && rollingUpdate.paused,
      preDelete: set.spec.lifecycle?.preDelete,
      inPlace: rolling && rollingUpdate.rollingUpdateType === "InPlaceIfPossible",
      progressiveCreatePod: annotations.progressiveCreatePod ||
        set.spec.scaleStrategy?.partitionedScaling === true,
      ...(rolling && rollingUpdate.failurePolicy
        ? { failurePolicy: rollingUpdate.failurePolicy }
        : {}),
      ...(set.spec.progressDeadlineSeconds !== undefined
        ? { progressDeadlineSeconds: set.spec.progressDeadlineSeconds }
        : {}),
      ...resumeRevisionOf(set.metadata.annotations),
      ...(rolling && rollingUpdate.plan
        ? {
          rolloutPlan: {
            plan: rollingUpdate.plan,
            answers: result.planAnswers,
            path: result.planPath,
          },
        }
        : {}),
      ...(rolling && result.maintenance ? { maintenance: result.maintenance } : {}),
      ...(rolling && strategy.rollingUpdate.analysis
        ? { analysis: { analysis: strategy.rollingUpdate.analysis, path: result.analysisPath } }
        : {}),
      ...(asksPreDownload(set.metadata.annotations)
        ? {
          preDownload: {
            parallelism: annotations.imagePredownloadParallelism ?? 1,
            timeoutSeconds: annotations.imagePredownloadTimeoutSeconds ?? pullJobDeadlineSeconds,
            minUpdatedReadyPods: annotations.imagePredownloadMinUpdatedReadyPods ?? 0,
          },
        }
        : {}),
      ownsPlacement: true,
    },
  };
}

/**
 * A DaemonSet with OpenYurt's update-strategy annotation: rolled by edgeroll, its pods placed by
 * the native DaemonSet controller. Without the annotation it is not edgeroll's.
 */
function readOpenYurtDaemonSet(
  snapshot: Extract<Snapshot, { kind: "DaemonSet" }>,
  identityBase: IdentityBase,
): SetReading {
  const set = snapshot.set;
  const previous = parseStatus(writtenStatus("daemonsets", snapshot) ?? {});
  const generation = set.metadata.generation ?? 0;
  // Until the DaemonSet controller observes the spec, its newest revision may be the old
  // template's. The status says the generation it saw, so a tick looks again (ADR 0039).
  const observed = set.status?.observedGeneration;
  const revisionAwaited = observed !== undefined && observed < generation;
  const yurt = readOpenYurtRollout(set);
  if (!yurt.managed) return { ok: false, managed: false, issues: [], previous };
  if (!yurt.ok) return { ok: false, managed: true, issues: yurt.issues, previous };
  return {
    ok: true,
    previous,
    config: {
      kind: "DaemonSet",
      identity: { apiVersion: "apps/v1", kind: "DaemonSet", ...identityBase },
      generation: revisionAwaited ? observed : generation,
      ...(revisionAwaited ? { revisionAwaited: generation } : {}),
      notices: yurt.notices,
      template: set.spec.template,
      selector: set.spec.selector,
      minReadySeconds: set.spec.minReadySeconds ?? 0,
      burstReplicas: 250,
      revisionHistoryLimit: set.spec.revisionHistoryLimit ?? 10,
      mode: yurt.rollout.mode === "OTA" ? "OTA" : "Recreate",
      ...(yurt.rollout.failurePolicy ? { failurePolicy: yurt.rollout.failurePolicy } : {}),
      ...(yurt.rollout.progressDeadlineSeconds !== undefined
        ? { progressDeadlineSeconds: yurt.rollout.progressDeadlineSeconds }
        : {}),
      ...resumeRevisionOf(set.metadata.annotations),
      ...(yurt.rollout.rolloutPlan
        ? { rolloutPlan: { ...yurt.rollout.rolloutPlan, path: planAnnotationPath } }
        : {}),
      ...(yurt.rollout.maintenance ? { maintenance: yurt.rollout.maintenance } : {}),
      ...(yurt.rollout.analysis
        ? { analysis: { analysis: yurt.rollout.analysis, path: analysisAnnotationPath } }
        : {}),
      maxUnavailable: yurt.rollout.maxUnavailable,
      maxSurge: 0,
      partition: 0,
      paused: set.metadata.annotations?.[pausedAnnotation] === "true",
      progressiveCreatePod: false,
      inPlace: false,
      ownsPlacement: false,
    },
  };
}

/** The revision a resume acknowledges the failures of, when the set carries one (ADR 0035). */
function resumeRevisionOf(annotations: Record<string, string> | undefined) {
  const resumeRevision = annotations?.[resumeRevisionAnnotation];
  return resumeRevision !== undefined ? { resumeRevision } : {};
}
