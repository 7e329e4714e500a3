/**
 * Phase 2, updates: which nodes an update may reach (Kruise's order, partition, selector) and how
 * old pods are replaced within maxUnavailable or maxSurge; OpenYurt OTA marks pods instead.
 */
import type { Expectation } from "../api/advanced-daemonset.ts";
import { Keys, type Pod } from "../api/kube-objects.ts";
import { matchesLabelSelector } from "../api/label-selector.ts";
import { plural } from "./conditions.ts";
import { type SetConfig, updateBudget } from "./config.ts";
import { isPodAvailable, podRevision } from "./pod-node-state.ts";
import type { BudgetUse } from "../api/plan.ts";
import {
  type Allowance,
  factsFor,
  PhaseDecisions,
  type PhaseResult,
  type PlanFacts,
  podName,
} from "./decisions.ts";
import { activePods, isPreDeleting, type NodeView } from "./node-view.ts";
import { markedToUpgrade, type UpdateGate } from "./rollout-plan.ts";

/**
 * Kruise's update order (`filterDaemonPodsNodeToUpdate`): node names descending, nodes already
 * updated first, then nodes with no old pod, then the rest (only those matching the update
 * selector when one is set); `partition` drops the tail.
 */
export function updateOrder(
  desired: readonly NodeView[],
  hash: string,
  partition: number,
  config: SetConfig,
): NodeView[] {
  const byNameDesc = [...desired].sort((a, b) => (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  const updated: NodeView[] = [];
  const updating: NodeView[] = [];
  const rest: NodeView[] = [];
  for (const view of byNameDesc) {
    const active = view.live.filter((p) => !isPreDeleting(p));
    const hasNew = view.pendingCreate !== undefined ||
      active.some((p) => podRevision(p) === hash);
    if (hasNew || active.length > 1) updated.push(view);
    else if (active.length === 0) updating.push(view);
    else if (
      !config.updateSelector ||
      matchesLabelSelector(config.updateSelector, view.node.metadata.labels)
    ) rest.push(view);
  }
  const maxUpdate = Math.max(0, byNameDesc.length - partition);
  return [...updated, ...updating, ...rest].slice(0, maxUpdate);
}

/**
 * The pod that holds a node's share of the budget: its new pod (or the one expected), else the
 * pod on its way out, else its pod. The same node gets the same name before and after our own
 * actions are observed, so a repeated plan writes the same condition.
 */
function budgetHolderNames(
  views: readonly NodeView[],
  holds: (v: NodeView) => boolean,
  hashFor: (node: string) => string,
): string[] {
  return views.filter(holds).map((v) => {
    const active = activePods(v);
    const hash = hashFor(v.name);
    const pod = active.find((p) => podRevision(p) === hash)?.metadata.name ??
      v.pendingCreate?.pod ??
      v.leaving[0]?.metadata.name ?? active[0]?.metadata.name ?? v.live[0]?.metadata.name;
    return pod ?? `node/${v.name} (no pod)`;
  });
}

/** One update budget (maxUnavailable or maxSurge) and how a node is replaced under it. */
interface UpdateBudget {
  name: BudgetUse["rule"];
  limit: number;
  /** A desired node that holds the budget now. */
  holds(view: NodeView): boolean;
  /** Replaces an old pod that is already down: it takes no budget. */
  replaceDown(view: NodeView, old: Pod): void;
  /** Starts replacing an available old pod; returns what now holds the budget, if it started. */
  replace(view: NodeView, old: Pod): string | undefined;
}

/**
 * Walks the update order and replaces old pods within the budget: maxSurge for a Surge set,
 * maxUnavailable otherwise, and within a rollout plan's `gate` when the set has one. Nodes that
 * are NotReady are skipped (and hold no budget); old pods already down are replaced in their own
 * slot.
 */
export function planBudgetedUpdate(
  facts: PlanFacts,
  allowance: Allowance,
  desired: readonly NodeView[],
  order: readonly NodeView[],
  available: (p: Pod) => boolean,
  gate?: UpdateGate,
): PhaseResult {
  const out = new PhaseDecisions(facts, allowance);
  const budget = facts.config.mode === "Surge"
    ? surgeBudget(out, desired.length, available)
    : recreateBudget(out, desired.length, available);
  const hashFor = (node: string) => out.hashFor(node);
  const holders = budgetHolderNames(desired, budget.holds, hashFor);
  // Nodes whose available old pod was not replaced this call (budget full, or the replacement
  // could not start yet): counted once the walk is over, so the count does not depend on where
  // in the order the budget filled up, and a plan repeated on its own status says the same.
  let notStarted = 0;
  for (const view of order) {
    const active = activePods(view);
    // A node of a rolled-back domain goes back to its pinned revision, within the same budget.
    const hash = hashFor(view.name);
    const old = active.find((p) => podRevision(p) !== hash);
    if (!old || active.some((p) => podRevision(p) === hash) || view.pendingCreate) continue;
    if (!view.ready) {
      const since = view.node.status?.conditions?.find((c) => c.type === "Ready")
        ?.lastTransitionTime;
      out.wait(
        `node/${view.name} Ready`,
        `NotReady or unreachable${
          since ? ` since ${since}` : ""
        }: its pod is updated when it comes back`,
      );
    } else if (!isPodAvailable(old, out.config.minReadySeconds, out.now)) {
      if (gate && !gate.admits(view, true)) continue;
      budget.replaceDown(view, old);
      gate?.took(view, true);
    } else if (holders.length < budget.limit) {
      // A node the plan holds back (its domain's turn or budget) waits as the plan says.
      if (gate && !gate.admits(view, false)) continue;
      const holder = budget.replace(view, old);
      if (holder !== undefined) {
        holders.push(holder);
        gate?.took(view, false);
      } else notStarted++;
    } else {
      notStarted++;
    }
  }
  if (holders.length >= budget.limit && notStarted > 0) {
    out.budgetExhausted({
      holders: [...holders].sort(),
      blocked: notStarted,
      message: `${budget.name} ${budget.limit} is used by ${plural(holders.length, "pod")}`,
    });
  }
  return out.done();
}

/** Why a node's pod is replaced: the update, or its domain's rollback (ADR 0055). */
function updateTo(out: PhaseDecisions, node: string): string {
  const hash = out.hashFor(node);
  return hash === out.hash
    ? `update to revision ${hash}`
    : `back to revision ${hash}: a check failed in its domain`;
}

/** maxUnavailable: a Ready desired node with no available pod holds a share (NotReady ones hold none). */
function holdsUnavailability(available: (p: Pod) => boolean): (view: NodeView) => boolean {
  // Written without activePods' copy: the plan asks this of every desired node, twice.
  return (v) => v.ready && !v.live.some((p) => !isPreDeleting(p) && available(p));
}

/**
 * maxSurge: a Ready node whose available old pod has a new one beside it, not yet available (or
 * expected). A node whose old pod is down is replaced in its own slot: it holds no surge.
 */
function holdsSurge(
  hashFor: (node: string) => string,
  available: (p: Pod) => boolean,
): (view: NodeView) => boolean {
  return (v) => {
    if (!v.ready) return false;
    const hash = hashFor(v.name);
    let newPod: Pod | undefined;
    let availableOld = false;
    for (const p of v.live) {
      if (isPreDeleting(p)) continue;
      if (podRevision(p) === hash) newPod ??= p;
      else if (available(p)) availableOld = true;
    }
    return availableOld &&
      (v.pendingCreate !== undefined || (newPod !== undefined && !available(newPod)));
  };
}

/**
 * The update budget the set rolls under and the share its nodes hold, as read (earlier actions
 * not yet observed counted as done): what the CLI, the dashboard and the metrics show beside the
 * limit. The status's numberUnavailable is upstream's count (desired less available, NotReady
 * nodes included), not this. None for OnDelete and OTA, which no budget bounds.
 */
export function budgetUse(
  config: SetConfig,
  hash: string,
  desired: readonly NodeView[],
  available: (p: Pod) => boolean,
): BudgetUse | undefined {
  if (config.mode === "OnDelete" || config.mode === "OTA") return undefined;
  const { maxUnavailable, maxSurge } = updateBudget(config, desired.length);
  const surge = config.mode === "Surge";
  const holds = surge ? holdsSurge(() => hash, available) : holdsUnavailability(available);
  return {
    rule: surge ? "maxSurge" : "maxUnavailable",
    limit: surge ? maxSurge : maxUnavailable,
    inUse: desired.filter(holds).length,
  };
}

/**
 * Standard rolling update without surge, and OpenYurt AdvancedRollingUpdate: every unavailable
 * pod on a Ready desired node counts against maxUnavailable, old or new.
 */
function recreateBudget(
  out: PhaseDecisions,
  desiredCount: number,
  available: (p: Pod) => boolean,
): UpdateBudget {
  const { maxUnavailable } = updateBudget(out.config, desiredCount);
  // InPlaceIfPossible patches the pod when it can; either way the pod is unavailable for a while.
  const replaceOld = (old: Pod, reason: string) =>
    (out.config.inPlace && out.updateInPlace(old, reason)) || out.remove(old, reason);
  return {
    name: "maxUnavailable",
    limit: maxUnavailable,
    holds: holdsUnavailability(available),
    replaceDown(view, old) {
      const reason = "update: the old pod is already unavailable, replaced in its own slot";
      // Not started (this call's pod writes are spent): nothing to tell yet.
      if (!replaceOld(old, reason)) return;
      out.event({
        type: "Normal",
        reason: "ReplacingUnavailablePod",
        message:
          `Pod ${old.metadata.name} on ${view.name} was already unavailable: replaced without using budget`,
        pod: old.metadata.name,
      });
    },
    replace(view, old) {
      const started = replaceOld(
        old,
        `${updateTo(out, view.name)} (maxUnavailable ${maxUnavailable})`,
      );
      return started ? old.metadata.name ?? "" : undefined;
    },
  };
}

/** Standard rolling update with maxSurge: a new pod next to the old one, at most maxSurge at once. */
function surgeBudget(
  out: PhaseDecisions,
  desiredCount: number,
  available: (p: Pod) => boolean,
): UpdateBudget {
  const { maxSurge } = updateBudget(out.config, desiredCount);
  return {
    name: "maxSurge",
    limit: maxSurge,
    holds: holdsSurge((node) => out.hashFor(node), available),
    replaceDown(view) {
      out.create(view, "update: the old pod is unavailable, its replacement starts at once");
    },
    replace(view) {
      const started = out.create(view, `${updateTo(out, view.name)} (maxSurge ${maxSurge})`);
      return started ? podName(factsFor(out.facts, view.name), view.name) : undefined;
    },
  };
}

/**
 * OpenYurt OTA: mark each pod `PodNeedUpgrade` True (old revision) or False (current). Out of OTA
 * mode (`ota` false) a mark left True from when the set was in OTA mode is set False: the edge
 * agent trusts the mark alone (it may not read DaemonSets), so a stale one would let a node
 * delete its pod outside the rollout's budget. Under a rollout plan (ADR 0053) an old pod is
 * marked only once the plan reaches its Ready node and its domain has room, in the plan's order;
 * a mark the plan no longer reaches (an abort, an edited plan) is taken back, and old pods not yet
 * reached are left as they are. A stopped rollout (its failure budget spent, ADR 0035) takes back
 * every mark of a node that has not upgraded yet.
 */
export function planOta(
  facts: PlanFacts,
  allowance: Allowance,
  views: readonly NodeView[],
  pending: readonly Expectation[],
  ota = true,
  rollout: {
    stopped: boolean;
    /** The nodes a rollout plan reaches now, in its order (every node without a plan). */
    covered?: readonly NodeView[];
    /** The plan's gate within the maintenance windows, when the set has either. */
    gate?: UpdateGate;
    /** Whether a node's maintenance window lets its pod be replaced now. */
    windowed?: (view: NodeView) => boolean;
  } = { stopped: false },
): PhaseResult {
  const out = new PhaseDecisions(facts, allowance);
  const expected = new Set(
    pending.filter((e) =>
      e.action === "setCondition" && e.condition === undefined && e.revision === out.hash
    ).map((e) => e.uid),
  );
  const { stopped, gate, windowed } = rollout;
  const reached = !ota
    ? undefined
    : stopped
    ? new Set<string>()
    : gate
    ? reachedBy(rollout.covered ?? views, gate, windowed, out.hash)
    : undefined;
  const message = `controllerrevision: ${out.hash}`;
  for (const view of views) {
    // Held by its node's window (not by a stop or the plan): the node is told the revision it
    // waits for, so it may stage its images (`imagepull`) and queue its upgrade (ADR 0054).
    const outsideWindow = ota && !stopped && windowed !== undefined && !windowed(view);
    for (const pod of view.live) {
      const uid = pod.metadata.uid ?? "";
      const current = pod.status?.conditions?.find((c) => c.type === Keys.podNeedUpgrade);
      if (!ota && current?.status !== "True") continue;
      const old = podRevision(pod) !== out.hash;
      const held = old && reached !== undefined && !reached.has(view.name);
      const waitsForWindow = held && outsideWindow;
      // Held by the plan or a stop: a pod left as it is, unless a mark or a window's reason is
      // to be taken back (the node would stage or queue for a window that no longer holds it).
      const toldByWindow = current?.reason === Keys.outsideWindow;
      if (held && !waitsForWindow && current?.status !== "True" && !toldByWindow) continue;
      const status = ota && old && !held ? "True" : "False";
      // The window's reason on a held pod; cleared from a pod it no longer holds.
      const conditionReason = waitsForWindow ? Keys.outsideWindow : toldByWindow ? "" : undefined;
      if (
        (current?.status === status && current.message === message &&
          (conditionReason === undefined || (current.reason ?? "") === conditionReason)) ||
        expected.has(uid)
      ) {
        continue;
      }
      const reason = !ota
        ? "the set is not in OTA mode: the node no longer decides"
        : held && stopped
        ? "the rollout is stopped"
        : waitsForWindow
        ? "the node's maintenance window is closed"
        : held
        ? "the rollout plan does not reach this node now"
        : status === "True"
        ? `a new revision ${out.hash} is available`
        : "the pod runs the current revision";
      if (!out.markPod(pod, view.name, status, reason, conditionReason)) return out.done();
    }
  }
  return out.done();
}

/**
 * The nodes whose old pods their node may upgrade now: those already marked, on nodes the plan
 * covers whose maintenance window is open, and, in the plan's order, each Ready node its domain's
 * gate admits now. A mark whose node's window has closed is taken back: the upgrade waits for the
 * next opening (ADR 0054).
 */
function reachedBy(
  covered: readonly NodeView[],
  gate: UpdateGate,
  windowed: ((view: NodeView) => boolean) | undefined,
  hash: string,
): Set<string> {
  const reached = new Set<string>();
  for (const view of covered) {
    const old = activePods(view).filter((p) => podRevision(p) !== hash);
    if (old.length === 0 || (windowed && !windowed(view))) continue;
    if (old.some(markedToUpgrade)) reached.add(view.name);
    else if (view.ready && gate.admits(view, false)) {
      gate.took(view, false);
      reached.add(view.name);
    }
  }
  return reached;
}
