/**
 * `plan(snapshot, now)`: what should be done next for one set. Pure: no I/O, no clock, no
 * randomness; the same snapshot and `now` always give the same plan.
 *
 * Assumptions (what the executor and the next call guarantee):
 * - Actions are applied after the status claim, revisions first; any subset of the pod
 *   actions may land (kube/executor.ts). Expectations in the written status stop the next call
 *   from repeating what has not been observed yet.
 * - A pod is created with a deterministic name, so a repeated create is a harmless 409.
 *
 * Invariants (each one is a test in `plan.test.ts` / `plan.property.test.ts`):
 * - Budget: after the plan's deletions, the unavailable pods on Ready desired nodes are at most
 *   max(maxUnavailable, those already unavailable): a pod already down is replaced in its own
 *   slot, an available one only within the budget. Surge: at most maxSurge nodes carry an extra
 *   pod, except to replace an old pod already down.
 * - NotReady or unreachable nodes neither consume the budget nor get updated.
 * - Partition keeps the tail of the update order on the old revision; the update selector limits
 *   updates to matching nodes; paused stops updates, never creation on nodes without a pod; so
 *   does a rollout stopped by its failures (ADR 0035), which deletes no old pod;
 *   OnDelete and OTA never delete for an update.
 * - Creations per call are at most burstReplicas minus creations still expected.
 * - A pod updated in place (InPlaceIfPossible) counts as unavailable until it runs its new images.
 * - Outside its node's maintenance window (or within its cut-off) no old pod is replaced or
 *   marked for OTA; pods in flight finish; placement is never held (`maintenance.ts`).
 * - Phases, in the order `planRead` numbers and runs them: 0 revisions and adoptions,
 *   the analysis checks judged on this call's measurements (`analysis.ts`), 1 placement
 *   (`placement.ts`), 2 the rollout plan's step (`rollout-plan.ts`), 2a the checks as its gates
 *   and bakes asked for them, 2b the maintenance windows (`maintenance.ts`), 3 the failure
 *   budget's judgement (`failures.ts`), 4 OTA marks and pulls, 5 updates (`updates.ts`, within
 *   the plan's and the windows' gate) planned on the nodes as placement and earlier unobserved
 *   actions leave them, 5b refused resizes recreated (`resize-fallback.ts`), 6 in-place
 *   readiness, 7 image pre-download, then the report (`plan-report.ts`). No phase reads
 *   another's state: each is given the burst it may still spend and what it needs of earlier
 *   decisions (`decisions.ts`).
 */
import type { AdvancedDaemonSetStatus, Expectation } from "../api/advanced-daemonset.ts";
import { Keys, LabelSelector, type Pod, PodTemplateSpec } from "../api/kube-objects.ts";
import { maxUnavailableAnnotation, updateStrategyAnnotation } from "../api/openyurt.ts";
import { matchesLabelSelector } from "../api/label-selector.ts";
import { readSet, resolve, type SetConfig } from "./config.ts";
import { judgeFailures, planRollback } from "./failures.ts";
import { planImagePulls, planPreDownload } from "./image-pulls.ts";
import { revisionTemplate } from "./in-place.ts";
import { planInPlaceReadiness } from "./in-place-readiness.ts";
import { planRefusedResizes } from "./resize-fallback.ts";
import { planPlacement } from "./placement.ts";
import {
  compareOldestFirst,
  isNodeReady,
  isPodAvailable,
  isTerminating,
  parseTime,
  podNodeName,
  podRevision,
} from "./pod-node-state.ts";
import { finish, invalidOrUnmanagedPlan } from "./plan-report.ts";
import { daemonPodTolerations, keepsPlaceWhileCut, nodeShouldRunDaemonPod } from "./should-run.ts";
import {
  type Allowance,
  allowanceOf,
  decided,
  mergeDecisions,
  type PhaseResult,
  type PlanFacts,
  podManifest,
  podName,
} from "./decisions.ts";
import { afterActions, inPlaceGateExpected, isObserved, type NodeView } from "./node-view.ts";
import {
  controllerRef,
  controllerUid,
  newestOwnedRevisionHash,
  planRevisions,
} from "./revisions.ts";
import type { Action, EpochMillis, Plan, Snapshot } from "../api/plan.ts";
import { budgetUse, planBudgetedUpdate, planOta, updateOrder } from "./updates.ts";
import { planRollout, reportPlan, type UpdateGate } from "./rollout-plan.ts";
import { type MaintenanceProgress, planMaintenance } from "./maintenance.ts";
import {
  type AnalysisJudgement,
  analysisOutcome,
  bakeOf,
  judgeAnalysis,
  rollbackPins,
  type StandingAsked,
} from "./analysis.ts";
import type { FieldIssue } from "../api/label-selector.ts";

export function plan(snapshot: Snapshot, now: EpochMillis): Plan {
  const reading = readSet(snapshot);
  return reading.ok ? planRead(snapshot, reading, now) : notRolledPlan(reading, snapshot, now);
}

/**
 * The plan of a set whose spec was read: its phases, numbered in the order they run. Each is
 * given the facts, what it may still spend of this call's burst (the `left` of the phase before
 * it), and what it needs of earlier decisions; it answers its decisions and what it leaves.
 */
function planRead(snapshot: Snapshot, reading: SetReading, now: EpochMillis): Plan {
  const { config, previous } = reading;
  const { owned, adoptions } = claimPods(snapshot, config);
  const revisions = currentRevision(snapshot, config, previous, owned);
  const { hash, collisionCount } = revisions;
  const pending = pendingExpectations(snapshot, previous, now);
  const { views, strays } = nodeViews(snapshot, config, owned, pending);
  const desired = views.filter((v) => v.placement.shouldRun);
  const desiredCount = desired.length;
  const burst = Math.max(1, resolve(config.burstReplicas, desiredCount, true));

  /** What every plan's report is built from, as read. */
  const seen = { config, previous, collisionCount, hash, views, pending, now, burst };

  // An OpenYurt set without the revision of its template: nothing to act on until the native
  // DaemonSet controller writes it (pods are counted against the revision it wrote last).
  if (hash === undefined || config.revisionAwaited !== undefined) {
    const awaited = [{
      what: config.revisionAwaited !== undefined
        ? `the ControllerRevision of generation ${config.revisionAwaited}`
        : "a ControllerRevision",
      why: "the native DaemonSet controller has not written it yet",
    }];
    return finish({ ...seen, decisions: decided({ awaited }), inScope: new Set<string>() });
  }

  // The analysis checks' standing, this call's measurements judged (ADR 0055).
  const validation = snapshot.analysis?.validation;
  const judgedChecks = config.analysis &&
    judgeAnalysis({
      analysis: config.analysis.analysis,
      stepChecks: config.rolloutPlan?.plan.steps.map((s) => s.checks) ?? [],
      hash,
      ...(previous.analysis ? { previous: previous.analysis } : {}),
      measurements: snapshot.analysis?.measurements ?? [],
      ...(config.resumeRevision !== undefined ? { resume: config.resumeRevision } : {}),
      ...(validation && validation.refusals.length === 0
        ? { validatedQueriesHash: validation.queriesHash }
        : {}),
      now,
    });
  const templates = revisionTemplates(snapshot.revisions, config.identity.uid);
  // A failed check's domain rolled back: its nodes' pods are made from the last complete revision.
  const pins = judgedChecks && rollbackPins(
    {
      analysis: config.analysis!.analysis,
      ...(config.rolloutPlan ? { domainLabel: config.rolloutPlan.plan.domainLabel } : {}),
      hash,
      ...(previous.lastCompleteRevision ? { lastComplete: previous.lastCompleteRevision } : {}),
      templates,
    },
    judgedChecks,
    views,
  );
  const facts: PlanFacts = {
    config,
    hash,
    now,
    templates,
    ...(pins ? { pinned: pins.nodes } : {}),
    ...(snapshot.noPodResize ? { noPodResize: true as const } : {}),
  };
  const available = availability(owned, config.minReadySeconds, now, pending);
  const ota = config.mode === "OTA";
  const start = allowanceOf(burst, pending);
  // 0. The revisions written and the orphans adopted: outside the burst.
  const claimed = decided({ actions: [...revisions.actions, ...adoptions] });

  // 1. Placement (what upstream's `manage` does): only when edgeroll owns placement.
  const placed = config.ownsPlacement
    ? planPlacement(facts, start, views, desiredCount, strays, available)
    : skipped(start);

  // 2. The rollout plan's step, on the nodes as placement leaves them: the nodes the update may
  // reach, in its order, or Kruise's order when the set has no plan; outside the burst.
  const byNode = groupByNode(placed.decisions.expectations);
  const settled = desired.map((v) => afterActions(v, byNode, config.template));
  const planned = config.rolloutPlan &&
    planRollout(
      {
        ...config.rolloutPlan,
        hash,
        surge: config.mode === "Surge",
        ota: config.mode === "OTA",
        previous: previous.plan,
        now,
        ...(judgedChecks ? { analysis: judgedChecks } : {}),
        ...(pins ? { rolledBack: pins.domains } : {}),
        ...(previous.rollback?.to === hash ? { rollbackFrom: previous.rollback.from } : {}),
      },
      settled,
      available,
    );
  const stepped = planned?.ok ? planned.progress : undefined;
  // 2a. The checks as the plan's gates and bakes asked for them; without a plan, the background
  // checks watch the whole set once it has begun the revision.
  const checked = judgedChecks &&
    analysisOutcome(
      judgedChecks,
      config.rolloutPlan ? stepped?.analysisAsked ?? [] : setBake(judgedChecks, settled, hash),
    );
  const order = stepped?.covered ??
    updateOrder(settled, hash, resolve(config.partition, desiredCount, false), config);
  // 2b. Maintenance windows: which nodes' pods may be replaced now (ADR 0054); outside the burst.
  const windows = config.maintenance &&
    planMaintenance({
      maintenance: config.maintenance,
      hash,
      ...(config.rolloutPlan ? { domainLabel: config.rolloutPlan.plan.domainLabel } : {}),
      previous: previous.maintenance,
      now,
    }, settled);
  const waiting = decided({
    awaited: windows?.awaited ?? [],
    wakeUps: windows?.wakeUps ?? [],
    events: windows?.events ?? [],
  });
  const gate = windowedGate(stepped?.gate, windows);

  // 3. The failure budget, judged on the pods as read, before any is replaced (a failed pod is,
  // by placement), and before an old pod is or an OTA mark is written: a spent budget stops this
  // very wave (ADR 0035).
  const judged = judgeFailures(config, hash, desired, previous, now, available, {
    ...(stepped ? { domainOf: stepped.domainOf, paused: stepped.paused } : {}),
    ...(windows ? { windowed: windows.deadline } : {}),
    ...(judgedChecks && checked
      ? {
        analysis: {
          setFailed: judgedChecks.setFailed !== undefined,
          pending: checked.pending,
          counted: judgedChecks.counted,
        },
      }
      : {}),
  });
  const stopped = judged?.stop !== undefined;
  // The plan as the stop leaves it: Stopped, with its reason, until a resume or a new revision.
  const reportedPlan = stepped && reportPlan(stepped, judged?.stop);
  const stepping = decided({
    awaited: stepped?.awaited ?? [],
    wakeUps: [...stepped?.wakeUps ?? [], ...checked?.wakeUps ?? []],
    events: [...reportedPlan?.events ?? [], ...checked?.events ?? []],
  });
  // An operator's abort of a plan stops the rollout as its failures would, rollback included.
  const rollback = planRollback(
    config,
    hash,
    judged?.stop ?? (stepped?.aborted ? { reason: "Aborted" } : undefined),
    previous.lastCompleteRevision,
    facts.templates,
    now,
  );
  // 4. OpenYurt OTA: the pods' marks (cleared out of OTA mode, taken back when the rollout
  // stopped, given as the plan reaches nodes), and the pulls nodes asked for.
  const marked = planOta(facts, placed.left, views, pending, ota, {
    stopped: stopped || (stepped?.aborted ?? false),
    ...(stepped ? { covered: stepped.covered } : {}),
    ...(gate ? { gate } : {}),
    ...(windows ? { windowed: windows.admits } : {}),
  });
  const pulled = ota
    ? planImagePulls(facts, marked.left, views, pending, snapshot.pulls)
    : skipped(marked.left);
  const judgement = decided({
    wakeUps: judged?.wakeUps ?? [],
    ...(rollback
      ? {
        actions: [rollback.action],
        events: [{ type: "Warning", reason: "RolledBack", message: rollback.action.reason }],
      }
      : {}),
  });
  // 5. Updates within maxUnavailable or maxSurge and the plan's gate; none while paused,
  // stopped, aborted, OnDelete or OTA.
  const updates = config.mode !== "OTA" && config.mode !== "OnDelete" && !config.paused &&
    !stopped && !stepped?.aborted;
  const updated = updates
    ? planBudgetedUpdate(facts, pulled.left, settled, order, available, gate)
    : skipped(pulled.left);
  // 5b. A resize its node will not apply: the pod recreated (InPlaceIfPossible; ADR 0056).
  const resized = updates && config.inPlace
    ? planRefusedResizes(facts, updated.left, settled)
    : skipped(updated.left);
  const earlier = [
    claimed,
    placed.decisions,
    stepping,
    waiting,
    marked.decisions,
    pulled.decisions,
    judgement,
  ];
  // 6. In-place readiness gates opened on pods that run their spec.
  const readied = planInPlaceReadiness(
    facts,
    resized.left,
    views,
    pending,
    [...earlier, updated.decisions, resized.decisions].flatMap((d) => d.expectations),
  );
  // 7. Image pre-download on the nodes next in the update order; a pod this plan already
  // replaces or patches is not pulled for: its new pod pulls for itself.
  const touched = new Set(
    [...earlier, updated.decisions, resized.decisions, readied.decisions].flatMap((d) =>
      d.actions.flatMap((a) => a.type === "deletePod" || a.type === "patchPod" ? [a.uid] : [])
    ),
  );
  const preDownloaded = planPreDownload(
    facts,
    readied.left,
    settled,
    windows ? byWindowOpening(order, windows.admitsFrom) : order,
    available,
    pending,
    snapshot.pulls,
    touched,
  );

  const decisions = mergeDecisions([
    ...earlier,
    updated.decisions,
    resized.decisions,
    readied.decisions,
    preDownloaded.decisions,
  ]);
  const report = finish({
    ...seen,
    decisions,
    inScope: new Set(order.map((v) => v.name)),
    preDownload: preDownloaded.progress,
    judged,
    rollback: rollback?.record ?? (previous.rollback?.to === hash ? previous.rollback : undefined),
    budget: budgetUse(config, hash, settled, available),
    ...(reportedPlan ? { rolloutPlan: reportedPlan.status } : {}),
    ...(windows?.status ? { maintenance: windows.status } : {}),
    ...(judgedChecks && checked
      ? {
        analysis: checked.status,
        analysisPending: checked.pending,
        analysisFailed: judgedChecks.failed,
      }
      : {}),
  });
  if (planned && !planned.ok) {
    return invalidWithCounts(snapshot, planned.issues, previous, report, pending, now);
  }
  if (config.analysis && validation && validation.refusals.length > 0) {
    const checks = config.analysis.analysis.checks;
    const issues = validation.refusals.map((r) => ({
      path: `${config.analysis!.path}.checks[${
        checks.findIndex((c) => c.name === r.check)
      }].prometheus.query`,
      message: `Prometheus refuses it: ${r.message}`,
    }));
    return invalidWithCounts(snapshot, issues, previous, report, pending, now);
  }
  if (snapshot.refused !== undefined && snapshot.refused.revision === hash) {
    const issues = [{
      path: "spec.template",
      message: `the API server refuses it: ${snapshot.refused.message}`,
    }];
    return invalidWithCounts(snapshot, issues, previous, report, pending, now);
  }
  if (config.ownsPlacement) report.probe = probeOf(report.actions, facts, desired);
  return report;
}

/** The background checks of a set without a plan: the whole set, once it has begun the revision. */
function setBake(
  judgement: AnalysisJudgement,
  settled: readonly NodeView[],
  hash: string,
): StandingAsked[] {
  const outdated = settled.some((v) => v.live.some((p) => podRevision(p) !== hash));
  const started = settled.some((v) => v.live.some((p) => podRevision(p) === hash));
  if (!started) return [];
  return bakeOf(judgement, [{ name: "(set)", complete: !outdated }], outdated).asked;
}

type SetReading = Extract<ReturnType<typeof readSet>, { ok: true }>;

/**
 * The update's gate: the plan's (its order's turn, its domain's budget) within the maintenance
 * windows, when the set has either. The window is asked first, so a node it holds takes nothing
 * of its domain's budget.
 */
function windowedGate(
  planned: UpdateGate | undefined,
  windows: Pick<MaintenanceProgress, "admits"> | undefined,
): UpdateGate | undefined {
  if (!windows) return planned;
  return {
    admits: (view, down) => windows.admits(view) && (planned?.admits(view, down) ?? true),
    took: (view, down) => planned?.took(view, down),
  };
}

/**
 * The update order with the nodes whose window opens first at its head (stable within a group):
 * image pre-download pulls for them first, so they hold the image by their opening.
 */
function byWindowOpening(
  order: readonly NodeView[],
  admitsFrom: (view: NodeView) => EpochMillis,
): NodeView[] {
  return order.map((view, i) => ({ view, i, from: admitsFrom(view) }))
    .sort((a, b) => a.from - b.from || a.i - b.i).map((e) => e.view);
}

/** A phase that does not run: it decides nothing and leaves the allowance as it was. */
function skipped(left: Allowance): PhaseResult {
  return { decisions: decided({}), left };
}

/** The template of each revision the set owns, by hash, for in-place updates and rollbacks. */
function revisionTemplates(
  revisions: Snapshot["revisions"],
  setUid: string | undefined,
): Map<string, PodTemplateSpec> {
  const templates = new Map<string, PodTemplateSpec>();
  for (const revision of revisions) {
    const template = revisionTemplate(revision);
    const revisionHash = revision.metadata.labels?.[Keys.revisionHash];
    if (template && revisionHash && controllerUid(revision) === setUid) {
      templates.set(revisionHash, template);
    }
  }
  return templates;
}

/**
 * Whether a pod is available at `now`: each pod read is worked out once, before any phase runs; a
 * pod a phase derives (updated in place on its node's view) is worked out when asked.
 */
function availability(
  pods: readonly Pod[],
  minReadySeconds: number,
  now: EpochMillis,
  pending: readonly Expectation[],
): (pod: Pod) => boolean {
  // A gate this controller closed and has not seen closed yet (the pod as read still says
  // True): the kubelet is making the pod unready, so it is not available.
  const closing = new Set(
    pending.filter((e) => e.action === "setCondition" && e.condition === closedGate)
      .map((e) => e.uid),
  );
  const availableNow = (pod: Pod) =>
    !closing.has(pod.metadata.uid) && isPodAvailable(pod, minReadySeconds, now);
  const known = new Map<Pod, boolean>();
  for (const pod of pods) known.set(pod, availableNow(pod));
  return (pod) => known.get(pod) ?? availableNow(pod);
}

const closedGate = inPlaceGateExpected("False");

/**
 * A spec that cannot be rolled on these nodes (a template the API server refuses, a plan the
 * fleet cannot be ordered by): nothing is done, but the counts still tell the fleet.
 */
function invalidWithCounts(
  snapshot: Snapshot,
  issues: FieldIssue[],
  previous: AdvancedDaemonSetStatus,
  planned: Plan,
  pending: Expectation[],
  now: EpochMillis,
): Plan {
  const invalid = invalidOrUnmanagedPlan(
    { ok: false, managed: true, issues, previous },
    now,
    snapshot.set.metadata.generation,
  );
  return withCounts(invalid, planned, pending);
}

/**
 * The plan of a set that is not managed or whose spec is invalid: no action. A spec that
 * cannot be rolled still has pods to count, as long as its template and selector can be read:
 * UP-TO-DATE and AVAILABLE go on telling the fleet.
 */
function notRolledPlan(
  reading: Extract<ReturnType<typeof readSet>, { ok: false }>,
  snapshot: Snapshot,
  now: EpochMillis,
): Plan {
  const invalid = invalidOrUnmanagedPlan(reading, now, snapshot.set.metadata.generation);
  const reduced = reading.managed ? countingSnapshot(snapshot) : undefined;
  // The reduced set is planned once, never reduced again: if even it is invalid, nothing counts.
  const reducedReading = reduced && readSet(reduced);
  if (!reducedReading?.ok) return invalid;
  const counted = planRead(reduced!, reducedReading, now);
  if (counted.conditions.some((c) => c.type === "InvalidSpec" && c.status === "True")) {
    return invalid;
  }
  return withCounts(invalid, counted, invalid.status.expectations ?? []);
}

/** Pods ours by controller reference; orphans matching the selector are adopted (ADS only). */
function claimPods(snapshot: Snapshot, config: SetConfig): { owned: Pod[]; adoptions: Action[] } {
  const owned: Pod[] = [];
  const adoptions: Action[] = [];
  for (const pod of snapshot.pods) {
    const owner = controllerUid(pod);
    if (owner === config.identity.uid) owned.push(pod);
    else if (
      owner === undefined && config.ownsPlacement && !isTerminating(pod) &&
      matchesLabelSelector(config.selector, pod.metadata.labels)
    ) {
      adoptions.push({
        type: "patchPod",
        reason: "adopt an orphaned pod matching the selector",
        name: pod.metadata.name ?? "",
        uid: pod.metadata.uid ?? "",
        patch: { metadata: { ownerReferences: [controllerRef(config.identity)] } },
      });
    }
  }
  return { owned, adoptions };
}

/**
 * The revision pods should run: ours to write when edgeroll owns placement, else the newest
 * the native controller wrote (undefined while it has written none).
 */
function currentRevision(
  snapshot: Snapshot,
  config: SetConfig,
  previous: AdvancedDaemonSetStatus,
  owned: Pod[],
): { hash?: string; collisionCount: number; actions: Action[] } {
  const collisionCount = previous.collisionCount ?? 0;
  if (!config.ownsPlacement) {
    const hash = newestOwnedRevisionHash(config.identity.uid, snapshot.revisions);
    return { hash, collisionCount, actions: [] };
  }
  const liveHashes = new Set(owned.map(podRevision).filter((h): h is string => h !== undefined));
  return planRevisions(
    config.identity,
    config.template,
    config.revisionHistoryLimit,
    snapshot.revisions,
    liveHashes,
    collisionCount,
  );
}

/** The expectations written last time that are neither observed nor expired. */
function pendingExpectations(
  snapshot: Snapshot,
  previous: AdvancedDaemonSetStatus,
  now: EpochMillis,
): Expectation[] {
  const byName = new Map(snapshot.pods.map((p) => [p.metadata.name ?? "", p]));
  const byUid = new Map(snapshot.pods.map((p) => [p.metadata.uid ?? "", p]));
  return (previous.expectations ?? []).filter((exp) =>
    (parseTime(exp.deadline) ?? 0) > now && !isObserved(exp, byName, byUid)
  );
}

/**
 * Each node with its pods and whether the set wants a pod there, earlier actions not yet
 * observed counted as done (deleted pods leaving, created pods expected); and the strays, pods
 * aimed at no node that exists.
 */
function nodeViews(
  snapshot: Snapshot,
  config: SetConfig,
  owned: Pod[],
  pending: Expectation[],
): { views: NodeView[]; strays: Pod[] } {
  const podsByNode = new Map<string, Pod[]>();
  const strays: Pod[] = [];
  const nodeNames = new Set(snapshot.nodes.map((n) => n.metadata.name ?? ""));
  for (const pod of owned) {
    const nodeName = podNodeName(pod);
    if (nodeName === undefined || !nodeNames.has(nodeName)) {
      // Upstream deletes unbound pods aimed at a node that is gone; bound ones are PodGC's.
      if (!pod.spec.nodeName && !isTerminating(pod)) strays.push(pod);
      continue;
    }
    const list = podsByNode.get(nodeName);
    if (list) list.push(pod);
    else podsByNode.set(nodeName, [pod]);
  }
  const templateSpec = config.template.spec;
  const tolerations = daemonPodTolerations(templateSpec);
  const pendingByNode = groupByNode(pending);
  const views = [...snapshot.nodes]
    .sort((a, b) => ((a.metadata.name ?? "") < (b.metadata.name ?? "") ? -1 : 1))
    .map((node) => {
      const name = node.metadata.name ?? "";
      const pods = (podsByNode.get(name) ?? []).sort(compareOldestFirst);
      const view: NodeView = {
        name,
        node,
        ready: isNodeReady(node),
        placement: keepsPlaceWhileCut(
          node,
          nodeShouldRunDaemonPod(node, templateSpec, tolerations),
          templateSpec,
          tolerations,
          pods.some((p) => !isTerminating(p)),
        ),
        live: pods.filter((p) => !isTerminating(p)),
        leaving: pods.filter(isTerminating),
        observed: pods.filter((p) => !isTerminating(p)),
      };
      return afterActions(view, pendingByNode, config.template);
    });
  return { views, strays };
}

/** An InvalidSpec plan (no action) whose status counts the fleet as `counted` saw it. */
function withCounts(invalid: Plan, counted: Plan, pending: Expectation[]): Plan {
  const { expectations: _planned, nextCheckAt: _next, conditions: _c, ...counts } = counted.status;
  return {
    ...invalid,
    status: {
      ...counts,
      ...(pending.length > 0 ? { expectations: pending } : {}),
      conditions: invalid.conditions,
    },
  };
}

/**
 * The set reduced to what counting needs, OnDelete so nothing would be done: its template and
 * selector (an AdvancedDaemonSet), or its spec without the OpenYurt annotations' values (a
 * DaemonSet, whose spec the API server validated). Undefined when not even those can be read.
 */
function countingSnapshot(snapshot: Snapshot): Snapshot | undefined {
  const { set } = snapshot;
  if (snapshot.kind === "DaemonSet") {
    const { [maxUnavailableAnnotation]: _bad, ...annotations } = set.metadata.annotations ?? {};
    return {
      ...snapshot,
      set: {
        ...snapshot.set,
        metadata: {
          ...set.metadata,
          annotations: { ...annotations, [updateStrategyAnnotation]: "AdvancedRollingUpdate" },
        },
        spec: { ...snapshot.set.spec, updateStrategy: { type: "OnDelete" as const } },
      },
    };
  }
  const spec = set.spec as { template?: unknown; selector?: unknown } | undefined;
  const template = PodTemplateSpec.safeParse(spec?.template);
  const selector = LabelSelector.safeParse(spec?.selector);
  if (!template.success || !selector.success) return undefined;
  return {
    ...snapshot,
    set: {
      ...set,
      metadata: { ...set.metadata, annotations: {} },
      spec: {
        selector: selector.data,
        template: template.data,
        updateStrategy: { type: "OnDelete" },
      },
    },
  };
}

/**
 * The pod (and new ControllerRevision) to prove admissible when the plan writes pods: the
 * first pod it creates, or the one it would create on the first node it deletes from.
 */
function probeOf(actions: Action[], facts: PlanFacts, desired: NodeView[]): Plan["probe"] {
  const first = actions.find((a) => a.type === "createPod" || a.type === "deletePod");
  if (!first) return undefined;
  const created = actions.find((a) => a.type === "createRevision");
  const revisionObject = created?.type === "createRevision" ? created.revisionObject : undefined;
  let pod: Pod;
  if (first.type === "createPod") pod = first.pod;
  else {
    const node = (first.type === "deletePod" ? first.node : undefined) ?? desired[0]?.name;
    if (node === undefined) return undefined;
    pod = podManifest(facts, podName(facts, node), node);
  }
  return { revision: facts.hash, pod, ...(revisionObject ? { revisionObject } : {}) };
}

function groupByNode(expectations: readonly Expectation[]): Map<string, Expectation[]> {
  const byNode = new Map<string, Expectation[]>();
  for (const e of expectations) {
    if (e.node !== undefined) byNode.set(e.node, [...(byNode.get(e.node) ?? []), e]);
  }
  return byNode;
}
