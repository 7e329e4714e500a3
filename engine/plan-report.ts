/**
 * What a plan reports: the status as upstream counts it (nodes, not pods), the conditions that
 * say why the set waits, the awaited items and when to look again. Also the plan of a set that is
 * invalid or not managed.
 */
import type { Notice } from "../api/label-selector.ts";
import type { AdvancedDaemonSetStatus, Expectation } from "../api/advanced-daemonset.ts";
import {
  buildCondition,
  buildConditions,
  type ConditionState,
  type ConditionType,
  plural,
} from "./conditions.ts";
import type { PreDownload } from "./image-pulls.ts";
import type { Judgement } from "./failures.ts";
import type { readSet, SetConfig } from "./config.ts";
import {
  availableAt,
  formatTime,
  isPodAvailable,
  isPodReady,
  parseTime,
  podRevision,
} from "./pod-node-state.ts";
import {
  type Decisions,
  expectationTimeoutSeconds,
  nextPoll,
  WaitList,
  type Waits,
} from "./decisions.ts";
import type { NodeView } from "./node-view.ts";
import type { Awaited, BudgetUse, EpochMillis, NodeReport, Plan, PlanEvent } from "../api/plan.ts";
import type { SetCondition } from "../api/kube-objects.ts";
import type { MaintenanceStatus } from "../api/maintenance.ts";
import type { AnalysisStatus } from "../api/analysis.ts";
import type { RolloutPlanStatus } from "../api/rollout-plan.ts";

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
      nodes: [],
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
    nodes: [],
    burst: 0,
  };
}

export interface Outcome {
  config: SetConfig;
  previous: AdvancedDaemonSetStatus;
  collisionCount: number;
  /** Undefined while an OpenYurt set has no revision yet. */
  hash?: string;
  views: readonly NodeView[];
  pending: readonly Expectation[];
  /** What the phases decided, in the order they ran. */
  decisions: Decisions;
  /** The pod writes one call may send (burstReplicas). */
  burst: number;
  now: EpochMillis;
  /** Nodes the update may reach (partition and update selector applied). */
  inScope: Set<string>;
  /** Kruise's image pre-download, when the set asks for it. */
  preDownload?: PreDownload;
  /** The failure budget and the progress deadline, when the set asks for either (ADR 0035). */
  judged?: Judgement;
  /** A rollback this plan makes, or the last one while its revision is current. */
  rollback?: AdvancedDaemonSetStatus["rollback"];
  /** The update budget and its share in use, when one bounds the rollout. */
  budget?: BudgetUse;
  /** Where the rollout plan stands, when the set has one (ADR 0050). */
  rolloutPlan?: RolloutPlanStatus;
  /** The maintenance windows outdated nodes wait for, when the set has windows (ADR 0054). */
  maintenance?: MaintenanceStatus;
  /** The analysis checks' standing, when the set has checks (ADR 0055). */
  analysis?: AnalysisStatus;
  /** A check of the revision still measures: the rollout is not complete. */
  analysisPending?: boolean;
  /** A check of the revision failed (a domain's or the whole set's): it is not complete. */
  analysisFailed?: boolean;
}

/** The condition of a set with a failure budget or a progress deadline (present only then). */
export const rolloutStoppedCondition = "RolloutStopped";

const podList = (pods: { name: string; node: string; reason: string }[]) =>
  pods.map((p) => `${p.name} on ${p.node}: ${p.reason}`).join(", ");

function stoppedState(j: Judgement, failedChecks: readonly string[]): ConditionState {
  if (j.stop?.reason === "AnalysisFailed" || (!j.stop && failedChecks.length > 0)) {
    return {
      status: true,
      reason: "AnalysisFailed",
      message: `failed checks: ${failedChecks.join(", ")}; ${
        j.stop
          ? "no more old pods are replaced"
          : "their domains are updated no further and no later step starts"
      } until a new template or a resume`,
    };
  }
  if (j.stop) {
    const domain = j.stop.domain;
    const why = domain
      ? `${
        plural(domain.failed, "pod")
      } of revision ${j.stop.revision} failed in domain ${domain.name}, more than the ${domain.allowed} allowed of its ${
        plural(domain.updated, "node")
      } updated`
      : j.stop.reason === "FailureBudgetExceeded"
      ? `${
        plural(j.failed.length, "pod")
      } of revision ${j.stop.revision} failed, more than the ${j.allowed} allowed of ${
        plural(j.updated, "node")
      } updated`
      : `no updated pod became available before the progress deadline`;
    return {
      status: true,
      reason: j.stop.reason,
      message: `${why}; no more old pods are replaced until a new template or a resume` +
        (j.stop.pods.length > 0 ? ` (${podList(j.stop.pods)})` : ""),
    };
  }
  const allowed = Number.isFinite(j.allowed) ? ` of ${j.allowed} allowed` : "";
  return {
    status: false,
    reason: "WithinBudget",
    message: `${plural(j.failed.length, "pod")} of the new revision failed${allowed}` +
      (j.failed.length > 0 ? ` (${podList(j.failed.slice(0, 20))})` : ""),
  };
}

/** The condition of a set that asks for pre-download (present only then). */
export const preDownloadCondition = "ImagesPreDownloaded";

function preDownloadState(p: PreDownload): ConditionState {
  if (p.waiting) return { status: false, reason: p.waiting.reason, message: p.waiting.message };
  if (p.nodes === 0) {
    return {
      status: true,
      reason: "NothingToPull",
      message: `no old pod in the update's scope: nothing to pull for revision ${p.revision}`,
    };
  }
  const failedNames = p.failedNodes.length > 0
    ? ` (${p.failedNodes.join(", ")}${p.failed > p.failedNodes.length ? ", …" : ""})`
    : "";
  const message = `${p.pulled}/${p.nodes} nodes pulled the images of revision ${p.revision}, ` +
    `${p.pulling} pulling, ${p.failed} failed${failedNames}`;
  const done = p.pulled + p.failed >= p.nodes && p.pulling === 0;
  if (!done) return { status: false, reason: "Pulling", message };
  return p.failed > 0
    ? { status: true, reason: "PulledWithFailures", message, event: "Warning" }
    : { status: true, reason: "Pulled", message };
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
  reports: NodeReport[];
}

/**
 * Counts the nodes as observed (our own deletions not yet seen still count, so a repeated plan
 * on the same cluster writes the same status), and asks, in `report`, to look again when a
 * starting pod may be ready and when a ready pod becomes available.
 */
function countNodes(outcome: Outcome, report: WaitList): NodeCounts {
  const { hash, now } = outcome;
  const minReady = outcome.config.minReadySeconds;
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
    reports: [],
  };
  const failedOn = new Map(outcome.judged?.failed.map((f) => [f.node, f.reason]));
  for (const view of outcome.views) {
    const observed = view.observed;
    if (!view.placement.shouldRun) {
      if (observed.length > 0) n.misscheduled++;
      continue;
    }
    n.desired++;
    if (view.live.length + view.leaving.length > 0) n.current++;
    if (observed.length === 0 && view.leaving.length > 0) {
      // Its pod is going and none has replaced it: what comes next waits for it to be gone.
      report.awaitGone(view.leaving[0], "the node's pod is terminating; its next waits for it");
    }
    if (observed.some(isPodReady)) n.ready++;
    else if (view.ready && observed.some(mayStart)) {
      const started = observed.filter(mayStart).map((p) =>
        parseTime(p.metadata.creationTimestamp) ?? now
      );
      report.poll(Math.max(...started));
    }
    const available = observed.some((p) => isPodAvailable(p, minReady, now));
    if (available) n.available++;
    else if (view.ready) n.settling++;
    const current = hash === undefined ? undefined : observed.find((p) => podRevision(p) === hash);
    n.reports.push({
      node: view.name,
      revision: current ? "new" : observed.length > 0 ? "old" : "none",
      ...(current ?? observed[0] ? { pod: (current ?? observed[0]).metadata.name } : {}),
      ready: observed.some(isPodReady),
      available,
      leaving: view.leaving.length > 0,
      cutOff: !view.ready,
      inScope: outcome.inScope.has(view.name),
      ...(failedOn.has(view.name) ? { failed: failedOn.get(view.name) } : {}),
    });
    if (current) n.updated++;
    else {
      n.outdated++;
      if (observed.length > 0) n.onOld++;
      if (outcome.inScope.has(view.name)) {
        n.outdatedInScope++;
        if (view.ready) n.outdatedInScopeReady++;
        else if (observed.length > 0) n.cutOnOld.push(view.name);
      }
    }
    for (const pod of observed) {
      const at = availableAt(pod, minReady);
      if (at !== undefined && at > now) {
        report.wait(
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
function awaitExpectations(outcome: Outcome, report: WaitList): Expectation[] {
  const { decisions, now } = outcome;
  for (const exp of outcome.pending) {
    report.wait(
      `${exp.action} pod/${exp.pod} observed`,
      "an earlier action is not visible yet",
      parseTime(exp.deadline),
    );
  }
  const expectations = [...outcome.pending, ...decisions.expectations];
  for (const exp of expectations) {
    const deadline = parseTime(exp.deadline) ?? now;
    report.wakeUp(deadline);
    report.poll(deadline - expectationTimeoutSeconds * 1000);
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
function nextLooks(
  outcome: Outcome,
  report: Waits,
): { nextCheckAt?: string; requeueAfterSeconds: number | null } {
  const { decisions, now } = outcome;
  const wakeUps = [...decisions.wakeUps, ...report.wakeUps].filter((t) => t > now);
  const polls = [...decisions.polls, ...report.polls];
  const nextCheck = Math.min(...wakeUps, ...polls.map((since) => since + 1000));
  const nextLook = Math.min(
    ...wakeUps,
    ...polls.map((since) => nextPoll(since, now, startingPodPollSeconds)),
  );
  return {
    ...(Number.isFinite(nextCheck) ? { nextCheckAt: formatTime(nextCheck) } : {}),
    requeueAfterSeconds: decisions.moreWork && decisions.actions.length > 0
      ? 1
      : Number.isFinite(nextLook)
      ? Math.max(1, Math.ceil((nextLook - now) / 1000))
      : null,
  };
}

/**
 * An OpenYurt set whose template has no revision yet (none at all, or the native controller has
 * not observed the spec): its plan acts on nothing and judges nothing.
 */
const waitsForRevision = (outcome: Outcome) =>
  outcome.hash === undefined || outcome.config.revisionAwaited !== undefined;

/** What the conditions are decided from. */
interface Facts {
  outcome: Outcome;
  nodes: NodeCounts;
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
  applies: (facts: Facts) => boolean;
  state: (facts: Facts) => ConditionState;
}[] = [
  {
    name: "no revision of the template yet",
    applies: (facts) => waitsForRevision(facts.outcome),
    state: (facts) => ({
      status: false,
      reason: "WaitingForRevision",
      message: facts.outcome.config.revisionAwaited !== undefined
        ? `no ControllerRevision of generation ${facts.outcome.config.revisionAwaited} yet`
        : "no ControllerRevision yet",
    }),
  },
  {
    name: "complete",
    applies: (facts) => facts.complete,
    state: (facts) => ({ status: false, reason: "Complete", message: facts.counts }),
  },
  {
    name: "stopped by its failures or its deadline",
    applies: (facts) => facts.outcome.judged?.stop !== undefined,
    state: (facts) => ({
      status: false,
      reason: facts.outcome.judged!.stop!.reason,
      message: `stopped: no more old pods are replaced; ${facts.counts}`,
    }),
  },
  {
    name: "every domain done but those a failed check stopped",
    applies: (facts) =>
      facts.outcome.rolloutPlan?.state === "Stopped" && failedDomains(facts.outcome).length > 0,
    state: (facts) => ({
      status: false,
      reason: "AnalysisFailed",
      message: `stopped by failed checks: ${
        failedDomains(facts.outcome).join(", ")
      }; ${facts.counts}`,
    }),
  },
  {
    name: "no progress within the deadline",
    applies: (facts) => facts.outcome.judged?.deadlineExceeded === true,
    state: (facts) => ({
      status: false,
      reason: "ProgressDeadlineExceeded",
      message: `no updated pod became available${
        facts.outcome.analysisPending ? " and no check counted a measurement" : ""
      } for ${facts.outcome.config.progressDeadlineSeconds} s; ${facts.counts}`,
    }),
  },
  {
    name: "aborted by the operator",
    applies: (facts) => facts.outcome.rolloutPlan?.stop?.reason === "Aborted",
    state: (facts) => ({
      status: false,
      reason: "Aborted",
      message: `aborted at step ${
        facts.outcome.rolloutPlan!.step
      }: no more old pods are replaced; ${facts.counts}`,
    }),
  },
  {
    name: "a step of the plan soaks or awaits approval",
    applies: (facts) => planPause(facts.outcome) !== undefined,
    state: (facts) => ({
      status: false,
      reason: facts.outcome.rolloutPlan!.state,
      message: `${planPause(facts.outcome)}; ${facts.counts}`,
    }),
  },
  {
    name: "acting, or waiting on what was done",
    applies: (facts) => facts.busy,
    state: (facts) => ({ status: true, reason: "RollingUpdate", message: facts.counts }),
  },
  {
    name: "paused",
    applies: (facts) => facts.outcome.config.paused,
    state: (facts) => ({ status: false, reason: "Paused", message: facts.counts }),
  },
  {
    name: "every outdated node waits for its maintenance window",
    applies: (facts) => facts.outcome.maintenance?.open === false,
    state: (facts) => {
      const windows = facts.outcome.maintenance!;
      return {
        status: false,
        reason: "MaintenanceWindow",
        message: `${plural(facts.nodes.outdated, "node")} wait for their maintenance window${
          windows.nextOpening ? `, next opening at ${windows.nextOpening}` : ""
        }; ${facts.counts}`,
      };
    },
  },
  {
    name: "OnDelete: pods are deleted by hand",
    applies: (facts) => facts.outcome.config.mode === "OnDelete",
    state: (facts) => ({
      status: false,
      reason: "OnDelete",
      message: `${plural(facts.nodes.onOld, "pod")} wait to be deleted by hand; ${facts.counts}`,
    }),
  },
  {
    name: "OTA: pods are upgraded from their node",
    applies: (facts) => facts.outcome.config.mode === "OTA",
    state: (facts) => {
      // Every live pod off the revision is marked, on a node the set still wants or not.
      const marked = facts.outcome.views.reduce(
        (n, v) => n + v.live.filter((p) => podRevision(p) !== facts.outcome.hash).length,
        0,
      );
      return {
        status: false,
        reason: "WaitingForNodes",
        message: `${
          plural(marked, "pod")
        } marked PodNeedUpgrade, upgraded from their node; ${facts.counts}`,
      };
    },
  },
  {
    name: "every outdated node in scope is cut off",
    applies: (facts) => facts.nodes.outdatedInScope > 0 && facts.nodes.outdatedInScopeReady === 0,
    state: (facts) => ({
      status: false,
      reason: "WaitingForNodes",
      message: `${
        plural(facts.nodes.outdatedInScope, "NotReady node")
      } updated when they come back; ${facts.counts}`,
    }),
  },
  {
    name: "what is left is outside the update's scope",
    applies: (facts) => facts.nodes.outdatedInScope === 0 && facts.nodes.outdated > 0,
    state: (facts) => ({
      status: false,
      reason: "UpdateScopeReached",
      message: `${
        plural(facts.nodes.outdated, "node")
      } kept on the old revision by partition or selector; ${facts.counts}`,
    }),
  },
  {
    name: "rolling",
    applies: () => true,
    state: (facts) => ({ status: true, reason: "RollingUpdate", message: facts.counts }),
  },
];

function conditionStates(facts: Facts): Record<ConditionType, ConditionState> {
  const { outcome, nodes, counts, complete } = facts;
  const { decisions, config, hash } = outcome;
  return {
    Progressing: progressingRules.find((rule) => rule.applies(facts))!.state(facts),
    Complete: complete
      ? {
        status: true,
        reason: "Complete",
        message: `all ${plural(nodes.desired, "node")} run revision ${hash} and are available`,
      }
      : nodes.cutOnOld.length > 0 && nodes.outdatedInScopeReady === 0
      ? {
        // Everything reachable is done: say which nodes the rollout waits for, once.
        status: false,
        reason: "NodesUnreachable",
        message: `${
          plural(nodes.cutOnOld.length, "NotReady node")
        } run an old revision, updated when they come back: ${namedList(nodes.cutOnOld)}`,
        event: "Normal",
      }
      : { status: false, reason: "Incomplete", message: counts },
    Paused: config.paused && nodes.onOld > 0
      ? {
        status: true,
        reason: "Paused",
        message: `${plural(nodes.onOld, "node")} wait for the update`,
      }
      : planPause(outcome) !== undefined
      ? { status: true, reason: outcome.rolloutPlan!.state, message: planPause(outcome)! }
      : { status: false, reason: "NotPaused", message: "" },
    BudgetExhausted: decisions.budgetHeld
      ? {
        status: true,
        reason: "BudgetExhausted",
        message: `${decisions.budgetHeld.message}: ${namedList(decisions.budgetHeld.holders)}; ${
          plural(decisions.budgetHeld.blocked, "node")
        } wait`,
      }
      : { status: false, reason: "WithinBudget", message: "" },
    InvalidSpec: validity(config.notices),
  };
}

/** `check in domain` of each failed check of a domain (ADR 0055). */
function failedDomains(outcome: Outcome): string[] {
  return failedChecks(outcome).filter((c) => c.includes(" in "));
}

/** Each failed check of the revision: `check in domain`, or the check of the whole set. */
function failedChecks(outcome: Outcome): string[] {
  return (outcome.analysis?.checks ?? [])
    .filter((c) => c.phase === "Failed")
    .map((c) => `${c.check}${c.domain !== undefined ? ` in ${c.domain}` : ""}`);
}

/** What a plan that measures, soaks or awaits approval after its step waits for, in words. */
function planPause(outcome: Outcome): string | undefined {
  const plan = outcome.rolloutPlan;
  if (plan?.state === "Analyzing") {
    return `step ${plan.step} of ${plan.steps} done, its checks are measured`;
  }
  if (plan?.state === "Soaking") {
    return `step ${plan.step} of ${plan.steps} done, soaking since ${plan.doneSince}`;
  }
  if (plan?.state === "AwaitingApproval") {
    return `step ${plan.step} of ${plan.steps} done, waiting for kubectl edgeroll approve`;
  }
  return undefined;
}

/** The set-wide reasons to wait, listed before the per-pod items. */
function setWideWaits(states: Record<ConditionType, ConditionState>, complete: boolean) {
  const progressing = states.Progressing;
  return [
    ...(states.Paused.reason === "Paused"
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

/** What a plan's status records of the rollout beyond its counts: stops, rollbacks, pulls. */
const recordFields = [
  "rolloutStop",
  "rollback",
  "lastCompleteRevision",
  "acknowledgedFailures",
  "progress",
  "imagePreDownload",
  "plan",
  "maintenance",
  "analysis",
] as const;
type RolloutRecords = Pick<AdvancedDaemonSetStatus, typeof recordFields[number]>;

/** The records as the last plan wrote them. */
function rolloutRecords(status: AdvancedDaemonSetStatus): RolloutRecords {
  const kept: Record<string, unknown> = {};
  for (const field of recordFields) if (status[field] !== undefined) kept[field] = status[field];
  return kept as RolloutRecords;
}

/** The records this plan's judgement, rollback and pulls make. */
function rolloutRecordsOf(outcome: Outcome, complete: boolean): RolloutRecords {
  const { judged, hash, previous, preDownload } = outcome;
  return {
    ...(judged?.stop ? { rolloutStop: judged.stop } : {}),
    ...(outcome.rollback ? { rollback: outcome.rollback } : {}),
    // Kept for a set that may roll back (ADR 0035): the revision it would return to.
    ...(judged && complete && hash !== undefined
      ? { lastCompleteRevision: hash }
      : judged && previous.lastCompleteRevision
      ? { lastCompleteRevision: previous.lastCompleteRevision }
      : {}),
    ...(judged?.acknowledged ? { acknowledgedFailures: judged.acknowledged } : {}),
    ...(judged ? { progress: judged.progress } : {}),
    ...(outcome.rolloutPlan ? { plan: outcome.rolloutPlan } : {}),
    ...(outcome.maintenance ? { maintenance: outcome.maintenance } : {}),
    ...(outcome.analysis ? { analysis: outcome.analysis } : {}),
    ...(preDownload
      ? {
        imagePreDownload: {
          revision: preDownload.revision,
          nodes: preDownload.nodes,
          pulled: preDownload.pulled,
          pulling: preDownload.pulling,
          failed: preDownload.failed,
          ...(preDownload.failedNodes.length > 0 ? { failedNodes: preDownload.failedNodes } : {}),
        },
      }
      : {}),
  };
}

/**
 * The conditions of what the rollout judged and pulled (RolloutStopped, ImagesPreDownloaded);
 * their Events go to `events`. A plan waiting for its revision judges nothing: what the last one
 * judged stands.
 */
function rolloutConditions(
  outcome: Outcome,
  waiting: boolean,
  events: PlanEvent[],
): SetCondition[] {
  const { previous, now, preDownload, judged } = outcome;
  if (waiting) {
    return (previous.conditions ?? []).filter((c) =>
      c.type === rolloutStoppedCondition || c.type === preDownloadCondition
    );
  }
  const conditions: SetCondition[] = [];
  if (judged) {
    const state = stoppedState(judged, failedChecks(outcome));
    conditions.push(
      buildCondition(rolloutStoppedCondition, state, previous.conditions, now, "Warning", events),
    );
  }
  if (preDownload) {
    const state = preDownloadState(preDownload);
    const whenTrue = state.event ?? "Normal";
    conditions.push(
      buildCondition(preDownloadCondition, state, previous.conditions, now, whenTrue, events),
    );
  }
  return conditions;
}

/** The awaited items as the answer lists them: the first `maxAwaitedListed`, the rest summed up. */
function listed(awaited: Awaited[]): Awaited[] {
  if (awaited.length <= maxAwaitedListed) return awaited;
  return [
    ...awaited.slice(0, maxAwaitedListed),
    { what: `${awaited.length - maxAwaitedListed} more`, why: "not listed" },
  ];
}

/** The plan's report: status as upstream counts it, conditions, awaited items, the requeue. */
export function finish(outcome: Outcome): Plan {
  const { previous, hash, decisions, now } = outcome;
  const report = new WaitList(now);
  const n = countNodes(outcome, report);
  const expectations = awaitExpectations(outcome, report);
  const { nextCheckAt, requeueAfterSeconds } = nextLooks(outcome, report);
  const waiting = waitsForRevision(outcome);
  // A revision whose checks still measure (a gate, a bake) is not complete: a failure may yet
  // roll it back, so it is not the revision a rollback returns to (ADR 0055). Nor is one whose
  // check failed, after its last node was updated too: it stopped, or goes back.
  const complete = !waiting && n.outdated === 0 && n.available === n.desired &&
    expectations.length === 0 && !outcome.analysisPending && !outcome.analysisFailed;
  const podActions = decisions.actions.filter((a) =>
    a.type.endsWith("Pod") || a.type === "setPodCondition"
  );
  const states = conditionStates({
    outcome,
    nodes: n,
    counts: `${n.updated}/${n.desired} updated, ${n.available} available`,
    complete,
    busy: podActions.length > 0 || expectations.length > 0 || n.settling > 0,
  });
  const { conditions, events } = buildConditions(states, previous.conditions, now);
  conditions.push(...rolloutConditions(outcome, waiting, events));
  // The set-wide reasons first, then what the phases wait for, then what the counts do.
  const allAwaited = [...setWideWaits(states, complete), ...decisions.awaited, ...report.awaited];

  const status: AdvancedDaemonSetStatus = {
    currentNumberScheduled: n.current,
    numberMisscheduled: n.misscheduled,
    desiredNumberScheduled: n.desired,
    numberReady: n.ready,
    observedGeneration: outcome.config.generation,
    updatedNumberScheduled: n.updated,
    numberAvailable: n.available,
    numberUnavailable: n.desired - n.available,
    collisionCount: outcome.collisionCount,
    ...(hash !== undefined ? { daemonSetHash: hash } : {}),
    conditions,
    ...(expectations.length > 0 ? { expectations } : {}),
    ...(nextCheckAt !== undefined ? { nextCheckAt } : {}),
    ...(waiting ? rolloutRecords(previous) : rolloutRecordsOf(outcome, complete)),
  };
  return {
    actions: [...decisions.actions],
    status,
    conditions,
    events: [...decisions.events, ...events],
    requeueAfterSeconds,
    awaited: listed(allAwaited),
    nodes: n.reports,
    burst: outcome.burst,
    ...(outcome.budget ? { budget: outcome.budget } : {}),
  };
}
