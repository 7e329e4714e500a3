/**
 * The engine's contract: `plan(snapshot, now) -> Plan`. Here in `api/`, so `kube/` (which reads
 * snapshots and carries out actions) and `engine/` (which plans) share the types without
 * either importing the other.
 *
 * A snapshot is what `kube/` read; a plan is what `kube/` does next, one action after the
 * other, and what the reconcile route answers. Both are plain JSON (no classes, no Dates, no
 * undefined-vs-missing tricks), so a plan can be returned over HTTP, logged and compared.
 *
 * Time: `now` is milliseconds since the Unix epoch (what `Date.now()` returns in the caller);
 * timestamps inside objects are RFC 3339 strings, as Kubernetes writes them.
 */
import type {
  AdvancedDaemonSet,
  AdvancedDaemonSetStatus,
  Expectation,
} from "./advanced-daemonset.ts";
import type { Job, PullObjects } from "./image-pull.ts";
import type { Measurement } from "./analysis.ts";
import type { RolloutStatusObject } from "./written-status.ts";
import type {
  ControllerRevision,
  DaemonSet,
  Node,
  ObjectMeta,
  Pod,
  PodCondition,
  PodSpec,
  SetCondition,
} from "./kube-objects.ts";

/** Milliseconds since the Unix epoch. */
export type EpochMillis = number;

interface SnapshotObjects {
  /**
   * Pods matching the set's selector in its namespace, including ones being deleted
   * (`deletionTimestamp` set) and orphans; the engine decides which it owns.
   */
  pods: Pod[];
  /** Every node of the cluster. */
  nodes: Node[];
  /** ControllerRevisions matching the set's selector in its namespace. */
  revisions: ControllerRevision[];
  /**
   * The set's image pull Jobs and their pods (label `pullSetLabel`), read when a pod awaits a
   * pull (`pullsToRead`); absent: not read.
   */
  pulls?: PullObjects;
  /**
   * The API server refused an object of this revision (a server-side dry-run create of the
   * plan's `probe`): its template cannot make a pod, so nothing may be deleted for it.
   */
  refused?: { revision: string; message: string };
  /**
   * The API server serves no `pods/resize` (before Kubernetes 1.32; learned from discovery): an
   * InPlaceIfPossible change of resources recreates the pod (ADR 0056). Absent: it serves it.
   */
  noPodResize?: true;
  /**
   * Analysis checks (ADR 0055): the `host:port`s the controller may reach (`--analysis-hosts`),
   * and what it measured this call of the standings `dueMeasurements` named. Given by every
   * controller for a set with checks (`controller/analysis.ts`); absent for a planner that only
   * shows (`status`, the dashboard), which then checks no host and measures nothing.
   */
  analysis?: {
    allowedHosts: string[];
    measurements: Measurement[];
    /**
     * Each Prometheus query sent once because the checks' `queriesHash` differs from the status'
     * `validatedQueriesHash`: the hash sent, and the checks Prometheus refused as bad_data, in
     * its own words.
     */
    validation?: { queriesHash: string; refusals: { check: string; message: string }[] };
  };
}

/**
 * What the cluster holds now. The status written last time is `set.status` for an
 * AdvancedDaemonSet, and for an `apps/v1` DaemonSet its RolloutStatus's (`rolloutStatus`, absent
 * while none was written; `api/written-status.ts` reads either).
 * `set` is as read from the API server: for an AdvancedDaemonSet it is not trusted to be valid
 * (an invalid spec yields the `InvalidSpec` condition and no pod actions).
 */
export type Snapshot =
  | (SnapshotObjects & { kind: "AdvancedDaemonSet"; set: AdvancedDaemonSetLike })
  /** `apps.kruise.io/v1beta1` DaemonSet as read (compatibility mode, ADR 0027). */
  | (SnapshotObjects & { kind: "KruiseDaemonSet"; set: AdvancedDaemonSetLike })
  | (SnapshotObjects & { kind: "DaemonSet"; set: DaemonSet; rolloutStatus?: RolloutStatusObject });

/** An AdvancedDaemonSet as read: metadata is trusted, spec and status are validated by `plan`. */
export interface AdvancedDaemonSetLike {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: unknown;
  status?: unknown;
}

export type { AdvancedDaemonSet };

/** Every action says why it is taken, in words a person reads in the reconcile answer. */
interface ActionBase {
  reason: string;
}

/**
 * Create a pod. `pod` is the full manifest: deterministic name `<set>-<node-hash>-<rev-hash>`,
 * controller ownerReference to the set, `spec.nodeName` and a required node affinity on
 * `metadata.name`, labels `controller-revision-hash` and `pod-template-generation`.
 * A 409 AlreadyExists means an earlier attempt landed: count it as success.
 */
export interface CreatePod extends ActionBase {
  type: "createPod";
  node: string;
  revision: string;
  pod: Pod;
}

/** Delete a pod with a UID precondition (a 404 or a UID mismatch: already done, success). */
export interface DeletePod extends ActionBase {
  type: "deletePod";
  name: string;
  uid: string;
  node?: string;
}

/** One container's new cpu and memory, as a resize sends them (`pods/resize`). */
export interface ContainerResize {
  name: string;
  resources: {
    requests?: Record<string, string | number>;
    limits?: Record<string, string | number>;
  };
}

/**
 * JSON merge patch (`application/merge-patch+json`) of a pod: labels, annotations,
 * ownerReferences (adoption); for an in-place update (InPlaceIfPossible) also the whole
 * `spec.containers` list with new images. A `null` value removes a key. With `resize`, the
 * containers' cpu and memory are first resized through `pods/resize` (a strategic merge patch of
 * those containers' resources); the patch is sent only once the resize landed.
 */
export interface PatchPod extends ActionBase {
  type: "patchPod";
  name: string;
  uid: string;
  resize?: ContainerResize[];
  patch: {
    metadata: {
      labels?: Record<string, string | null>;
      annotations?: Record<string, string | null>;
      ownerReferences?: ObjectMeta["ownerReferences"];
    };
    spec?: { containers: PodSpec["containers"] };
  };
}

/**
 * Set (add or replace by `type`) one condition on a pod through the `status` subresource
 * (strategic merge on `status.conditions`, key `type`). Used for OpenYurt OTA's
 * `PodNeedUpgrade` with message `controllerrevision: <hash>`.
 */
export interface SetPodCondition extends ActionBase {
  type: "setPodCondition";
  name: string;
  uid: string;
  condition: PodCondition & { type: string; status: "True" | "False" };
}

/** Create a ControllerRevision (full manifest, owned by the set). 409: success. */
export interface CreateRevision extends ActionBase {
  type: "createRevision";
  revisionObject: ControllerRevision;
}

/** Merge patch of a ControllerRevision: adoption (ownerReferences) or a `revision` bump. */
export interface PatchRevision extends ActionBase {
  type: "patchRevision";
  name: string;
  uid: string;
  patch: {
    metadata?: { ownerReferences?: ObjectMeta["ownerReferences"] };
    revision?: number;
  };
}

/** Delete a ControllerRevision past `revisionHistoryLimit`, UID precondition. */
export interface DeleteRevision extends ActionBase {
  type: "deleteRevision";
  name: string;
  uid: string;
}

/**
 * Create a Job that pulls images on one node (ADR 0034), owned by the pod it pulls for. 409: an
 * earlier attempt landed, success.
 */
export interface CreateJob extends ActionBase {
  type: "createJob";
  node: string;
  job: Job;
}

/** Delete a Job with a UID precondition, its pods with it (background propagation). */
export interface DeleteJob extends ActionBase {
  type: "deleteJob";
  name: string;
  uid: string;
}

/**
 * Put back a revision's template on the set itself (a JSON merge patch of `spec.template` that
 * makes it that revision's): a rollback when the rollout stopped itself (ADR 0035).
 */
export interface RollbackTemplate extends ActionBase {
  type: "rollbackTemplate";
  revision: string;
  patch: { spec: { template: unknown } };
}

export type Action =
  | RollbackTemplate
  | CreatePod
  | CreateJob
  | DeleteJob
  | DeletePod
  | PatchPod
  | SetPodCondition
  | CreateRevision
  | PatchRevision
  | DeleteRevision;

export type ActionType = Action["type"];

/** An Event for the set (`involvedObject` is the set unless `pod` names one of its pods). */
export interface PlanEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
  /** The pod the event's action writes: dropped if that action did not land. */
  pod?: string;
  /**
   * Recorded on the set rather than on `pod`, as upstream records its SuccessfulCreate and
   * SuccessfulDelete, so `kubectl describe` of the set shows what was done to its pods.
   */
  onSet?: true;
}

/** Something the set is waiting for, and why: shown in the reconcile answer. */
export interface Awaited {
  /** e.g. `pod/ds-abc available`, `node/edge-7 Ready`, `expectation create ds-abc`. */
  what: string;
  why: string;
  /** RFC 3339, when it is known (minReadySeconds elapsing, an expectation deadline). */
  until?: string;
}

/** What the plan read on one node the set should run on: for people (status, the dashboard). */
export interface NodeReport {
  node: string;
  /** new: a pod of the current revision; old: only pods of older ones; none: no pod. */
  revision: "new" | "old" | "none";
  /** The pod its state is read from (the new one where there is one). */
  pod?: string;
  ready: boolean;
  available: boolean;
  /** A pod of the node's is on its way out (replaced, or its node's update began). */
  leaving: boolean;
  /** The node is NotReady or unreachable: cut off from the cloud, or down. */
  cutOff: boolean;
  /** The update reaches it; false: held back by `partition` or the update selector. */
  inScope: boolean;
  /** Why its new pod counts as failed (the failure budget's judgement, ADR 0035). */
  failed?: string;
}

/**
 * An update budget (maxUnavailable, or maxSurge for a set that surges) as the engine resolved it
 * over the desired nodes, and how many of them hold a share of it now (NotReady nodes hold none).
 */
export interface BudgetUse {
  rule: "maxUnavailable" | "maxSurge";
  limit: number;
  inUse: number;
}

/** A budget in use as `status` and the dashboard say it: `2 of maxUnavailable 10 in use`. */
export function budgetText(budget: BudgetUse): string {
  return `${budget.inUse} of ${budget.rule} ${budget.limit} in use`;
}

export interface Plan {
  /** Applied in order by kube/'s executor, after the status claim succeeded. */
  actions: Action[];
  /**
   * The whole status to write (AdvancedDaemonSet: status subresource; DaemonSet: its
   * RolloutStatus). It already holds the expectations of `actions` and
   * `nextCheckAt`. Equal to the status read (deep-equal) when there is nothing to record:
   * then nothing is written.
   */
  status: AdvancedDaemonSetStatus;
  /** The same conditions as `status.conditions`, for the answer. */
  conditions: SetCondition[];
  events: PlanEvent[];
  /** Seconds until the earliest change that can happen on its own; null: nothing pending. */
  requeueAfterSeconds: number | null;
  awaited: Awaited[];
  /** Every node the set should run on, as read (NodeReport). */
  nodes: NodeReport[];
  /**
   * Most pod creations, and most pod deletions (with pod conditions), this plan's actions may
   * hold: the set's burstReplicas as the engine resolved it over the desired nodes. The plan
   * keeps within it and the executor holds it, one computation for both (upstream's
   * `syncNodes` caps creations and deletions each at burstReplicas).
   */
  burst: number;
  /** The update budget and the share of it in use, when one bounds the set's rollout. */
  budget?: BudgetUse;
  /**
   * When the plan writes pods of the current revision (edgeroll owns placement): a pod that
   * revision makes, and its ControllerRevision when the plan creates one, for the shell to
   * prove the API server admits them before any action is taken (a server-side dry run).
   */
  probe?: { revision: string; pod: Pod; revisionObject?: ControllerRevision };
}

export type { Expectation };
