/**
 * `plan(snapshot, now)`: what should be done next for one set. Pure: no I/O, no clock, no
 * randomness; the same snapshot and `now` always give the same plan.
 *
 * Assumptions (what the executor and the next call guarantee):
 * - Actions are applied in order after the status claim; any prefix may land. Expectations in
 *   the written status stop the next call from repeating what has not been observed yet.
 * - A pod is created with a deterministic name, so a repeated create is a harmless 409.
 *
 * Invariants (each one is a test in `plan.test.ts` / `plan.property.test.ts`):
 * - Budget: after the plan's deletions, the unavailable pods on Ready desired nodes are at most
 *   max(maxUnavailable, those already unavailable): a pod already down is replaced in its own
 *   slot, an available one only within the budget. Surge: at most maxSurge nodes carry an extra
 *   pod, except to replace an old pod already down.
 * - NotReady or unreachable nodes neither consume the budget nor get updated.
 * - Partition keeps the tail of the update order on the old revision; the update selector limits
 *   updates to matching nodes; paused stops updates, never creation on nodes without a pod;
 *   OnDelete and OTA never delete for an update.
 * - Creations per call are at most burstReplicas minus creations still expected.
 */
import type { AdvancedDaemonSetStatus, Expectation } from "../api/advanced-daemonset.ts";
import { Keys, type Node, type Pod } from "../api/kube-objects.ts";
import { matchesLabelSelector } from "../api/label-selector.ts";
import { buildConditions, type ConditionState, type ConditionType } from "./conditions.ts";
import { readSet, resolve, type SetConfig } from "./config.ts";
import { nodeNameHash } from "./hash.ts";
import {
  availableAt,
  compareOldestFirst,
  formatTime,
  isFailed,
  isNodeReady,
  isPodAvailable,
  isPodReady,
  isTerminating,
  parseTime,
  podNodeName,
  podRevision,
} from "./objects.ts";
import { daemonPodTolerations, nodeShouldRunDaemonPod, type Placement } from "./placement.ts";
import {
  controllerRef,
  controllerUid,
  newestOwnedRevisionHash,
  planRevisions,
} from "./revisions.ts";
import type { Action, Awaited, EpochMillis, Plan, PlanEvent, Snapshot } from "./types.ts";

/** An action not observed within this time is forgotten and planned again. */
export const expectationTimeoutSeconds = 60;
/** A failed pod is deleted (and so recreated) at most this often per node: a pure backoff. */
export const failedPodMinAgeSeconds = 10;
/** The reconcile answer lists at most this many awaited items; the rest are summed up. */
const maxAwaitedListed = 20;
/** BudgetExhausted names at most this many pods. */
const maxPodsNamed = 10;

const preparingDelete = "PreparingDelete";

interface NodeView {
  name: string;
  node: Node;
  ready: boolean;
  placement: Placement;
  /** Owned, visible, not terminating and not being deleted by us; oldest first. */
  live: Pod[];
  /** Terminating, or deleted by us and not yet observed so. */
  leaving: Pod[];
  pendingCreate?: Expectation;
}

function isPreDeleting(pod: Pod): boolean {
  return pod.metadata.labels?.[Keys.lifecycleState] === preparingDelete;
}

/** Kruise's `IsPodHooked`: the pod carries every hook label or one of the hook finalizers. */
function isHooked(config: SetConfig, pod: Pod): boolean {
  const hook = config.preDelete;
  if (!hook) return false;
  const labels = pod.metadata.labels ?? {};
  const byLabel = Object.keys(hook.labelsHandler ?? {}).length > 0 &&
    Object.entries(hook.labelsHandler ?? {}).every(([k, v]) => labels[k] === v);
  const byFinalizer = (hook.finalizersHandler ?? []).some((f) =>
    (pod.metadata.finalizers ?? []).includes(f)
  );
  return byLabel || byFinalizer;
}

/** Collects the plan as the phases run, with the bookkeeping every action needs. */
class PlanBuilder {
  actions: Action[] = [];
  expectations: Expectation[] = [];
  events: PlanEvent[] = [];
  awaited: Awaited[] = [];
  /** Pods holding the update budget when a candidate had to wait. */
  budgetHolders: string[] = [];
  budgetBlocked = 0;
  budgetMessage = "";
  wakeUps: EpochMillis[] = [];
  creationsLeft: number;
  deletionsLeft: number;
  moreWork = false;

  constructor(
    readonly config: SetConfig,
    readonly hash: string,
    readonly now: EpochMillis,
    burst: number,
    pending: Expectation[],
  ) {
    // Work still expected counts against this call's share, so a repeated call adds nothing.
    const count = (action: Expectation["action"]) =>
      pending.filter((e) => e.action === action).length;
    this.creationsLeft = Math.max(0, burst - count("create"));
    this.deletionsLeft = Math.max(0, burst - count("delete") - count("setCondition"));
  }

  deadline(): string {
    return formatTime(this.now + expectationTimeoutSeconds * 1000);
  }

  wait(what: string, why: string, until?: EpochMillis) {
    this.awaited.push({ what, why, ...(until !== undefined ? { until: formatTime(until) } : {}) });
    if (until !== undefined && until > this.now) this.wakeUps.push(until);
  }

  podName(node: string): string {
    return `${this.config.identity.name.slice(0, 36)}-${nodeNameHash(node)}-${this.hash}`;
  }

  create(view: NodeView, reason: string): boolean {
    const name = this.podName(view.name);
    if (this.creationsLeft <= 0) {
      this.moreWork = true;
      return false;
    }
    if ([...view.live, ...view.leaving].some((p) => p.metadata.name === name)) {
      this.wait(`pod/${name} gone`, "a pod of the same name is still terminating");
      return false;
    }
    this.creationsLeft--;
    this.actions.push({
      type: "createPod",
      reason,
      node: view.name,
      revision: this.hash,
      pod: this.podManifest(name, view.name),
    });
    this.expectations.push({
      action: "create",
      pod: name,
      node: view.name,
      revision: this.hash,
      deadline: this.deadline(),
    });
    this.events.push({
      type: "Normal",
      reason: "SuccessfulCreate",
      message: `Created pod ${name} on node ${view.name}: ${reason}`,
      pod: name,
    });
    return true;
  }

  podManifest(name: string, node: string): Pod {
    const { template, identity, generation } = this.config;
    const spec = template.spec;
    const nodeTerm = {
      matchFields: [{ key: "metadata.name", operator: "In" as const, values: [node] }],
    };
    return {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
        name,
        namespace: identity.namespace,
        labels: {
          ...(template.metadata?.labels ?? {}),
          [Keys.revisionHash]: this.hash,
          [Keys.templateGeneration]: String(generation),
        },
        ownerReferences: [controllerRef(identity)],
      },
      spec: {
        ...spec,
        nodeName: node,
        affinity: {
          ...(spec.affinity ?? {}),
          nodeAffinity: {
            ...(spec.affinity?.nodeAffinity ?? {}),
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [nodeTerm] },
          },
        },
        tolerations: daemonPodTolerations(spec),
      },
    };
  }

  /**
   * Deletes a pod, through the preDelete hook when it applies: a hooked pod is first marked
   * PreparingDelete and deleted once its owner releases it. Returns whether the pod is on its way
   * out (deleted or marked), i.e. whether it now counts as unavailable.
   */
  remove(pod: Pod, reason: string, budgeted: boolean): boolean {
    const name = pod.metadata.name ?? "";
    const uid = pod.metadata.uid ?? "";
    if (!budgeted) {
      if (this.deletionsLeft <= 0) {
        this.moreWork = true;
        return false;
      }
      this.deletionsLeft--;
    }
    if (isHooked(this.config, pod)) {
      if (isPreDeleting(pod)) {
        this.wait(`pod/${name} preDelete hook released`, `${reason}; its preDelete hook holds it`);
        return true;
      }
      this.actions.push({
        type: "patchPod",
        reason: `${reason}; preDelete hook: mark ${preparingDelete}`,
        name,
        uid,
        patch: { metadata: { labels: { [Keys.lifecycleState]: preparingDelete } } },
      });
      if (this.config.preDelete?.markPodNotReady) {
        this.actions.push({
          type: "setPodCondition",
          reason: "preDelete hook with markPodNotReady",
          name,
          uid,
          condition: {
            type: "KruisePodReady",
            status: "False",
            reason: preparingDelete,
            lastTransitionTime: formatTime(this.now),
          },
        });
      }
      this.expectations.push({
        action: "patch",
        pod: name,
        uid,
        node: podNodeName(pod),
        deadline: this.deadline(),
      });
      return true;
    }
    this.actions.push({ type: "deletePod", reason, name, uid, node: podNodeName(pod) });
    this.expectations.push({
      action: "delete",
      pod: name,
      uid,
      node: podNodeName(pod),
      deadline: this.deadline(),
    });
    this.events.push({
      type: "Normal",
      reason: "SuccessfulDelete",
      message: `Deleted pod ${name}: ${reason}`,
      pod: name,
    });
    return true;
  }
}

/**
 * A node as the next call will see it once this call's actions so far are done: removed pods
 * leaving, marked pods PreparingDelete, created pods expected. Phase 2 plans on this, so its
 * budget already counts phase 1's work and a repeated call plans the same.
 */
function afterActions(view: NodeView, byNode: Map<string, Expectation[]>): NodeView {
  const mine = byNode.get(view.name);
  if (!mine) return view;
  const removed = new Set(mine.filter((e) => e.action === "delete").map((e) => e.uid));
  const marked = new Set(mine.filter((e) => e.action === "patch").map((e) => e.uid));
  const live = view.live.filter((p) => !removed.has(p.metadata.uid)).map((p) =>
    marked.has(p.metadata.uid)
      ? {
        ...p,
        metadata: {
          ...p.metadata,
          labels: { ...p.metadata.labels, [Keys.lifecycleState]: preparingDelete },
        },
      }
      : p
  );
  return {
    ...view,
    live,
    leaving: [...view.leaving, ...view.live.filter((p) => removed.has(p.metadata.uid))],
    pendingCreate: view.pendingCreate ?? mine.find((e) => e.action === "create"),
  };
}

/** Whether an earlier action has now been observed (then its expectation is dropped). */
function observed(exp: Expectation, byName: Map<string, Pod>, byUid: Map<string, Pod>): boolean {
  switch (exp.action) {
    case "create":
      return byName.has(exp.pod);
    case "delete": {
      const pod = exp.uid ? byUid.get(exp.uid) : undefined;
      return pod === undefined || isTerminating(pod);
    }
    case "patch": {
      const pod = exp.uid ? byUid.get(exp.uid) : undefined;
      return pod === undefined || isPreDeleting(pod);
    }
    case "setCondition": {
      const pod = exp.uid ? byUid.get(exp.uid) : undefined;
      return pod === undefined ||
        (pod.status?.conditions ?? []).some((c) =>
          c.type === Keys.podNeedUpgrade && c.message === `controllerrevision: ${exp.revision}`
        );
    }
  }
}

function invalidOrUnmanagedPlan(
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

/**
 * Kruise's update order (`filterDaemonPodsNodeToUpdate`): node names descending, nodes already
 * updated first, then nodes with no old pod, then the rest (only those matching the update
 * selector when one is set); `partition` drops the tail.
 */
function updateOrder(
  desired: NodeView[],
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

export function plan(snapshot: Snapshot, now: EpochMillis): Plan {
  const reading = readSet(snapshot);
  if (!reading.ok) return invalidOrUnmanagedPlan(reading, now, snapshot.set.metadata.generation);
  const { config, previous } = reading;
  const setUid = config.identity.uid;

  // Pods: ours by controller reference; orphans matching the selector are adopted (ADS only).
  const owned: Pod[] = [];
  const adoptions: Action[] = [];
  for (const pod of snapshot.pods) {
    const owner = controllerUid(pod);
    if (owner === setUid) owned.push(pod);
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
  const liveHashes = new Set(owned.map(podRevision).filter((h): h is string => h !== undefined));

  // Revisions.
  const revisionActions: Action[] = [];
  let hash: string | undefined;
  let collisionCount = previous.collisionCount ?? 0;
  if (config.ownsPlacement) {
    const revisions = planRevisions(
      config.identity,
      config.template,
      config.revisionHistoryLimit,
      snapshot.revisions,
      liveHashes,
      collisionCount,
    );
    hash = revisions.hash;
    collisionCount = revisions.collisionCount;
    revisionActions.push(...revisions.actions);
  } else {
    hash = newestOwnedRevisionHash(setUid, snapshot.revisions);
  }

  // Expectations: keep the ones neither observed nor expired.
  const byName = new Map(snapshot.pods.map((p) => [p.metadata.name ?? "", p]));
  const byUid = new Map(snapshot.pods.map((p) => [p.metadata.uid ?? "", p]));
  const pending = (previous.expectations ?? []).filter((exp) =>
    (parseTime(exp.deadline) ?? 0) > now && !observed(exp, byName, byUid)
  );
  const pendingDeleteUids = new Set(
    pending.filter((e) => e.action === "delete").map((e) => e.uid),
  );

  // Nodes and their pods.
  const podsByNode = new Map<string, Pod[]>();
  const actionsOnStrays: Pod[] = [];
  const nodeNames = new Set(snapshot.nodes.map((n) => n.metadata.name ?? ""));
  for (const pod of owned) {
    const nodeName = podNodeName(pod);
    if (nodeName === undefined || !nodeNames.has(nodeName)) {
      // Upstream deletes unbound pods aimed at a node that is gone; bound ones are PodGC's.
      if (!pod.spec.nodeName && !isTerminating(pod)) actionsOnStrays.push(pod);
      continue;
    }
    const list = podsByNode.get(nodeName);
    if (list) list.push(pod);
    else podsByNode.set(nodeName, [pod]);
  }
  const pendingCreateByNode = new Map(
    pending.filter((e) => e.action === "create" && e.node).map((e) => [e.node!, e]),
  );
  const templateSpec = config.template.spec;
  const tolerations = daemonPodTolerations(templateSpec);
  const views: NodeView[] = [...snapshot.nodes]
    .sort((a, b) => ((a.metadata.name ?? "") < (b.metadata.name ?? "") ? -1 : 1))
    .map((node) => {
      const name = node.metadata.name ?? "";
      const pods = (podsByNode.get(name) ?? []).sort(compareOldestFirst);
      const leaving = pods.filter((p) => isTerminating(p) || pendingDeleteUids.has(p.metadata.uid));
      return {
        name,
        node,
        ready: isNodeReady(node),
        placement: nodeShouldRunDaemonPod(node, templateSpec, tolerations),
        live: pods.filter((p) => !leaving.includes(p)),
        leaving,
        pendingCreate: pendingCreateByNode.get(name),
      };
    });
  const desired = views.filter((v) => v.placement.shouldRun);
  const desiredCount = desired.length;

  const burst = Math.max(1, resolve(config.burstReplicas, desiredCount, true));

  if (hash === undefined) {
    const b = new PlanBuilder(config, "", now, burst, pending);
    b.wait("a ControllerRevision", "the native DaemonSet controller has not written one yet");
    return finish({ config, previous, collisionCount, views, pending, b, now, inScope: new Set() });
  }

  const b = new PlanBuilder(config, hash, now, burst, pending);
  b.actions.push(...revisionActions, ...adoptions);
  const minReady = config.minReadySeconds;
  const availability = new Map<Pod, boolean>();
  const available = (p: Pod) => {
    let known = availability.get(p);
    if (known === undefined) availability.set(p, known = isPodAvailable(p, minReady, now));
    return known;
  };
  const surge = config.mode === "Surge";

  // Phase 1, placement (what upstream's `manage` does): only when edgeroll owns placement.
  if (config.ownsPlacement) {
    for (const pod of actionsOnStrays) b.remove(pod, "its node no longer exists", false);
    const needing: NodeView[] = [];
    for (const view of views) {
      if (!view.placement.shouldContinueRunning) {
        for (const pod of view.live) {
          b.remove(pod, `node ${view.name} no longer matches the set's placement`, false);
        }
        continue;
      }
      const running: Pod[] = [];
      for (const pod of view.live) {
        if (isFailed(pod)) {
          const oldEnough = (parseTime(pod.metadata.creationTimestamp) ?? 0) +
            failedPodMinAgeSeconds * 1000;
          if (oldEnough <= now) b.remove(pod, "the pod failed", false);
          else {b.wait(
              `pod/${pod.metadata.name} deleted`,
              "a failed pod is replaced after a backoff",
              oldEnough,
            );}
        } else if (isPreDeleting(pod)) {
          if (!isHooked(config, pod)) b.remove(pod, "its preDelete hook was released", false);
          else {b.wait(
              `pod/${pod.metadata.name} preDelete hook released`,
              "the pod is PreparingDelete",
            );}
        } else running.push(pod);
      }
      if (running.length === 0) {
        // Without surge, the node's last pod must be gone first (upstream: one pod per node).
        const empty = view.live.length === 0 && view.leaving.length === 0;
        if (view.placement.shouldRun && !view.pendingCreate && (surge || empty)) needing.push(view);
        continue;
      }
      if (!surge) {
        // Duplicates: keep the oldest available pod (oldest when none is available).
        const keep = running.find(available) ?? running[0];
        for (const pod of running) {
          if (pod !== keep) b.remove(pod, "duplicate daemon pod on the node", false);
        }
        continue;
      }
      // Of each kind the best pod stays: available, then ready, then oldest.
      const rank = (p: Pod) => (available(p) ? 0 : isPodReady(p) ? 1 : 2);
      const best = (pods: Pod[]) =>
        pods.sort((x, y) => rank(x) - rank(y) || compareOldestFirst(x, y));
      const newest = best(running.filter((p) => podRevision(p) === hash));
      const olds = best(running.filter((p) => podRevision(p) !== hash));
      const [oldestNew, oldestOld] = [newest[0], olds[0]];
      for (const pod of [...newest.slice(1), ...olds.slice(1)]) {
        b.remove(pod, "duplicate daemon pod on the node", false);
      }
      if (oldestNew && oldestOld) {
        if (!isPodReady(oldestOld)) {
          b.remove(oldestOld, "replaced by a new pod: the old one is not ready", false);
        } else if (available(oldestNew)) b.remove(oldestOld, "its replacement is available", false);
        else {
          const at = availableAt(oldestNew, minReady);
          b.wait(
            `pod/${oldestNew.metadata.name} available`,
            "surge: the old pod goes once the new one is available",
            at,
          );
        }
      }
    }
    // Kruise's progressive creation: with the annotation, partition also holds back new nodes.
    let toCreate = needing;
    const partition = resolve(config.partition, desiredCount, false);
    if (config.progressiveCreatePod && partition > 0 && config.mode !== "OnDelete") {
      const newPods = desired.filter((v) => v.live.some((p) => podRevision(p) === hash)).length;
      toCreate = needing.slice(0, Math.max(0, desiredCount - newPods - partition));
      if (toCreate.length < needing.length) {
        b.wait(
          `${needing.length - toCreate.length} nodes`,
          "progressive creation: held back by partition",
        );
      }
    }
    for (const view of toCreate) b.create(view, "the node should run the daemon pod and has none");
  }

  // Phase 2, updates, on the nodes as phase 1 leaves them.
  const byNode = new Map<string, Expectation[]>();
  for (const e of b.expectations) {
    if (e.node !== undefined) byNode.set(e.node, [...(byNode.get(e.node) ?? []), e]);
  }
  const settled = desired.map((v) => afterActions(v, byNode));
  const order = updateOrder(settled, hash, resolve(config.partition, desiredCount, false), config);
  if (config.mode === "OTA") planOta(b, views, pending);
  else if (config.mode !== "OnDelete" && !config.paused) {
    const budget = config.mode === "Surge"
      ? surgeBudget(b, desiredCount, available)
      : recreateBudget(b, desiredCount, available);
    planBudgetedUpdate(b, settled, order, budget);
  }
  const inScope = new Set(order.map((v) => v.name));
  return finish({ config, previous, collisionCount, hash, views, pending, b, now, inScope });
}

/** The pods that still count for a node: not leaving, not PreparingDelete. */
function activePods(view: NodeView): Pod[] {
  return view.live.filter((p) => !isPreDeleting(p));
}

function resolvedBudget(
  b: PlanBuilder,
  desiredCount: number,
): { maxUnavailable: number; maxSurge: number } {
  let maxUnavailable = resolve(b.config.maxUnavailable, desiredCount, true);
  const maxSurge = resolve(b.config.maxSurge, desiredCount, true);
  if (desiredCount > 0 && maxUnavailable === 0 && maxSurge === 0) maxUnavailable = 1;
  return { maxUnavailable, maxSurge };
}

/**
 * The pod that holds a node's share of the budget: its new pod (or the one expected), else the
 * pod on its way out, else its pod. The same node gets the same name before and after our own
 * actions are observed, so a repeated plan writes the same condition.
 */
function budgetHolderNames(
  views: NodeView[],
  holds: (v: NodeView) => boolean,
  hash: string,
): string[] {
  return views.filter(holds).map((v) => {
    const active = activePods(v);
    const pod = active.find((p) => podRevision(p) === hash)?.metadata.name ??
      v.pendingCreate?.pod ??
      v.leaving[0]?.metadata.name ?? active[0]?.metadata.name ?? v.live[0]?.metadata.name;
    return pod ?? `node/${v.name} (no pod)`;
  });
}

/** One update budget (maxUnavailable or maxSurge) and how a node is replaced under it. */
interface UpdateBudget {
  name: string;
  limit: number;
  /** A desired node that holds the budget now. */
  holds(view: NodeView): boolean;
  /** Replaces an old pod that is already down: it takes no budget. */
  replaceDown(view: NodeView, old: Pod): void;
  /** Starts replacing an available old pod; returns what now holds the budget, if it started. */
  replace(view: NodeView, old: Pod): string | undefined;
}

/**
 * Walks the update order and replaces old pods within the budget. Nodes that are NotReady are
 * skipped (and hold no budget); old pods already down are replaced in their own slot.
 */
function planBudgetedUpdate(
  b: PlanBuilder,
  desired: NodeView[],
  order: NodeView[],
  budget: UpdateBudget,
) {
  const holders = budgetHolderNames(desired, budget.holds, b.hash);
  for (const view of order) {
    const active = activePods(view);
    const old = active.find((p) => podRevision(p) !== b.hash);
    if (!old || active.some((p) => podRevision(p) === b.hash) || view.pendingCreate) continue;
    if (!view.ready) {
      b.wait(
        `node/${view.name} Ready`,
        "NotReady or unreachable: its pod is updated when it comes back",
      );
    } else if (!isPodAvailable(old, b.config.minReadySeconds, b.now)) {
      budget.replaceDown(view, old);
    } else if (holders.length < budget.limit) {
      const holder = budget.replace(view, old);
      if (holder !== undefined) holders.push(holder);
    } else {
      b.budgetBlocked++;
    }
  }
  if (b.budgetBlocked > 0) {
    b.budgetHolders = [...holders].sort();
    b.budgetMessage = `${budget.name} ${budget.limit} is used by ${plural(holders.length, "pod")}`;
  }
}

/**
 * Standard rolling update without surge, and OpenYurt AdvancedRollingUpdate: every unavailable
 * pod on a Ready desired node counts against maxUnavailable, old or new.
 */
function recreateBudget(
  b: PlanBuilder,
  desiredCount: number,
  available: (p: Pod) => boolean,
): UpdateBudget {
  const { maxUnavailable } = resolvedBudget(b, desiredCount);
  return {
    name: "maxUnavailable",
    limit: maxUnavailable,
    holds: (v) => v.ready && !activePods(v).some(available),
    replaceDown(view, old) {
      b.remove(old, "update: the old pod is already unavailable, replaced in its own slot", true);
      b.events.push({
        type: "Normal",
        reason: "ReplacingUnavailablePod",
        message:
          `Pod ${old.metadata.name} on ${view.name} was already unavailable: replaced without using budget`,
        pod: old.metadata.name,
      });
    },
    replace(_view, old) {
      b.remove(old, `update to revision ${b.hash} (maxUnavailable ${maxUnavailable})`, true);
      return old.metadata.name ?? "";
    },
  };
}

/** Standard rolling update with maxSurge: a new pod next to the old one, at most maxSurge at once. */
function surgeBudget(
  b: PlanBuilder,
  desiredCount: number,
  available: (p: Pod) => boolean,
): UpdateBudget {
  const { maxSurge } = resolvedBudget(b, desiredCount);
  return {
    name: "maxSurge",
    limit: maxSurge,
    holds(v) {
      if (!v.ready) return false;
      const active = activePods(v);
      // A node whose old pod is down is replaced in its own slot: it holds no surge.
      const newPod = active.find((p) => podRevision(p) === b.hash);
      return active.some((p) => podRevision(p) !== b.hash && available(p)) &&
        (v.pendingCreate !== undefined || (newPod !== undefined && !available(newPod)));
    },
    replaceDown(view) {
      b.create(view, "update: the old pod is unavailable, its replacement starts at once");
    },
    replace(view) {
      const started = b.create(view, `update to revision ${b.hash} (maxSurge ${maxSurge})`);
      return started ? b.podName(view.name) : undefined;
    },
  };
}

/** OpenYurt OTA: mark each pod `PodNeedUpgrade` True (old revision) or False (current). */
function planOta(b: PlanBuilder, views: NodeView[], pending: Expectation[]) {
  const expected = new Set(
    pending.filter((e) => e.action === "setCondition" && e.revision === b.hash).map((e) => e.uid),
  );
  const message = `controllerrevision: ${b.hash}`;
  for (const view of views) {
    for (const pod of view.live) {
      const uid = pod.metadata.uid ?? "";
      const status = podRevision(pod) === b.hash ? "False" : "True";
      const current = pod.status?.conditions?.find((c) => c.type === Keys.podNeedUpgrade);
      if ((current?.status === status && current.message === message) || expected.has(uid)) {
        continue;
      }
      if (b.deletionsLeft <= 0) {
        b.moreWork = true;
        return;
      }
      b.deletionsLeft--;
      b.actions.push({
        type: "setPodCondition",
        reason: status === "True"
          ? `a new revision ${b.hash} is available`
          : "the pod runs the current revision",
        name: pod.metadata.name ?? "",
        uid,
        condition: {
          type: Keys.podNeedUpgrade,
          status,
          message,
          lastTransitionTime: formatTime(b.now),
        },
      });
      b.expectations.push({
        action: "setCondition",
        pod: pod.metadata.name ?? "",
        uid,
        node: view.name,
        revision: b.hash,
        deadline: b.deadline(),
      });
    }
  }
}

interface Outcome {
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

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** Status as upstream counts it (nodes, not pods), conditions, awaited items and the requeue. */
function finish(o: Outcome): Plan {
  const { config, previous, hash, b, now } = o;
  const minReady = config.minReadySeconds;
  const desired = o.views.filter((v) => v.placement.shouldRun);
  let current = 0, ready = 0, availableCount = 0, updated = 0, misscheduled = 0;
  let outdated = 0, outdatedInScope = 0, outdatedInScopeReady = 0, settling = 0;
  for (const view of o.views) {
    // Counted as observed (our own deletions not yet seen still count), so a repeated plan on
    // the same cluster writes the same status.
    const observed = [...view.live, ...view.leaving].filter((p) => !isTerminating(p));
    if (!view.placement.shouldRun) {
      if (observed.length > 0) misscheduled++;
      continue;
    }
    if (view.live.length + view.leaving.length > 0) current++;
    if (observed.some(isPodReady)) ready++;
    if (observed.some((p) => isPodAvailable(p, minReady, now))) availableCount++;
    else if (view.ready) settling++;
    const isUpdated = hash !== undefined && observed.some((p) => podRevision(p) === hash);
    if (isUpdated) updated++;
    else {
      outdated++;
      if (o.inScope.has(view.name)) {
        outdatedInScope++;
        if (view.ready) outdatedInScopeReady++;
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
  for (const exp of b.expectations) b.wakeUps.push(parseTime(exp.deadline) ?? now);
  const nextCheck = b.wakeUps.filter((t) => t > now).reduce((a, t) => Math.min(a, t), Infinity);
  const nextCheckAt = Number.isFinite(nextCheck) ? formatTime(nextCheck) : undefined;
  // More work than one call may do: come back soon, but only when this call did some (a cap
  // held by actions still unobserved waits for them or their deadline instead).
  const requeueAfterSeconds = b.moreWork && b.actions.length > 0
    ? 1
    : Number.isFinite(nextCheck)
    ? Math.max(1, Math.ceil((nextCheck - now) / 1000))
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
        message: `${plural(outdated, "pod")} wait to be deleted by hand; ${counts}`,
      };
    }
    if (config.mode === "OTA") {
      return {
        status: false,
        reason: "WaitingForNodes",
        message: `${
          plural(outdated, "pod")
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
  const named = b.budgetHolders.slice(0, maxPodsNamed).join(", ") +
    (b.budgetHolders.length > maxPodsNamed
      ? ` and ${b.budgetHolders.length - maxPodsNamed} more`
      : "");
  const states: Record<ConditionType, ConditionState> = {
    Progressing: progressing,
    Complete: complete
      ? {
        status: true,
        reason: "Complete",
        message: `all ${plural(desired.length, "node")} run revision ${hash} and are available`,
      }
      : { status: false, reason: "Incomplete", message: counts },
    Paused: config.paused && outdated > 0
      ? {
        status: true,
        reason: "Paused",
        message: `${plural(outdated, "node")} wait for the update`,
      }
      : { status: false, reason: "NotPaused", message: "" },
    BudgetExhausted: b.budgetBlocked > 0
      ? {
        status: true,
        reason: "BudgetExhausted",
        message: `${b.budgetMessage}: ${named}; ${plural(b.budgetBlocked, "node")} wait`,
      }
      : { status: false, reason: "WithinBudget", message: "" },
    InvalidSpec: { status: false, reason: "Valid", message: "" },
  };
  const { conditions, events } = buildConditions(states, previous.conditions, now);

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
