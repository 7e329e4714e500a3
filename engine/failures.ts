/**
 * A rollout that stops itself (ADR 0035): which pods of the current revision have failed, the
 * failure budget over the nodes updated so far, the progress deadline's clock, and the stop they
 * lead to, kept in the set's status until a new revision or an operator's resume. Pure.
 */
import type { AdvancedDaemonSetStatus, FailurePolicy } from "../api/advanced-daemonset.ts";
import { canonicalJson } from "../api/hash.ts";
import type { Pod, PodTemplateSpec } from "../api/kube-objects.ts";
import type { EpochMillis, RollbackTemplate } from "../api/plan.ts";
import { resolve, type SetConfig } from "./config.ts";
import { formatTime, isPodReady, parseTime, podRevision } from "./pod-node-state.ts";
import type { NodeView } from "./node-view.ts";

type Stop = NonNullable<AdvancedDaemonSetStatus["rolloutStop"]>;

export interface FailedPod {
  name: string;
  node: string;
  reason: string;
}

export interface Judgement {
  failed: FailedPod[];
  /** Nodes with a pod of the current revision, and how many of them may fail. */
  updated: number;
  allowed: number;
  /** In force for the current revision: the rollout deletes no old pod for it. */
  stop?: Stop;
  /** Written this call (a Warning Event says so). */
  newlyStopped: boolean;
  acknowledged?: NonNullable<AdvancedDaemonSetStatus["acknowledgedFailures"]>;
  progress: NonNullable<AdvancedDaemonSetStatus["progress"]>;
  deadlineExceeded: boolean;
  /** When the judgement may change on its own (a deadline, a pod's start timeout). */
  wakeUps: EpochMillis[];
}

/** Waiting reasons of a container that mean the pod will not run: a crash loop or a pull error. */
const failing = new Set([
  "CrashLoopBackOff",
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "CreateContainerConfigError",
  "CreateContainerError",
  "RunContainerError",
]);

/** Why a pod has failed, or undefined; a pod still starting may fail at `startBy`. */
function failure(pod: Pod, now: EpochMillis, timeoutSeconds: number): string | undefined {
  if (pod.status?.phase === "Failed") return "Failed";
  const statuses = (pod.status?.containerStatuses ?? []) as {
    state?: { waiting?: { reason?: string } };
  }[];
  const waiting = statuses.map((s) => s.state?.waiting?.reason).find((r) => failing.has(r ?? ""));
  if (waiting) return waiting;
  const created = parseTime(pod.metadata.creationTimestamp);
  if (!isPodReady(pod) && created !== undefined && now >= created + timeoutSeconds * 1000) {
    return `NotReadyAfter${timeoutSeconds}s`;
  }
  return undefined;
}

/**
 * Judges the current revision's pods on the desired nodes. Undefined when the set asks for
 * neither a failure budget nor a progress deadline: then nothing of this is written.
 */
export function judgeFailures(
  config: SetConfig,
  hash: string,
  desired: NodeView[],
  previous: AdvancedDaemonSetStatus,
  now: EpochMillis,
  isAvailable: (pod: Pod) => boolean,
  context: {
    /** The rollout plan's domain of a node, for a failure budget counted per domain. */
    domainOf?: (node: string) => string;
    /**
     * Maintenance windows: the deadline's clock is held while no outdated node's window is open,
     * and runs from the opening of the open ones (ADR 0054).
     */
    windowed?: { held: boolean; since?: EpochMillis };
    /**
     * The rollout plan waits at a step's pause (ADR 0050): the clock is held while it does, and
     * starts again when the pause ends.
     */
    paused?: { held: boolean; ended: boolean };
    /** The set has analysis checks (ADR 0055): what this call's judgement says of them. */
    analysis?: {
      /** A check measured for the whole set failed: it stops the rollout as a spent budget does. */
      setFailed: boolean;
      /** A check still measures (a gate, a bake): the rollout is unfinished. */
      pending: boolean;
      /** A check counted a measurement this call (passed or failed). */
      counted: boolean;
    };
  } = {},
): Judgement | undefined {
  const { domainOf, windowed, paused, analysis } = context;
  const policy = config.failurePolicy;
  const deadline = config.progressDeadlineSeconds;
  if (!policy && deadline === undefined && !analysis) return undefined;
  let { stop, acknowledged, progress } = carriedOver(previous, config.resumeRevision, hash);
  const timeout = policy?.podStartTimeoutSeconds ?? 600;
  const known = new Set(acknowledged?.pods ?? []);
  const { failed, updated, updatedAvailable, outdated, wakeUps } = tally(
    desired,
    hash,
    (pod) => known.has(pod.metadata.name ?? ""),
    (pod) => failure(pod, now, timeout),
    isAvailable,
    timeout,
  );
  // A counted measurement is progress too: its check moved toward a verdict it reaches within
  // `count` of them, so a bake longer than the deadline that keeps deciding is not cut short;
  // an inconclusive one decides nothing, and the clock runs on (ADR 0055). A plan's pause that
  // ended starts it again from now, written: the next call no longer sees the end (ADR 0050).
  const grew = !progress || updatedAvailable > progress.updatedAvailable ||
    analysis?.counted === true || paused?.ended === true;
  progress = { revision: hash, updatedAvailable, at: grew ? formatTime(now) : progress!.at };
  const clockFrom = Math.max(parseTime(progress.at) ?? now, windowed?.since ?? -Infinity);
  const deadlineAt = deadline !== undefined ? clockFrom + deadline * 1000 : 0;
  // Unfinished while a node is outdated or a check still measures: a last step's gate or a bake
  // that stays inconclusive after the last node is updated still reaches the deadline, and may
  // stop the rollout. A finished one runs no clock and stops for nothing.
  const unfinished = outdated > 0 || analysis?.pending === true;
  const clockRuns = deadline !== undefined && unfinished && !windowed?.held && !paused?.held;
  const deadlineExceeded = clockRuns && now >= deadlineAt;
  if (clockRuns && !deadlineExceeded) wakeUps.push(deadlineAt);

  const allowed = policy ? resolve(policy.maxFailed, updated, true) : Infinity;
  let newlyStopped = false;
  // A failed check of the whole set stops the rollout once no node is outdated and nothing
  // measures too (a bake that failed after the last node): its revision is not complete, and goes
  // back when asked (ADR 0055). The budget and the deadline judge an unfinished rollout only.
  if (!stop && (unfinished || analysis?.setFailed)) {
    const budgeted = unfinished ? policy : undefined;
    const domain = budgeted && domainOf && failed.length <= allowed
      ? domainOverBudget(desired, hash, failed, domainOf, budgeted)
      : undefined;
    const reason = budgeted && (failed.length > allowed || domain)
      ? "FailureBudgetExceeded"
      : analysis?.setFailed
      ? "AnalysisFailed"
      : policy?.stopOnProgressDeadline && deadlineExceeded
      ? "ProgressDeadlineExceeded"
      : undefined;
    if (reason) {
      const pods = (domain ? failed.filter((p) => domainOf!(p.node) === domain.name) : failed)
        .slice(0, 20);
      stop = { revision: hash, reason, at: formatTime(now), pods, ...(domain ? { domain } : {}) };
      newlyStopped = true;
    }
  }
  return {
    failed,
    updated,
    allowed,
    stop,
    newlyStopped,
    acknowledged,
    progress,
    deadlineExceeded,
    wakeUps,
  };
}

/**
 * What the last plan recorded of this revision's rollout: its stop, the failures acknowledged and
 * the progress clock. Resumed by an operator (a resume value naming this revision, not the one
 * already used): the failures that stopped it are acknowledged, and the clock restarts.
 */
function carriedOver(
  previous: AdvancedDaemonSetStatus,
  resume: string | undefined,
  hash: string,
) {
  const stop = previous.rolloutStop?.revision === hash ? previous.rolloutStop : undefined;
  const acknowledged = previous.acknowledgedFailures?.revision === hash
    ? previous.acknowledgedFailures
    : undefined;
  const progress = previous.progress?.revision === hash ? previous.progress : undefined;
  if (
    stop && resume !== undefined && resume.split("/")[0] === hash &&
    resume !== acknowledged?.resumedWith
  ) {
    const pods = [...new Set([...acknowledged?.pods ?? [], ...stop.pods.map((p) => p.name)])];
    return {
      stop: undefined,
      acknowledged: { revision: hash, pods, resumedWith: resume },
      progress: undefined,
    };
  }
  return { stop, acknowledged, progress };
}

/**
 * The desired nodes counted for the judgement: updated (a pod of the revision) or not, updated
 * and available, and the pods of the revision that failed (acknowledged ones left out); and when
 * to judge again each pod not ready yet: once its start timeout has passed.
 */
function tally(
  desired: NodeView[],
  hash: string,
  isAcknowledged: (pod: Pod) => boolean,
  failureOf: (pod: Pod) => string | undefined,
  isAvailable: (pod: Pod) => boolean,
  startTimeoutSeconds: number,
) {
  const failed: FailedPod[] = [];
  const wakeUps: EpochMillis[] = [];
  let updated = 0;
  let updatedAvailable = 0;
  let outdated = 0;
  for (const view of desired) {
    const current = view.live.filter((p) => podRevision(p) === hash);
    if (current.length === 0) outdated++;
    else updated++;
    if (current.some(isAvailable)) updatedAvailable++;
    for (const pod of current) {
      if (isAcknowledged(pod)) continue;
      const why = failureOf(pod);
      if (why) failed.push({ name: pod.metadata.name ?? "", node: view.name, reason: why });
      else if (!isPodReady(pod)) {
        const created = parseTime(pod.metadata.creationTimestamp);
        if (created !== undefined) wakeUps.push(created + startTimeoutSeconds * 1000);
      }
    }
  }
  return { failed, updated, updatedAvailable, outdated, wakeUps };
}

/**
 * A rollout plan's domain whose failed pods are more than `maxFailed` allows of its own updated
 * nodes (ADR 0050): the first such, in name order, or undefined.
 */
function domainOverBudget(
  desired: readonly NodeView[],
  hash: string,
  failed: readonly FailedPod[],
  domainOf: (node: string) => string,
  policy: FailurePolicy,
): NonNullable<Stop["domain"]> | undefined {
  const updated = new Map<string, number>();
  for (const view of desired) {
    if (!view.live.some((p) => podRevision(p) === hash)) continue;
    const domain = domainOf(view.name);
    updated.set(domain, (updated.get(domain) ?? 0) + 1);
  }
  const failedIn = new Map<string, number>();
  for (const pod of failed) {
    const domain = domainOf(pod.node);
    failedIn.set(domain, (failedIn.get(domain) ?? 0) + 1);
  }
  for (const name of [...failedIn.keys()].sort()) {
    const allowed = resolve(policy.maxFailed, updated.get(name) ?? 0, true);
    const count = failedIn.get(name)!;
    if (count > allowed) return { name, failed: count, allowed, updated: updated.get(name) ?? 0 };
  }
  return undefined;
}

/** A JSON merge patch that turns `from` into `to` (a key `to` lacks is null: removed). */
export function mergePatchTo(from: unknown, to: unknown): unknown {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (!isObject(from) || !isObject(to)) return to;
  const patch: Record<string, unknown> = {};
  for (const key of new Set([...Object.keys(from), ...Object.keys(to)])) {
    if (!(key in to)) patch[key] = null;
    else if (!(key in from)) patch[key] = to[key];
    else if (canonicalJson(from[key]) !== canonicalJson(to[key])) {
      patch[key] = mergePatchTo(from[key], to[key]);
    }
  }
  return patch;
}

/** A revision's template as its pods are made from it, or undefined when the set has none. */
export function revisionTemplateOf(
  templates: ReadonlyMap<string, PodTemplateSpec>,
  revision: string,
): PodTemplateSpec | undefined {
  const found = templates.get(revision) as (PodTemplateSpec & { $patch?: string }) | undefined;
  if (!found) return undefined;
  // The native controller's revisions say `$patch: replace`: a directive, not a field.
  const { $patch: _, ...template } = found;
  return template;
}

/**
 * When the rollout stopped (by its failures, its deadline or an operator's abort) and the set asks
 * for it, the template of the last revision that completed goes back on the set (once: the next
 * step reads that revision as current), and its pods replace the new ones within the same budget.
 * Undefined when there is nothing to do.
 */
export function planRollback(
  config: SetConfig,
  hash: string,
  stop: { reason: string } | undefined,
  lastComplete: string | undefined,
  templates: ReadonlyMap<string, PodTemplateSpec>,
  now: EpochMillis,
):
  | { action: RollbackTemplate; record: NonNullable<AdvancedDaemonSetStatus["rollback"]> }
  | undefined {
  // A failed check of the whole set rolls back when its analysis asks, as the budget's policy does.
  const asked = config.failurePolicy?.rollback ||
    (stop?.reason === "AnalysisFailed" && config.analysis?.analysis.onFailure === "Rollback");
  if (!stop || !asked || !lastComplete || lastComplete === hash) return undefined;
  const target = revisionTemplateOf(templates, lastComplete);
  if (!target) return undefined;
  const reason =
    `the rollout of ${hash} stopped (${stop.reason}): back to ${lastComplete}, the last revision that completed`;
  return {
    action: {
      type: "rollbackTemplate",
      reason,
      revision: lastComplete,
      patch: { spec: { template: mergePatchTo(config.template, target) } },
    },
    record: { from: hash, to: lastComplete, at: formatTime(now), reason: stop.reason },
  };
}
