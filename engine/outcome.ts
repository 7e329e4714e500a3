/**
 * What a plan reports: the status as upstream counts it (nodes, not pods), the conditions that
 * say why the set waits, the awaited items and when to look again. Also the plan of a set that is
 * invalid or not managed.
 */
import type { Notice } from "../api/label-selector.ts";
import type { AdvancedDaemonSetStatus, Expectation } from "../api/advanced-daemonset.ts";
import { buildConditions, type ConditionState, type ConditionType, plural } from "./conditions.ts";
import type { readSet, SetConfig } from "./config.ts";
import {
  availableAt,
  formatTime,
  isPodAvailable,
  isPodReady,
  parseTime,
  podRevision,
} from "./objects.ts";
import {
  expectationTimeoutSeconds,
  nextPoll,
  type NodeView,
  type PlanBuilder,
} from "./plan-builder.ts";
import type { EpochMillis, Plan } from "../api/plan.ts";

/** The reconcile answer lists at most this many awaited items; the rest are summed up. */
const maxAwaitedListed = 20;
/** BudgetExhausted names at most this many pods. */
const maxPodsNamed = 10;
/**
 * How often a wait whose end only the cluster knows is looked at once its first polls (1 … 32 s,
 * `nextPoll`) are spent: a pod starts when its kubelet says, and with the tick alone no event
 * brings the set back sooner.
 */
export const startingPodPollSeconds = 30;

/** A pod that may still become ready: one that has not ended (Failed or Succeeded). */
const mayStart = (pod: { status?: { phase?: string } }) =>
  pod.status?.phase !== "Failed" && pod.status?.phase !== "Succeeded";

export function invalidOrUnmanagedPlan(
  reading: Extract<ReturnType<typeof readSet>, { ok: false }>,
  now: EpochMillis,
  generation: number | undefined,
): Plan {
  const previous = reading.previous;
  if (!reading.managed) {
    return {
      actions: [],
      status: previous,
      conditions: previous.conditions ?? [],
      events: [],
      requeueAfterSeconds: null,
      awaited: [{
        what: "annotation apps.openyurt.io/update-strategy",
        why: "this DaemonSet is not managed by edgeroll",
      }],
    };
  }
  const message = reading.issues.map((i) => `${i.path}: ${i.message}`).join("; ");
  const off = (reason: string): ConditionState => ({ status: false, reason, message: "" });
  const { conditions, events } = buildConditions(
    {
      Progressing: off("InvalidSpec"),
      Complete: off("InvalidSpec"),
      Paused: off("InvalidSpec"),
      BudgetExhausted: off("InvalidSpec"),
      InvalidSpec: { status: true, reason: "InvalidSpec", message },
    },
    previous.conditions,
    now,
  );
  const status: AdvancedDaemonSetStatus = {
    ...previous,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    conditions,
  };
  delete status.nextCheckAt;
  return {
    actions: [],
    status,
    conditions,
    events,
    requeueAfterSeconds: null,
    awaited: [{ what: "a valid spec", why: message }],
  };
}

export interface Outcome {
  config: SetConfig;
  previous: AdvancedDaemonSetStatus;
  collisionCount: number;
  /** Undefined while an OpenYurt set has no revision yet. */
  hash?: string;
  views: NodeView[];
  pending: Expectation[];
  b: PlanBuilder;
  now: EpochMillis;
  /** Nodes the update may reach (partition and update selector applied). */
  inScope: Set<string>;
}

/** Status as upstream counts it (nodes, not pods), conditions, awaited items and the requeue. */
/** InvalidSpec when the spec was read: False, saying which values were read as defaults. */
function validity(notices: Notice[]): ConditionState {
  if (notices.length === 0) return { status: false, reason: "Valid", message: "" };
  return {
    status: false,
    reason: "Defaulted",
    message: notices.map((n) => `${n.path}: ${n.message}`).join("; "),
    event: notices.some((n) => n.type === "Warning") ? "Warning" : "Normal",
  };
}

/** The first few names, and how many more. */
function namedList(names: string[]): string {
  return names.slice(0, maxPodsNamed).join(", ") +
    (names.length > maxPodsNamed ? ` and ${names.length - maxPodsNamed} more` : "");
}

export function finish(o: Outcome): Plan {
  const { config, previous, hash, b, now } = o;
  const minReady = config.minReadySeconds;
  const desired = o.views.filter((v) => v.placement.shouldRun);
  let current = 0, ready = 0, availableCount = 0, updated = 0, misscheduled = 0;
  // outdated: nodes without a current pod; onOld: those of them running an old one.
  let outdated = 0, onOld = 0, outdatedInScope = 0, outdatedInScopeReady = 0, settling = 0;
  /** Nodes NotReady or unreachable whose pod waits for them on an old revision (ADR 0006). */
  const cutOnOld: string[] = [];
  for (const view of o.views) {
    // Counted as observed (our own deletions not yet seen still count), so a repeated plan on
    // the same cluster writes the same status.
    const observed = view.observed;
    if (!view.placement.shouldRun) {
      if (observed.length > 0) misscheduled++;
      continue;
    }
    if (view.live.length + view.leaving.length > 0) current++;
    if (observed.some(isPodReady)) ready++;
    else if (view.ready && observed.some(mayStart)) {
      b.polls.push(
        Math.max(
          ...observed.filter(mayStart).map((p) => parseTime(p.metadata.creationTimestamp) ?? now),
        ),
      );
    }
    if (observed.some((p) => isPodAvailable(p, minReady, now))) availableCount++;
    else if (view.ready) settling++;
    const isUpdated = hash !== undefined && observed.some((p) => podRevision(p) === hash);
    if (isUpdated) updated++;
    else {
      outdated++;
      if (observed.length > 0) onOld++;
      if (o.inScope.has(view.name)) {
        outdatedInScope++;
        if (view.ready) outdatedInScopeReady++;
        else if (observed.length > 0) cutOnOld.push(view.name);
      }
    }
    for (const pod of observed) {
      const at = availableAt(pod, minReady);
      if (at !== undefined && at > now) {
        b.wait(
          `pod/${pod.metadata.name} available`,
          `ready, counting minReadySeconds ${minReady}`,
          at,
        );
      }
    }
  }
  const expectations = [...o.pending, ...b.expectations];
  for (const exp of o.pending) {
    b.wait(
      `${exp.action} pod/${exp.pod} observed`,
      "an earlier action is not visible yet",
      parseTime(exp.deadline),
    );
  }
  // An action is looked at again soon after it was taken, and at its deadline at the latest.
  for (const exp of expectations) {
    const deadline = parseTime(exp.deadline) ?? now;
    b.wakeUps.push(deadline);
    b.polls.push(deadline - expectationTimeoutSeconds * 1000);
  }
  const wakeUps = b.wakeUps.filter((t) => t > now);
  // Written to status: instants that do not move from call to call (a wait's first poll, even
  // once passed), so a repeated plan writes the same status.
  const nextCheck = Math.min(...wakeUps, ...b.polls.map((since) => since + 1000));
  const nextCheckAt = Number.isFinite(nextCheck) ? formatTime(nextCheck) : undefined;
  const nextLook = Math.min(
    ...wakeUps,
    ...b.polls.map((since) => nextPoll(since, now, startingPodPollSeconds)),
  );
  // More work than one call may do: come back soon, but only when this call did some (a cap
  // held by actions still unobserved waits for them or their deadline instead).
  const requeueAfterSeconds = b.moreWork && b.actions.length > 0
    ? 1
    : Number.isFinite(nextLook)
    ? Math.max(1, Math.ceil((nextLook - now) / 1000))
    : null;

  const counts = `${updated}/${desired.length} updated, ${availableCount} available`;
  const complete = hash !== undefined && outdated === 0 && availableCount === desired.length &&
    expectations.length === 0;
  const podActions = b.actions.filter((a) =>
    a.type.endsWith("Pod") || a.type === "setPodCondition"
  );
  const busy = podActions.length > 0 || expectations.length > 0 || settling > 0;
  const progressing = ((): ConditionState => {
    if (hash === undefined) {
      return { status: false, reason: "WaitingForRevision", message: "no ControllerRevision yet" };
    }
    if (complete) return { status: false, reason: "Complete", message: counts };
    if (busy) return { status: true, reason: "RollingUpdate", message: counts };
    if (config.paused) return { status: false, reason: "Paused", message: counts };
    if (config.mode === "OnDelete") {
      return {
        status: false,
        reason: "OnDelete",
        message: `${plural(onOld, "pod")} wait to be deleted by hand; ${counts}`,
      };
    }
    if (config.mode === "OTA") {
      // Every live pod off the revision is marked, on a node the set still wants or not.
      const marked = o.views.reduce(
        (n, v) => n + v.live.filter((p) => podRevision(p) !== hash).length,
        0,
      );
      return {
        status: false,
        reason: "WaitingForNodes",
        message: `${
          plural(marked, "pod")
        } marked PodNeedUpgrade, upgraded from their node; ${counts}`,
      };
    }
    if (outdatedInScope > 0 && outdatedInScopeReady === 0) {
      return {
        status: false,
        reason: "WaitingForNodes",
        message: `${
          plural(outdatedInScope, "NotReady node")
        } updated when they come back; ${counts}`,
      };
    }
    if (outdatedInScope === 0 && outdated > 0) {
      return {
        status: false,
        reason: "UpdateScopeReached",
        message: `${
          plural(outdated, "node")
        } kept on the old revision by partition or selector; ${counts}`,
      };
    }
    return { status: true, reason: "RollingUpdate", message: counts };
  })();
  const named = namedList(b.budgetHolders);
  const states: Record<ConditionType, ConditionState> = {
    Progressing: progressing,
    Complete: complete
      ? {
        status: true,
        reason: "Complete",
        message: `all ${plural(desired.length, "node")} run revision ${hash} and are available`,
      }
      : cutOnOld.length > 0 && outdatedInScopeReady === 0
      ? {
        // Everything reachable is done: say which nodes the rollout waits for, once.
        status: false,
        reason: "NodesUnreachable",
        message: `${
          plural(cutOnOld.length, "NotReady node")
        } run an old revision, updated when they come back: ${namedList(cutOnOld)}`,
        event: "Normal",
      }
      : { status: false, reason: "Incomplete", message: counts },
    Paused: config.paused && onOld > 0
      ? {
        status: true,
        reason: "Paused",
        message: `${plural(onOld, "node")} wait for the update`,
      }
      : { status: false, reason: "NotPaused", message: "" },
    BudgetExhausted: b.budgetBlocked > 0
      ? {
        status: true,
        reason: "BudgetExhausted",
        message: `${b.budgetMessage}: ${named}; ${plural(b.budgetBlocked, "node")} wait`,
      }
      : { status: false, reason: "WithinBudget", message: "" },
    InvalidSpec: validity(config.notices),
  };
  const { conditions, events } = buildConditions(states, previous.conditions, now);
  // The set-wide reasons to wait, first in the list: the per-pod items follow.
  const why = [
    ...(states.Paused.status
      ? [{ what: "rollingUpdate.paused: false", why: states.Paused.message }]
      : []),
    ...(!progressing.status && !complete &&
        ["OnDelete", "WaitingForNodes", "UpdateScopeReached"].includes(progressing.reason)
      ? [{ what: progressing.reason, why: progressing.message }]
      : []),
    ...(states.BudgetExhausted.status
      ? [{ what: "update budget", why: states.BudgetExhausted.message }]
      : []),
  ];
  b.awaited.unshift(...why);

  const status: AdvancedDaemonSetStatus = {
    currentNumberScheduled: current,
    numberMisscheduled: misscheduled,
    desiredNumberScheduled: desired.length,
    numberReady: ready,
    observedGeneration: config.generation,
    updatedNumberScheduled: updated,
    numberAvailable: availableCount,
    numberUnavailable: desired.length - availableCount,
    collisionCount: o.collisionCount,
    ...(hash !== undefined ? { daemonSetHash: hash } : {}),
    conditions,
    ...(expectations.length > 0 ? { expectations } : {}),
    ...(nextCheckAt !== undefined ? { nextCheckAt } : {}),
  };
  const awaited = b.awaited.length > maxAwaitedListed
    ? [
      ...b.awaited.slice(0, maxAwaitedListed),
      { what: `${b.awaited.length - maxAwaitedListed} more`, why: "not listed" },
    ]
    : b.awaited;
  return {
    actions: b.actions,
    status,
    conditions,
    events: [...b.events, ...events],
    requeueAfterSeconds,
    awaited,
  };
}
