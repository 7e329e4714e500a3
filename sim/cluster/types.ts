/**
 * The slices of the core and apps API types the simulated cluster reads and writes. Loose on
 * purpose: objects come from users through the store and may carry any other field, which the
 * controllers keep as they are.
 */
import type { KubeObject } from "../store.ts";
import type { LabelSelector } from "../selectors.ts";

export type ConditionStatus = "True" | "False" | "Unknown";

export interface Condition {
  type: string;
  status: ConditionStatus;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastHeartbeatTime?: string;
  lastProbeTime?: string | null;
}

export type TaintEffect = "NoSchedule" | "PreferNoSchedule" | "NoExecute";

export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
  timeAdded?: string;
}

export interface Toleration {
  key?: string;
  operator?: "Exists" | "Equal";
  value?: string;
  effect?: TaintEffect | "";
  tolerationSeconds?: number;
}

export interface NodeSelectorRequirement {
  key: string;
  operator: "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt";
  values?: string[];
}

export interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
  matchFields?: NodeSelectorRequirement[];
}

export interface Affinity {
  nodeAffinity?: {
    requiredDuringSchedulingIgnoredDuringExecution?: { nodeSelectorTerms: NodeSelectorTerm[] };
    preferredDuringSchedulingIgnoredDuringExecution?: unknown[];
  };
  [kind: string]: unknown;
}

export interface Container {
  name: string;
  image: string;
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  readinessProbe?: { initialDelaySeconds?: number; [field: string]: unknown };
  [field: string]: unknown;
}

export interface PodSpec {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  affinity?: Affinity;
  tolerations?: Toleration[];
  containers: Container[];
  initContainers?: Container[];
  terminationGracePeriodSeconds?: number;
  hostNetwork?: boolean;
  schedulerName?: string;
  [field: string]: unknown;
}

export interface ContainerState {
  waiting?: { reason: string; message?: string };
  running?: { startedAt: string };
  terminated?: {
    exitCode: number;
    reason: string;
    startedAt?: string;
    finishedAt?: string;
    containerID?: string;
  };
}

export interface ContainerStatus {
  name: string;
  image: string;
  imageID: string;
  containerID?: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: ContainerState;
  lastState: ContainerState;
  /** The cpu and memory the kubelet allocated (requests), and those the container runs with. */
  allocatedResources?: Record<string, string | number>;
  resources?: {
    requests?: Record<string, string | number>;
    limits?: Record<string, string | number>;
  };
}

export interface PodStatus {
  phase?: "Pending" | "Running" | "Succeeded" | "Failed" | "Unknown";
  conditions?: Condition[];
  hostIP?: string;
  hostIPs?: { ip: string }[];
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  qosClass?: string;
  initContainerStatuses?: ContainerStatus[];
  containerStatuses?: ContainerStatus[];
  [field: string]: unknown;
}

export interface Pod extends KubeObject {
  spec: PodSpec;
  status?: PodStatus;
}

export interface NodeStatus {
  capacity?: Record<string, string>;
  allocatable?: Record<string, string>;
  conditions?: Condition[];
  addresses?: { type: string; address: string }[];
  daemonEndpoints?: { kubeletEndpoint: { Port: number } };
  nodeInfo?: Record<string, string>;
  images?: { names: string[]; sizeBytes: number }[];
  [field: string]: unknown;
}

export interface Node extends KubeObject {
  spec?: {
    unschedulable?: boolean;
    taints?: Taint[];
    podCIDR?: string;
    podCIDRs?: string[];
    [field: string]: unknown;
  };
  status?: NodeStatus;
}

export type IntOrString = number | string;

export interface DaemonSetSpec {
  selector: LabelSelector;
  template: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec: PodSpec;
  };
  updateStrategy?: {
    type?: "RollingUpdate" | "OnDelete";
    rollingUpdate?: { maxUnavailable?: IntOrString; maxSurge?: IntOrString };
  };
  minReadySeconds?: number;
  revisionHistoryLimit?: number;
}

export interface DaemonSetStatus {
  currentNumberScheduled: number;
  numberMisscheduled: number;
  desiredNumberScheduled: number;
  numberReady: number;
  observedGeneration?: number;
  updatedNumberScheduled?: number;
  numberAvailable?: number;
  numberUnavailable?: number;
  collisionCount?: number;
  [field: string]: unknown;
}

export interface DaemonSet extends KubeObject {
  spec: DaemonSetSpec;
  status?: DaemonSetStatus;
}

export interface Job extends KubeObject {
  spec: {
    template: {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec: PodSpec;
    };
    completions?: number;
    parallelism?: number;
    backoffLimit?: number;
    activeDeadlineSeconds?: number;
    ttlSecondsAfterFinished?: number;
    [field: string]: unknown;
  };
  status?: {
    startTime?: string;
    completionTime?: string;
    active?: number;
    ready?: number;
    succeeded?: number;
    failed?: number;
    terminating?: number;
    conditions?: Condition[];
    [field: string]: unknown;
  };
}

export interface ControllerRevision extends KubeObject {
  data: unknown;
  revision: number;
}

/** `namespace/name`, or `name` for cluster-scoped objects. */
export function keyOf(object: KubeObject): string {
  const { namespace, name } = object.metadata;
  return namespace ? `${namespace}/${name}` : name;
}

export function findCondition(
  conditions: Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((condition) => condition.type === type);
}

/** The controller's ownerReference, if any (`metadata.ownerReferences[].controller`). */
export function controllerUid(object: KubeObject): string | undefined {
  return object.metadata.ownerReferences?.find((ref) => ref.controller)?.uid;
}

export function isPodReady(pod: Pod): boolean {
  return findCondition(pod.status?.conditions, "Ready")?.status === "True";
}
