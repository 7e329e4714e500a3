/**
 * What the simulated kubelet reports: pod status (phase, conditions, container statuses)
 * built from its local runtime record of the pod, as the kubelet's status manager does.
 */
import { isoSeconds } from "../store.ts";
import type { NodeAgentState } from "./context.ts";
import { imageID, normalizeImage } from "./images.ts";
import type {
  Condition,
  Container,
  ContainerState,
  ContainerStatus,
  Pod,
  PodStatus,
} from "./types.ts";
import { findCondition } from "./types.ts";
import { Keys } from "../../api/well-known-names.ts";
import { canonicalJson } from "../../api/hash.ts";
import { qosClass, type ResizableRequirements } from "../../api/pod-resources.ts";
import type { Container as ApiContainer } from "../../api/kube-objects.ts";

export type ContainerPhase =
  | "creating"
  | "pull-failed"
  | "back-off"
  | "running"
  | "crash-back-off"
  /** Ended and not restarted (a pod whose restartPolicy is not Always). */
  | "exited";

export interface ContainerRuntime {
  image: string;
  phase: ContainerPhase;
  pullFailures: number;
  /** The current restart back-off (for the CrashLoopBackOff message). */
  backOffSeconds?: number;
  containerID?: string;
  startedAt?: number;
  /** Set with phase "exited". */
  exit?: { code: number; at: number };
  /** Readiness probe verdict; true at start when there is no probe. */
  probeReady: boolean;
  restartCount: number;
  lastState: ContainerState;
  cancel?: () => void;
}

export interface PodRuntime {
  uid: string;
  key: string;
  nodeName: string;
  startTime: number;
  podIP: string;
  containers: Map<string, ContainerRuntime>;
  /** A container has run: the pod is Running from then on, until every container exited. */
  started: boolean;
  /** Set once a delete was seen: "stopping" while containers stop, "stopped" after. */
  termination?: "stopping" | "stopped";
  /**
   * Each container's cpu and memory as the kubelet allocated them, and as they are applied
   * (`applied` lags while a resize is in progress).
   */
  allocated: Map<string, ResizableRequirements>;
  applied: Map<string, ResizableRequirements>;
  /** A resize the kubelet holds back (PodResizePending), with its words and since when. */
  pendingResize?: { reason: "Infeasible" | "Deferred"; message: string };
  /** Cancels the application of an allocated resize, while one waits. */
  applying?: () => void;
}

/** Pod conditions the kubelet writes; any other condition belongs to someone else. */
const KUBELET_CONDITIONS = new Set<string>([
  Keys.podResizePending,
  Keys.podResizeInProgress,
  "PodReadyToStartContainers",
  "Initialized",
  "Ready",
  "ContainersReady",
  "PodScheduled",
]);

export function pullError(image: string): string {
  const ref = normalizeImage(image);
  return `rpc error: code = NotFound desc = failed to pull and unpack image "${ref}": failed to resolve reference "${ref}": ${ref}: not found`;
}

function containerStatus(
  pod: Pod,
  container: Container,
  state: ContainerRuntime,
  /** False while the node's runtime is down or the pod is terminating. */
  mayBeReady: boolean,
  resources: { allocated?: ResizableRequirements; applied?: ResizableRequirements },
): ContainerStatus {
  const running = state.phase === "running";
  const common = {
    name: container.name,
    restartCount: state.restartCount,
    lastState: state.lastState,
    // As the kubelet with InPlacePodVerticalScaling: what it allocated and what runs.
    ...(resources.allocated?.requests ? { allocatedResources: resources.allocated.requests } : {}),
  };
  // A container that has run once reports its image resolved, its digest and its ID.
  const ran = {
    image: normalizeImage(state.image),
    imageID: imageID(state.image),
    containerID: state.containerID,
  };
  if (running) {
    return {
      ...common,
      ...ran,
      ready: state.probeReady && mayBeReady,
      started: true,
      state: { running: { startedAt: isoSeconds(state.startedAt!) } },
      resources: resources.applied ?? {},
    };
  }
  if (state.phase === "exited") {
    return {
      ...common,
      ...ran,
      ready: false,
      started: false,
      state: {
        terminated: {
          exitCode: state.exit!.code,
          reason: state.exit!.code === 0 ? "Completed" : "Error",
          startedAt: isoSeconds(state.startedAt!),
          finishedAt: isoSeconds(state.exit!.at),
          containerID: state.containerID,
        },
      },
    };
  }
  if (state.phase === "crash-back-off") {
    const { name, namespace, uid } = pod.metadata;
    return {
      ...common,
      ...ran,
      ready: false,
      started: false,
      state: {
        waiting: {
          reason: "CrashLoopBackOff",
          message:
            `back-off ${state.backOffSeconds}s restarting failed container=${container.name} pod=${name}_${namespace}(${uid})`,
        },
      },
    };
  }
  const waiting = state.phase === "creating"
    ? { reason: "ContainerCreating" }
    : state.phase === "pull-failed"
    ? { reason: "ErrImagePull", message: pullError(state.image) }
    : {
      reason: "ImagePullBackOff",
      message: `Back-off pulling image "${state.image}": ErrImagePull: ${pullError(state.image)}`,
    };
  return {
    ...common,
    image: state.image,
    imageID: "",
    ready: false,
    started: false,
    state: { waiting },
  };
}

/**
 * Why a readiness gate holds the pod back, worded as the kubelet's
 * `status.GeneratePodReadyCondition` words it (Go's %q of the type); undefined when it is open.
 */
function unreadyGate(type: string, condition: Condition | undefined): string | undefined {
  const quoted = JSON.stringify(type);
  if (!condition) return `corresponding condition of pod readiness gate ${quoted} does not exist.`;
  if (condition.status === "True") return undefined;
  return `the status of pod readiness gate ${quoted} is not "True", but ${condition.status}`;
}

/**
 * Running once a container has run; once every container has exited for good (a pod whose
 * restartPolicy is not Always), Succeeded when each exited 0, else Failed.
 */
function podPhase(runtime: PodRuntime): NonNullable<PodStatus["phase"]> {
  const containers = [...runtime.containers.values()];
  if (containers.length > 0 && containers.every((c) => c.phase === "exited")) {
    return containers.every((c) => c.exit!.code === 0) ? "Succeeded" : "Failed";
  }
  return runtime.started ? "Running" : "Pending";
}

/**
 * The resize conditions (Kubernetes 1.33): PodResizePending while the kubelet holds a resize
 * back (Infeasible or Deferred), PodResizeInProgress while what it allocated is not applied yet;
 * neither once the containers run the spec's resources. Each keeps its transition time while
 * its reason holds.
 */
function resizeConditions(
  runtime: PodRuntime,
  before: Condition[] | undefined,
  now: string,
): Condition[] {
  const since = (type: string, reason?: string) => {
    const previous = findCondition(before, type);
    return previous && previous.reason === reason ? previous.lastTransitionTime : undefined;
  };
  const conditions: Condition[] = [];
  const pending = runtime.pendingResize;
  if (pending) {
    conditions.push({
      type: Keys.podResizePending,
      status: "True",
      lastProbeTime: null,
      lastTransitionTime: since(Keys.podResizePending, pending.reason) ?? now,
      reason: pending.reason,
      message: pending.message,
    });
  }
  const inProgress = [...runtime.allocated].some(([name, allocated]) =>
    canonicalJson(allocated) !== canonicalJson(runtime.applied.get(name) ?? {})
  );
  if (inProgress) {
    conditions.push({
      type: Keys.podResizeInProgress,
      status: "True",
      lastProbeTime: null,
      lastTransitionTime: since(Keys.podResizeInProgress) ?? now,
    });
  }
  return conditions;
}

/** The pod status the kubelet reports for its local runtime record. */
export function podStatus(
  pod: Pod,
  runtime: PodRuntime,
  agent: NodeAgentState,
  now: string,
): PodStatus {
  const containers = pod.spec.containers ?? [];
  const statuses = containers.map((container) =>
    containerStatus(
      pod,
      container,
      runtime.containers.get(container.name)!,
      agent.healthy && !runtime.termination,
      {
        allocated: runtime.allocated.get(container.name),
        applied: runtime.applied.get(container.name),
      },
    )
  );
  const unready = statuses.filter((s) => !s.ready).map((s) => s.name);
  const phase = podPhase(runtime);
  const before = pod.status?.conditions;
  const condition = (type: string, ok: boolean, reason?: string, message?: string): Condition => {
    const status = ok ? "True" : "False";
    const previous = findCondition(before, type);
    const result: Condition = {
      type,
      status,
      lastProbeTime: null,
      lastTransitionTime: previous?.status === status ? previous.lastTransitionTime : now,
    };
    if (!ok && reason) Object.assign(result, { reason, message });
    return result;
  };
  const notReadyMessage = `containers with unready status: [${unready.join(" ")}]`;
  // Readiness gates: the pod is Ready only when every gate's condition (set by others) is True.
  const gates = ((pod.spec.readinessGates ?? []) as { conditionType: string }[])
    .map((gate) => unreadyGate(gate.conditionType, findCondition(before, gate.conditionType)))
    .filter((message) => message !== undefined);
  const [readyReason, readyMessage] = phase === "Succeeded" || phase === "Failed"
    ? ["PodCompleted", ""]
    : unready.length > 0
    ? ["ContainersNotReady", notReadyMessage]
    : ["ReadinessGatesNotReady", gates.join(", ")];
  const conditions = [
    condition("PodReadyToStartContainers", true),
    condition("Initialized", true),
    condition("Ready", unready.length === 0 && gates.length === 0, readyReason, readyMessage),
    condition(
      "ContainersReady",
      unready.length === 0,
      readyReason === "PodCompleted" ? readyReason : "ContainersNotReady",
      readyReason === "PodCompleted" ? "" : notReadyMessage,
    ),
    findCondition(before, "PodScheduled") ?? condition("PodScheduled", true),
    ...resizeConditions(runtime, before, now),
    // Conditions the kubelet does not own (e.g. edgeroll's PodNeedUpgrade) are kept as written.
    ...(before ?? []).filter((c) => !KUBELET_CONDITIONS.has(c.type)),
  ];
  const initContainerStatuses = (pod.spec.initContainers ?? []).map((
    container,
  ): ContainerStatus => ({
    name: container.name,
    image: normalizeImage(container.image),
    imageID: imageID(container.image),
    ready: true,
    started: false,
    restartCount: 0,
    state: {
      terminated: {
        exitCode: 0,
        reason: "Completed",
        startedAt: isoSeconds(runtime.startTime),
        finishedAt: isoSeconds(runtime.startTime),
      },
    },
    lastState: {},
  }));
  const status: PodStatus = {
    ...pod.status,
    phase,
    conditions,
    hostIP: agent.internalIP,
    hostIPs: [{ ip: agent.internalIP }],
    podIP: runtime.podIP,
    podIPs: [{ ip: runtime.podIP }],
    startTime: isoSeconds(runtime.startTime),
    qosClass: qosClass(containers as ApiContainer[]),
    containerStatuses: statuses,
  };
  if (initContainerStatuses.length > 0) status.initContainerStatuses = initContainerStatuses;
  return status;
}
