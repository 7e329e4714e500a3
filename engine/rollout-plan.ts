/**
 * The rollout plan's phase (ADR 0050): which desired nodes the update may reach now, and what the
 * plan waits for. The nodes are put in one order (the first domains as listed, the others by name,
 * the unlabelled last; Kruise's order, names descending, within each); steps are cumulative
 * targets over it. A step is done when every Ready node it covers runs the revision, available;
 * then its soak and its approval pass, and the next step's nodes are reached. Where the plan stands
 * is read from the previous status and written again, so any call can go on from it. Pure.
 */
import { Keys, type Pod } from "../api/kube-objects.ts";
import type { FieldIssue } from "../api/label-selector.ts";
import {
  type DomainState,
  maxPlanDomains,
  type PlanAnswers,
  type PlanState,
  type RolloutPlan,
  type RolloutPlanStatus,
  type StopReason,
  unlabelledDomain,
} from "../api/rollout-plan.ts";
import type { Awaited, EpochMillis, PlanEvent } from "../api/plan.ts";
import { plural } from "./conditions.ts";
import { resolve } from "./config.ts";
import { formatTime, parseTime, podRevision } from "./pod-node-state.ts";
import { activePods, type NodeView } from "./node-view.ts";
import { WaitList } from "./decisions.ts";
import { type AnalysisJudgement, bakeOf, gateOf, type StandingAsked } from "./analysis.ts";

/** Whether the update may start on a node now, and what it took when it did. */
export interface UpdateGate {
  /** `down`: the node's old pod is already unavailable (replacing it takes no budget). */
  admits(view: NodeView, down: boolean): boolean;
  took(view: NodeView, down: boolean): void;
}

export interface PlanProgress {
  /** The nodes the update may reach now, in the plan's order. */
  covered: NodeView[];
  gate: UpdateGate;
  /** The operator aborted this revision's rollout: nothing more is updated. */
  aborted: boolean;
  /** The domain a desired node is in, for the failure budget counted per domain. */
  domainOf(node: string): string;
  /** The plan as walked: `reportPlan` gives it the rollout's stop, judged after this phase. */
  status: RolloutPlanStatus;
  /** The domains a node of which runs or is getting the revision, as the call found them. */
  begun: ReadonlySet<string>;
  /**
   * The steps the walk passed this call: their Events, and the step it started at as the status
   * had it. A stopped rollout updates nothing, so `reportPlan` passes none: the plan a resume
   * goes on from is the one the operator saw stop.
   */
  passed?: { events: PlanEvent[]; from: Pick<RolloutPlanStatus, "step" | "target" | "doneSince"> };
  awaited: Awaited[];
  wakeUps: EpochMillis[];
  /** Events of this call besides the steps passed and the state's. */
  events: PlanEvent[];
  /** The analysis standings the steps' gates and the bakes asked for, in the order asked. */
  analysisAsked: StandingAsked[];
  /** The Event of the state the walk came to, when it changed. */
  told?: PlanEvent;
  /**
   * The plan waits at a step's pause (a soak, an approval): nothing is wrong, so the progress
   * deadline's clock is held (`held`), and starts again from the call that sees the pause end
   * (`ended`), as upstream counts no paused Deployment against its deadline. A check's gate holds
   * nothing: an inconclusive check counts toward the deadline (ADR 0055).
   */
  paused: { held: boolean; ended: boolean };
}

export type PlanReading = { ok: true; progress: PlanProgress } | {
  ok: false;
  issues: FieldIssue[];
};

interface Domain {
  name: string;
  /** Desired nodes, in Kruise's update order (names descending). */
  nodes: NodeView[];
}

/** What `planRollout` reads of the set besides its nodes. */
export interface PlanInput {
  plan: RolloutPlan;
  /** Where the plan was written, for the issues only the nodes reveal. */
  path: string;
  answers: PlanAnswers;
  hash: string;
  /** The set's mode: under maxSurge a replacement leaves the old pod available. */
  surge: boolean;
  /**
   * OpenYurt OTA: the update is a pod marked PodNeedUpgrade, and a marked old pod is an upgrade
   * in flight, held against its domain's budget until the node has upgraded (ADR 0053).
   */
  ota: boolean;
  previous?: RolloutPlanStatus;
  now: EpochMillis;
  /** The analysis checks' standing (ADR 0055): the steps' gates and the domains they stopped. */
  analysis?: AnalysisJudgement;
  /** Stopped domains whose nodes go back to the last complete revision, within their budget. */
  rolledBack?: ReadonlySet<string>;
  /**
   * The revision whose stopped rollout the set was rolled back from, to this one (ADR 0035): the
   * return is not a new rollout, so no step, pause or check holds it, and the failed pods are
   * replaced first, in whichever domain.
   */
  rollbackFrom?: string;
}

export function planRollout(
  input: PlanInput,
  desired: readonly NodeView[],
  available: (pod: Pod) => boolean,
): PlanReading {
  const { plan, hash } = input;
  const ordered = orderDomains(plan, input.path, desired);
  if (!ordered.ok) return ordered;
  const domains = ordered.domains;
  const order = domains.flatMap((d) => d.nodes);
  const targets = stepTargets(plan, domains, order.length);
  // Asked of a node by the steps, the tally and the gate: worked out once per node.
  const updatedNodes = new Set(order.filter((v) => isUpdatedAvailable(v, hash, available)));
  const updated = (v: NodeView) => updatedNodes.has(v);
  const aborted = input.answers.aborted === hash;
  const domainOfNode = new Map<NodeView, string>();
  for (const d of domains) for (const v of d.nodes) domainOfNode.set(v, d.name);
  // Domains a failed check stopped (ADR 0055): their nodes are updated no further, and the steps
  // are done without them.
  const stopped = input.analysis?.stoppedDomains ?? new Set<string>();
  const walked = walkSteps(input, {
    order,
    targets,
    updated,
    aborted,
    domainOf: (v) => domainOfNode.get(v)!,
    stopped,
  });
  const events: PlanEvent[] = [];
  if (!walked.previous && walked.outdated) {
    events.push({
      type: "Normal",
      reason: "PlanStarted",
      message: `revision ${hash}: ${
        input.rollbackFrom !== undefined
          ? `back from ${input.rollbackFrom}, held by no step,`
          : plural(plan.steps.length, "step")
      } over ${plural(order.length, "node")} in ${plural(domains.length, "domain")}`,
    });
  }
  const covered = order.slice(0, aborted ? 0 : targets[walked.index]);
  const tally = domains.map((d) =>
    tallyDomain(d, hash, updated, available, input.ota, domainBudget(plan, d))
  );
  const { gate, domainOf, turns } = domainGate(
    input,
    domains,
    tally,
    covered,
    updated,
    available,
    walked.waits,
    stopped,
  );
  // The background checks of the domains begun, while old pods are left to replace (a first
  // placement begins none); the walk asked them of every domain when the last step was done.
  const analysisAsked = [...walked.analysisAsked];
  if (walked.state !== "Done" && input.analysis) {
    analysisAsked.push(
      ...bakeOf(
        input.analysis,
        tally.filter((t) => t.started && !stopped.has(t.name))
          .map((t) => ({ name: t.name, complete: t.complete })),
        walked.outdated,
      ).asked,
    );
  }
  const status: RolloutPlanStatus = {
    revision: hash,
    step: walked.index + 1,
    steps: plan.steps.length,
    target: targets[walked.index],
    state: walked.state,
    ...(walked.doneSince !== undefined ? { doneSince: formatTime(walked.doneSince) } : {}),
    ...(walked.stopReason ? { stop: { reason: walked.stopReason } } : {}),
    ...(input.rollbackFrom !== undefined ? { rollbackFrom: input.rollbackFrom } : {}),
    domains: tally.map((t) => ({
      name: t.name,
      state: input.rolledBack?.has(t.name)
        ? "RolledBack"
        : stopped.has(t.name)
        ? "Stopped"
        : domainState(t, walked.state, turns.has(t.name)),
      nodes: t.nodes,
      updated: t.updated,
      unreachable: t.unreachable,
      ...(t.maxUnavailable !== undefined ? { maxUnavailable: t.maxUnavailable } : {}),
    })),
  };
  // A domain that starts going back is told once (ADR 0055).
  for (const name of input.rolledBack ?? []) {
    const before = walked.previous?.domains.find((d) => d.name === name)?.state;
    if (before === "RolledBack") continue;
    events.push({
      type: "Warning",
      reason: "DomainRolledBack",
      message:
        `revision ${hash}: ${name}'s nodes go back to the last complete revision: a check failed there`,
    });
  }
  const { awaited, wakeUps } = walked.waits;
  const { passedFrom } = walked;
  const passed = passedFrom && {
    events: walked.events,
    from: {
      step: passedFrom.index + 1,
      target: targets[passedFrom.index],
      doneSince: formatTime(passedFrom.doneSince),
    },
  };
  return {
    ok: true,
    progress: {
      covered,
      gate,
      aborted,
      domainOf,
      status,
      begun: new Set(tally.filter((t) => t.started).map((t) => t.name)),
      ...(passed ? { passed } : {}),
      awaited,
      wakeUps,
      events,
      analysisAsked,
      ...(walked.told ? { told: walked.told } : {}),
      paused: {
        held: pauseStates.has(walked.state),
        ended: pauseStates.has(walked.previous?.state ?? "Rolling") &&
          !pauseStates.has(walked.state),
      },
    },
  };
}

/** What the plan's report needs of the rollout's stop (ADR 0035), when one is in force. */
export interface RolloutStop {
  reason: StopReason;
  /** The domain over its own failure budget, when that stopped the rollout. */
  domain?: { name: string };
}

/** The plan's states that wait at a step's pause, for a time or for the operator. */
const pauseStates: ReadonlySet<PlanState> = new Set(["Soaking", "AwaitingApproval"]);

/** The domain states of a domain being updated, as `domainState` gives them. */
const inFlightStates: ReadonlySet<DomainState> = new Set([
  "Rolling",
  "Analyzing",
  "Soaking",
  "AwaitingApproval",
]);

/**
 * The plan's status and Events, given the rollout's stop: the failure budget is judged after the
 * plan's phase (it counts failures by the plan's domains), so its stop comes in here. Stopped,
 * with the stop's reason; the domain over its budget and every domain in flight Stopped, since
 * no old pod is replaced anywhere; at the step it stood at before this call, since a pause that
 * ended meanwhile passes nothing while nothing is updated. The walk's state Event and those of the
 * steps it passed are left out while stopped: the RolloutStopped condition's Event tells the
 * stop, and a resume tells the state and the steps again.
 */
export function reportPlan(
  progress: PlanProgress,
  stop: RolloutStop | undefined,
): { status: RolloutPlanStatus; events: PlanEvent[] } {
  const { status, events, told, passed } = progress;
  if (!stop) {
    return { status, events: [...events, ...passed?.events ?? [], ...told ? [told] : []] };
  }
  const { doneSince: _, ...walkedUndated } = status;
  const standing = passed ? { ...walkedUndated, ...passed.from } : status;
  return {
    status: {
      ...standing,
      state: "Stopped",
      stop: { reason: stop.reason, ...(stop.domain ? { domain: stop.domain.name } : {}) },
      // A domain given its turn this very call, none of its nodes begun, has not started: it
      // gives the turn back (Pending), and a resume gives the turns again in the plan's order.
      domains: status.domains.map((d) =>
        d.name === stop.domain?.name || (inFlightStates.has(d.state) && progress.begun.has(d.name))
          ? { ...d, state: "Stopped" }
          : inFlightStates.has(d.state)
          ? { ...d, state: "Pending" }
          : d
      ),
    },
    events,
  };
}

/**
 * From the step the status records, past every step that is done and whose pause has passed: the
 * step the plan is at, its state, since when it has been done, what it waits for, and an Event
 * for each step passed and for the state it comes to.
 */
function walkSteps(input: PlanInput, fleet: {
  order: readonly NodeView[];
  targets: readonly number[];
  updated: (v: NodeView) => boolean;
  aborted: boolean;
  domainOf: (v: NodeView) => string;
  /** Domains a failed check stopped. */
  stopped: ReadonlySet<string>;
}) {
  const { plan, hash, now } = input;
  const { order, targets, updated, aborted, domainOf, stopped } = fleet;
  // A failed check of the whole set (ADR 0055): the rollout stopped, the plan neither goes on nor
  // is Done, after its last node too.
  const setFailed = input.analysis?.setFailed?.check;
  // The first Ready node of the order not yet updated, outside a stopped domain: every step whose
  // target ends at or before it is done.
  const firstPending = order.findIndex((v) => v.ready && !updated(v) && !stopped.has(domainOf(v)));
  const stepDone = (index: number) => firstPending === -1 || firstPending >= targets[index];
  const previous = input.previous?.revision === hash ? input.previous : undefined;
  const rollingBack = input.rollbackFrom !== undefined;
  // A return to the last complete revision passes every pause and check, as a promote does.
  const promoted = input.answers.promoted === hash || rollingBack;
  // Steps are numbered from 1 in status, Events and approvals, as Kruise Rollout numbers them;
  // `index` is the step's place in `plan.steps`.
  const approvedUpTo = input.answers.approved?.revision === hash ? input.answers.approved.step : 0;
  const last = plan.steps.length - 1;
  // A fleet with no old pod left (a first rollout, a plan added after the rollout, nodes that
  // came updated) has nothing to pause for, nor has a rollback; else an edited plan goes on from
  // the step the status records (ADR 0050).
  const outdated = order.some((v) => hasOldPod(v, hash));
  let index = outdated && !rollingBack ? Math.min((previous?.step ?? 1) - 1, last) : last;
  let doneSince = previous?.step === index + 1 ? parseTime(previous.doneSince) : undefined;
  const waits = new WaitList(now);
  const events: PlanEvent[] = [];
  const analysisAsked: StandingAsked[] = [];
  let state: PlanState = aborted ? "Stopped" : "Rolling";
  // The step the walk started at, as it stood, once it passes it.
  let passedFrom: { index: number; doneSince: EpochMillis } | undefined;
  while (!aborted) {
    const number = index + 1;
    if (!stepDone(index)) {
      doneSince = undefined;
      break;
    }
    // The step's checks, for each domain it reached; an operator's promote passes them.
    const checks = promoted ? undefined : plan.steps[index].checks;
    if (checks?.length && input.analysis) {
      const reached = [...new Set(order.slice(0, targets[index]).map(domainOf))]
        .filter((d) => !stopped.has(d));
      const { verdict, asked } = gateOf(input.analysis, number, reached);
      analysisAsked.push(...asked);
      if (!verdict.passed && setFailed === undefined) {
        state = "Analyzing";
        waits.wait(`step ${number} checks`, verdict.why ?? "the checks of every reached domain");
        break;
      }
    }
    // A failed check lets no later step start: the step's other domains finished, the plan stops.
    if (stopped.size > 0 || setFailed !== undefined) {
      state = "Stopped";
      doneSince = undefined;
      break;
    }
    if (index === last) {
      // Done once each domain's background checks have baked there (ADR 0055), or promoted.
      const baked = !promoted && input.analysis && bakeOf(
        input.analysis,
        [...new Set(order.map(domainOf))].map((name) => ({ name, complete: true })),
        false,
      );
      if (baked) analysisAsked.push(...baked.asked);
      if (baked && !baked.verdict.passed) {
        state = "Analyzing";
        waits.wait("background checks", baked.verdict.why ?? "every domain's background checks");
        break;
      }
      state = "Done";
      doneSince = undefined;
      break;
    }
    doneSince ??= now;
    const pause = promoted ? undefined : plan.steps[index].pause;
    const soakEnd = pause?.soakSeconds !== undefined ? doneSince + pause.soakSeconds * 1000 : 0;
    if (now < soakEnd) {
      state = "Soaking";
      const nodes = plural(targets[index], "node");
      waits.wait(
        `step ${number} soak`,
        `every updated pod of its ${nodes} stays available`,
        soakEnd,
      );
      break;
    }
    if (pause?.approval && approvedUpTo < number) {
      state = "AwaitingApproval";
      waits.wait(
        `approval of step ${number}`,
        `kubectl edgeroll approve (annotation apps.edgeroll.dev/approved-step: ${hash}/${number})`,
      );
      break;
    }
    events.push({
      type: "Normal",
      reason: "PlanStepDone",
      message: `revision ${hash}: step ${number} done, ${
        plural(targets[index], "node")
      } of ${order.length} reached; step ${number + 1} starts`,
    });
    passedFrom ??= { index, doneSince };
    index++;
    doneSince = undefined;
  }
  const step = index + 1;
  const stopReason: StopReason | undefined = state !== "Stopped"
    ? undefined
    : aborted
    ? "Aborted"
    : "AnalysisFailed";
  // Done is told once a rollout of old pods has finished, not for a revision that had none.
  const tells = state === "AwaitingApproval" || state === "Stopped" ||
    (state === "Done" && previous !== undefined);
  const changed = state !== previous?.state || step !== previous?.step ||
    stopReason !== previous?.stop?.reason;
  const told = tells && changed
    ? stateEvent(hash, state, step, aborted ? [] : [...stopped])
    : undefined;
  return {
    index,
    state,
    doneSince,
    stopReason,
    waits,
    events,
    analysisAsked,
    told,
    previous,
    outdated,
    passedFrom,
  };
}

function stateEvent(
  hash: string,
  state: PlanState,
  step: number,
  stoppedDomains: readonly string[],
): PlanEvent {
  if (state === "AwaitingApproval") {
    return {
      type: "Normal",
      reason: "PlanAwaitingApproval",
      message:
        `revision ${hash}: step ${step} done; the next step waits for kubectl edgeroll approve`,
    };
  }
  if (state === "Stopped" && stoppedDomains.length > 0) {
    return {
      type: "Warning",
      reason: "PlanStopped",
      message: `revision ${hash}: step ${step} done but in ${
        stoppedDomains.join(", ")
      }, stopped by a failed check; no later step starts (kubectl edgeroll resume measures again)`,
    };
  }
  if (state === "Stopped") {
    return {
      type: "Warning",
      reason: "PlanAborted",
      message: `revision ${hash}: aborted by the operator at step ${step}; nothing more is updated`,
    };
  }
  return { type: "Normal", reason: "PlanDone", message: `revision ${hash}: every step done` };
}

/**
 * The gate the update walk passes each node through. An available old pod is updated only in a
 * domain that holds a turn, and within its domain's `domainMaxUnavailable`; an old pod already
 * down is replaced in its own slot in any covered domain, turn or none (a repair, as a pod-less
 * node's placement, gives no turn). Turns go to the covered domains in the plan's order, at most
 * `maxConcurrentDomains` at once: a domain keeps its turn, as the previous status records it (its
 * state in flight), until it is complete or stopped; then the next covered domain in the order
 * not complete takes it (one whose last nodes are repairs too: the order is kept). A maintenance window does not pass a turn on: a
 * domain whose window is closed keeps it (ADR 0050, amended 2026-12-07). The covered domains
 * held back for their turn are a wait.
 */
function domainGate(
  input: PlanInput,
  domains: readonly Domain[],
  tally: readonly DomainTally[],
  covered: readonly NodeView[],
  updated: (v: NodeView) => boolean,
  available: (pod: Pod) => boolean,
  waits: WaitList,
  stopped: ReadonlySet<string>,
): {
  gate: UpdateGate;
  domainOf: (node: string) => string;
  /** The domains whose turn the status records (in flight), read back by the next call. */
  turns: ReadonlySet<string>;
} {
  const { plan, surge, hash, ota } = input;
  const domainOf = new Map<string, string>();
  for (const d of domains) for (const v of d.nodes) domainOf.set(v.name, d.name);
  const complete = new Map(tally.map((t) => [t.name, t.complete]));
  const unavailable = new Map(tally.map((t) => [t.name, t.unavailable]));
  const limits = new Map(tally.map((t) => [t.name, t.maxUnavailable ?? Infinity]));
  const coveredNames = new Set(covered.map((v) => v.name));
  // A domain that may hold a turn: reached by the step, not complete, and not stopped (a stopped
  // domain holds no turn: the others go on).
  const open = (d: Domain) =>
    !complete.get(d.name) && !stopped.has(d.name) && d.nodes.some((v) => coveredNames.has(v.name));
  // A covered Ready node whose old pod is up and not being replaced: only a turn updates it (in
  // OTA, an old pod not yet marked).
  const awaitsUpdate = (v: NodeView) => {
    if (!coveredNames.has(v.name) || !v.ready || updated(v) || v.pendingCreate !== undefined) {
      return false;
    }
    const active = activePods(v);
    if (active.some((p) => podRevision(p) === hash)) return false;
    return active.some((p) =>
      podRevision(p) !== hash && (ota ? !markedToUpgrade(p) : available(p))
    );
  };
  const previous = input.previous?.revision === hash ? input.previous : undefined;
  // The turns the previous status records: the domains in flight, and those a stop of the
  // rollout left Stopped (they had begun), which a resume gives back their turn.
  const held = new Set(
    previous?.domains.filter((d) => inFlightStates.has(d.state) || d.state === "Stopped")
      .map((d) => d.name) ?? [],
  );
  const turns = new Set<string>();
  for (const d of domains) {
    if (turns.size < plan.maxConcurrentDomains && held.has(d.name) && open(d)) turns.add(d.name);
  }
  for (const d of domains) {
    if (turns.size >= plan.maxConcurrentDomains) break;
    if (!turns.has(d.name) && open(d)) turns.add(d.name);
  }
  const waiting = domains.filter((d) =>
    !turns.has(d.name) && open(d) && d.nodes.some(awaitsUpdate)
  );
  if (waiting.length > 0) {
    waits.wait(
      `${plural(waiting.length, "domain")} (${waiting.map((d) => d.name).join(", ")})`,
      `maxConcurrentDomains ${plan.maxConcurrentDomains}: ${[...turns].join(", ")} ${
        turns.size === 1 ? "is" : "are"
      } being updated`,
    );
  }
  const gate: UpdateGate = {
    admits(view, down) {
      const domain = domainOf.get(view.name)!;
      // Under maxSurge the old pod stays available until its replacement is: no unavailability.
      const budget = down || surge || unavailable.get(domain)! < limits.get(domain)!;
      // A stopped domain takes no turn; rolled back, its nodes go back within its own budget.
      if (stopped.has(domain)) return (input.rolledBack?.has(domain) ?? false) && budget;
      // A pod already down is replaced in its own slot: no turn is asked, none is given.
      return (down || turns.has(domain)) && budget;
    },
    took(view, down) {
      const domain = domainOf.get(view.name)!;
      if (!down && !surge) unavailable.set(domain, unavailable.get(domain)! + 1);
    },
  };
  return { gate, domainOf: (node) => domainOf.get(node) ?? "", turns };
}

/** A domain's `domainMaxUnavailable`, resolved against its desired nodes (rounded up). */
function domainBudget(plan: RolloutPlan, domain: Domain): number | undefined {
  return plan.domainMaxUnavailable === undefined
    ? undefined
    : resolve(plan.domainMaxUnavailable, domain.nodes.length, true);
}

/** The domains in the plan's order, or why the fleet cannot be ordered by this plan. */
function orderDomains(
  plan: RolloutPlan,
  planPath: string,
  desired: readonly NodeView[],
): { ok: true; domains: Domain[] } | { ok: false; issues: FieldIssue[] } {
  const unlabelled = unlabelledDomain(plan.domainLabel);
  const byName = new Map<string, NodeView[]>();
  let without: NodeView[] = [];
  for (const view of desired) {
    const value = view.node.metadata.labels?.[plan.domainLabel];
    if (value === undefined) without.push(view);
    else {
      const list = byName.get(value);
      if (list) list.push(view);
      else byName.set(value, [view]);
    }
  }
  const issues: FieldIssue[] = [];
  const count = byName.size + (without.length > 0 ? 1 : 0);
  if (count > maxPlanDomains) {
    issues.push({
      path: `${planPath}.domainLabel`,
      message:
        `the desired nodes have ${count} values of ${plan.domainLabel}, more than the ${maxPlanDomains} a plan orders`,
    });
  }
  plan.firstDomains.forEach((name, i) => {
    if (!byName.has(name)) {
      issues.push({
        path: `${planPath}.firstDomains[${i}]`,
        message: `no desired node has ${plan.domainLabel}=${name}`,
      });
    }
  });
  if (issues.length > 0) return { ok: false, issues };
  const first = new Set(plan.firstDomains);
  const rest = [...byName.keys()].filter((n) => !first.has(n)).sort();
  const byNameDesc = (a: NodeView, b: NodeView) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0);
  const domains = [...plan.firstDomains, ...rest].map((name) => ({
    name,
    nodes: byName.get(name)!.sort(byNameDesc),
  }));
  without = without.sort(byNameDesc);
  if (without.length > 0) domains.push({ name: unlabelled, nodes: without });
  return { ok: true, domains };
}

/**
 * Each step's target, in nodes from the start of the order: a count or percent of the nodes
 * (rounded up), or the end of the N-th domain after the last one the step before covered whole.
 * Never below the step before's; the last step reaches every node (validation asks `100%`).
 */
function stepTargets(plan: RolloutPlan, domains: readonly Domain[], total: number): number[] {
  const ends: number[] = [];
  let end = 0;
  for (const d of domains) ends.push(end += d.nodes.length);
  const targets: number[] = [];
  let before = 0;
  for (const step of plan.steps) {
    let target: number;
    if (step.nodes !== undefined) target = resolve(step.nodes, total, true);
    else {
      const wholeDomains = ends.filter((e) => e <= before).length;
      target = ends[Math.min(wholeDomains + step.domains! - 1, ends.length - 1)] ?? total;
    }
    before = Math.min(total, Math.max(before, target));
    targets.push(before);
  }
  return targets;
}

/** A node with a pod of another revision: what the plan is there to roll. */
function hasOldPod(view: NodeView, hash: string): boolean {
  return activePods(view).some((p) => podRevision(p) !== hash);
}

/** A node whose pods all run the revision, one of them available: the plan counts it done. */
function isUpdatedAvailable(view: NodeView, hash: string, available: (p: Pod) => boolean): boolean {
  if (view.pendingCreate !== undefined) return false;
  const active = activePods(view);
  return active.length > 0 && active.every((p) => podRevision(p) === hash) &&
    active.some(available);
}

interface DomainTally {
  name: string;
  nodes: number;
  updated: number;
  unreachable: number;
  /** Ready nodes without an available pod: the domain's share of maxUnavailable in use. */
  unavailable: number;
  /** Its `domainMaxUnavailable` resolved, when the plan sets one. */
  maxUnavailable?: number;
  /** A node runs, or is getting, the revision. */
  started: boolean;
  /** Every Ready node is updated, available. */
  complete: boolean;
}

function tallyDomain(
  domain: Domain,
  hash: string,
  updated: (v: NodeView) => boolean,
  available: (p: Pod) => boolean,
  ota: boolean,
  maxUnavailable: number | undefined,
): DomainTally {
  const tally: DomainTally = {
    name: domain.name,
    nodes: domain.nodes.length,
    updated: 0,
    unreachable: 0,
    unavailable: 0,
    ...(maxUnavailable !== undefined ? { maxUnavailable } : {}),
    started: false,
    complete: true,
  };
  for (const view of domain.nodes) {
    const isUpdated = updated(view);
    const active = activePods(view);
    if (isUpdated) tally.updated++;
    if (!view.ready) tally.unreachable++;
    else if (!isUpdated) tally.complete = false;
    const marked = ota && active.some((p) => podRevision(p) !== hash && markedToUpgrade(p));
    if (view.ready && (marked || !active.some(available))) tally.unavailable++;
    // A Ready node with no pod is being replaced (or placed): it gets the revision.
    const gettingRevision = marked || view.pendingCreate !== undefined ||
      (view.ready && active.length === 0);
    if (gettingRevision || active.some((p) => podRevision(p) === hash)) {
      tally.started = true;
    }
  }
  return tally;
}

/** OpenYurt OTA: the pod may be upgraded by its node now. */
export function markedToUpgrade(pod: Pod): boolean {
  return pod.status?.conditions?.some((c) =>
    c.type === Keys.podNeedUpgrade && c.status === "True"
  ) ?? false;
}

/** A domain's state: in flight only while it holds a turn, which the next call reads back. */
function domainState(tally: DomainTally, plan: PlanState, turn: boolean): DomainState {
  if (tally.complete) return "Done";
  if (!turn) return "Pending";
  return plan === "Done" ? "Rolling" : plan;
}
