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
      burst: 0,
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
    burst: 0,
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

/** What the node views count, as upstream's status counts them: nodes, not pods. */
interface NodeCounts {
  desired: number;
  current: number;
  ready: number;
  available: number;
  updated: number;
  misscheduled: number;
  /** Nodes without a current pod; `onOld`: those of them running an old one. */
  outdated: number;
  onOld: number;
  /** Outdated nodes the update may reach, and how many of those are Ready. */
  outdatedInScope: number;
  outdatedInScopeReady: number;
  /** Ready nodes whose pod is not available yet. */
  settling: number;
  /** Nodes NotReady or unreachable whose pod waits for them on an old revision (ADR 0006). */
  cutOnOld: string[];
}

/**
 * Counts the nodes as observed (our own deletions not yet seen still count, so a repeated plan
 * on the same cluster writes the same status), and asks the builder to look again when a
 * starting pod may be ready and when a ready pod becomes available.
 */
function countNodes(o: Outcome): NodeCounts {
  const { hash, b, now } = o;
  const minReady = o.config.minReadySeconds;
  const n: NodeCounts = {
    desired: 0,
    current: 0,
    ready: 0,
    available: 0,
    updated: 0,
    misscheduled: 0,
    outdated: 0,
    onOld: 0,
    outdatedInScope: 0,
    outdatedInScopeReady: 0,
    settling: 0,
    cutOnOld: [],
  };
  for (const view of o.views) {
    const observed = view.observed;
    if (!view.placement.shouldRun) {
      if (observed.length > 0) n.misscheduled++;
      continue;
    }
    n.desired++;
    if (view.live.length + view.leaving.length > 0) n.current++;
    if (observed.some(isPodReady)) n.ready++;
    else if (view.ready && observed.some(mayStart)) {
      const started = observed.filter(mayStart).map((p) =>
        parseTime(p.metadata.creationTimestamp) ?? now
      );
      b.poll(Math.max(...started));
    }
    if (observed.some((p) => isPodAvailable(p, minReady, now))) n.available++;
    else if (view.ready) n.settling++;
    if (hash !== undefined && observed.some((p) => podRevision(p) === hash)) n.updated++;
    else {
      n.outdated++;
      if (observed.length > 0) n.onOld++;
      if (o.inScope.has(view.name)) {
        n.outdatedInScope++;
        if (view.ready) n.outdatedInScopeReady++;
        else if (observed.length > 0) n.cutOnOld.push(view.name);
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
  return n;
}

/**
 * The actions not observed yet, earlier ones and this plan's: each awaited, looked at again
 * soon after it was taken and at its deadline at the latest.
 */
function awaitExpectations(o: Outcome): Expectation[] {
  const { b, now } = o;
  for (const exp of o.pending) {
    b.wait(
      `${exp.action} pod/${exp.pod} observed`,
      "an earlier action is not visible yet",
      parseTime(exp.deadline),
    );
  }
  const expectations = [...o.pending, ...b.expectations];
  for (const exp of expectations) {
    const deadline = parseTime(exp.deadline) ?? now;
    b.wakeUp(deadline);
    b.poll(deadline - expectationTimeoutSeconds * 1000);
  }
  return expectations;
}

/**
 * When to look again: `nextCheckAt` is written to status, so it holds instants that do not
 * move from call to call (a wait's first poll, even once passed) and a repeated plan writes the
 * same status; `requeueAfterSeconds` is this call's answer. More work than one call may do
 * comes back soon, but only when this call did some (a cap held by actions still unobserved
 * waits for them or their deadline instead).
 */
function nextLooks(o: Outcome): { nextCheckAt?: string; requeueAfterSeconds: number | null } {
  const { b, now } = o;
  const wakeUps = b.wakeUps.filter((t) => t > now);
  const nextCheck = Math.min(...wakeUps, ...b.polls.map((since) => since + 1000));
  const nextLook = Math.min(
    ...wakeUps,
    ...b.polls.map((since) => nextPoll(since, now, startingPodPollSeconds)),
  );
  return {
    ...(Number.isFinite(nextCheck) ? { nextCheckAt: formatTime(nextCheck) } : {}),
    requeueAfterSeconds: b.moreWork && b.actions.length > 0
      ? 1
      : Number.isFinite(nextLook)
      ? Math.max(1, Math.ceil((nextLook - now) / 1000))
      : null,
  };
}

/** What the conditions are decided from. */
interface Facts {
  o: Outcome;
  n: NodeCounts;
  /** `3/10 updated, 9 available`. */
  counts: string;
  complete: boolean;
  /** This plan acts on pods, or waits on what an earlier one did, or on pods settling. */
  busy: boolean;
}

/**
 * Progressing, as an ordered list of rules (Pepr lays its decisions out so): the first that
 * applies says the state. Each has a name for what it stands for.
 */
const progressingRules: {
  name: string;
  applies: (f: Facts) => boolean;
  state: (f: Facts) => ConditionState;
}[] = [
  {
    name: "no revision yet",
    applies: (f) => f.o.hash === undefined,
    state: () => ({
      status: false,
      reason: "WaitingForRevision",
      message: "no ControllerRevision yet",
    }),
  },
  {
    name: "complete",
    applies: (f) => f.complete,
    state: (f) => ({ status: false, reason: "Complete", message: f.counts }),
  },
  {
    name: "acting, or waiting on what was done",
    applies: (f) => f.busy,
    state: (f) => ({ status: true, reason: "RollingUpdate", message: f.counts }),
  },
  {
    name: "paused",
    applies: (f) => f.o.config.paused,
    state: (f) => ({ status: false, reason: "Paused", message: f.counts }),
  },
  {
    name: "OnDelete: pods are deleted by hand",
    applies: (f) => f.o.config.mode === "OnDelete",
    state: (f) => ({
      status: false,
      reason: "OnDelete",
      message: `${plural(f.n.onOld, "pod")} wait to be deleted by hand; ${f.counts}`,
    }),
  },
  {
    name: "OTA: pods are upgraded from their node",
    applies: (f) => f.o.config.mode === "OTA",
    state: (f) => {
      // Every live pod off the revision is marked, on a node the set still wants or not.
      const marked = f.o.views.reduce(
        (n, v) => n + v.live.filter((p) => podRevision(p) !== f.o.hash).length,
        0,
      );
      return {
        status: false,
        reason: "WaitingForNodes",
        message: `${
          plural(marked, "pod")
        } marked PodNeedUpgrade, upgraded from their node; ${f.counts}`,
      };
    },
  },
  {
    name: "every outdated node in scope is cut off",
    applies: (f) => f.n.outdatedInScope > 0 && f.n.outdatedInScopeReady === 0,
    state: (f) => ({
      status: false,
      reason: "WaitingForNodes",
      message: `${
        plural(f.n.outdatedInScope, "NotReady node")
      } updated when they come back; ${f.counts}`,
    }),
  },
  {
    name: "what is left is outside the update's scope",
    applies: (f) => f.n.outdatedInScope === 0 && f.n.outdated > 0,
    state: (f) => ({
      status: false,
      reason: "UpdateScopeReached",
      message: `${
        plural(f.n.outdated, "node")
      } kept on the old revision by partition or selector; ${f.counts}`,
    }),
  },
  {
    name: "rolling",
    applies: () => true,
    state: (f) => ({ status: true, reason: "RollingUpdate", message: f.counts }),
  },
];

function conditionStates(f: Facts): Record<ConditionType, ConditionState> {
  const { o, n, counts, complete } = f;
  const { b, config, hash } = o;
  return {
    Progressing: progressingRules.find((rule) => rule.applies(f))!.state(f),
    Complete: complete
      ? {
        status: true,
        reason: "Complete",
        message: `all ${plural(n.desired, "node")} run revision ${hash} and are available`,
      }
      : n.cutOnOld.length > 0 && n.outdatedInScopeReady === 0
      ? {
        // Everything reachable is done: say which nodes the rollout waits for, once.
        status: false,
        reason: "NodesUnreachable",
        message: `${
          plural(n.cutOnOld.length, "NotReady node")
        } run an old revision, updated when they come back: ${namedList(n.cutOnOld)}`,
        event: "Normal",
      }
      : { status: false, reason: "Incomplete", message: counts },
    Paused: config.paused && n.onOld > 0
      ? {
        status: true,
        reason: "Paused",
        message: `${plural(n.onOld, "node")} wait for the update`,
      }
      : { status: false, reason: "NotPaused", message: "" },
    BudgetExhausted: b.budget
      ? {
        status: true,
        reason: "BudgetExhausted",
        message: `${b.budget.message}: ${namedList(b.budget.holders)}; ${
          plural(b.budget.blocked, "node")
        } wait`,
      }
      : { status: false, reason: "WithinBudget", message: "" },
    InvalidSpec: validity(config.notices),
  };
}

/** The set-wide reasons to wait, listed before the per-pod items. */
function setWideWaits(states: Record<ConditionType, ConditionState>, complete: boolean) {
  const progressing = states.Progressing;
  return [
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
}

/** The plan's report: status as upstream counts it, conditions, awaited items, the requeue. */
export function finish(o: Outcome): Plan {
  const { previous, hash, b, now } = o;
  const n = countNodes(o);
  const expectations = awaitExpectations(o);
  const { nextCheckAt, requeueAfterSeconds } = nextLooks(o);
  const complete = hash !== undefined && n.outdated === 0 && n.available === n.desired &&
    expectations.length === 0;
  const podActions = b.actions.filter((a) =>
    a.type.endsWith("Pod") || a.type === "setPodCondition"
  );
  const states = conditionStates({
    o,
    n,
    counts: `${n.updated}/${n.desired} updated, ${n.available} available`,
    complete,
    busy: podActions.length > 0 || expectations.length > 0 || n.settling > 0,
  });
  const { conditions, events } = buildConditions(states, previous.conditions, now);
  b.awaitFirst(setWideWaits(states, complete));

  const status: AdvancedDaemonSetStatus = {
    currentNumberScheduled: n.current,
    numberMisscheduled: n.misscheduled,
    desiredNumberScheduled: n.desired,
    numberReady: n.ready,
    observedGeneration: o.config.generation,
    updatedNumberScheduled: n.updated,
    numberAvailable: n.available,
    numberUnavailable: n.desired - n.available,
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
    : [...b.awaited];
  return {
    actions: [...b.actions],
    status,
    conditions,
    events: [...b.events, ...events],
    requeueAfterSeconds,
    awaited,
    burst: b.burst,
  };
}
