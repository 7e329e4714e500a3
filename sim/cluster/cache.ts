/**
 * What the simulated controllers know of the cluster: an informer-like index over the store,
 * kept current synchronously by `store.subscribe`, so a controller that writes sees its own
 * write at once and needs no upstream-style expectations.
 *
 * Objects held here are the store's event copies: read them, never mutate them.
 */
import type { KubeObject, Store, StoreEvent } from "../store.ts";
import { controllerUid, type DaemonSet, type Job, keyOf, type Node, type Pod } from "./types.ts";
import { pinnedNodeNames } from "./placement.ts";

export const NODES = "nodes";
export const PODS = "pods";
export const DAEMONSETS = "daemonsets.apps";
export const REVISIONS = "controllerrevisions.apps";
export const LEASES = "leases.coordination.k8s.io";
export const JOBS = "jobs.batch";
export const EVENTS = "events";
export const LEASE_NAMESPACE = "kube-node-lease";

const WATCHED = new Set([NODES, PODS, DAEMONSETS, REVISIONS, LEASES, JOBS]);

type Listener = (event: StoreEvent, previous: KubeObject | undefined) => void;

function addTo(index: Map<string, Set<string>>, group: string | undefined, key: string): void {
  if (group === undefined) return;
  let set = index.get(group);
  if (!set) index.set(group, set = new Set());
  set.add(key);
}

function removeFrom(index: Map<string, Set<string>>, group: string | undefined, key: string): void {
  if (group === undefined) return;
  const set = index.get(group);
  set?.delete(key);
  if (set?.size === 0) index.delete(group);
}

/** The node a pod is on, or is meant for (a DaemonSet pod not yet bound). */
export function targetNodeName(pod: Pod): string | undefined {
  if (pod.spec.nodeName) return pod.spec.nodeName;
  const pinned = pinnedNodeNames(pod.spec);
  return pinned?.length === 1 ? pinned[0] : undefined;
}

export class ClusterCache {
  readonly nodes = new Map<string, Node>();
  readonly pods = new Map<string, Pod>();
  readonly daemonSets = new Map<string, DaemonSet>();
  readonly revisions = new Map<string, KubeObject>();
  readonly jobs = new Map<string, Job>();
  /** Pod keys by `spec.nodeName` (bound pods only). */
  readonly podsByNode = new Map<string, Set<string>>();
  /** Pod and ControllerRevision keys by the uid of their controller. */
  readonly podsByController = new Map<string, Set<string>>();
  readonly revisionsByController = new Map<string, Set<string>>();
  /** Pods with no controller reference (candidates for adoption by a matching set). */
  readonly orphanPods = new Set<string>();
  /** Pods with no `spec.nodeName`, not being deleted: the scheduler's queue. */
  readonly unscheduled = new Set<string>();
  /** Wall time at which each node's Lease was last seen renewed (node lifecycle probe). */
  readonly leaseObservedAt = new Map<string, number>();
  readonly #listeners = new Set<Listener>();
  readonly #unsubscribe: () => void;

  constructor(readonly store: Store, readonly now: () => number) {
    for (const resource of WATCHED) {
      for (const object of store.list(resource).items) {
        this.#apply({ type: "ADDED", resource, object, resourceVersion: 0 });
      }
    }
    this.#unsubscribe = store.subscribe((event) => {
      if (!WATCHED.has(event.resource)) return;
      const previous = this.#apply(event);
      for (const listener of this.#listeners) listener(event, previous);
    });
  }

  /** Calls `listener` after the index has taken each change in. */
  onChange(listener: Listener): void {
    this.#listeners.add(listener);
  }

  stop(): void {
    this.#unsubscribe();
    this.#listeners.clear();
  }

  podsOn(nodeName: string): Pod[] {
    return [...this.podsByNode.get(nodeName) ?? []].map((key) => this.pods.get(key)!);
  }

  podsControlledBy(uid: string): Pod[] {
    return [...this.podsByController.get(uid) ?? []].map((key) => this.pods.get(key)!);
  }

  #apply(event: StoreEvent): KubeObject | undefined {
    const object = event.object;
    const key = keyOf(object);
    const gone = event.type === "DELETED";
    switch (event.resource) {
      case NODES: {
        const previous = this.nodes.get(key);
        if (gone) this.nodes.delete(key);
        else this.nodes.set(key, object as Node);
        return previous;
      }
      case PODS: {
        const previous = this.pods.get(key);
        if (previous) {
          removeFrom(this.podsByNode, previous.spec.nodeName, key);
          removeFrom(this.podsByController, controllerUid(previous), key);
          this.unscheduled.delete(key);
          this.orphanPods.delete(key);
        }
        if (!gone) {
          const pod = object as Pod;
          this.pods.set(key, pod);
          addTo(this.podsByNode, pod.spec.nodeName, key);
          addTo(this.podsByController, controllerUid(pod), key);
          if (!pod.spec.nodeName && !pod.metadata.deletionTimestamp) this.unscheduled.add(key);
          if (!controllerUid(pod)) this.orphanPods.add(key);
        } else {
          this.pods.delete(key);
        }
        return previous;
      }
      case DAEMONSETS: {
        const previous = this.daemonSets.get(key);
        if (gone) this.daemonSets.delete(key);
        else this.daemonSets.set(key, object as DaemonSet);
        return previous;
      }
      case REVISIONS: {
        const previous = this.revisions.get(key);
        if (previous) removeFrom(this.revisionsByController, controllerUid(previous), key);
        if (gone) {
          this.revisions.delete(key);
        } else {
          this.revisions.set(key, object);
          addTo(this.revisionsByController, controllerUid(object), key);
        }
        return previous;
      }
      case JOBS: {
        const previous = this.jobs.get(key);
        if (gone) this.jobs.delete(key);
        else this.jobs.set(key, object as Job);
        return previous;
      }
      case LEASES: {
        if (object.metadata.namespace !== LEASE_NAMESPACE) return undefined;
        if (gone) this.leaseObservedAt.delete(object.metadata.name);
        else this.leaseObservedAt.set(object.metadata.name, this.now());
        return undefined;
      }
    }
    return undefined;
  }
}
