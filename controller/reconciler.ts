/**
 * The reconcile step, the one place where a plan becomes effects (controller-runtime's
 * `reconcileHandler`): read → plan → claim → act → answer. Stateless: what must survive
 * between two calls is in the set's status, written by the claim.
 */
import { isManagedDaemonSet } from "../api/openyurt.ts";
import type { SetCondition } from "../api/kube-objects.ts";
import type { Action, Awaited, EpochMillis, Plan, PlanEvent, Snapshot } from "../api/plan.ts";
import { type EventWindows, eventWriter, foldSetEvents } from "./event-fold.ts";
import type { Expectation } from "../api/advanced-daemonset.ts";
import {
  type ClaimTarget,
  claimTarget,
  type KubeClient,
  type SnapshotRead,
} from "../kube/client.ts";
import { writtenStatus } from "../api/written-status.ts";
import { isConflict } from "../kube/errors.ts";
import { type ActionOutcome, type ActionResult, executeActions } from "../kube/executor.ts";
import type { KubeObject } from "../kube/wire-objects.ts";
import { kruiseSetKind, setKey, type SetRef } from "../api/set-ref.ts";
import type { Logger } from "../lib/log.ts";
import { ControllerError } from "./errors.ts";
import { RecentMap } from "../lib/recent-map.ts";
import type { Metrics } from "./metrics.ts";
import type { Analyzer } from "./analysis.ts";

export type Planner = (snapshot: Snapshot, now: EpochMillis) => Plan;

export interface ReconcilerDeps {
  kube: KubeClient;
  plan: Planner;
  /** Milliseconds since the epoch; the only clock the step reads. */
  clock: () => EpochMillis;
  logger: Logger;
  metrics?: Metrics;
  /** Claims lost to another writer before giving up with 409. */
  maxConflicts?: number;
  /** Folds the set's Events over time (a long-running controller's); none folds per step only. */
  setEvents?: EventWindows;
  /**
   * Measures the analysis checks due before each plan (ADR 0055); without one, a set with checks
   * is InvalidSpec: no host is allowed.
   */
  analyzer?: Analyzer;
}

export interface ActionReport {
  type: Action["type"];
  target: string;
  reason: string;
  /** `planned` in a dry run. */
  result: ActionResult | "planned";
  error?: string;
}

export interface ReconcileAnswer {
  set: string;
  managed: boolean;
  dryRun: boolean;
  /** True when the status was written (the claim). */
  claimed: boolean;
  /** Claims lost to another writer, each followed by a fresh read and plan. */
  conflicts: number;
  actions: ActionReport[];
  awaited: Awaited[];
  /** Seconds until the set wants another look; null when nothing is pending. */
  requeueAfter: number | null;
  status: Plan["status"] | null;
  conditions: SetCondition[];
  /** Why nothing was done, when nothing was. */
  note?: string;
}

export interface ReconcileOptions {
  dryRun?: boolean;
}

export type Reconcile = (ref: SetRef, options?: ReconcileOptions) => Promise<ReconcileAnswer>;

/** Revisions (by set UID and hash) whose pods the API server admitted, remembered at most. */
const maxAdmitted = 1_000;
/** Sets whose last claim time is remembered: far above any cluster's count of sets. */
const maxRemembered = 50_000;
/**
 * A status that only counts (pods ready, available, updated) or only forgets expectations is
 * written at most this often while nothing is decided: each pod turning Ready, and each pod
 * seen created or deleted as expected, would otherwise be a write (ADR 0038).
 */
export const countsIntervalMs = 1_000;

export function createReconciler(deps: ReconcilerDeps): Reconcile {
  const maxConflicts = deps.maxConflicts ?? 3;
  const admitted = new RecentMap<string, true>(maxAdmitted);
  const lastClaims = new RecentMap<string, EpochMillis>(maxRemembered);
  const step: StepDeps = { ...deps, admitted, lastClaims };
  return async (ref, { dryRun = false } = {}) => {
    const started = performance.now();
    const log = deps.logger.with({ set: setKey(ref) });
    let result = "error";
    try {
      for (let conflicts = 0;; conflicts++) {
        const answer = await reconcileOnce(step, ref, dryRun, conflicts, log);
        if (answer) {
          result = answerResult(answer);
          return answer;
        }
        if (conflicts + 1 >= maxConflicts) {
          result = "conflict";
          throw new ControllerError(
            "Conflict",
            `${setKey(ref)} kept changing: ${maxConflicts} claims lost`,
          );
        }
      }
    } catch (err) {
      if (err instanceof ControllerError && err.kind === "NotFound") result = "notfound";
      throw err;
    } finally {
      deps.metrics?.observeReconcile(result, (performance.now() - started) / 1000);
    }
  };
}

function answerResult(answer: ReconcileAnswer): string {
  if (!answer.managed) return "unmanaged";
  if (answer.actions.some((a) => a.result === "failed")) return "partial";
  return answer.claimed || answer.actions.length > 0 ? "acted" : "noop";
}

interface StepDeps extends ReconcilerDeps {
  /**
   * `<set uid>/<revision>` already proven admissible: a cache (losing it costs one dry run),
   * not rollout state. Oldest forgotten first.
   */
  admitted: RecentMap<string, true>;
  /**
   * When each set's status was last written by this controller: a counts-only change waits
   * until `countsIntervalMs` after it. Losing it costs a write, never a decision.
   */
  lastClaims: RecentMap<string, EpochMillis>;
}

/**
 * The plan, once the API server has been asked whether the pods it writes can exist: a
 * template it refuses (a container without an image, a name too long) yields InvalidSpec and
 * no action, instead of deleting old pods for new ones that every create will refuse (#21).
 */
async function admittedPlan(
  deps: StepDeps,
  snapshot: Snapshot,
  now: EpochMillis,
  log: Logger,
): Promise<Plan> {
  const plan = deps.plan(snapshot, now);
  const probe = plan.probe;
  if (!probe) return plan;
  const key = `${snapshot.set.metadata.uid}/${probe.revision}`;
  if (deps.admitted.has(key)) return plan;
  const objects = [...(probe.revisionObject ? [probe.revisionObject] : []), probe.pod];
  const refusal = await deps.kube.refusalOf(
    snapshot.set.metadata.namespace ?? "",
    objects as KubeObject[],
  );
  if (refusal === undefined) {
    deps.admitted.set(key, true);
    return plan;
  }
  log.warn("the API server refuses the template's pods; nothing is done", {
    revision: probe.revision,
    error: refusal,
  });
  return deps.plan({ ...snapshot, refused: { revision: probe.revision, message: refusal } }, now);
}

/** One read → plan → claim → act; undefined when the claim was lost (read again). */
async function reconcileOnce(
  deps: StepDeps,
  ref: SetRef,
  dryRun: boolean,
  conflicts: number,
  log: Logger,
): Promise<ReconcileAnswer | undefined> {
  if (ref.kind === kruiseSetKind && !deps.kube.kruise) {
    throw new ControllerError(
      "Refused",
      `${
        setKey(ref)
      }: Kruise compatibility mode is off (serve --kruise); kruise-manager may own it`,
      "KruiseModeOff",
    );
  }
  const phases = new PhaseTimer();
  // After a lost claim, the set as the API server has it now, not as a watch last saw it.
  const snapshot = await deps.kube.readSnapshot(ref, { fresh: conflicts > 0 });
  phases.end("read");
  if (!snapshot) throw new ControllerError("NotFound", `${setKey(ref)} not found`);
  const base = { set: setKey(ref), dryRun, conflicts };
  if (snapshot.kind === "DaemonSet" && !isManagedDaemonSet(snapshot.set)) {
    return {
      ...base,
      managed: false,
      claimed: false,
      actions: [],
      awaited: [],
      requeueAfter: null,
      status: null,
      conditions: [],
      note: "not managed by edgeroll: no apps.openyurt.io/update-strategy annotation",
    };
  }
  const now = deps.clock();
  const analysis = await deps.analyzer?.measure(ref.kind, snapshot, now);
  if (analysis) phases.end("measure");
  const plan = await admittedPlan(deps, analysis ? { ...snapshot, analysis } : snapshot, now, log);
  phases.end("plan");
  const answer = (actions: ActionReport[], claimed: boolean): ReconcileAnswer => ({
    ...base,
    managed: true,
    claimed,
    actions,
    awaited: plan.awaited,
    requeueAfter: plan.requeueAfterSeconds,
    status: plan.status,
    conditions: plan.conditions,
  });
  if (dryRun) {
    return answer(
      plan.actions.map((a) => report({ action: a, result: "skipped" }, "planned")),
      false,
    );
  }

  const claim = await claimStatus(deps, ref, snapshot, plan, now, conflicts, log);
  if (!claim) return undefined;
  phases.end("claim");
  if (claim.deferredSeconds !== undefined) {
    const requeueAfter = Math.min(plan.requeueAfterSeconds ?? Infinity, claim.deferredSeconds);
    return { ...answer([], false), requeueAfter };
  }
  const { reports, status } = await carryOut(deps, ref, snapshot, plan, now, claim, log, phases);
  if (claim.changed || reports.length > 0) {
    log.info("reconciled", {
      actions: reports.length,
      failed: reports.filter((r) => r.result === "failed").length,
      requeueAfter: plan.requeueAfterSeconds,
      ms: phases.spent,
    });
  }
  deps.metrics?.observeSet(base.set, status, plan.budget);
  return { ...answer(reports, claim.changed), status };
}

interface Claim {
  /** The plan's status differs from the one written: it was written now. */
  changed: boolean;
  /** The status as written, with the pods' resourceVersion the plan saw. */
  stamped: Plan["status"];
  /** The set (and RolloutStatus) as the claim left them; undefined when nothing was written. */
  claimed?: ClaimTarget;
  /** A counts-only change not written yet: look again in this many seconds. */
  deferredSeconds?: number;
}

/**
 * Writes the plan's status when it differs from the one written, with a resourceVersion
 * precondition: the claim. Undefined when another writer won it (the caller reads again).
 */
async function claimStatus(
  deps: StepDeps,
  ref: SetRef,
  snapshot: SnapshotRead,
  plan: Plan,
  now: EpochMillis,
  conflicts: number,
  log: Logger,
): Promise<Claim | undefined> {
  const written = writtenStatus(ref.kind, snapshot);
  const changed = !deepEqual(unstamped(plan.status), unstamped(written));
  const key = setKey(ref);
  const sinceLast = now - (deps.lastClaims.get(key) ?? Number.NEGATIVE_INFINITY);
  if (
    changed && plan.actions.length === 0 && sinceLast < countsIntervalMs &&
    mayWait(plan.status, written)
  ) {
    const stamped = { ...plan.status, observedPodsVersion: snapshot.podsVersion };
    return { changed: false, stamped, deferredSeconds: (countsIntervalMs - sinceLast) / 1000 };
  }
  // What this plan saw of the pods, so no later reader plans from less (kube/cache.ts).
  const stamped = { ...plan.status, observedPodsVersion: snapshot.podsVersion };
  if (!changed) return { changed, stamped };
  try {
    const claimed = await deps.kube.claimStatus(ref.kind, claimTarget(snapshot), stamped);
    deps.lastClaims.set(key, now);
    return { changed, stamped, claimed };
  } catch (err) {
    if (!isConflict(err)) throw err;
    log.info("status claim lost, reading again", { attempt: conflicts + 1 });
    return undefined;
  }
}

/**
 * Carries out the claimed plan's actions within the burst, takes back the expectations of
 * those that did not land, and records the Events of those that did.
 */
async function carryOut(
  deps: StepDeps,
  ref: SetRef,
  snapshot: SnapshotRead,
  plan: Plan,
  now: EpochMillis,
  claim: Claim,
  log: Logger,
  phases: PhaseTimer,
): Promise<{ reports: ActionReport[]; status: Plan["status"] }> {
  const outcomes = await executeActions(deps.kube, ref, plan.actions, {
    burst: plan.burst,
    now: new Date(now),
  });
  phases.end("act");
  deps.metrics?.observeActions(outcomes);
  const notLanded = outcomes.filter((o) => o.result === "failed" || o.result === "skipped");
  // A create whose answer was lost (a timeout, a 5xx) may have made its pod: its expectation
  // stays until its deadline, so no later plan creates a second pod on that node meanwhile.
  const mayHaveLanded = (o: ActionOutcome) =>
    o.result === "failed" && o.action.type === "createPod" && o.error?.retryable !== false;
  const withdrawn = notLanded.filter((o) => !mayHaveLanded(o));
  const status = claim.claimed && withdrawn.length > 0
    ? await withdrawExpectations(deps, ref, claim.claimed, claim.stamped, withdrawn, log)
    : claim.stamped;
  const missing = new Set(notLanded.map((o) => podOf(o.action)));
  await recordEvents(
    deps,
    ref,
    snapshot,
    plan.events.filter((e) => !missing.has(e.pod)),
    new Date(now),
    log,
  );
  phases.end("events");
  const reports = outcomes.map((o) => report(o));
  for (const r of reports.filter((r) => r.result === "failed")) {
    log.warn("action failed", { action: r.type, target: r.target, error: r.error });
  }
  return { reports, status };
}

/** Milliseconds spent in each phase of a step, for the log line that reports it. */
class PhaseTimer {
  readonly spent: Record<string, number> = {};
  #last = performance.now();

  end(phase: string) {
    const now = performance.now();
    this.spent[phase] = Math.round(now - this.#last);
    this.#last = now;
  }
}

/** What of a status only counts: it may wait (`countsIntervalMs`); the rest is decided. */
const counts = new Set([
  "currentNumberScheduled",
  "numberMisscheduled",
  "desiredNumberScheduled",
  "numberReady",
  "updatedNumberScheduled",
  "numberAvailable",
  "numberUnavailable",
  "progress",
]);

/**
 * Whether `next` differs from the `written` status only in what may wait: counts, conditions'
 * messages and times, and expectations it no longer holds. The engine forgets an expectation
 * once the pod is seen as expected or its deadline has passed; a reader of the written one finds
 * the same and plans alike, so forgetting it is no decision. A new expectation always is.
 */
function mayWait(next: unknown, written: unknown): boolean {
  const before = expectationsOf(written);
  return expectationsOf(next).every((e) => before.some((b) => deepEqual(b, e))) &&
    deepEqual(decided(next), decided(written));
}

function expectationsOf(status: unknown): unknown[] {
  const expectations = (status as { expectations?: unknown } | undefined)?.expectations;
  return Array.isArray(expectations) ? expectations : [];
}

/**
 * A status's decisions: without its counts and expectations (compared by `mayWait`), its
 * conditions without their messages and times.
 */
function decided(status: unknown): unknown {
  if (typeof status !== "object" || status === null) return status;
  const rest = Object.entries(unstamped(status) as Record<string, unknown>)
    .filter(([field]) => !counts.has(field) && field !== "expectations");
  return Object.fromEntries(rest.map(([field, value]) => [
    field,
    field === "conditions" && Array.isArray(value)
      ? value.map((c: { type?: string; status?: string; reason?: string }) => [
        c.type,
        c.status,
        c.reason,
      ])
      : value,
  ]));
}

/** A status as the engine sees it: without the stamp the reconciler adds. */
function unstamped(status: unknown): unknown {
  if (typeof status !== "object" || status === null) return status;
  const { observedPodsVersion: _stamp, ...rest } = status as Record<string, unknown>;
  return rest;
}

/** The pod an action writes, as expectations name it. */
function podOf(action: Action): string | undefined {
  switch (action.type) {
    case "createPod":
      return action.pod.metadata.name;
    case "deletePod":
    case "patchPod":
    case "setPodCondition":
      return action.name;
    default:
      return undefined;
  }
}

const expectationKind: Partial<Record<Action["type"], Expectation["action"]>> = {
  createPod: "create",
  deletePod: "delete",
  patchPod: "patch",
  setPodCondition: "setCondition",
};

/**
 * The claim recorded every planned action as expected; those that did not land (failed, or
 * past the burst) are taken back, so the next reconcile plans them again at once instead of
 * waiting for their deadline. A lost race here only costs that wait.
 */
async function withdrawExpectations(
  deps: StepDeps,
  ref: SetRef,
  claimed: ClaimTarget,
  status: Plan["status"],
  notLanded: ActionOutcome[],
  log: Logger,
): Promise<Plan["status"]> {
  const withdrawn = new Set(
    notLanded.map(({ action }) => `${expectationKind[action.type]}/${podOf(action)}`),
  );
  const expectations = (status.expectations ?? []).filter((e) =>
    !withdrawn.has(`${e.action}/${e.pod}`)
  );
  if (expectations.length === (status.expectations ?? []).length) return status;
  const { expectations: _all, ...rest } = status;
  const repaired: Plan["status"] = expectations.length > 0 ? { ...rest, expectations } : rest;
  try {
    await deps.kube.claimStatus(ref.kind, claimed, repaired);
    return repaired;
  } catch (err) {
    log.warn("expectations of actions not taken stay until their deadline", {
      error: (err as Error).message,
    });
    return status;
  }
}

/**
 * Events of the actions that landed, a few at a time: those about pods on them, those about the
 * set folded (one per reason) and, where the controller keeps windows, folded over time too.
 */
async function recordEvents(
  deps: ReconcilerDeps,
  ref: SetRef,
  snapshot: Snapshot,
  events: PlanEvent[],
  now: Date,
  log: Logger,
) {
  const write = eventWriter(deps.kube, log);
  const onPod = (event: PlanEvent): KubeObject => {
    const pod = snapshot.pods.find((p) => p.metadata.name === event.pod);
    return {
      apiVersion: "v1",
      kind: "Pod",
      metadata: pod?.metadata ?? { name: event.pod, namespace: snapshot.set.metadata.namespace },
    };
  };
  const set = snapshot.set as KubeObject;
  const onSet = events.filter((e) => e.onSet);
  const writes: [KubeObject, PlanEvent][] = events.filter((e) => !e.onSet)
    .map((e) => [e.pod ? onPod(e) : set, e]);
  if (deps.setEvents) await deps.setEvents.record(setKey(ref), set, onSet);
  else writes.push(...foldSetEvents(onSet).map((e): [KubeObject, PlanEvent] => [set, e]));
  const parallel = 16;
  for (let i = 0; i < writes.length; i += parallel) {
    await Promise.all(
      writes.slice(i, i + parallel).map(([involved, e]) => write(involved, e, now)),
    );
  }
}

function targetOf(action: Action): string {
  switch (action.type) {
    case "createPod":
      return `pod/${action.pod.metadata.name} on node/${action.node}`;
    case "deletePod":
      return `pod/${action.name}${action.node ? ` on node/${action.node}` : ""}`;
    case "patchPod":
    case "setPodCondition":
      return `pod/${action.name}`;
    case "createRevision":
      return `controllerrevision/${action.revisionObject.metadata.name}`;
    case "patchRevision":
    case "deleteRevision":
      return `controllerrevision/${action.name}`;
    case "createJob":
      return `job/${action.job.metadata.name} on node/${action.node}`;
    case "deleteJob":
      return `job/${action.name}`;
    case "rollbackTemplate":
      return `template back to revision ${action.revision}`;
  }
}

function report(
  outcome: ActionOutcome,
  result: ActionReport["result"] = outcome.result,
): ActionReport {
  return {
    type: outcome.action.type,
    target: targetOf(outcome.action),
    reason: outcome.action.reason,
    result,
    ...(outcome.error ? { error: outcome.error.message } : {}),
  };
}

/** Structural equality, blind to key order (a status read back keeps the server's order). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bs = b as unknown[];
    return a.length === bs.length && a.every((x, i) => deepEqual(x, bs[i]));
  }
  const ao = a as Record<string, unknown>, bo = b as Record<string, unknown>;
  const keys = (o: Record<string, unknown>) => Object.keys(o).filter((k) => o[k] !== undefined);
  const ak = keys(ao), bk = keys(bo);
  return ak.length === bk.length &&
    ak.every((k) => Object.hasOwn(bo, k) && deepEqual(ao[k], bo[k]));
}
