/**
 * Cluster behaviour for the simulator: what the kubelets (node status, Lease, pods), the
 * scheduler, the node lifecycle controller (with taint eviction and pod GC), the DaemonSet and
 * Job controllers of a real cluster do, acting on the simulator's object store. The HTTP API
 * server serves the store; this module makes it move. Decisions: ADR 0010.
 *
 * @example
 * ```ts
 * import { Store } from "../store.ts";
 * import { startClusterBehaviour } from "./mod.ts";
 *
 * const store = new Store();
 * const cluster = startClusterBehaviour(store, { nodes: 3, zones: 2, speed: 50, seed: 7 });
 * cluster.disconnect("edge-2"); // stops heart-beating; NotReady after the grace period
 * cluster.reconnect("edge-2");
 * cluster.stop();
 * ```
 */
import { type Store, StoreError } from "../store.ts";
import { ClusterCache } from "./cache.ts";
import {
  type ClusterContext,
  createEventRecorder,
  DEFAULT_DURATIONS,
  type Durations,
  FAULT_TAGS,
  type ImageFault,
  type Log,
  type NodeAgentState,
} from "./context.ts";
import { normalizeImage } from "./images.ts";
import { startDaemonSetController } from "./daemonset.ts";
import { startJobController } from "./job.ts";
import { startKubelets } from "./kubelet.ts";
import { startNodeLifecycle } from "./node-lifecycle.ts";
import { startNodeFleet } from "./node-agent.ts";
import { startScheduler } from "./scheduler.ts";
import { startTaintEviction } from "./taint-eviction.ts";
import { createTimeline } from "./timeline.ts";
import { realTimers, type Timers } from "../../lib/timers.ts";
import { seededRandom } from "../random.ts";

export type { Durations, ImageFault, Log } from "./context.ts";
export { KUBELET_VERSION, nodeName } from "./node-agent.ts";

export interface ClusterBehaviourOptions {
  /** Nodes `edge-1` … `edge-N` (existing ones are kept, missing ones created). */
  nodes: number;
  /** Spread `topology.kubernetes.io/zone=zone-1..K` round-robin; 0 or absent: no zone label. */
  zones?: number;
  /** `kubernetes.io/arch` values handed out round-robin (default `amd64`). */
  architectures?: string[];
  /** Every simulated duration is divided by this (1 = realistic seconds; tests use 20–100). */
  speed?: number;
  /**
   * The clock and timers of everything scheduled (default: real timers on the store's clock,
   * which may be offset from wall time but advances with it).
   */
  timers?: Timers;
  /** Seed of the generator behind pull jitter, pod names, container IDs (default: random). */
  seed?: number;
  /**
   * Faults by image reference (`nginx:1.27` also matches `docker.io/library/nginx:1.27`).
   * Tags alone also carry faults: `:bad` (and `:non-existent`) fails to pull, `:crash` crash-loops, `:unready`
   * never passes readiness.
   */
  imageFaults?: Record<string, ImageFault>;
  /** Override simulated durations (seconds, before the speed factor). */
  durations?: Partial<Durations>;
  /** Write core/v1 Events (Scheduled, Pulled, SuccessfulCreate, NodeNotReady, …). Default true. */
  events?: boolean;
  /** Where warnings go (default: JSON lines on stderr). */
  log?: Log;
}

export interface ClusterStats {
  nodes: number;
  disconnected: number;
  notReady: number;
  /** Pods the kubelets hold, and those whose containers all run. */
  kubeletPods: number;
  runningPods: number;
  speed: number;
}

export interface ClusterBehaviour {
  nodeNames(): string[];
  /** Brings `count` new nodes (`edge-<N+1>` …) into the cluster; returns their names. */
  addNodes(count: number): string[];
  /** Takes a node out for good: its kubelet stops, its Node and Lease are deleted. */
  removeNode(node: string): void;
  /** Cuts the node off: no heartbeat, no status, deletes of its pods wait until `reconnect`. */
  disconnect(node: string): void;
  /** Restores the link: lease, status and every pod of the node are synced at once. */
  reconnect(node: string): void;
  /** The kubelet reports Ready=False (container runtime down) without losing the link. */
  setNotReady(node: string): void;
  setReady(node: string): void;
  setSpeed(speed: number): void;
  readonly speed: number;
  /**
   * Pulls an image onto a node as its edge agent would ahead of an upgrade; the node lists it
   * in `status.images` at its next status post and later pods start from the cache.
   */
  pullImage(node: string, image: string): Promise<void>;
  stats(): ClusterStats;
  /** Stops every timer and listener; the store keeps what was written. */
  stop(): void;
}

const jsonLog: Log = (level, message, fields) =>
  console.error(JSON.stringify({ level, component: "sim/cluster", message, ...fields }));

export function startClusterBehaviour(
  store: Store,
  options: ClusterBehaviourOptions,
): ClusterBehaviour {
  if (!Number.isInteger(options.nodes) || options.nodes < 0) {
    throw new RangeError(`nodes must be a non-negative integer, got ${options.nodes}`);
  }
  const log = options.log ?? jsonLog;
  const durations = { ...DEFAULT_DURATIONS, ...options.durations };
  const timeline = createTimeline({
    timers: options.timers ?? { ...realTimers, now: () => store.now() },
    speed: options.speed ?? 1,
    onError: (error) => log("warn", "scheduled action failed", { error: String(error) }),
  });
  const random = seededRandom(options.seed ?? Math.floor(Math.random() * 2 ** 32));
  const faults = new Map(
    Object.entries(options.imageFaults ?? {}).map((
      [image, fault],
    ) => [normalizeImage(image), fault]),
  );
  const agents = new Map<string, NodeAgentState>();
  const cache = new ClusterCache(store, timeline.now);
  const ctx: ClusterContext = {
    store,
    cache,
    timeline,
    random,
    durations,
    agents,
    imageFault(image) {
      const ref = normalizeImage(image);
      const tag = ref.includes("@") ? "" : ref.slice(ref.lastIndexOf(":") + 1);
      return faults.get(ref) ?? FAULT_TAGS[tag];
    },
    log,
    recordEvent: createEventRecorder(
      store,
      timeline,
      random,
      durations.eventTtlSeconds,
      options.events ?? true,
    ),
  };

  const fleet = startNodeFleet(ctx, options);
  const kubelets = startKubelets(ctx);
  const scheduler = startScheduler(ctx);
  const lifecycle = startNodeLifecycle(ctx);
  const eviction = startTaintEviction(ctx);
  const daemonSets = startDaemonSetController(ctx);
  const jobs = startJobController(ctx);

  function agentOf(node: string): NodeAgentState {
    const agent = agents.get(node);
    if (!agent) throw new StoreError(404, "NotFound", `node "${node}" is not a simulated node`);
    return agent;
  }

  return {
    nodeNames: () => fleet.names(),
    addNodes(count) {
      if (!Number.isInteger(count) || count < 0) {
        throw new StoreError(
          400,
          "BadRequest",
          `count must be a non-negative integer, got ${count}`,
        );
      }
      return fleet.add(count);
    },
    removeNode(node) {
      agentOf(node);
      fleet.remove(node);
      kubelets.dropNode(node);
    },
    disconnect(node) {
      agentOf(node).connected = false;
    },
    reconnect(node) {
      const agent = agentOf(node);
      if (agent.connected) return;
      agent.connected = true;
      fleet.renewLease(node);
      fleet.postStatus(node);
      kubelets.syncNode(node);
    },
    setNotReady(node) {
      const agent = agentOf(node);
      agent.healthy = false;
      fleet.postStatus(node);
      kubelets.syncNode(node);
    },
    setReady(node) {
      const agent = agentOf(node);
      agent.healthy = true;
      fleet.postStatus(node);
      kubelets.syncNode(node);
    },
    setSpeed: (speed) => timeline.setSpeed(speed),
    pullImage(node, image) {
      agentOf(node);
      return kubelets.pullImage(node, image);
    },
    get speed() {
      return timeline.speed;
    },
    stats() {
      const all = [...agents.values()];
      const counts = kubelets.counts();
      return {
        nodes: all.length,
        disconnected: all.filter((a) => !a.connected).length,
        notReady: all.filter((a) => !a.healthy).length,
        kubeletPods: counts.pods,
        runningPods: counts.running,
        speed: timeline.speed,
      };
    },
    stop() {
      jobs.stop();
      daemonSets.stop();
      eviction.stop();
      lifecycle.stop();
      scheduler.stop();
      kubelets.stop();
      cache.stop();
      timeline.stop();
    },
  };
}
