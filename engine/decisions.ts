/**
 * What the plan's phases decide. Each phase is a function of readonly facts (`PlanFacts`, the
 * views it is given) and of what it may still spend of this call's burst (`Allowance`); it makes
 * its decisions on a `PhaseDecisions` of its own, which pairs every action with its expectation
 * and Event, and answers them with what is left to spend (`PhaseResult`). Nothing is shared
 * between phases: a later one is given, as an argument, what it needs of an earlier one's.
 */
import type { Expectation } from "../api/advanced-daemonset.ts";
import { Keys, type Pod, type PodTemplateSpec } from "../api/kube-objects.ts";
import type { SetConfig } from "./config.ts";
import { nameSuffix } from "../api/hash.ts";
import { inPlaceUpdate } from "./in-place.ts";
import { formatTime, parseTime, podNodeName } from "./pod-node-state.ts";
import { daemonPodTolerations } from "./should-run.ts";
import { controllerRef } from "./revisions.ts";
import type { Action, Awaited, CreateJob, DeleteJob, EpochMillis, PlanEvent } from "../api/plan.ts";
import { podImageReady } from "../api/image-pull.ts";
import {
  hasInPlaceGate,
  inPlaceGateExpected,
  isHooked,
  isPreDeleting,
  type NodeView,
  preparingDelete,
} from "./node-view.ts";

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

/** The update budget holding candidates back: by which pods, how many wait, and how it reads. */
export interface BudgetHeld {
  holders: string[];
  blocked: number;
  message: string;
}

/** What one call of the plan knows before any phase runs; no phase changes it. */
export interface PlanFacts {
  readonly config: SetConfig;
  /** The revision pods should run. */
  readonly hash: string;
  readonly now: EpochMillis;
  /** Templates of the set's revisions by hash, for in-place updates and rollbacks. */
  readonly templates: ReadonlyMap<string, PodTemplateSpec>;
  /**
   * Nodes of the plan's domains a failed check rolled back (ADR 0055), and the revision their
   * pods run instead of `hash`, with its template.
   */
  readonly pinned?: ReadonlyMap<string, { hash: string; template: PodTemplateSpec }>;
  /** The API server serves no `pods/resize`: a change of resources recreates (ADR 0056). */
  readonly noPodResize?: true;
}

/** The facts a pod on `node` is made from: a pinned node's revision and template. */
export function factsFor(facts: PlanFacts, node: string): PlanFacts {
  const pin = facts.pinned?.get(node);
  return pin
    ? { ...facts, hash: pin.hash, config: { ...facts.config, template: pin.template } }
    : facts;
}

/** What this call may still write of its burst (burstReplicas, less what is still expected). */
export interface Allowance {
  readonly creations: number;
  /** Pod deletions, pod condition writes and pull Jobs (the burst's other share). */
  readonly podWrites: number;
}

/** The burst of one call: work still expected counts against it, so a repeated call adds nothing. */
export function allowanceOf(burst: number, pending: readonly Expectation[]): Allowance {
  const count = (action: Expectation["action"]) =>
    pending.filter((e) => e.action === action).length;
  return {
    creations: Math.max(0, burst - count("create")),
    podWrites: Math.max(0, burst - count("delete") - count("setCondition")),
  };
}

/** What waits, and when the set must be looked at again. */
export interface Waits {
  readonly awaited: readonly Awaited[];
  readonly wakeUps: readonly EpochMillis[];
  /** When each wait whose end only the cluster knows began; looked at on `nextPoll`. */
  readonly polls: readonly EpochMillis[];
}

/** What a phase decided. */
export interface Decisions extends Waits {
  readonly actions: readonly Action[];
  readonly expectations: readonly Expectation[];
  readonly events: readonly PlanEvent[];
  /** The update budget, when it held a candidate back. */
  readonly budgetHeld?: BudgetHeld;
  /** The burst cut this call short: come back soon. */
  readonly moreWork: boolean;
}

export interface PhaseResult {
  readonly decisions: Decisions;
  readonly left: Allowance;
}

/** Decisions made outside a phase's allowance (revisions, adoptions, a rollback): the rest empty. */
export function decided(parts: Partial<Decisions>): Decisions {
  return {
    actions: [],
    expectations: [],
    events: [],
    awaited: [],
    wakeUps: [],
    polls: [],
    moreWork: false,
    ...parts,
  };
}

/** Several phases' decisions as one, in the order given. */
export function mergeDecisions(parts: readonly Decisions[]): Decisions {
  const all = <K extends keyof Waits | "actions" | "expectations" | "events">(key: K) =>
    parts.flatMap((p) => p[key] as readonly unknown[]) as unknown as Decisions[K];
  const budgetHeld = parts.find((p) => p.budgetHeld)?.budgetHeld;
  return {
    actions: all("actions"),
    expectations: all("expectations"),
    events: all("events"),
    awaited: all("awaited"),
    wakeUps: all("wakeUps"),
    polls: all("polls"),
    ...(budgetHeld ? { budgetHeld } : {}),
    moreWork: parts.some((p) => p.moreWork),
  };
}

/** What waits, gathered by one phase or by the plan's report. */
export class WaitList implements Waits {
  readonly awaited: Awaited[] = [];
  readonly wakeUps: EpochMillis[] = [];
  readonly polls: EpochMillis[] = [];

  constructor(readonly now: EpochMillis) {}

  /** A wait whose end only the cluster knows, begun at `since`: looked at on `nextPoll`. */
  poll(since: EpochMillis) {
    this.polls.push(since);
  }

  /** An instant the plan must be looked at again. */
  wakeUp(at: EpochMillis) {
    this.wakeUps.push(at);
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
    if (deleting !== undefined) this.polls.push(deleting - grace * 1000);
  }

  wait(what: string, why: string, until?: EpochMillis) {
    this.awaited.push({ what, why, ...(until !== undefined ? { until: formatTime(until) } : {}) });
    if (until !== undefined && until > this.now) this.wakeUps.push(until);
  }
}

/**
 * The name of the pod a plan creates on `node`: the set's name and a suffix that looks like
 * upstream's random one, as Kruise's and upstream's pod names carry no revision (a pod updated
 * in place keeps its name, which would then name the wrong one). A function of the set, the
 * node, the revision and the plan's instant: the same plan names the same pod (a create retried
 * after a lost answer finds it: 409 is done), and a pod that replaces a failed or deleted one
 * on the same node gets a name of its own, as upstream's generated names do (clients wait for
 * the old name to be gone). 63 characters at most, as a generated name.
 */
export function podName(facts: PlanFacts, node: string): string {
  const { name, uid } = facts.config.identity;
  return `${name.slice(0, 48)}-${nameSuffix(`${uid}/${node}/${facts.hash}/${facts.now}`)}`;
}

/**
 * One phase's decisions as it makes them: every action comes with its expectation, its Event and
 * its share of the phase's allowance. Made by the phase that uses it and read once, by `done`.
 */
export class PhaseDecisions extends WaitList {
  readonly #actions: Action[] = [];
  readonly #expectations: Expectation[] = [];
  readonly #events: PlanEvent[] = [];
  #budgetHeld: BudgetHeld | undefined;
  #creationsLeft: number;
  #podWritesLeft: number;
  #moreWork = false;

  constructor(readonly facts: PlanFacts, allowance: Allowance) {
    super(facts.now);
    this.#creationsLeft = allowance.creations;
    this.#podWritesLeft = allowance.podWrites;
  }

  get config(): SetConfig {
    return this.facts.config;
  }
  get hash(): string {
    return this.facts.hash;
  }
  /** The revision `node`'s pod should run: `hash`, or a rolled-back domain's. */
  hashFor(node: string): string {
    return this.facts.pinned?.get(node)?.hash ?? this.facts.hash;
  }

  /** The phase's decisions, and what it leaves of the allowance to the phases after it. */
  done(): PhaseResult {
    return {
      decisions: {
        actions: this.#actions,
        expectations: this.#expectations,
        events: this.#events,
        awaited: this.awaited,
        wakeUps: this.wakeUps,
        polls: this.polls,
        ...(this.#budgetHeld ? { budgetHeld: this.#budgetHeld } : {}),
        moreWork: this.#moreWork,
      },
      left: { creations: this.#creationsLeft, podWrites: this.#podWritesLeft },
    };
  }

  /** Actions on revisions and adoptions, which the burst does not count. */
  act(...actions: Action[]) {
    this.#actions.push(...actions);
  }

  event(event: PlanEvent) {
    this.#events.push(event);
  }

  budgetExhausted(held: BudgetHeld) {
    this.#budgetHeld = held;
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

  create(view: NodeView, reason: string): boolean {
    const facts = factsFor(this.facts, view.name);
    const name = podName(facts, view.name);
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
      revision: facts.hash,
      pod: podManifest(facts, name, view.name),
    });
    this.#expectations.push({
      action: "create",
      pod: name,
      node: view.name,
      revision: facts.hash,
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
   * Sets a pod's OpenYurt `PodNeedUpgrade` condition to `status` for the current revision, with
   * `conditionReason` when given ("" clears one an earlier mark left); false when this call's
   * share of the burst is spent.
   */
  markPod(
    pod: Pod,
    node: string,
    status: "True" | "False",
    why: string,
    conditionReason?: string,
  ): boolean {
    return this.#setPodCondition(pod, node, why, {
      type: Keys.podNeedUpgrade,
      status,
      message: `controllerrevision: ${this.hash}`,
      ...(conditionReason !== undefined ? { reason: conditionReason } : {}),
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

  /**
   * Updates an old pod in place when only images, cpu and memory (and pod metadata) changed since
   * its revision. Returns false when it must be recreated instead.
   */
  updateInPlace(pod: Pod, reason: string): boolean {
    const { config, hash } = factsFor(this.facts, podNodeName(pod) ?? "");
    const old = this.facts.templates.get(pod.metadata.labels?.[Keys.revisionHash] ?? "");
    const update = old &&
      inPlaceUpdate(pod, old, config.template, hash, config.generation, !this.facts.noPodResize);
    if (!update) return false;
    // As Kruise: when a container restarts the gate goes False first, so the pod is unready
    // before it changes. A gate already False is left as it is: writing it again would be
    // observed at once. A resize without restart keeps the pod Ready.
    const gate = pod.status?.conditions?.find((c) => c.type === Keys.inPlaceUpdateReady);
    if (
      update.restarts && hasInPlaceGate(pod) && gate?.status !== "False" &&
      !this.markInPlaceReady(pod, "False", `${reason}, in place`)
    ) return false;
    const name = pod.metadata.name ?? "";
    const uid = pod.metadata.uid ?? "";
    this.#actions.push({
      type: "patchPod",
      reason: `${reason}, in place: ${update.what}`,
      name,
      uid,
      ...(update.resize ? { resize: update.resize } : {}),
      patch: update.patch,
    });
    this.#expectations.push({
      action: "patch",
      pod: name,
      uid,
      node: podNodeName(pod),
      revision: hash,
      deadline: this.deadline(),
    });
    this.#events.push({
      type: "Normal",
      reason: "SuccessfulUpdatePodInPlace",
      message: `Updated pod ${name} in place to revision ${hash}: ${update.what}`,
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

/** The pod a plan creates on `node`, named `name`, from the set's current template. */
export function podManifest(facts: PlanFacts, name: string, node: string): Pod {
  const { template, identity, generation } = facts.config;
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
        [Keys.revisionHash]: facts.hash,
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
      ...(facts.config.inPlace
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
