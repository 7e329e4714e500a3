/**
 * Objects as kube/ moves them: wire (JSON) form, metadata as `api/` names it, the rest left
 * to whoever reads it.
 */
import type { ObjectMeta } from "../api/kube-objects.ts";
import { type FieldView, messageFieldNames } from "../api/protobuf.ts";

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface KubeList<T extends KubeObject = KubeObject> {
  items: T[];
  /** The list's resourceVersion, where a watch resumes from. */
  resourceVersion: string;
}

/** Client-node returns model objects holding `Date`s; JSON gives back the wire form. */
export function toWire<T>(value: unknown): T {
  return JSON.parse(JSON.stringify(value));
}

/**
 * What of a node decides which pods a set wants there or may touch: its labels, whether it is
 * unschedulable, its taints and its Ready status. The relay sends only this and the controller
 * fingerprints it, so a heartbeat (which changes none of it) is dropped by both.
 */
export function nodeSchedulingView(node: {
  metadata: { name?: string; labels?: Record<string, string> };
  spec?: unknown;
  status?: unknown;
}) {
  const spec = (node.spec ?? {}) as { unschedulable?: boolean; taints?: unknown[] };
  const status = (node.status ?? {}) as { conditions?: { type: string; status?: string }[] };
  return {
    metadata: { name: node.metadata.name, labels: node.metadata.labels ?? {} },
    spec: { unschedulable: spec.unschedulable ?? false, taints: spec.taints ?? [] },
    status: {
      conditions: (status.conditions ?? []).filter((c) => c.type === "Ready")
        .map(({ type, status }) => ({ type, status })),
    },
  };
}

/**
 * What a cache keeps of an object (`keep`), and the fields a protobuf answer is read for
 * (`view`: at least what `keep` reads; the rest of the bytes are skipped unread).
 */
export interface CachedForm {
  keep(object: KubeObject): KubeObject;
  view: FieldView | true;
}

/** The whole object. */
export const wholeObject: CachedForm = { keep: (object) => object, view: true };

/**
 * What a cache keeps of a node: what the planner and the change fingerprint read (metadata
 * without managedFields and annotations, taints, unschedulable, the Ready condition without
 * its heartbeat and message). A node's
 * images, addresses, capacity and heartbeat conditions are most of its size and nobody here
 * reads them (#13: at 5,000 nodes the whole objects held most of the controller's memory).
 */
export function nodeAsCached(node: KubeObject): KubeObject {
  const { name, uid, resourceVersion, labels, deletionTimestamp } = node.metadata;
  const spec = (node.spec ?? {}) as { unschedulable?: boolean; taints?: unknown[] };
  const status = (node.status ?? {}) as {
    conditions?: { type: string; status: string; reason?: string; lastTransitionTime?: string }[];
  };
  const ready = (status.conditions ?? []).filter((c) => c.type === "Ready")
    .map(({ type, status, reason, lastTransitionTime }) =>
      withoutUndefined({ type, status, reason, lastTransitionTime })
    );
  return {
    apiVersion: node.apiVersion,
    kind: "Node",
    metadata: withoutUndefined({ name, uid, resourceVersion, labels, deletionTimestamp }),
    spec: withoutUndefined({ unschedulable: spec.unschedulable, taints: spec.taints }),
    status: { conditions: ready },
  };
}

/** Reads of a node as its cache keeps it. */
export const nodeCachedForm: CachedForm = {
  keep: nodeAsCached,
  view: {
    metadata: {
      name: true,
      uid: true,
      resourceVersion: true,
      labels: true,
      deletionTimestamp: true,
    },
    spec: { unschedulable: true, taints: true },
    status: { conditions: true },
  },
};

/**
 * What a cache keeps of a pod: its metadata without managedFields, its node (`nodeName`, or
 * the required affinity of one not bound yet), its containers whole (an in-place update
 * patches the list as a whole), and of its status the phase, conditions and each container's
 * name, image, readiness and resources (a resize is done when they are the spec's). Placement is
 * decided by the set's template, never by a pod's.
 */
export function podAsCached(pod: KubeObject): KubeObject {
  const { managedFields: _, ...metadata } = pod.metadata as ObjectMeta & {
    managedFields?: unknown;
  };
  const spec = (pod.spec ?? {}) as Record<string, unknown>;
  const status = (pod.status ?? {}) as {
    phase?: string;
    conditions?: unknown[];
    containerStatuses?: {
      name: string;
      image?: string;
      ready?: boolean;
      state?: { waiting?: { reason?: string } };
      resources?: unknown;
    }[];
  };
  return {
    apiVersion: pod.apiVersion,
    kind: "Pod",
    metadata,
    spec: withoutUndefined({
      nodeName: spec.nodeName,
      affinity: spec.affinity,
      containers: spec.containers,
      readinessGates: spec.readinessGates,
    }),
    status: withoutUndefined({
      phase: status.phase,
      conditions: status.conditions,
      // A waiting reason tells a crash loop or a pull that fails (ADR 0035's failed pods).
      containerStatuses: status.containerStatuses?.map(({ name, image, ready, state, resources }) =>
        withoutUndefined({
          name,
          image,
          ready,
          state: state?.waiting?.reason ? { waiting: { reason: state.waiting.reason } } : undefined,
          resources,
        })
      ),
    }),
  };
}

/** Every field of ObjectMeta but managedFields. */
const metadataWithoutManagedFields: FieldView = Object.fromEntries(
  messageFieldNames("meta.ObjectMeta").filter((name) => name !== "managedFields")
    .map((name) => [name, true]),
);

/** Reads of a pod as its cache keeps it. */
export const podCachedForm: CachedForm = {
  keep: podAsCached,
  view: {
    metadata: metadataWithoutManagedFields,
    spec: { nodeName: true, affinity: true, containers: true, readinessGates: true },
    status: {
      phase: true,
      conditions: true,
      containerStatuses: {
        name: true,
        image: true,
        ready: true,
        state: { waiting: true },
        resources: true,
      },
    },
  },
};

/** The object without its undefined fields, so what a cache keeps reads as the wire form. */
function withoutUndefined<T extends Record<string, unknown>>(object: T): T {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined)) as T;
}

/**
 * What of a set calls for a reconcile when it changes: all of it but its resourceVersion and
 * managedFields and, on an apps/v1 DaemonSet, the `.status` the DaemonSet controller writes
 * (waking on its counters made the two controllers wake each other, 2.87 writes and 242
 * conflicts per 1,000 nodes: ADR 0038) but its `observedGeneration`, which moves once per spec
 * change, after the controller wrote the new template's revision (a plan waits for it: ADR
 * 0039). The rollout status edgeroll writes stays in: a claim's write is followed by one more
 * look, which writes nothing.
 */
export function setChangeView(set: KubeObject): KubeObject {
  const { resourceVersion: _version, managedFields: _fields, ...metadata } = set
    .metadata as ObjectMeta & { managedFields?: unknown };
  const daemonSet = set.kind === "DaemonSet" && set.apiVersion === "apps/v1";
  // Built in one order: a list's items and a watch's objects need not carry their fields alike.
  return {
    apiVersion: set.apiVersion,
    kind: set.kind,
    metadata,
    spec: set.spec,
    status: daemonSet
      ? { observedGeneration: (set.status as { observedGeneration?: number })?.observedGeneration }
      : set.status,
  };
}
