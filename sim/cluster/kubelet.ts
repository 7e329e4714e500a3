/**
 * The pod half of the simulated kubelet, one loop for every node. For each pod bound to a
 * connected node it keeps a local runtime record (what containerd would hold) and reports it
 * as pod status: ContainerCreating while the image is pulled (fast when the node has it
 * cached), then Running with container IDs and image digests, Ready after the readiness
 * probe's initial delay. Image faults (see `ImageFault`) cycle through ErrImagePull and
 * ImagePullBackOff, or CrashLoopBackOff, with upstream's doubling back-off. A graceful delete is
 * confirmed, once the containers have stopped, by a grace-0 delete with a uid precondition.
 *
 * While its node is disconnected the kubelet keeps running what it has (pulls finish,
 * containers run) but neither sees nor writes the API; reconnecting syncs everything.
 */
import { isoSeconds, StoreError } from "../store.ts";
import { PODS } from "./cache.ts";
import { type ClusterContext, type NodeAgentState, randomHex } from "./context.ts";
import { imageSize, normalizeImage } from "./images.ts";
import { type ContainerRuntime, type PodRuntime, podStatus, pullError } from "./pod-status.ts";
import type { Container, Pod } from "./types.ts";
import { keyOf } from "./types.ts";
import { createWorkQueue } from "./work-queue.ts";
import type { Container as ApiContainer } from "../../api/kube-objects.ts";
import { canonicalJson } from "../../api/hash.ts";
import {
  changedResources,
  podRequests,
  resizableRequirements,
  resizableResources,
  resizeRestartPolicy,
} from "../../api/pod-resources.ts";
import { quantityMillis } from "../../api/quantity.ts";

/** One container's start, as the pull and back-off steps pass it along. */
interface ContainerJob {
  pod: Pod;
  runtime: PodRuntime;
  container: Container;
  agent: NodeAgentState;
  state: ContainerRuntime;
}

export interface Kubelets {
  /** Re-reads every pod of the node from the API and reports (after reconnect or health change). */
  syncNode(name: string): void;
  /** Forgets every pod of a node that is gone (its containers went with the machine). */
  dropNode(name: string): void;
  /**
   * Pulls an image onto a node outside any pod (what an edge agent's pre-pull does);
   * resolves once the node has it, rejects when the image's fault is ErrImagePull.
   */
  pullImage(node: string, image: string): Promise<void>;
  /** Pods the kubelets hold, by phase of their containers (for stats). */
  counts(): { pods: number; running: number };
  stop(): void;
}

const COMPONENT = "kubelet";
export function startKubelets(ctx: ClusterContext): Kubelets {
  const { store, cache, timeline, durations, agents } = ctx;
  const runtimes = new Map<string, PodRuntime>();
  const queue = createWorkQueue(timeline, syncPod, (key, error) => {
    if (!(error instanceof StoreError)) {
      ctx.log("warn", "kubelet sync failed", { pod: key, error: String(error) });
    }
  });

  cache.onChange((event) => {
    if (event.resource !== PODS) return;
    const pod = event.object as Pod;
    const agent = agents.get(pod.spec.nodeName ?? "");
    if (!agent?.connected) return;
    if (event.type === "DELETED") forget(pod.metadata.uid!);
    else queue.add(keyOf(pod));
  });
  for (const key of cache.pods.keys()) queue.add(key);

  function connectedAgent(pod: Pod): NodeAgentState | undefined {
    const agent = agents.get(pod.spec.nodeName ?? "");
    return agent?.connected ? agent : undefined;
  }

  function forget(uid: string): void {
    const runtime = runtimes.get(uid);
    if (!runtime) return;
    for (const container of runtime.containers.values()) container.cancel?.();
    runtime.applying?.();
    runtimes.delete(uid);
    // What the pod held is free: a resize deferred on its node is tried again.
    for (const other of runtimes.values()) {
      if (other.nodeName === runtime.nodeName && other.pendingResize?.reason === "Deferred") {
        queue.add(other.key);
      }
    }
  }

  function event(pod: Pod, type: "Normal" | "Warning", reason: string, message: string): void {
    ctx.recordEvent({
      involved: pod,
      type,
      reason,
      message,
      component: COMPONENT,
      host: pod.spec.nodeName,
    });
  }

  function syncPod(key: string): void {
    const pod = cache.pods.get(key);
    if (!pod) return;
    const agent = connectedAgent(pod);
    if (!agent) return;
    let runtime = runtimes.get(pod.metadata.uid!);
    if (pod.metadata.deletionTimestamp) {
      terminate(pod, runtime ?? admit(pod, agent));
      return;
    }
    runtime ??= admit(pod, agent);
    for (const container of pod.spec.containers ?? []) {
      const current = runtime.containers.get(container.name);
      if (!current) {
        startContainer(pod, runtime, container, agent);
      } else if (current.image !== container.image) {
        // An in-place image change: the kubelet kills the container and starts the new image.
        restart(pod, runtime, container, agent, current);
      }
    }
    resize(pod, runtime, agent);
    writeStatus(key);
  }

  /**
   * A change of the containers' cpu or memory (through `pods/resize`), as the 1.33 kubelet takes
   * it: Infeasible when the pod's requests exceed what the node can allocate at all, Deferred
   * while they exceed what its other pods leave (tried again when a pod goes), else allocated at
   * once and applied `resizeSeconds` later (PodResizeInProgress meanwhile), restarting each
   * container whose changed resource's `resizePolicy` is RestartContainer.
   */
  function resize(pod: Pod, runtime: PodRuntime, agent: NodeAgentState): void {
    const containers = pod.spec.containers as ApiContainer[];
    const asked = containers.filter((c) =>
      canonicalJson(resizableRequirements(c.resources)) !==
        canonicalJson(runtime.allocated.get(c.name) ?? {})
    );
    if (asked.length === 0) {
      runtime.pendingResize = undefined;
      return;
    }
    const refusal = resizeRefusal(pod, runtime, agent);
    if (refusal) {
      runtime.pendingResize = refusal;
      return;
    }
    runtime.pendingResize = undefined;
    for (const c of asked) runtime.allocated.set(c.name, resizableRequirements(c.resources));
    runtime.applying?.();
    runtime.applying = timeline.after(durations.resizeSeconds, () => {
      runtime.applying = undefined;
      const current = cache.pods.get(runtime.key);
      for (const container of current?.spec.containers ?? []) {
        const allocated = runtime.allocated.get(container.name) ?? {};
        const applied = runtime.applied.get(container.name) ?? {};
        if (canonicalJson(allocated) === canonicalJson(applied)) continue;
        runtime.applied.set(container.name, allocated);
        const restarts = changedResources(applied, allocated).some((r) =>
          resizeRestartPolicy(container as ApiContainer, r) === "RestartContainer"
        );
        const state = runtime.containers.get(container.name);
        if (restarts && state) restart(current!, runtime, container, agent, state);
      }
      writeStatus(runtime.key);
    });
  }

  /** Why the kubelet holds a resize back, in its words; undefined when it fits. */
  function resizeRefusal(
    pod: Pod,
    runtime: PodRuntime,
    agent: NodeAgentState,
  ): PodRuntime["pendingResize"] {
    const allocatable = cache.nodes.get(agent.name)?.status?.allocatable ?? {};
    const wanted = podRequests(pod.spec.containers as ApiContainer[]);
    const used: Record<string, number> = {};
    for (const other of runtimes.values()) {
      if (other.nodeName !== agent.name || other.uid === runtime.uid || other.termination) continue;
      const sums = podRequests(
        [...other.allocated.values()].map((resources) => ({ resources })),
      );
      for (const [name, v] of Object.entries(sums)) used[name] = (used[name] ?? 0) + v;
    }
    // The kubelet's figures: cpu in millicores, memory in bytes.
    const shown = (name: string, millis: number) =>
      name === "cpu" ? millis : Math.round(millis / 1000);
    for (const name of resizableResources) {
      const capacity = quantityMillis(allocatable[name] ?? "0") ?? 0;
      const request = wanted[name] ?? 0;
      if (request > capacity) {
        return {
          reason: "Infeasible",
          message: `Node didn't have enough capacity: ${name}, requested: ${
            shown(name, request)
          }, capacity: ${shown(name, capacity)}`,
        };
      }
      if (request + (used[name] ?? 0) > capacity) {
        return {
          reason: "Deferred",
          message: `Node didn't have enough resource: ${name}, requested: ${
            shown(name, request)
          }, used: ${shown(name, used[name] ?? 0)}, capacity: ${shown(name, capacity)}`,
        };
      }
    }
    return undefined;
  }

  /** The kubelet kills the container and starts it again: one more restart. */
  function restart(
    pod: Pod,
    runtime: PodRuntime,
    container: Container,
    agent: NodeAgentState,
    current: ContainerRuntime,
  ): void {
    current.cancel?.();
    if (current.phase === "running") ended(current, 0, "Completed");
    runtime.containers.delete(container.name);
    startContainer(pod, runtime, container, agent, current);
  }

  function admit(pod: Pod, agent: NodeAgentState): PodRuntime {
    const podIP = pod.spec.hostNetwork ? agent.internalIP : allocateIP(agent);
    const runtime: PodRuntime = {
      uid: pod.metadata.uid!,
      key: keyOf(pod),
      nodeName: agent.name,
      startTime: timeline.now(),
      podIP,
      containers: new Map(),
      started: false,
      allocated: new Map(),
      applied: new Map(),
    };
    for (const c of pod.spec.containers as ApiContainer[]) {
      runtime.allocated.set(c.name, resizableRequirements(c.resources));
      runtime.applied.set(c.name, resizableRequirements(c.resources));
    }
    runtimes.set(runtime.uid, runtime);
    return runtime;
  }

  function startContainer(
    pod: Pod,
    runtime: PodRuntime,
    container: Container,
    agent: NodeAgentState,
    previous?: ContainerRuntime,
  ): void {
    const state: ContainerRuntime = {
      image: container.image,
      phase: "creating",
      pullFailures: 0,
      probeReady: !container.readinessProbe && ctx.imageFault(container.image) !== "NeverReady",
      restartCount: previous?.restartCount ?? 0,
      lastState: previous?.lastState ?? {},
    };
    runtime.containers.set(container.name, state);
    pull({ pod, runtime, container, agent, state });
  }

  /** A registry pull: the configured time, ±25 %. */
  function pullSeconds(): number {
    return durations.pullSeconds * (0.75 + 0.5 * ctx.random());
  }

  function pullImage(node: string, image: string): Promise<void> {
    const agent = agents.get(node)!;
    const ref = normalizeImage(image);
    if (agent.images.has(ref)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      timeline.after(pullSeconds(), () => {
        if (ctx.imageFault(image) === "ErrImagePull") {
          reject(new Error(`failed to pull image "${image}": ${pullError(image)}`));
          return;
        }
        agent.images.set(ref, imageSize(ref));
        resolve();
      });
    });
  }

  function pull(job: ContainerJob): void {
    const { pod, runtime, container, agent, state } = job;
    const ref = normalizeImage(container.image);
    const cached = agent.images.has(ref) && container.imagePullPolicy !== "Always";
    const seconds = cached ? durations.cachedStartSeconds : pullSeconds();
    if (!cached) event(pod, "Normal", "Pulling", `Pulling image "${container.image}"`);
    state.cancel = timeline.after(seconds, () => {
      state.cancel = undefined;
      const fault = ctx.imageFault(container.image);
      if (fault === "ErrImagePull") {
        pullFailed(job);
        return;
      }
      agent.images.set(ref, imageSize(ref));
      event(
        pod,
        "Normal",
        "Pulled",
        cached
          ? `Container image "${container.image}" already present on machine`
          : `Successfully pulled image "${container.image}" in ${
            seconds.toFixed(3)
          }s. Image size: ${imageSize(ref)} bytes.`,
      );
      event(pod, "Normal", "Created", `Created container: ${container.name}`);
      event(pod, "Normal", "Started", `Started container ${container.name}`);
      state.phase = "running";
      runtime.started = true;
      state.containerID = `containerd://${randomHex(ctx.random, 64)}`;
      state.startedAt = timeline.now();
      if ((pod.spec.restartPolicy ?? "Always") !== "Always") {
        // A Job's container: sim runs no command, so it exits after a while, 1 if it crashes.
        const code = fault === "CrashLoopBackOff" ? 1 : 0;
        state.cancel = timeline.after(durations.completionSeconds, () => exited(job, code));
      } else if (fault === "CrashLoopBackOff") {
        state.cancel = timeline.after(durations.crashAfterSeconds, () => crashed(job));
      } else if (!state.probeReady && fault !== "NeverReady") {
        state.cancel = timeline.after(container.readinessProbe?.initialDelaySeconds ?? 0, () => {
          state.cancel = undefined;
          state.probeReady = true;
          writeStatus(runtime.key);
        });
      }
      writeStatus(runtime.key);
    });
  }

  /** The container's run ended now: it becomes its last state, and the restart counts. */
  function ended(state: ContainerRuntime, exitCode: number, reason: string): void {
    state.lastState = {
      terminated: {
        exitCode,
        reason,
        startedAt: isoSeconds(state.startedAt!),
        finishedAt: isoSeconds(timeline.now()),
        containerID: state.containerID,
      },
    };
    state.restartCount += 1;
  }

  /**
   * A container of a pod whose restartPolicy is not Always ended: it stays ended, unless it
   * failed under OnFailure, which restarts it as a crash.
   */
  function exited(job: ContainerJob, code: number): void {
    const { pod, runtime, state } = job;
    state.cancel = undefined;
    if (code !== 0 && pod.spec.restartPolicy === "OnFailure") {
      crashed(job);
      return;
    }
    state.phase = "exited";
    state.exit = { code, at: timeline.now() };
    writeStatus(runtime.key);
  }

  /** The container exited with an error: count the restart, back off, start it again. */
  function crashed(job: ContainerJob): void {
    const { pod, runtime, container, state } = job;
    ended(state, 1, "Error");
    state.phase = "crash-back-off";
    state.backOffSeconds = backOff(state.restartCount);
    event(
      pod,
      "Warning",
      "BackOff",
      `Back-off restarting failed container ${container.name} in pod ${pod.metadata.name}_${pod.metadata.namespace}(${pod.metadata.uid})`,
    );
    writeStatus(runtime.key);
    state.cancel = timeline.after(state.backOffSeconds, () => pull(job));
  }

  /** Upstream's container back-off: 10 s doubling up to 5 min. */
  function backOff(failures: number): number {
    return Math.min(durations.backOffSeconds * 2 ** (failures - 1), durations.maxBackOffSeconds);
  }

  function pullFailed(job: ContainerJob): void {
    const { pod, runtime, container, state } = job;
    state.pullFailures += 1;
    state.phase = "pull-failed";
    event(
      pod,
      "Warning",
      "Failed",
      `Failed to pull image "${container.image}": ${pullError(container.image)}`,
    );
    event(pod, "Warning", "Failed", "Error: ErrImagePull");
    writeStatus(runtime.key);
    // The next pod sync (about a second later) reports the back-off; the retry comes after it.
    state.cancel = timeline.after(1, () => {
      state.phase = "back-off";
      event(pod, "Normal", "BackOff", `Back-off pulling image "${container.image}"`);
      writeStatus(runtime.key);
      state.cancel = timeline.after(backOff(state.pullFailures), () => pull(job));
    });
  }

  function terminate(pod: Pod, runtime: PodRuntime): void {
    if (runtime.termination === "stopped") {
      confirmDeletion(runtime);
      return;
    }
    if (runtime.termination === "stopping") return;
    runtime.termination = "stopping";
    for (const container of runtime.containers.values()) container.cancel?.();
    const running = [...runtime.containers.entries()].filter(([, c]) => c.phase === "running");
    for (const [name] of running) event(pod, "Normal", "Killing", `Stopping container ${name}`);
    if (runtime.started) writeStatus(runtime.key); // a terminating pod is no longer ready
    const grace = pod.metadata.deletionGracePeriodSeconds ?? 30;
    const seconds = running.length > 0 ? Math.min(grace, durations.terminationSeconds) : 0;
    timeline.after(seconds, () => {
      runtime.termination = "stopped";
      confirmDeletion(runtime);
    });
  }

  function confirmDeletion(runtime: PodRuntime): void {
    const pod = cache.pods.get(runtime.key);
    if (!pod || pod.metadata.uid !== runtime.uid) {
      forget(runtime.uid);
      return;
    }
    if (!connectedAgent(pod)) return; // confirmed when the node comes back
    const { namespace, name } = pod.metadata;
    store.delete(PODS, namespace, name, {
      gracePeriodSeconds: 0,
      preconditions: { uid: runtime.uid },
    });
  }

  function writeStatus(key: string): void {
    const pod = cache.pods.get(key);
    const runtime = pod && runtimes.get(pod.metadata.uid!);
    if (!pod || !runtime) return;
    // Once deleted, only the "no longer ready" report of the stopping containers goes out.
    if (pod.metadata.deletionTimestamp && runtime.termination !== "stopping") return;
    const agent = connectedAgent(pod);
    if (!agent) return;
    // A terminal phase is final, as the kubelet's status manager has it: a pod someone marked
    // Failed (upstream's DaemonSet spec does) is not reported Running again.
    const phase = pod.status?.phase;
    if (phase === "Failed" || phase === "Succeeded") return;
    const status = podStatus(pod, runtime, agent, isoSeconds(timeline.now()));
    if (JSON.stringify(status) === JSON.stringify(pod.status)) return;
    store.update(PODS, { ...pod, status }); // the store copies its input; the cache stays as is
  }

  function syncNode(name: string): void {
    const agent = agents.get(name);
    if (!agent?.connected) return;
    for (const runtime of [...runtimes.values()]) {
      if (runtime.nodeName !== name) continue;
      const pod = cache.pods.get(runtime.key);
      if (!pod || pod.metadata.uid !== runtime.uid) forget(runtime.uid);
    }
    for (const pod of cache.podsOn(name)) queue.add(keyOf(pod));
  }

  return {
    syncNode,
    dropNode(name) {
      for (const runtime of [...runtimes.values()]) {
        if (runtime.nodeName === name) forget(runtime.uid);
      }
    },
    pullImage,
    counts() {
      let running = 0;
      for (const runtime of runtimes.values()) {
        if ([...runtime.containers.values()].every((c) => c.phase === "running")) running++;
      }
      return { pods: runtimes.size, running };
    },
    stop() {
      queue.stop();
      for (const uid of [...runtimes.keys()]) forget(uid);
    },
  };
}

function allocateIP(agent: NodeAgentState): string {
  const host = agent.nextPodIP;
  agent.nextPodIP = host >= 254 ? 2 : host + 1;
  return agent.podSubnet.replace(/0\/24$/, String(host));
}
