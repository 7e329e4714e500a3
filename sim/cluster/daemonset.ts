/**
 * The simulated DaemonSet controller for apps/v1 DaemonSets, written from the behaviour of
 * kube-controller-manager's `pkg/controller/daemon`:
 * - history: one ControllerRevision per distinct pod template, named `<set>-<hash>`, the
 *   hash in the `controller-revision-hash` label of the revision and of its pods;
 * - manage: a pod per node that should run one (node selector, required node affinity,
 *   taints against the template's tolerations plus the DaemonSet defaults), created with
 *   `matchFields metadata.name` node affinity for the scheduler to bind; extra pods on a node
 *   and pods on nodes that should no longer run one are deleted; failed pods are replaced;
 *   a node whose pod is still terminating gets its new pod only once the old one is gone;
 * - RollingUpdate: old pods that are unavailable are replaced outside the budget, available
 *   ones within maxUnavailable; with maxSurge a new pod starts beside the old one, which is
 *   deleted once the new one is available;
 * - OnDelete: never deletes for an update; a deleted pod comes back at the current template
 *   (OpenYurt-style sets, whose pods an external controller deletes, rely on this);
 * - status as upstream counts it, so `kubectl rollout status daemonset/x` works.
 * Nodes are visited in name order where upstream ranges over a map, for reproducible tests.
 */
import { StoreError } from "../store.ts";
import { DAEMONSETS, NODES, PODS, REVISIONS, targetNodeName } from "./cache.ts";
import { canonical } from "../canonical.ts";
import { cleanupHistory, controllerRef, currentRevision, HASH_LABEL } from "./revisions.ts";
import { type ClusterContext, createWithSuffix } from "./context.ts";
import { matchesNodeAffinity, untoleratedTaint } from "./placement.ts";
import { labelSelectorMatcher } from "../selectors.ts";
import {
  type Affinity,
  controllerUid,
  type DaemonSet,
  type DaemonSetStatus,
  findCondition,
  type IntOrString,
  isPodReady,
  keyOf,
  type Node,
  type Pod,
  type PodSpec,
  type Toleration,
} from "./types.ts";
import { createWorkQueue } from "./work-queue.ts";

export const GENERATION_LABEL = "pod-template-generation";
const TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation";
const COMPONENT = "daemonset-controller";
/** Upstream's burstReplicas: at most this many creates per sync. */
const BURST = 250;

/** Tolerations the controller adds to every daemon pod (upstream AddOrUpdateDaemonPodTolerations). */
function daemonTolerations(spec: PodSpec): Toleration[] {
  const added: Toleration[] = [
    { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute" },
    { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute" },
    { key: "node.kubernetes.io/disk-pressure", operator: "Exists", effect: "NoSchedule" },
    { key: "node.kubernetes.io/memory-pressure", operator: "Exists", effect: "NoSchedule" },
    { key: "node.kubernetes.io/pid-pressure", operator: "Exists", effect: "NoSchedule" },
    { key: "node.kubernetes.io/unschedulable", operator: "Exists", effect: "NoSchedule" },
  ];
  if (spec.hostNetwork) {
    added.push({
      key: "node.kubernetes.io/network-unavailable",
      operator: "Exists",
      effect: "NoSchedule",
    });
  }
  const own = spec.tolerations ?? [];
  const same = (a: Toleration, b: Toleration) =>
    a.key === b.key && a.effect === b.effect && (a.operator ?? "Equal") === (b.operator ?? "Equal");
  return [...own.filter((t) => !added.some((a) => same(a, t))), ...added];
}

/** Required node affinity reduced to the one node, keeping preferences (upstream does the same). */
function pinToNode(affinity: Affinity | undefined, nodeName: string): Affinity {
  return {
    ...affinity,
    nodeAffinity: {
      ...affinity?.nodeAffinity,
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{
          matchFields: [{ key: "metadata.name", operator: "In", values: [nodeName] }],
        }],
      },
    },
  };
}

/** An int-or-percent against a total, rounded up as the DaemonSet controller does. */
export function scaledValue(
  value: IntOrString | undefined,
  total: number,
  fallback: number,
): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value === "number") return value;
  const match = /^(\d+)%$/.exec(value);
  if (!match) {
    const asInt = Number(value);
    if (Number.isInteger(asInt)) return asInt;
    throw new StoreError(422, "Invalid", `invalid value for IntOrString: "${value}"`);
  }
  return Math.ceil((Number(match[1]) * total) / 100);
}

/** Code-unit order: what Go's string comparison gives, and much cheaper than localeCompare. */
function byText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Scheduled pods first, then oldest, then by name (upstream podByCreationTimestampAndPhase). */
function byAge(a: Pod, b: Pod): number {
  const scheduled = Number(Boolean(b.spec.nodeName)) - Number(Boolean(a.spec.nodeName));
  if (scheduled !== 0) return scheduled;
  const age = byText(a.metadata.creationTimestamp ?? "", b.metadata.creationTimestamp ?? "");
  return age !== 0 ? age : byText(a.metadata.name, b.metadata.name);
}

export interface DaemonSetController {
  stop(): void;
}

export function startDaemonSetController(ctx: ClusterContext): DaemonSetController {
  const { store, cache, timeline } = ctx;
  const queue = createWorkQueue(timeline, sync, (key, error) => {
    if (!(error instanceof StoreError)) {
      ctx.log("warn", "daemonset sync failed", { daemonset: key, error: String(error) });
    }
  });

  function keyForUid(uid: string | undefined): string | undefined {
    if (!uid) return undefined;
    for (const ds of cache.daemonSets.values()) if (ds.metadata.uid === uid) return keyOf(ds);
    return undefined;
  }

  cache.onChange((event, previous) => {
    switch (event.resource) {
      case DAEMONSETS:
        if (event.type !== "DELETED") queue.add(keyOf(event.object));
        break;
      case PODS:
        if (!controllerUid(event.object)) {
          // An orphan may be adopted by any set of its namespace whose selector it matches.
          for (const ds of cache.daemonSets.values()) {
            if (ds.metadata.namespace !== event.object.metadata.namespace) continue;
            if (labelSelectorMatcher(ds.spec.selector)(event.object.metadata.labels)) {
              queue.add(keyOf(ds));
            }
          }
        }
        {
          // As upstream's updatePod: a pod turning Ready becomes available minReadySeconds
          // later, an instant no event marks. The status alone does not ask again for it,
          // since it counts each node's oldest pod only (a surged new pod is not that one).
          const key = keyForUid(controllerUid(event.object));
          const minReady = key ? cache.daemonSets.get(key)?.spec.minReadySeconds ?? 0 : 0;
          const turnedReady = event.type !== "DELETED" && isPodReady(event.object as Pod) &&
            !(previous && isPodReady(previous as Pod));
          if (key && minReady > 0 && turnedReady) {
            timeline.after(minReady + 1, () => queue.add(key));
          }
        }
      /* falls through */
      case REVISIONS: {
        const key = keyForUid(controllerUid(event.object)) ??
          keyForUid(previous && controllerUid(previous));
        if (key) queue.add(key);
        break;
      }
      case NODES: {
        const node = event.object as Node;
        const before = previous as Node | undefined;
        const placement = (n: Node | undefined) =>
          n && JSON.stringify([n.metadata.labels, n.spec?.taints, n.metadata.deletionTimestamp]);
        if (event.type === "DELETED" || placement(before) !== placement(node)) {
          for (const key of cache.daemonSets.keys()) queue.add(key);
        }
        break;
      }
    }
  });
  for (const key of cache.daemonSets.keys()) queue.add(key);

  function sync(key: string): void {
    const ds = cache.daemonSets.get(key);
    if (!ds || ds.metadata.deletionTimestamp) return;
    // kube-apiserver refuses such a set; acting on it would create pods only to release them.
    if (!labelSelectorMatcher(ds.spec.selector)(ds.spec.template.metadata?.labels)) {
      ctx.log("warn", "daemonset selector does not match its template labels", { daemonset: key });
      return;
    }
    const current = currentRevision(ctx, ds);
    if (!current) return; // a hash collision was recorded; the status write requeues us
    const hash = current.metadata.labels![HASH_LABEL];
    const nodes = [...cache.nodes.values()].sort((a, b) =>
      byText(a.metadata.name, b.metadata.name)
    );
    claimPods(ds);
    const plan = new NodePlacement(ds);
    const more = manage(ds, nodes, plan, hash);
    if (ds.spec.updateStrategy?.type !== "OnDelete") rollingUpdate(ds, nodes, plan, hash);
    cleanupHistory(ctx, ds);
    updateStatus(ds, nodes, plan, hash);
    if (more) queue.add(key);
  }

  /**
   * As upstream's ControllerRefManager: adopt pods of the namespace that match the selector
   * and have no controller (e.g. left by `delete --cascade=orphan`), release owned pods that
   * no longer match it.
   */
  function claimPods(ds: DaemonSet): void {
    const matches = labelSelectorMatcher(ds.spec.selector);
    for (const key of [...cache.orphanPods]) {
      const pod = cache.pods.get(key)!;
      if (pod.metadata.namespace !== ds.metadata.namespace || pod.metadata.deletionTimestamp) {
        continue;
      }
      if (!matches(pod.metadata.labels)) continue;
      const adopted = structuredClone(pod);
      adopted.metadata.ownerReferences = [
        ...adopted.metadata.ownerReferences ?? [],
        controllerRef(ds),
      ];
      store.update(PODS, adopted);
    }
    for (const pod of cache.podsControlledBy(ds.metadata.uid!)) {
      if (matches(pod.metadata.labels) || pod.metadata.deletionTimestamp) continue;
      const released = structuredClone(pod);
      released.metadata.ownerReferences = released.metadata.ownerReferences
        ?.filter((ref) => ref.uid !== ds.metadata.uid);
      store.update(PODS, released);
    }
  }

  function podsByNode(ds: DaemonSet): Map<string, Pod[]> {
    const map = new Map<string, Pod[]>();
    for (const pod of cache.podsControlledBy(ds.metadata.uid!)) {
      const node = targetNodeName(pod);
      if (!node) continue;
      const list = map.get(node) ?? [];
      list.push(pod);
      map.set(node, list);
    }
    return map;
  }

  function templateGeneration(ds: DaemonSet): string {
    return ds.metadata.annotations?.[TEMPLATE_GENERATION_ANNOTATION] ??
      String(ds.metadata.generation ?? 1);
  }

  function isUpdated(ds: DaemonSet, pod: Pod, hash: string): boolean {
    const labels = pod.metadata.labels ?? {};
    return labels[HASH_LABEL] === hash || labels[GENERATION_LABEL] === templateGeneration(ds);
  }

  function isAvailable(ds: DaemonSet, pod: Pod): boolean {
    if (!isPodReady(pod)) return false;
    const minReady = ds.spec.minReadySeconds ?? 0;
    if (minReady === 0) return true;
    const since = findCondition(pod.status?.conditions, "Ready")?.lastTransitionTime;
    return since !== undefined && Date.parse(since) + timeline.realMs(minReady) <= timeline.now();
  }

  /** Creates and deletes so each node has the pods it should; true when the burst cap cut it short. */
  function manage(ds: DaemonSet, nodes: Node[], plan: NodePlacement, hash: string): boolean {
    const byNode = podsByNode(ds);
    const surge = allowsSurge(ds);
    const create: string[] = [];
    const remove: Pod[] = [];
    for (const node of nodes) {
      const { shouldRun, shouldContinueRunning } = plan.fit(node);
      const pods = byNode.get(node.metadata.name);
      if (shouldRun && !pods) {
        create.push(node.metadata.name);
      } else if (shouldContinueRunning) {
        const live = (pods ?? []).filter((pod) => !pod.metadata.deletionTimestamp);
        const running: Pod[] = [];
        for (const pod of live) {
          if (pod.status?.phase === "Failed" || pod.status?.phase === "Succeeded") remove.push(pod);
          else running.push(pod);
        }
        if (running.length <= 1) continue;
        running.sort(byAge);
        if (!surge) {
          remove.push(...running.slice(1));
          continue;
        }
        let oldestNew: Pod | undefined;
        let oldestOld: Pod | undefined;
        for (const pod of running) {
          if (pod.metadata.labels?.[HASH_LABEL] === hash) {
            if (!oldestNew) {
              oldestNew = pod;
              continue;
            }
          } else if (!oldestOld) {
            oldestOld = pod;
            continue;
          }
          remove.push(pod);
        }
        if (oldestNew && oldestOld && isAvailable(ds, oldestNew)) remove.push(oldestOld);
      } else if (pods) {
        remove.push(...pods.filter((pod) => !pod.metadata.deletionTimestamp));
      }
    }
    return syncNodes(ds, remove, create, hash);
  }

  function rollingUpdate(ds: DaemonSet, nodes: Node[], plan: NodePlacement, hash: string): void {
    const byNode = podsByNode(ds);
    let desired = 0;
    for (const node of nodes) {
      if (!plan.fit(node).shouldRun) continue;
      desired++;
      if (!byNode.has(node.metadata.name)) byNode.set(node.metadata.name, []);
    }
    const rolling = ds.spec.updateStrategy?.rollingUpdate;
    const maxSurge = allowsSurge(ds) ? scaledValue(rolling?.maxSurge, desired, 0) : 0;
    let maxUnavailable = scaledValue(rolling?.maxUnavailable, desired, 1);
    if (maxSurge === 0 && maxUnavailable === 0) maxUnavailable = 1;
    const entries = [...byNode.entries()].sort(([a], [b]) => byText(a, b));

    if (maxSurge === 0) {
      let unavailable = 0;
      const replaceNow: Pod[] = [];
      const candidates: Pod[] = [];
      for (const [, pods] of entries) {
        const found = updatedAndOld(ds, pods, hash);
        if (!found) {
          unavailable++;
          continue;
        }
        const { updated, old } = found;
        if ((!old && !updated) || (old && updated)) unavailable++;
        else if (updated) {
          if (!isAvailable(ds, updated)) unavailable++;
        } else if (old && !isAvailable(ds, old)) replaceNow.push(old);
        else if (old && unavailable < maxUnavailable) candidates.push(old);
      }
      const room = Math.max(0, Math.min(maxUnavailable - unavailable, candidates.length));
      syncNodes(ds, [...replaceNow, ...candidates.slice(0, room)], [], hash);
      return;
    }

    let surging = 0;
    const createNow: string[] = [];
    const candidates: string[] = [];
    const remove: Pod[] = [];
    for (const [nodeName, pods] of entries) {
      const found = updatedAndOld(ds, pods, hash);
      if (!found) {
        surging++;
        continue;
      }
      const { updated, old } = found;
      if (!old) continue;
      if (!updated) {
        if (!isAvailable(ds, old)) createNow.push(nodeName);
        else if (surging < maxSurge) candidates.push(nodeName);
        continue;
      }
      if (!isAvailable(ds, updated)) {
        surging++;
        continue;
      }
      remove.push(old);
    }
    const room = Math.max(0, Math.min(maxSurge - surging, candidates.length));
    syncNodes(ds, remove, [...createNow, ...candidates.slice(0, room)], hash);
  }

  /** The updated and the old pod of a node; undefined when there is more than one of either. */
  function updatedAndOld(
    ds: DaemonSet,
    pods: Pod[],
    hash: string,
  ): { updated?: Pod; old?: Pod } | undefined {
    let updated: Pod | undefined;
    let old: Pod | undefined;
    for (const pod of pods) {
      if (pod.metadata.deletionTimestamp) continue;
      if (isUpdated(ds, pod, hash)) {
        if (updated) return undefined;
        updated = pod;
      } else {
        if (old) return undefined;
        old = pod;
      }
    }
    return { updated, old };
  }

  /** Deletes and creates (creates capped at the burst size); true when creates were left over. */
  function syncNodes(ds: DaemonSet, remove: Pod[], create: string[], hash: string): boolean {
    for (const pod of remove) {
      try {
        store.delete(PODS, pod.metadata.namespace, pod.metadata.name, {
          preconditions: { uid: pod.metadata.uid },
        });
      } catch (error) {
        if (error instanceof StoreError && (error.code === 404 || error.code === 409)) continue;
        throw error;
      }
      event(ds, "SuccessfulDelete", `Deleted pod: ${pod.metadata.name}`);
    }
    for (const nodeName of create.slice(0, BURST)) createPod(ds, nodeName, hash);
    return create.length > BURST;
  }

  function createPod(ds: DaemonSet, nodeName: string, hash: string): void {
    const template = structuredClone(ds.spec.template);
    const spec: PodSpec = {
      restartPolicy: "Always",
      terminationGracePeriodSeconds: 30,
      dnsPolicy: "ClusterFirst",
      schedulerName: "default-scheduler",
      ...template.spec,
    };
    spec.tolerations = daemonTolerations(spec);
    spec.affinity = pinToNode(spec.affinity, nodeName);
    const pod = createWithSuffix(ctx, PODS, `${ds.metadata.name}-`, {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: "",
        namespace: ds.metadata.namespace,
        labels: {
          ...template.metadata?.labels,
          [HASH_LABEL]: hash,
          [GENERATION_LABEL]: templateGeneration(ds),
        },
        ...(template.metadata?.annotations ? { annotations: template.metadata.annotations } : {}),
        ownerReferences: [controllerRef(ds)],
      },
      spec,
      status: { phase: "Pending" },
    });
    event(ds, "SuccessfulCreate", `Created pod: ${pod.metadata.name}`);
  }

  function event(ds: DaemonSet, reason: string, message: string): void {
    ctx.recordEvent({ involved: ds, type: "Normal", reason, message, component: COMPONENT });
  }

  function updateStatus(ds: DaemonSet, nodes: Node[], plan: NodePlacement, hash: string): void {
    const byNode = podsByNode(ds);
    let desired = 0, current = 0, misscheduled = 0, ready = 0, available = 0, updated = 0;
    for (const node of nodes) {
      const pods = byNode.get(node.metadata.name);
      if (!plan.fit(node).shouldRun) {
        if (pods) misscheduled++;
        continue;
      }
      desired++;
      if (!pods) continue;
      current++;
      const pod = [...pods].sort(byAge)[0];
      if (isPodReady(pod)) {
        ready++;
        if (isAvailable(ds, pod)) available++;
      }
      if (isUpdated(ds, pod, hash)) updated++;
    }
    const fresh = cache.daemonSets.get(keyOf(ds));
    if (!fresh || fresh.metadata.uid !== ds.metadata.uid) return;
    const status: DaemonSetStatus = {
      ...fresh.status,
      currentNumberScheduled: current,
      numberMisscheduled: misscheduled,
      desiredNumberScheduled: desired,
      numberReady: ready,
      observedGeneration: ds.metadata.generation,
    };
    // Zero counts are omitted, as the apps/v1 types mark these fields omitempty.
    for (
      const [field, value] of [
        ["updatedNumberScheduled", updated],
        ["numberAvailable", available],
        ["numberUnavailable", desired - available],
      ] as const
    ) {
      if (value > 0) status[field] = value;
      else delete status[field];
    }
    if (canonical(status) !== canonical(fresh.status)) {
      store.update(DAEMONSETS, { ...fresh, status }); // the store copies its input
    }
    const minReady = ds.spec.minReadySeconds ?? 0;
    if (minReady > 0 && ready !== available) timeline.after(minReady, () => queue.add(keyOf(ds)));
  }

  return { stop: () => queue.stop() };
}

function allowsSurge(ds: DaemonSet): boolean {
  if (ds.spec.updateStrategy?.type === "OnDelete") return false;
  return scaledValue(ds.spec.updateStrategy?.rollingUpdate?.maxSurge, 1, 0) !== 0;
}

/** Whether a node should run (and may keep running) the set's pod; computed once per sync. */
class NodePlacement {
  readonly #spec: PodSpec;
  readonly #tolerations: Toleration[];
  readonly #verdicts = new Map<Node, { shouldRun: boolean; shouldContinueRunning: boolean }>();
  constructor(ds: DaemonSet) {
    this.#spec = ds.spec.template.spec;
    this.#tolerations = daemonTolerations(this.#spec);
  }

  fit(node: Node): { shouldRun: boolean; shouldContinueRunning: boolean } {
    let verdict = this.#verdicts.get(node);
    if (!verdict) this.#verdicts.set(node, verdict = this.#decide(node));
    return verdict;
  }

  #decide(node: Node): { shouldRun: boolean; shouldContinueRunning: boolean } {
    const name = node.metadata.name;
    if (this.#spec.nodeName && this.#spec.nodeName !== name) {
      return { shouldRun: false, shouldContinueRunning: false };
    }
    if (!matchesNodeAffinity(this.#spec, node)) {
      return { shouldRun: false, shouldContinueRunning: false };
    }
    const taints = node.spec?.taints;
    if (untoleratedTaint(taints, this.#tolerations, ["NoSchedule", "NoExecute"])) {
      return {
        shouldRun: false,
        shouldContinueRunning: !untoleratedTaint(taints, this.#tolerations, ["NoExecute"]),
      };
    }
    return { shouldRun: true, shouldContinueRunning: true };
  }
}
