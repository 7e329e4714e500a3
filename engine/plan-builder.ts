/**
 * The plan under construction: actions with their expectations, events and awaited items, and
 * the budgets of one call (burstReplicas). Also the node view every phase plans on, and the
 * expectation bookkeeping that makes a repeated call a no-op.
 */
import type { Expectation } from "../api/advanced-daemonset.ts";
import { Keys, type Node, type Pod, type PodTemplateSpec } from "../api/kube-objects.ts";
import type { SetConfig } from "./config.ts";
import { nameSuffix } from "../api/hash.ts";
import { inPlacePatch, updatedInPlace } from "./in-place.ts";
import { formatTime, isTerminating, parseTime, podNodeName } from "./pod-node-state.ts";
import { daemonPodTolerations, type Placement } from "./should-run.ts";
import { controllerRef } from "./revisions.ts";
import type { Action, Awaited, CreateJob, DeleteJob, EpochMillis, PlanEvent } from "../api/plan.ts";
import { podImageReady } from "../api/image-pull.ts";

/** An action not observed within this time is forgotten and planned again. */
export const expectationTimeoutSeconds = 60;

/**
 * The next look at a wait whose end only the cluster knows (an action to be observed, a pod to
 * start or to finish terminating), begun at `since`: 1, 2, 4, 8, 16 and 32 s after it began, then
 * `thenEverySeconds` from now. A queue requeues on it; the status keeps only the first of these
 * instants, which does not move, so polling writes nothing, and once it has passed the tick looks
 * at the set every tick until the wait ends (ADR 0006).
 */
export function nextPoll(
  since: EpochMillis,
  now: EpochMillis,
  thenEverySeconds: number,
): EpochMillis {
  for (let seconds = 1; seconds <= 32; seconds *= 2) {
    if (since + seconds * 1000 > now) return since + seconds * 1000;
  }
  return now + thenEverySeconds * 1000;
}

const preparingDelete = "PreparingDelete";

export interface NodeView {
  name: string;
  node: Node;
  ready: boolean;
  placement: Placement;
  /** Owned, visible, not terminating and not being deleted by us; oldest first. */
  live: Pod[];
  /** Terminating, or deleted by us and not yet observed so. */
  leaving: Pod[];
  pendingCreate?: Expectation;
  /** The node's non-terminating pods as read, whatever we expect of them: what status counts. */
  observed: Pod[];
}

/** What a write of the in-place gate's condition expects to read back (`Expectation.condition`). */
export function inPlaceGateExpected(status: "True" | "False"): string {
  return `${Keys.inPlaceUpdateReady}=${status}`;
}

/** Whether the pod carries Kruise's in-place readiness gate. */
export function hasInPlaceGate(pod: Pod): boolean {
  return (pod.spec.readinessGates ?? []).some((g) => g.conditionType === Keys.inPlaceUpdateReady);
}

export function isPreDeleting(pod: Pod): boolean {
  return pod.metadata.labels?.[Keys.lifecycleState] === preparingDelete;
}

/** Kruise's `IsPodHooked`: the pod carries every hook label or one of the hook finalizers. */
export function isHooked(config: SetConfig, pod: Pod): boolean {
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

/** The update budget holding candidates back: by which pods, how many wait, and how it reads. */
export interface BudgetHeld {
  holders: string[];
  blocked: number;
  message: string;
}

/**
 * Collects the plan as the phases run, with the bookkeeping every action needs. What it holds
 * is read through getters; it changes only through its methods, so every action comes with its
 * expectation, its Event and its share of the burst.
 */
export class PlanBuilder {
  readonly #actions: Action[] = [];
  readonly #expectations: Expectation[] = [];
  readonly #events: PlanEvent[] = [];
  readonly #awaited: Awaited[] = [];
  readonly #wakeUps: EpochMillis[] = [];
  /** When each wait whose end only the cluster knows began; looked at on `nextPoll`. */
  readonly #polls: EpochMillis[] = [];
  /** Templates of the set's revisions by hash, for in-place updates. */
  readonly #templates = new Map<string, PodTemplateSpec>();
  #budget: BudgetHeld | undefined;
  #creationsLeft: number;
  /** Pod deletions and pod condition writes this call may still send (the burst's other share). */
  #podWritesLeft: number;
  #moreWork = false;

  constructor(
    readonly config: SetConfig,
    readonly hash: string,
    readonly now: EpochMillis,
    readonly burst: number,
    pending: Expectation[],
  ) {
    // Work still expected counts against this call's share, so a repeated call adds nothing.
    const count = (action: Expectation["action"]) =>
      pending.filter((e) => e.action === action).length;
    this.#creationsLeft = Math.max(0, burst - count("create"));
    this.#podWritesLeft = Math.max(0, burst - count("delete") - count("setCondition"));
  }

  get actions(): readonly Action[] {
    return this.#actions;
  }
  get expectations(): readonly Expectation[] {
    return this.#expectations;
  }
  get events(): readonly PlanEvent[] {
    return this.#events;
  }
  get awaited(): readonly Awaited[] {
    return this.#awaited;
  }
  get wakeUps(): readonly EpochMillis[] {
    return this.#wakeUps;
  }
  get polls(): readonly EpochMillis[] {
    return this.#polls;
  }
  /** The update budget when it held a candidate back. */
  get budget(): BudgetHeld | undefined {
    return this.#budget;
  }
  /** The burst cut this call short: come back soon. */
  get moreWork(): boolean {
    return this.#moreWork;
  }

  /** Actions on revisions and adoptions, which the burst does not count. */
  act(...actions: Action[]) {
    this.#actions.push(...actions);
  }

  event(event: PlanEvent) {
    this.#events.push(event);
  }

  /** A wait whose end only the cluster knows, begun at `since`: looked at on `nextPoll`. */
  poll(since: EpochMillis) {
    this.#polls.push(since);
  }

  /** An instant the plan must be looked at again. */
  wakeUp(at: EpochMillis) {
    this.#wakeUps.push(at);
  }

  /** The set-wide reasons to wait, listed before the per-pod ones. */
  awaitFirst(items: Awaited[]) {
    this.#awaited.unshift(...items);
  }

  /** The template of a revision of the set, if its ControllerRevision was read. */
  templateOf(hash: string): PodTemplateSpec | undefined {
    return this.#templates.get(hash);
  }

  knowTemplate(hash: string, template: PodTemplateSpec) {
    this.#templates.set(hash, template);
  }

  budgetExhausted(held: BudgetHeld) {
    this.#budget = held;
  }

  /** Takes one of this call's pod writes (a deletion or a pod condition); false when spent. */
  #takePodWrite(): boolean {
    if (this.#podWritesLeft <= 0) {
      this.#moreWork = true;
      return false;
    }
    this.#podWritesLeft--;
    return true;
  }

  deadline(): string {
    return formatTime(this.now + expectationTimeoutSeconds * 1000);
  }

  /**
   * A pod that must be gone before the next action: awaited, and polled from when its deletion
   * began (its deletionTimestamp less its grace), since a tick-only controller has no event of
   * its going to bring the set back.
   */
  awaitGone(pod: Pod, why: string) {
    this.wait(`pod/${pod.metadata.name} gone`, why);
    const deleting = parseTime(pod.metadata.deletionTimestamp);
    const grace = pod.metadata.deletionGracePeriodSeconds ?? 30;
    if (deleting !== undefined) this.#polls.push(deleting - grace * 1000);
  }

  wait(what: string, why: string, until?: EpochMillis) {
    this.#awaited.push({ what, why, ...(until !== undefined ? { until: formatTime(until) } : {}) });
    if (until !== undefined && until > this.now) this.#wakeUps.push(until);
  }

  /**
   * The name of the pod this plan creates on `node`: the set's name and a suffix that looks like
   * upstream's random one, as Kruise's and upstream's pod names carry no revision (a pod updated
   * in place keeps its name, which would then name the wrong one). A function of the set, the
   * node, the revision and the plan's instant: the same plan names the same pod (a create retried
   * after a lost answer finds it: 409 is done), and a pod that replaces a failed or deleted one
   * on the same node gets a name of its own, as upstream's generated names do (clients wait for
   * the old name to be gone). 63 characters at most, as a generated name.
   */
  podName(node: string): string {
    const { name, uid } = this.config.identity;
    return `${name.slice(0, 48)}-${nameSuffix(`${uid}/${node}/${this.hash}/${this.now}`)}`;
  }

  create(view: NodeView, reason: string): boolean {
    const name = this.podName(view.name);
    if (this.#creationsLeft <= 0) {
      this.#moreWork = true;
      return false;
    }
    const sameName = [...view.live, ...view.leaving].find((p) => p.metadata.name === name);
    if (sameName) {
      this.awaitGone(sameName, "a pod of the same name is still terminating");
      return false;
    }
    this.#creationsLeft--;
    this.#actions.push({
      type: "createPod",
      reason,
      node: view.name,
      revision: this.hash,
      pod: this.podManifest(name, view.name),
    });
    this.#expectations.push({
      action: "create",
      pod: name,
      node: view.name,
      revision: this.hash,
      deadline: this.deadline(),
    });
    this.#events.push({
      type: "Normal",
      reason: "SuccessfulCreate",
      message: `Created pod ${name} on node ${view.name}: ${reason}`,
      pod: name,
      onSet: true,
    });
    return true;
  }

  /**
   * Sets a pod's OpenYurt `PodNeedUpgrade` condition to `status` for the current revision;
   * false when this call's share of the burst is spent.
   */
  markPod(pod: Pod, node: string, status: "True" | "False", reason: string): boolean {
    return this.#setPodCondition(pod, node, reason, {
      type: Keys.podNeedUpgrade,
      status,
      message: `controllerrevision: ${this.hash}`,
    });
  }

  /**
   * Sets a pod's Kruise `InPlaceUpdateReady` condition (its readiness gate): False before its
   * images change in place, True once it runs its spec. False when the burst is spent.
   */
  markInPlaceReady(pod: Pod, status: "True" | "False", reason: string): boolean {
    return this.#setPodCondition(pod, podNodeName(pod) ?? "", reason, {
      type: Keys.inPlaceUpdateReady,
      status,
      ...(status === "False" ? { reason: "StartInPlaceUpdate" } : {}),
    }, inPlaceGateExpected(status));
  }

  /**
   * Records a pull's result on the pod (OpenYurt's `PodImageReady`); false when this call's
   * share of the burst is spent.
   */
  markImageReady(
    pod: Pod,
    node: string,
    condition: { status: "True" | "False"; reason: string; message: string },
    why: string,
  ): boolean {
    const { status, reason } = condition;
    return this.#setPodCondition(
      pod,
      node,
      why,
      { type: podImageReady, ...condition },
      `${podImageReady}=${status}/${reason}`,
    );
  }

  /** A Job written (created or deleted) for a pull: one of this call's pod writes. */
  writeJob(action: CreateJob | DeleteJob): boolean {
    if (!this.#takePodWrite()) return false;
    this.#actions.push(action);
    return true;
  }

  #setPodCondition(
    pod: Pod,
    node: string,
    reason: string,
    condition: { type: string; status: "True" | "False"; message?: string; reason?: string },
    expected?: string,
  ): boolean {
    if (!this.#takePodWrite()) return false;
    const name = pod.metadata.name ?? "";
    const uid = pod.metadata.uid ?? "";
    this.#actions.push({
      type: "setPodCondition",
      reason,
      name,
      uid,
      condition: { ...condition, lastTransitionTime: formatTime(this.now) },
    });
    this.#expectations.push({
      action: "setCondition",
      pod: name,
      uid,
      node,
      revision: this.hash,
      ...(expected ? { condition: expected } : {}),
      deadline: this.deadline(),
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
        // As upstream's GetPodFromTemplate: a preDelete finalizersHandler depends on them.
        ...(template.metadata?.finalizers?.length
          ? { finalizers: [...template.metadata.finalizers] }
          : {}),
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
        // Kruise's readiness gate on every pod of an InPlaceIfPossible set (ADR 0027).
        ...(this.config.inPlace
          ? {
            readinessGates: [
              ...(spec.readinessGates ?? []).filter((g) =>
                g.conditionType !== Keys.inPlaceUpdateReady
              ),
              { conditionType: Keys.inPlaceUpdateReady },
            ],
          }
          : {}),
      },
    };
  }

  /**
   * Updates an old pod in place when only images (and pod metadata) changed since its revision.
   * Returns false when it must be recreated instead.
   */
  updateInPlace(pod: Pod, reason: string): boolean {
    const old = this.#templates.get(pod.metadata.labels?.[Keys.revisionHash] ?? "");
    const patch = old &&
      inPlacePatch(pod, old, this.config.template, this.hash, this.config.generation);
    if (!patch) return false;
    // As Kruise: the gate goes False first, so the pod is unready before its images change. A
    // gate already False is left as it is: writing it again would be observed at once.
    const gate = pod.status?.conditions?.find((c) => c.type === Keys.inPlaceUpdateReady);
    if (
      hasInPlaceGate(pod) && gate?.status !== "False" &&
      !this.markInPlaceReady(pod, "False", `${reason}, in place`)
    ) return false;
    const name = pod.metadata.name ?? "";
    const uid = pod.metadata.uid ?? "";
    this.#actions.push({ type: "patchPod", reason: `${reason}, in place`, name, uid, patch });
    this.#expectations.push({
      action: "patch",
      pod: name,
      uid,
      node: podNodeName(pod),
      revision: this.hash,
      deadline: this.deadline(),
    });
    this.#events.push({
      type: "Normal",
      reason: "SuccessfulUpdatePodInPlace",
      message: `Updated pod ${name} in place to revision ${this.hash}`,
      pod: name,
      onSet: true,
    });
    return true;
  }

  /**
   * Deletes a pod, through the preDelete hook when it applies: a hooked pod is first marked
   * PreparingDelete and deleted once its owner releases it. Returns whether the pod is on its way
   * out (deleted or marked), i.e. whether it now counts as unavailable.
   */
  remove(pod: Pod, reason: string): boolean {
    const name = pod.metadata.name ?? "";
    const uid = pod.metadata.uid ?? "";
    // Every deletion counts against the burst, the update's too: the plan holds what the
    // executor will send (upstream's syncNodes caps rolling-update deletions the same way).
    if (!this.#takePodWrite()) return false;
    if (isHooked(this.config, pod)) {
      if (isPreDeleting(pod)) {
        this.wait(`pod/${name} preDelete hook released`, `${reason}; its preDelete hook holds it`);
        return true;
      }
      this.#actions.push({
        type: "patchPod",
        reason: `${reason}; preDelete hook: mark ${preparingDelete}`,
        name,
        uid,
        patch: { metadata: { labels: { [Keys.lifecycleState]: preparingDelete } } },
      });
      if (this.config.preDelete?.markPodNotReady) {
        this.#actions.push({
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
      this.#expectations.push({
        action: "patch",
        pod: name,
        uid,
        node: podNodeName(pod),
        deadline: this.deadline(),
      });
      return true;
    }
    this.#actions.push({ type: "deletePod", reason, name, uid, node: podNodeName(pod) });
    this.#expectations.push({
      action: "delete",
      pod: name,
      uid,
      node: podNodeName(pod),
      deadline: this.deadline(),
    });
    this.#events.push({
      type: "Normal",
      reason: "SuccessfulDelete",
      message: `Deleted pod ${name}: ${reason}`,
      pod: name,
      onSet: true,
    });
    return true;
  }
}

/**
 * A node as the next call will see it once this call's actions so far are done: removed pods
 * leaving, marked pods PreparingDelete, created pods expected. Phase 2 plans on this, so its
 * budget already counts phase 1's work and a repeated call plans the same.
 */
export function afterActions(
  view: NodeView,
  byNode: Map<string, Expectation[]>,
  template: PodTemplateSpec,
): NodeView {
  const mine = byNode.get(view.name);
  if (!mine) return view;
  const removed = new Set(mine.filter((e) => e.action === "delete").map((e) => e.uid));
  const patched = new Map(mine.filter((e) => e.action === "patch").map((e) => [e.uid, e]));
  const live = view.live.filter((p) => !removed.has(p.metadata.uid)).map((p) => {
    const patch = patched.get(p.metadata.uid);
    if (!patch) return p;
    // A patch with a revision is an in-place update; without, the preDelete mark.
    if (patch.revision !== undefined) return updatedInPlace(p, template, patch.revision);
    return {
      ...p,
      metadata: {
        ...p.metadata,
        labels: { ...p.metadata.labels, [Keys.lifecycleState]: preparingDelete },
      },
    };
  });
  return {
    ...view,
    live,
    leaving: [...view.leaving, ...view.live.filter((p) => removed.has(p.metadata.uid))],
    pendingCreate: view.pendingCreate ?? mine.find((e) => e.action === "create"),
  };
}

/** Whether an earlier action has now been observed (then its expectation is dropped). */
export function isObserved(
  exp: Expectation,
  byName: Map<string, Pod>,
  byUid: Map<string, Pod>,
): boolean {
  switch (exp.action) {
    case "create":
      return byName.has(exp.pod);
    case "delete": {
      const pod = exp.uid ? byUid.get(exp.uid) : undefined;
      return pod === undefined || isTerminating(pod);
    }
    case "patch": {
      const pod = exp.uid ? byUid.get(exp.uid) : undefined;
      if (pod === undefined) return true;
      return exp.revision !== undefined
        ? pod.metadata.labels?.[Keys.revisionHash] === exp.revision
        : isPreDeleting(pod);
    }
    case "setCondition": {
      const pod = exp.uid ? byUid.get(exp.uid) : undefined;
      return pod === undefined ||
        (pod.status?.conditions ?? []).some((c) =>
          exp.condition !== undefined
            ? `${c.type}=${c.status}` === exp.condition ||
              `${c.type}=${c.status}/${c.reason ?? ""}` === exp.condition
            : c.type === Keys.podNeedUpgrade && c.message === `controllerrevision: ${exp.revision}`
        );
    }
  }
}

/** The pods that still count for a node: not leaving, not PreparingDelete. */
export function activePods(view: NodeView): Pod[] {
  return view.live.filter((p) => !isPreDeleting(p));
}
