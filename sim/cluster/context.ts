/**
 * What every simulated controller shares: the store, the cache over it, the timeline, the
 * seeded randomness, the options, the kubelets' per-node state, and the Event recorder.
 */
import { isoSeconds, type KubeObject, type Store, StoreError } from "../store.ts";
import { type ClusterCache, EVENTS } from "./cache.ts";
import type { Timeline } from "./timeline.ts";

/** The vowel-free alphabet of generated names and hashes (no accidental words). */
export const SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/** Tunable durations, in simulated seconds (divided by the speed factor at run time). */
export interface Durations {
  /** Kubelet Lease renewal (upstream: a quarter of the 40 s lease duration). */
  leaseRenewSeconds: number;
  leaseDurationSeconds: number;
  /** Kubelet node status computation; a post happens only on change or after the report period. */
  nodeStatusUpdateSeconds: number;
  nodeStatusReportSeconds: number;
  /** Node lifecycle controller: how often it looks, how long a silent node stays Ready. */
  nodeMonitorPeriodSeconds: number;
  nodeMonitorGraceSeconds: number;
  /** Pod GC: how long a pod's node must have been gone before the pod is deleted. */
  orphanQuarantineSeconds: number;
  /** Pull time of an image the node has not got; a cached image starts after `cachedStartSeconds`. */
  pullSeconds: number;
  cachedStartSeconds: number;
  /** How long containers take to stop after a graceful delete (capped by the pod's grace period). */
  terminationSeconds: number;
  /** How long an allocated resize takes to be applied to the containers (PodResizeInProgress). */
  resizeSeconds: number;
  /** First image pull or container restart back-off; doubles up to `maxBackOffSeconds`. */
  backOffSeconds: number;
  maxBackOffSeconds: number;
  /** How long a container of a crashing image runs before it exits with an error. */
  crashAfterSeconds: number;
  /**
   * How long a container of a pod whose restartPolicy is not Always (a Job's) runs before it
   * exits: sim runs no command, so every such container exits 0 after this long (1 on a
   * crashing image).
   */
  completionSeconds: number;
  /** Core Events are deleted after this long, as kube-apiserver's event TTL does. */
  eventTtlSeconds: number;
}

export const DEFAULT_DURATIONS: Durations = {
  leaseRenewSeconds: 10,
  leaseDurationSeconds: 40,
  nodeStatusUpdateSeconds: 10,
  nodeStatusReportSeconds: 300,
  nodeMonitorPeriodSeconds: 5,
  nodeMonitorGraceSeconds: 50,
  orphanQuarantineSeconds: 40,
  pullSeconds: 8,
  cachedStartSeconds: 1,
  terminationSeconds: 2,
  resizeSeconds: 1,
  backOffSeconds: 10,
  maxBackOffSeconds: 300,
  crashAfterSeconds: 2,
  completionSeconds: 1,
  eventTtlSeconds: 3600,
};

/**
 * Simulated image faults: the pull fails (ErrImagePull, then ImagePullBackOff), the container
 * exits with an error shortly after each start (CrashLoopBackOff), or it runs but its
 * readiness never passes (NeverReady).
 */
export type ImageFault = "ErrImagePull" | "CrashLoopBackOff" | "NeverReady";

/**
 * The faults images get by their tag alone: `app:bad`, `app:crash`, `app:unready`; and
 * `:non-existent`, which upstream's DaemonSet rollback spec uses (`foo:non-existent`) because no
 * registry has it (cluster/ makes it fail the same way with a kwok stage).
 */
export const FAULT_TAGS: Record<string, ImageFault> = {
  bad: "ErrImagePull",
  "non-existent": "ErrImagePull",
  crash: "CrashLoopBackOff",
  unready: "NeverReady",
};

/** The kubelet's own view of one node: what it does not share with the API while cut off. */
export interface NodeAgentState {
  name: string;
  index: number;
  /** False while disconnected: no heartbeat, no status, no reaction to the API. */
  connected: boolean;
  /** False after `setNotReady`: the kubelet reports Ready=False (runtime down). */
  healthy: boolean;
  /** Image references (normalised) present on the node. */
  images: Map<string, number>;
  internalIP: string;
  podSubnet: string;
  nextPodIP: number;
}

export type Log = (
  level: "info" | "warn",
  message: string,
  fields?: Record<string, unknown>,
) => void;

export interface ClusterContext {
  store: Store;
  cache: ClusterCache;
  timeline: Timeline;
  random: () => number;
  durations: Durations;
  agents: Map<string, NodeAgentState>;
  /** What goes wrong with an image, if anything. */
  imageFault: (image: string) => ImageFault | undefined;
  log: Log;
  recordEvent(event: EventInput): void;
}

export interface EventInput {
  involved: KubeObject;
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  component: string;
  host?: string;
}

/** Hex digits from the seeded generator (container IDs, Event names). */
export function randomHex(random: () => number, length: number): string {
  let out = "";
  while (out.length < length) out += Math.floor(random() * 16).toString(16);
  return out;
}

/**
 * Writes core/v1 Events as the controllers' recorders do (one object per occurrence, no
 * aggregation), and deletes them after the event TTL so a long run does not grow without end.
 */
export function createEventRecorder(
  store: Store,
  timeline: Timeline,
  random: () => number,
  ttlSeconds: number,
  enabled: boolean,
): (event: EventInput) => void {
  return (input) => {
    if (!enabled) return;
    const { involved } = input;
    const now = isoSeconds(timeline.now());
    const namespace = involved.metadata.namespace ?? "default";
    const name = `${involved.metadata.name}.${randomHex(random, 16)}`;
    store.create(EVENTS, {
      apiVersion: "v1",
      kind: "Event",
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: involved.apiVersion,
        kind: involved.kind,
        name: involved.metadata.name,
        namespace: involved.metadata.namespace,
        uid: involved.metadata.uid,
        resourceVersion: involved.metadata.resourceVersion,
      },
      reason: input.reason,
      message: input.message,
      type: input.type,
      source: input.host
        ? { component: input.component, host: input.host }
        : { component: input.component },
      reportingComponent: input.component,
      reportingInstance: input.host ?? "",
      firstTimestamp: now,
      lastTimestamp: now,
      eventTime: null,
      count: 1,
    });
    timeline.after(ttlSeconds, () => {
      if (store.tryGet(EVENTS, namespace, name)) store.delete(EVENTS, namespace, name);
    });
  };
}

/**
 * Creates `object` named `<prefix><5 characters>` from the seeded generator, as a controller's
 * generateName gets from kube-apiserver (reproducible per seed); a name taken is drawn again.
 */
export function createWithSuffix(
  ctx: Pick<ClusterContext, "store" | "random">,
  resource: string,
  prefix: string,
  object: KubeObject,
): KubeObject {
  for (let attempt = 0;; attempt++) {
    let name = prefix;
    for (let i = 0; i < 5; i++) {
      name += SAFE_ALPHABET[Math.floor(ctx.random() * SAFE_ALPHABET.length)];
    }
    try {
      return ctx.store.create(resource, { ...object, metadata: { ...object.metadata, name } });
    } catch (error) {
      if (!(error instanceof StoreError && error.code === 409) || attempt >= 5) throw error;
    }
  }
}
