/**
 * The Kubernetes objects edgeroll reads, as zod schemas: only the fields the engine looks at are
 * named, everything else passes through untouched (`z.looseObject`), so a manifest read from the
 * API server round-trips.
 *
 * This module imports zod only: `kube/` converts client-node objects into these shapes, `engine/`
 * plans on them, `sim/` may serve them. Timestamps stay RFC 3339 strings, as on the wire.
 */
import { z } from "zod";

/** An int or a percentage string such as `"10%"` (Kubernetes `IntOrString`). */
export const IntOrString = z.union([z.number().int(), z.string()]);
export type IntOrString = z.infer<typeof IntOrString>;

export const OwnerReference = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  name: z.string(),
  uid: z.string(),
  controller: z.boolean().optional(),
  blockOwnerDeletion: z.boolean().optional(),
});
export type OwnerReference = z.infer<typeof OwnerReference>;

/**
 * A timestamp as Go clients write it: `metav1.Time`'s zero value is `null` (a pod template's
 * `creationTimestamp: null` from client-go), read as absent.
 */
const Timestamp = z.string().nullish().transform((v) => v ?? undefined).optional();

export const ObjectMeta = z.looseObject({
  name: z.string().optional(),
  generateName: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().optional(),
  creationTimestamp: Timestamp,
  deletionTimestamp: Timestamp,
  deletionGracePeriodSeconds: z.number().int().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  ownerReferences: z.array(OwnerReference).optional(),
  finalizers: z.array(z.string()).optional(),
});
export type ObjectMeta = z.infer<typeof ObjectMeta>;

export const LabelSelectorRequirement = z.object({
  key: z.string(),
  operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist"]),
  values: z.array(z.string()).optional(),
});
export type LabelSelectorRequirement = z.infer<typeof LabelSelectorRequirement>;

export const LabelSelector = z.object({
  matchLabels: z.record(z.string(), z.string()).optional(),
  matchExpressions: z.array(LabelSelectorRequirement).optional(),
});
export type LabelSelector = z.infer<typeof LabelSelector>;

export const TaintEffect = z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]);
export type TaintEffect = z.infer<typeof TaintEffect>;

export const Taint = z.looseObject({
  key: z.string(),
  value: z.string().optional(),
  effect: TaintEffect,
  timeAdded: z.string().optional(),
});
export type Taint = z.infer<typeof Taint>;

export const Toleration = z.looseObject({
  key: z.string().optional(),
  operator: z.enum(["Exists", "Equal"]).optional(),
  value: z.string().optional(),
  effect: z.union([TaintEffect, z.literal("")]).optional(),
  tolerationSeconds: z.number().int().optional(),
});
export type Toleration = z.infer<typeof Toleration>;

export const NodeSelectorRequirement = z.object({
  key: z.string(),
  operator: z.enum(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
  values: z.array(z.string()).optional(),
});
export type NodeSelectorRequirement = z.infer<typeof NodeSelectorRequirement>;

export const NodeSelectorTerm = z.object({
  matchExpressions: z.array(NodeSelectorRequirement).optional(),
  matchFields: z.array(NodeSelectorRequirement).optional(),
});
export type NodeSelectorTerm = z.infer<typeof NodeSelectorTerm>;

/** Only required node affinity constrains placement; preferences and pod (anti-)affinity pass. */
export const Affinity = z.looseObject({
  nodeAffinity: z.looseObject({
    requiredDuringSchedulingIgnoredDuringExecution: z.object({
      nodeSelectorTerms: z.array(NodeSelectorTerm),
    }).optional(),
  }).optional(),
});
export type Affinity = z.infer<typeof Affinity>;

const ResourceList = z.record(z.string(), z.union([z.string(), z.number()]));

/** A container's `resources` (requests and limits by resource name), as written or reported. */
export const ResourceRequirements = z.looseObject({
  requests: ResourceList.optional(),
  limits: ResourceList.optional(),
});
export type ResourceRequirements = z.infer<typeof ResourceRequirements>;

export const Container = z.looseObject({
  name: z.string(),
  image: z.string().optional(),
  resources: ResourceRequirements.optional(),
  /** Whether the kubelet restarts the container to resize a resource (default NotRequired). */
  resizePolicy: z.array(z.looseObject({ resourceName: z.string(), restartPolicy: z.string() }))
    .optional(),
});
export type Container = z.infer<typeof Container>;

export const PodSpec = z.looseObject({
  nodeName: z.string().optional(),
  nodeSelector: z.record(z.string(), z.string()).optional(),
  affinity: Affinity.optional(),
  tolerations: z.array(Toleration).optional(),
  restartPolicy: z.string().optional(),
  activeDeadlineSeconds: z.number().int().optional(),
  hostNetwork: z.boolean().optional(),
  containers: z.array(Container),
  readinessGates: z.array(z.looseObject({ conditionType: z.string() })).optional(),
});
export type PodSpec = z.infer<typeof PodSpec>;

export const PodTemplateSpec = z.looseObject({
  metadata: ObjectMeta.optional(),
  spec: PodSpec,
});
export type PodTemplateSpec = z.infer<typeof PodTemplateSpec>;

export const ConditionStatus = z.enum(["True", "False", "Unknown"]);
export type ConditionStatus = z.infer<typeof ConditionStatus>;

export const PodCondition = z.looseObject({
  type: z.string(),
  status: ConditionStatus,
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: z.string().optional(),
  lastProbeTime: z.string().nullable().optional(),
});
export type PodCondition = z.infer<typeof PodCondition>;

export const PodPhase = z.enum(["Pending", "Running", "Succeeded", "Failed", "Unknown"]);
export type PodPhase = z.infer<typeof PodPhase>;

export const Pod = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMeta,
  spec: PodSpec,
  status: z.looseObject({
    phase: PodPhase.optional(),
    conditions: z.array(PodCondition).optional(),
    containerStatuses: z.array(z.looseObject({
      name: z.string(),
      image: z.string().optional(),
      ready: z.boolean().optional(),
      /** The resources the container runs with, as its kubelet reports them (resize). */
      resources: ResourceRequirements.optional(),
    })).optional(),
  }).optional(),
});
export type Pod = z.infer<typeof Pod>;

export const NodeCondition = z.looseObject({
  type: z.string(),
  status: ConditionStatus,
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: z.string().optional(),
  lastHeartbeatTime: z.string().optional(),
});
export type NodeCondition = z.infer<typeof NodeCondition>;

export const Node = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMeta,
  spec: z.looseObject({
    unschedulable: z.boolean().optional(),
    taints: z.array(Taint).optional(),
  }).optional(),
  status: z.looseObject({
    conditions: z.array(NodeCondition).optional(),
  }).optional(),
});
export type Node = z.infer<typeof Node>;

/** `apps/v1` ControllerRevision: `data` holds the template patch the revision stands for. */
export const ControllerRevision = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMeta,
  data: z.unknown().optional(),
  revision: z.number().int(),
});
export type ControllerRevision = z.infer<typeof ControllerRevision>;

/** A condition on a set's status (same shape for DaemonSet and AdvancedDaemonSet). */
export const SetCondition = z.object({
  type: z.string(),
  status: ConditionStatus,
  reason: z.string().optional(),
  message: z.string().optional(),
  lastTransitionTime: z.string().optional(),
});
export type SetCondition = z.infer<typeof SetCondition>;

/** The counters of a DaemonSet's status, shared by apps/v1 and the AdvancedDaemonSet. */
export const daemonSetStatusCounters = {
  currentNumberScheduled: z.number().int().default(0),
  numberMisscheduled: z.number().int().default(0),
  desiredNumberScheduled: z.number().int().default(0),
  numberReady: z.number().int().default(0),
  observedGeneration: z.number().int().optional(),
  updatedNumberScheduled: z.number().int().optional(),
  numberAvailable: z.number().int().optional(),
  numberUnavailable: z.number().int().optional(),
  collisionCount: z.number().int().optional(),
};

export const DaemonSetStatus = z.looseObject({
  ...daemonSetStatusCounters,
  conditions: z.array(SetCondition).optional(),
});
export type DaemonSetStatus = z.infer<typeof DaemonSetStatus>;

/**
 * `apps/v1` DaemonSet as OpenYurt uses it: `updateStrategy.type: OnDelete` plus the annotations
 * of `api/openyurt.ts`. The native controller creates pods and revisions; edgeroll deletes old
 * pods (AdvancedRollingUpdate) or marks them (OTA).
 */
export const DaemonSet = z.looseObject({
  apiVersion: z.literal("apps/v1"),
  kind: z.literal("DaemonSet"),
  metadata: ObjectMeta,
  spec: z.looseObject({
    selector: LabelSelector,
    template: PodTemplateSpec,
    updateStrategy: z.looseObject({
      type: z.enum(["RollingUpdate", "OnDelete"]).optional(),
      rollingUpdate: z.looseObject({
        maxUnavailable: IntOrString.optional(),
        maxSurge: IntOrString.optional(),
      }).optional(),
    }).optional(),
    minReadySeconds: z.number().int().optional(),
    revisionHistoryLimit: z.number().int().optional(),
  }),
  status: DaemonSetStatus.optional(),
});
export type DaemonSet = z.infer<typeof DaemonSet>;

export { Keys } from "./well-known-names.ts";
